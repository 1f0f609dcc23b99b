//! Balia (Peng et al. eqs. (1)–(2)), with x_r = w_r/τ_r and α_r = max_k x_k / x_r:
//!   I_r = x_r / (τ_r (Σ_k x_k)²) · (1+α_r)/2 · (4+α_r)/5      (1)
//!   D_r = w_r/2 · min(α_r, 1.5)                                (2)
//! Minimum window after a loss: 1 with more than one route (§V).
use super::{Algorithm, Controller, Subflows};

#[derive(Clone)]
pub struct Balia;

pub const ALGORITHM: Algorithm = Algorithm {
    name: "balia",
    params: &[],
    make: |_| Box::new(Balia),
};

impl Controller for Balia {
    fn name(&self) -> &'static str {
        "balia"
    }
    fn connection(&self, _n_routes: usize) -> Box<dyn Controller> {
        Box::new(self.clone())
    }
    fn on_ack(&self, sf: &Subflows, r: usize) -> f64 {
        let x = sf.cwnd[r] / sf.rtt[r];
        let a = sf.max_rate() / x;
        let tot = sf.total_rate();
        x / (sf.rtt[r] * tot * tot) * ((1.0 + a) / 2.0) * ((4.0 + a) / 5.0)
    }
    fn on_loss(&self, sf: &Subflows, r: usize) -> f64 {
        let a = sf.max_rate() / (sf.cwnd[r] / sf.rtt[r]);
        sf.cwnd[r] / 2.0 * a.min(1.5)
    }
    fn min_cwnd(&self, n: usize) -> f64 {
        if n > 1 {
            1.0
        } else {
            2.0
        }
    }
}
