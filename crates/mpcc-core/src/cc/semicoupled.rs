//! Semicoupled MPTCP (Peng et al. §II-B): I_r = 1/(τ_r Σ_k w_k/τ_k), D_r = w_r/2.
use super::{Algorithm, halve, Controller, Subflows};

#[derive(Clone)]
pub struct Semicoupled;

pub const ALGORITHM: Algorithm = Algorithm {
    name: "semicoupled",
    params: &[],
    make: |_| Box::new(Semicoupled),
};

impl Controller for Semicoupled {
    fn name(&self) -> &'static str {
        "semicoupled"
    }
    fn connection(&self, _n_routes: usize) -> Box<dyn Controller> {
        Box::new(self.clone())
    }
    fn on_ack(&self, sf: &Subflows, r: usize) -> f64 {
        1.0 / (sf.rtt[r] * sf.total_rate())
    }
    fn on_loss(&self, sf: &Subflows, r: usize) -> f64 {
        halve(sf, r)
    }
}
