//! OLIA (Khalili et al.; draft-khalili-mptcp-congestion-control; out-of-tree mptcp_olia.c):
//!
//!   I_r = (w_r/τ_r²) / (Σ_p w_p/τ_p)² + ε_r/w_r,   D_r = w_r/2
//!
//! with ℓ_r = max(packets since the last loss, packets between the last two losses), the best
//! paths B = argmax ℓ_r/τ_r², the max-window paths M = argmax w_r, the collected paths B∖M, and
//! ε_r = 1/(n|B∖M|) on B∖M, −1/(n|M|) on M when B∖M ≠ ∅, 0 otherwise.
use super::{halve, Controller, Subflows};

pub struct Olia;

impl Olia {
    pub fn epsilon(sf: &Subflows, r: usize) -> f64 {
        let n = sf.n();
        let ell = |k: usize| {
            if sf.loss_interval.is_empty() {
                0.0
            } else {
                sf.loss_interval[k]
            }
        };
        let quality = |k: usize| ell(k) / (sf.rtt[k] * sf.rtt[k]);
        let best_q = (0..n).map(quality).fold(f64::NEG_INFINITY, f64::max);
        let max_w = sf.cwnd.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let in_m = |k: usize| sf.cwnd[k] == max_w;
        let collected = |k: usize| quality(k) == best_q && !in_m(k);
        let n_collected = (0..n).filter(|&k| collected(k)).count();
        if collected(r) {
            1.0 / (n as f64 * n_collected as f64)
        } else if in_m(r) && n_collected > 0 {
            let n_m = (0..n).filter(|&k| in_m(k)).count();
            -1.0 / (n as f64 * n_m as f64)
        } else {
            0.0
        }
    }
}

impl Controller for Olia {
    fn name(&self) -> &'static str {
        "olia"
    }
    fn on_ack(&self, sf: &Subflows, r: usize) -> f64 {
        let tot = sf.total_rate();
        (sf.cwnd[r] / (sf.rtt[r] * sf.rtt[r])) / (tot * tot) + Olia::epsilon(sf, r) / sf.cwnd[r]
    }
    fn on_loss(&self, sf: &Subflows, r: usize) -> f64 {
        halve(sf, r)
    }
}
