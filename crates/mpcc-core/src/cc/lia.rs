//! LIA, the "Max" algorithm of Peng et al. (RFC 6356):
//! I_r = min(max_k(w_k/τ_k²) / (Σ_k w_k/τ_k)², 1/w_r), D_r = w_r/2.
use super::{Algorithm, halve, Controller, Subflows};

#[derive(Clone)]
pub struct Lia;

pub const ALGORITHM: Algorithm = Algorithm {
    name: "lia",
    params: &[],
    make: |_| Box::new(Lia),
};

impl Controller for Lia {
    fn name(&self) -> &'static str {
        "lia"
    }
    fn connection(&self, _n_routes: usize) -> Box<dyn Controller> {
        Box::new(self.clone())
    }
    fn on_ack(&self, sf: &Subflows, r: usize) -> f64 {
        let tot = sf.total_rate();
        let best = sf
            .cwnd
            .iter()
            .zip(sf.rtt)
            .map(|(w, t)| w / (t * t))
            .fold(f64::NEG_INFINITY, f64::max);
        (best / (tot * tot)).min(1.0 / sf.cwnd[r])
    }
    fn on_loss(&self, sf: &Subflows, r: usize) -> f64 {
        halve(sf, r)
    }
}
