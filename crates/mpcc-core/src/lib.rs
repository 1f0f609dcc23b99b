//! mpcc core: congestion-control algorithms (`cc`) and the packet-level simulator (`sim`).
pub mod cc;
pub mod config;
pub mod rng;
pub mod sim;

pub use config::Config;
pub use sim::{run_json, Budget, Output, Sim};
