//! Semicoupled MPTCP (Peng et al. §II-B): I_r = 1/(τ_r Σ_k w_k/τ_k), D_r = w_r/2.
use super::{halve, Controller, Subflows};

pub struct Semicoupled;

impl Controller for Semicoupled {
    fn name(&self) -> &'static str {
        "semicoupled"
    }
    fn on_ack(&self, sf: &Subflows, r: usize) -> f64 {
        1.0 / (sf.rtt[r] * sf.total_rate())
    }
    fn on_loss(&self, sf: &Subflows, r: usize) -> f64 {
        halve(sf, r)
    }
}
