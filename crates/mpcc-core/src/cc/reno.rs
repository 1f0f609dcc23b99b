//! TCP NewReno (Peng et al. §II-B): I_r = 1/w_r, D_r = w_r/2.
use super::{halve, Controller, Subflows};

pub struct Reno;

impl Controller for Reno {
    fn name(&self) -> &'static str {
        "reno"
    }
    fn on_ack(&self, sf: &Subflows, r: usize) -> f64 {
        1.0 / sf.cwnd[r]
    }
    fn on_loss(&self, sf: &Subflows, r: usize) -> f64 {
        halve(sf, r)
    }
}
