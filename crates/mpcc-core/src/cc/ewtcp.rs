//! EWTCP (Honda et al.; Peng et al. §II-B): I_r = a/w_r, D_r = w_r/2.
use super::{halve, Controller, Subflows};

pub struct Ewtcp {
    pub a: f64,
}

impl Controller for Ewtcp {
    fn name(&self) -> &'static str {
        "ewtcp"
    }
    fn on_ack(&self, sf: &Subflows, r: usize) -> f64 {
        self.a / sf.cwnd[r]
    }
    fn on_loss(&self, sf: &Subflows, r: usize) -> f64 {
        halve(sf, r)
    }
}
