//! MSTCP of Jiang, Cai, Towsley eq. (1): multiplicative increase / decrease of W = Σ_i w_i:
//!   I_i = a,   D_i = min(b·W, w_i − 1) (never negative); windows never below 1.
use super::{Algorithm, Controller, Subflows};

#[derive(Clone)]
pub struct Mstcp {
    pub a: f64,
    pub b: f64,
}

pub const ALGORITHM: Algorithm = Algorithm {
    name: "mstcp",
    params: &[("a", 0.03), ("b", 0.5)],
    make: |p| Box::new(Mstcp { a: p[0], b: p[1] }),
};

impl Controller for Mstcp {
    fn name(&self) -> &'static str {
        "mstcp"
    }
    fn connection(&self, _n_routes: usize) -> Box<dyn Controller> {
        Box::new(self.clone())
    }
    fn on_ack(&self, _sf: &Subflows, _r: usize) -> f64 {
        self.a
    }
    fn on_loss(&self, sf: &Subflows, r: usize) -> f64 {
        (self.b * sf.total_cwnd()).min(sf.cwnd[r] - 1.0).max(0.0)
    }
    fn min_cwnd(&self, _n: usize) -> f64 {
        1.0
    }
}
