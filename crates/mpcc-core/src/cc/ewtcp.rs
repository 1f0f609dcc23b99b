//! EWTCP (Honda et al.; Peng et al. §II-B): I_r = a/w_r, D_r = w_r/2.
use super::{Algorithm, halve, Controller, Subflows};

#[derive(Clone)]
pub struct Ewtcp {
    pub a: f64,
}

pub const ALGORITHM: Algorithm = Algorithm {
    name: "ewtcp",
    params: &[("a", 1.0)],
    make: |p| Box::new(Ewtcp { a: p[0] }),
};

impl Controller for Ewtcp {
    fn name(&self) -> &'static str {
        "ewtcp"
    }
    fn connection(&self, _n_routes: usize) -> Box<dyn Controller> {
        Box::new(self.clone())
    }
    fn on_ack(&self, sf: &Subflows, r: usize) -> f64 {
        self.a / sf.cwnd[r]
    }
    fn on_loss(&self, sf: &Subflows, r: usize) -> f64 {
        halve(sf, r)
    }
}
