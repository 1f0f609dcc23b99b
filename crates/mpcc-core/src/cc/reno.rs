//! TCP NewReno (Peng et al. §II-B): I_r = 1/w_r, D_r = w_r/2.
use super::{Algorithm, halve, Controller, Subflows};

#[derive(Clone)]
pub struct Reno;

pub const ALGORITHM: Algorithm = Algorithm {
    name: "reno",
    params: &[],
    make: |_| Box::new(Reno),
};

impl Controller for Reno {
    fn name(&self) -> &'static str {
        "reno"
    }
    fn connection(&self, _n_routes: usize) -> Box<dyn Controller> {
        Box::new(self.clone())
    }
    fn on_ack(&self, sf: &Subflows, r: usize) -> f64 {
        1.0 / sf.cwnd[r]
    }
    fn on_loss(&self, sf: &Subflows, r: usize) -> f64 {
        halve(sf, r)
    }
}
