//! MTCP(α, β) of Jiang, Cai, Towsley eq. (2), W = Σ_i w_i:
//!   I_i = a / ((1−α) w_i + α W),   D_i = min(b[(1−β) w_i + β W], w_i − 1) (never negative).
//! (α, β) = (0, 1) Coupled Decrease, (1, 0) Coupled Increase, (1, 1) Fully Coupled.
use super::{Algorithm, Controller, Subflows};

#[derive(Clone)]
pub struct Mtcp {
    pub alpha: f64,
    pub beta: f64,
    pub a: f64,
    pub b: f64,
}

pub const ALGORITHM: Algorithm = Algorithm {
    name: "mtcp",
    params: &[("alpha", 0.0), ("beta", 0.0), ("a", 1.0), ("b", 0.5)],
    make: |p| {
        Box::new(Mtcp {
            alpha: p[0],
            beta: p[1],
            a: p[2],
            b: p[3],
        })
    },
};

impl Controller for Mtcp {
    fn name(&self) -> &'static str {
        "mtcp"
    }
    fn connection(&self, _n_routes: usize) -> Box<dyn Controller> {
        Box::new(self.clone())
    }
    fn on_ack(&self, sf: &Subflows, r: usize) -> f64 {
        self.a / ((1.0 - self.alpha) * sf.cwnd[r] + self.alpha * sf.total_cwnd())
    }
    fn on_loss(&self, sf: &Subflows, r: usize) -> f64 {
        let cut = self.b * ((1.0 - self.beta) * sf.cwnd[r] + self.beta * sf.total_cwnd());
        cut.min(sf.cwnd[r] - 1.0).max(0.0)
    }
    fn min_cwnd(&self, _n: usize) -> f64 {
        1.0
    }
}
