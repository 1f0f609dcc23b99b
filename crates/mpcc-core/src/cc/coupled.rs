//! Coupled MPTCP (Kelly–Voice; Peng et al. §II-B):
//! I_r = (w_r/τ_r²) / (Σ_k w_k/τ_k)², D_r = w_r/2; minimum window 1 with > 1 route (§V).
use super::{Algorithm, halve, Controller, Subflows};

#[derive(Clone)]
pub struct Coupled;

pub const ALGORITHM: Algorithm = Algorithm {
    name: "coupled",
    params: &[],
    make: |_| Box::new(Coupled),
};

impl Controller for Coupled {
    fn name(&self) -> &'static str {
        "coupled"
    }
    fn connection(&self, _n_routes: usize) -> Box<dyn Controller> {
        Box::new(self.clone())
    }
    fn on_ack(&self, sf: &Subflows, r: usize) -> f64 {
        let tot = sf.total_rate();
        (sf.cwnd[r] / (sf.rtt[r] * sf.rtt[r])) / (tot * tot)
    }
    fn on_loss(&self, sf: &Subflows, r: usize) -> f64 {
        halve(sf, r)
    }
    fn min_cwnd(&self, n: usize) -> f64 {
        if n > 1 {
            1.0
        } else {
            2.0
        }
    }
}
