//! linkem — the pure model of one emulated link direction, in the spirit of Dummynet's pipe:
//!
//! ```text
//!   arrival ──► [random loss] ──► [AQM: drop-tail or RED/ECN] ──► queue ──► bandwidth C ──► delay line T ──► departure
//! ```
//!
//! Everything here is deterministic given the arrival times and the seed, so the timing
//! rules can be unit-tested without sockets; `main.rs` feeds it packets from AF_PACKET.
//!
//! Modules: [`pipe`] (loss, the shared queue model `mpcc-queue`, the server and the delay
//! line), [`timing`] (busy-wait tuning, merging delay lines, lateness histograms), [`frame`]
//! (Ethernet/IP helpers). The binary (`main.rs`) adds the command line (`cli.rs`), the
//! AF_PACKET sockets (`net.rs`) and the forwarding threads (`forward.rs`).

pub mod frame;
pub mod pipe;
pub mod timing;

pub use pipe::{Counters, Pipe, PipeConfig, RedConfig, Rng, Verdict};
pub use timing::{earliest, Hist, SpinTuner};
