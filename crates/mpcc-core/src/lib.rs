//! mpcc core: congestion-control algorithms (`cc`) and the packet-level simulator.
pub mod cc;
