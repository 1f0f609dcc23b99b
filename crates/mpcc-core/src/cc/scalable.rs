//! Scalable TCP (Kelly, CCR 2003), uncoupled on every route: I_r = a, D_r = b·w_r
//! (a = 0.01, b = 0.125 as Linux tcp_scalable.c). The worked example of "Adding an algorithm"
//! in docs/algorithms.md: this file and its name in `algorithms!` are all the simulator needs.
use super::{Algorithm, Controller, Subflows};

#[derive(Clone)]
pub struct Scalable {
    pub a: f64,
    pub b: f64,
}

pub const ALGORITHM: Algorithm = Algorithm {
    name: "scalable",
    params: &[("a", 0.01), ("b", 0.125)],
    make: |p| Box::new(Scalable { a: p[0], b: p[1] }),
};

impl Controller for Scalable {
    fn name(&self) -> &'static str {
        "scalable"
    }
    fn connection(&self, _n_routes: usize) -> Box<dyn Controller> {
        Box::new(self.clone())
    }
    fn on_ack(&self, _sf: &Subflows, _r: usize) -> f64 {
        self.a
    }
    fn on_loss(&self, sf: &Subflows, r: usize) -> f64 {
        self.b * sf.cwnd[r]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kelly_rule_reads_only_its_own_route() {
        let s = Scalable { a: 0.01, b: 0.125 };
        let (w, t) = ([40.0, 8.0], [0.1, 0.3]);
        let sf = Subflows::new(&w, &t);
        assert_eq!(s.on_ack(&sf, 1), 0.01);
        assert_eq!(s.on_loss(&sf, 0), 5.0);
        assert_eq!(s.on_loss(&sf, 1), 1.0);
    }
}
