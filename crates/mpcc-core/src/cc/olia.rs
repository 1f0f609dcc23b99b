//! OLIA (Khalili et al.; draft-khalili-mptcp-congestion-control; out-of-tree mptcp_olia.c):
//!
//!   I_r = (w_r/τ_r²) / (Σ_p w_p/τ_p)² + ε_r/w_r,   D_r = w_r/2
//!
//! with ℓ_r = max(packets acked since the last loss, packets acked between the last two), the best
//! paths B = argmax ℓ_r/τ_r², the max-window paths M = argmax w_r, the collected paths B∖M, and
//! ε_r = 1/(n|B∖M|) on B∖M, −1/(n|M|) on M when B∖M ≠ ∅, 0 otherwise.
//!
//! The Linux implementation Peng et al. measured (MPTCP v0.88, `mptcp_olia.c`) applies I_r
//! through integer arithmetic that the simulator reproduces in its window update
//! ([`Olia::kernel_step`], used by `sim.rs`): the window is a whole number of packets, every
//! ACK (not every acknowledged packet) adds ⌊2^10·I_r⌋ (rounded toward zero) to a counter, and
//! the window moves by one packet when the counter reaches ±(2^10 − 1), resetting the counter
//! to 0 (the remainder is lost). The per-ACK I_r and per-loss D_r themselves are the rules above.
use super::{halve, Controller, Subflows};

pub struct Olia;

/// `scale` of mptcp_olia.c: the fractional window counter counts 1/2^10 packets.
pub const KERNEL_SCALE: u32 = 10;

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

    /// One ACK of mptcp_olia_cong_avoid() in congestion avoidance: add I_r (packets) to the
    /// fixed-point counter `cnt` (units of 2^−10 packet) as the kernel does —
    /// `div64_u64(|num| << 10, den)` rounds the magnitude down, the sign is applied after — and
    /// return the window step: +1 when cnt ≥ 2^10 − 1, −1 when cnt ≤ −(2^10 − 1) (cnt is then
    /// reset to 0, dropping the remainder), else 0.
    pub fn kernel_step(cnt: &mut i64, inc: f64) -> i32 {
        let one = 1i64 << KERNEL_SCALE;
        *cnt += (inc * one as f64).trunc() as i64;
        if *cnt >= one - 1 {
            *cnt = 0;
            1
        } else if *cnt <= 1 - one {
            *cnt = 0;
            -1
        } else {
            0
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_counter_steps_and_drops_the_remainder() {
        // I = 0.3 packet/ACK → ⌊307.2⌋ = 307 per ACK; 4 ACKs = 1228 ≥ 1023 → +1, counter 0
        // (the kernel keeps no remainder, so the 5th ACK starts again from 307).
        let mut cnt = 0i64;
        let steps: Vec<i32> = (0..5).map(|_| Olia::kernel_step(&mut cnt, 0.3)).collect();
        assert_eq!(steps, vec![0, 0, 0, 1, 0]);
        assert_eq!(cnt, 307);
        // I below 2^−10 packet is rounded to zero: the window never moves.
        let mut cnt = 0i64;
        assert!((0..10_000).all(|_| Olia::kernel_step(&mut cnt, 0.9 / 1024.0) == 0));
        assert_eq!(cnt, 0);
        // Negative I (ε_r < 0 on a max-window path): rounded toward zero, −1 at −1023.
        let mut cnt = 0i64;
        let steps: Vec<i32> = (0..3).map(|_| Olia::kernel_step(&mut cnt, -0.5)).collect();
        assert_eq!(steps, vec![0, -1, 0]);
        assert_eq!(cnt, -512);
    }
}
