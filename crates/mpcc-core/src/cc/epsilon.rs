//! The ε-family (Wischik, Raiciu, Greenhalgh, Handley, NSDI 2011; htsim's `COUPLED_EPSILON`,
//! mtcp.cpp `inflate_window` / `compute_alfa`), ε ∈ [0, 2]:
//! I_r = min(w_r^(1−ε)·(max_k w_k^(ε/2)/τ_k)²/(Σ_k w_k/τ_k)², 1/w_r) for 0 < ε < 2 (htsim's
//! a·(a w_r)^(1−ε)/W^(2−ε) with its a substituted), I_r = min(w_r/W², 1/w_r) at ε = 0 and
//! 1/w_r at ε = 2 (htsim keeps a = 1 there); D_r = w_r/2. ε = 1 is LIA.
use super::{halve, Algorithm, Controller, Subflows};

#[derive(Clone)]
pub struct Epsilon {
    pub epsilon: f64,
}

pub const ALGORITHM: Algorithm = Algorithm {
    name: "epsilon",
    params: &[("epsilon", 1.0)],
    make: |p| Box::new(Epsilon { epsilon: p[0] }),
};

impl Controller for Epsilon {
    fn name(&self) -> &'static str {
        "epsilon"
    }
    fn connection(&self, _n_routes: usize) -> Box<dyn Controller> {
        Box::new(self.clone())
    }
    fn on_ack(&self, sf: &Subflows, r: usize) -> f64 {
        let (e, w) = (self.epsilon, sf.cwnd[r]);
        let inc = if e <= 0.0 {
            let total: f64 = sf.cwnd.iter().sum();
            w / (total * total)
        } else if e >= 2.0 {
            1.0 / w
        } else {
            let best = sf
                .cwnd
                .iter()
                .zip(sf.rtt)
                .map(|(wk, t)| wk.powf(e / 2.0) / t)
                .fold(f64::NEG_INFINITY, f64::max);
            let tot = sf.total_rate();
            w.powf(1.0 - e) * best * best / (tot * tot)
        };
        inc.min(1.0 / w)
    }
    fn on_loss(&self, sf: &Subflows, r: usize) -> f64 {
        halve(sf, r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::lia::Lia;

    #[test]
    fn epsilon_one_is_lia_and_two_is_reno() {
        let (w, t) = ([40.0, 8.0, 3.0], [0.1, 0.3, 0.02]);
        let sf = Subflows::new(&w, &t);
        for r in 0..3 {
            let lia = Lia.on_ack(&sf, r);
            let e1 = Epsilon { epsilon: 1.0 }.on_ack(&sf, r);
            assert!((e1 - lia).abs() <= 1e-12 * lia, "route {r}: {e1} vs LIA {lia}");
            assert_eq!(Epsilon { epsilon: 2.0 }.on_ack(&sf, r), 1.0 / w[r]);
            assert_eq!(Epsilon { epsilon: 0.5 }.on_loss(&sf, r), w[r] / 2.0);
        }
        // ε = 0: fully coupled w_r/W² (htsim's a = 1)
        let e0 = Epsilon { epsilon: 0.0 }.on_ack(&sf, 0);
        assert!((e0 - 40.0 / (51.0f64 * 51.0)).abs() < 1e-15);
    }
}
