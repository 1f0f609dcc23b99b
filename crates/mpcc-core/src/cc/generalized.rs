//! The generalized (β, η, n) family of Peng et al. eq. (16), as packet rules (eq. (7) inverted),
//! with α_r = ‖x‖_∞/x_r:
//!   D_r = w_r/2 · (1 + η(α_r − 1))
//!   I_r = ((1−β) x_r + β‖x‖_n)(1 + η(α_r − 1)) / (τ_r ‖x‖_1²)
use super::{Algorithm, Controller, Subflows};

#[derive(Clone)]
pub struct Generalized {
    pub beta: f64,
    pub eta: f64,
    /// Norm order n ≥ 1, or +∞.
    pub n: f64,
}

impl Generalized {
    fn gain(&self, sf: &Subflows, r: usize) -> f64 {
        1.0 + self.eta * (sf.max_rate() / (sf.cwnd[r] / sf.rtt[r]) - 1.0)
    }
    fn lnorm(&self, sf: &Subflows) -> f64 {
        if self.n.is_infinite() {
            sf.max_rate()
        } else {
            let s: f64 = sf
                .cwnd
                .iter()
                .zip(sf.rtt)
                .map(|(w, t)| (w / t).powf(self.n))
                .sum();
            s.powf(1.0 / self.n)
        }
    }
}

pub const ALGORITHM: Algorithm = Algorithm {
    name: "generalized",
    params: &[("beta", 0.2), ("eta", 0.5), ("n", f64::INFINITY)],
    make: |p| {
        Box::new(Generalized {
            beta: p[0],
            eta: p[1],
            n: p[2],
        })
    },
};

impl Controller for Generalized {
    fn name(&self) -> &'static str {
        "generalized"
    }
    fn connection(&self, _n_routes: usize) -> Box<dyn Controller> {
        Box::new(self.clone())
    }
    fn on_ack(&self, sf: &Subflows, r: usize) -> f64 {
        let x = sf.cwnd[r] / sf.rtt[r];
        let tot = sf.total_rate();
        let num = (1.0 - self.beta) * x + self.beta * self.lnorm(sf);
        num * self.gain(sf, r) / (sf.rtt[r] * tot * tot)
    }
    fn on_loss(&self, sf: &Subflows, r: usize) -> f64 {
        sf.cwnd[r] / 2.0 * self.gain(sf, r)
    }
}
