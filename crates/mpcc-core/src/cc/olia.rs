//! OLIA (Khalili et al.; draft-khalili-mptcp-congestion-control; out-of-tree mptcp_olia.c):
//!
//!   I_r = (w_r/τ_r²) / (Σ_p w_p/τ_p)² + ε_r/w_r,   D_r = w_r/2
//!
//! with ℓ_r = max(packets acked since the last loss, packets acked between the last two), the best
//! paths B = argmax ℓ_r/τ_r², the max-window paths M = argmax w_r, the collected paths B∖M, and
//! ε_r = 1/(n|B∖M|) on B∖M, −1/(n|M|) on M when B∖M ≠ ∅, 0 otherwise.
//!
//! `per_ack = 0` (the default, as the BPF program's): I_r per acknowledged packet, the host's
//! update of every algorithm ([`WindowUpdate::Host`]). `per_ack = 1`: as the Linux implementation
//! Peng et al. measured (MPTCP v0.88, `mptcp_olia.c`) applies I_r, through integer arithmetic
//! ([`WindowUpdate::FixedPoint`]; the engine's step is [`fixed_point_step`]): the window is a
//! whole number of packets, every ACK (not every acknowledged packet) adds ⌊2^10·I_r⌋ (rounded
//! toward zero) to a counter, and the window moves by one packet when the counter reaches
//! ±(2^10 − 1), resetting the counter to 0 (the remainder is lost). The per-ACK I_r and per-loss
//! D_r themselves are the rules above.
use super::{halve, AckEvent, Algorithm, Controller, Subflows, WindowUpdate};

/// OLIA with its per-subflow state: the loss markers of mptcp_olia.c and ℓ_r.
#[derive(Clone, Default)]
pub struct Olia {
    /// mptcp_olia.c's per-ACK update (the `per_ack` parameter).
    per_ack: bool,
    /// Per route: snd_una at the loss before last, at the last loss, and at the latest ACK
    /// that reached cong_avoid (mptcp_olia.c `mptcp_loss1..3`, here in packets).
    markers: Vec<[u32; 3]>,
    /// Per route: ℓ_r from the markers.
    ell: Vec<f64>,
}

pub const ALGORITHM: Algorithm = Algorithm {
    name: "olia",
    params: &[("per_ack", 0.0)],
    make: |p| {
        Box::new(Olia {
            per_ack: p[0] != 0.0,
            ..Olia::default()
        })
    },
};

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

    /// I_r with ε_r from the given ℓ.
    fn increase(sf: &Subflows, r: usize) -> f64 {
        let tot = sf.total_rate();
        (sf.cwnd[r] / (sf.rtt[r] * sf.rtt[r])) / (tot * tot) + Olia::epsilon(sf, r) / sf.cwnd[r]
    }

    /// ℓ_r = max(mptcp_loss3 − mptcp_loss2, mptcp_loss2 − mptcp_loss1): packets acknowledged
    /// since the last loss, and between the last two losses (mptcp_olia.c).
    #[inline]
    fn ell_of(m: &[u32; 3]) -> f64 {
        m[2].wrapping_sub(m[1]).max(m[1].wrapping_sub(m[0])) as f64
    }
}

impl Controller for Olia {
    fn name(&self) -> &'static str {
        "olia"
    }
    fn on_ack(&self, sf: &Subflows, r: usize) -> f64 {
        if sf.loss_interval.is_empty() && !self.ell.is_empty() {
            Olia::increase(
                &Subflows {
                    loss_interval: &self.ell,
                    ..*sf
                },
                r,
            )
        } else {
            Olia::increase(sf, r)
        }
    }
    fn on_loss(&self, sf: &Subflows, r: usize) -> f64 {
        halve(sf, r)
    }
    fn connection(&self, n_routes: usize) -> Box<dyn Controller> {
        Box::new(Olia {
            per_ack: self.per_ack,
            markers: vec![[0; 3]; n_routes],
            ell: vec![0.0; n_routes],
        })
    }
    fn window_update(&self) -> WindowUpdate {
        if self.per_ack {
            WindowUpdate::FixedPoint {
                scale_bits: KERNEL_SCALE,
            }
        } else {
            WindowUpdate::Host
        }
    }
    /// The ACK reaches cong_avoid: mptcp_loss3 = snd_una.
    #[inline]
    fn on_ack_event(&mut self, r: usize, ev: &AckEvent) {
        if ev.cong_avoid {
            self.markers[r][2] = ev.snd_una;
            self.ell[r] = Olia::ell_of(&self.markers[r]);
        }
    }
    /// mptcp_olia_set_state on entering Recovery/Loss/CWR: a new interval starts if data was
    /// acknowledged since the last one and this is not a repeated timeout.
    fn on_window_reduction(&mut self, r: usize, repeated_timeout: bool) {
        let m = &mut self.markers[r];
        if m[2] != m[1] && !repeated_timeout {
            m[0] = m[1];
            m[1] = m[2];
        }
        self.ell[r] = Olia::ell_of(m);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::fixed_point_step;

    #[test]
    fn kernel_counter_steps_and_drops_the_remainder() {
        // I = 0.3 packet/ACK → ⌊307.2⌋ = 307 per ACK; 4 ACKs = 1228 ≥ 1023 → +1, counter 0
        // (the kernel keeps no remainder, so the 5th ACK starts again from 307).
        let mut cnt = 0i64;
        let steps: Vec<i32> = (0..5)
            .map(|_| fixed_point_step(&mut cnt, 0.3, KERNEL_SCALE))
            .collect();
        assert_eq!(steps, vec![0, 0, 0, 1, 0]);
        assert_eq!(cnt, 307);
        // I below 2^−10 packet is rounded to zero: the window never moves.
        let mut cnt = 0i64;
        assert!((0..10_000).all(|_| fixed_point_step(&mut cnt, 0.9 / 1024.0, KERNEL_SCALE) == 0));
        assert_eq!(cnt, 0);
        // Negative I (ε_r < 0 on a max-window path): rounded toward zero, −1 at −1023.
        let mut cnt = 0i64;
        let steps: Vec<i32> = (0..3)
            .map(|_| fixed_point_step(&mut cnt, -0.5, KERNEL_SCALE))
            .collect();
        assert_eq!(steps, vec![0, -1, 0]);
        assert_eq!(cnt, -512);
    }

    /// The loss markers by hand: 100 packets acked, a loss (ℓ = 100), 40 more acked, a loss →
    /// ℓ = max(0 since, 40 between the last two) = 40; 150 more → ℓ = 150 (since the last); a
    /// repeated timeout starts no new interval.
    #[test]
    fn loss_markers_give_ell() {
        let mut o = Olia {
            markers: vec![[0; 3]],
            ell: vec![0.0],
            ..Olia::default()
        };
        let ack = |o: &mut Olia, una| {
            o.on_ack_event(
                0,
                &AckEvent {
                    rtt_s: 0.1,
                    snd_una: una,
                    cong_avoid: true,
                },
            )
        };
        ack(&mut o, 100);
        o.on_window_reduction(0, false);
        assert_eq!(o.ell, vec![100.0]);
        ack(&mut o, 140);
        o.on_window_reduction(0, false);
        assert_eq!(o.ell, vec![40.0]);
        ack(&mut o, 290);
        assert_eq!(o.ell, vec![150.0]);
        o.on_window_reduction(0, false); // markers (100, 140, 290) → (140, 290, 290)
        assert_eq!(o.ell, vec![150.0]);
        ack(&mut o, 300);
        o.on_window_reduction(0, true); // repeated timeout: no shift
        assert_eq!(o.ell, vec![150.0]);
        o.on_ack_event(
            0,
            &AckEvent {
                rtt_s: 0.1,
                snd_una: 500,
                cong_avoid: false,
            },
        );
        assert_eq!(
            o.markers[0],
            [140, 290, 300],
            "an ACK in recovery moves no marker"
        );
    }

    /// The engine's view (no ℓ given) uses the controller's ℓ: with ℓ_1 > ℓ_0 and equal RTTs,
    /// route 1 is the best path and not a max-window one, so ε_1 = 1/(n·1) = 1/2.
    #[test]
    fn own_ell_feeds_epsilon() {
        let o = Olia {
            markers: vec![[0; 3]; 2],
            ell: vec![10.0, 20.0],
            ..Olia::default()
        };
        let (w, t) = ([20.0, 10.0], [0.1, 0.1]);
        let sf = Subflows::new(&w, &t);
        let tot: f64 = 300.0; // (20 + 10)/0.1
        let want = (10.0 / 0.01) / (tot * tot) + 0.5 / 10.0;
        assert!((o.on_ack(&sf, 1) - want).abs() < 1e-15);
    }

    /// per_ack (the BPF program's parameter of the same name): 0, the default, is the host's
    /// update per acknowledged packet; 1 is mptcp_olia.c's counter; a connection keeps it.
    #[test]
    fn per_ack_selects_the_window_update() {
        let host = (ALGORITHM.make)(&[0.0]);
        let counter = (ALGORITHM.make)(&[1.0]);
        assert_eq!(ALGORITHM.params, &[("per_ack", 0.0)]);
        assert!(matches!(host.window_update(), WindowUpdate::Host));
        assert!(matches!(
            host.connection(2).window_update(),
            WindowUpdate::Host
        ));
        assert!(matches!(
            counter.window_update(),
            WindowUpdate::FixedPoint {
                scale_bits: KERNEL_SCALE
            }
        ));
        assert!(matches!(
            counter.connection(2).window_update(),
            WindowUpdate::FixedPoint { scale_bits: 10 }
        ));
    }
}
