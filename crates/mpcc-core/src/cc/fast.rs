//! FAST TCP (Tang et al. eq. (1)): every `update_interval_s` each route sets
//!   w ← min(2w, (1−γ) w + γ (baseRTT/RTT · w_old + α)),
//! no per-ACK increase, a loss halves the window. RTT is the mean RTT sample of the interval and
//! w_old the window those samples' packets were sent under, one RTT ago (ns-2's FAST module uses
//! the window at each acked packet's send time the same way): baseRTT/RTT · w_old is the
//! sampled rate times baseRTT. With the current window instead, updates more frequent than the
//! RTT converge within one RTT to α·RTT/q of a one-RTT-old q and the window oscillates
//! (one flow, 200 ms RTT, 20 ms updates: queue 0–207 packets instead of ≈ α). Algorithm 2 of Tang et al. adapts α every
//! `adapt_interval_s` (0 = off): α* = q/(l·w)·α₀ with q the mean queueing delay, l the loss
//! rate over the interval, w = `adapt_w`; α ← min((1+δ)α, α*) if α < α*, max((1−δ)α, α*) if
//! α > α*.
use super::{halve, Algorithm, Controller, Periodic, Subflows};

/// FAST's parameters and, per connection, its state: the current α (Algorithm 2 changes it)
/// and the routes' counters at the last adaptation. The RTT samples of each interval come from
/// the engine with each periodic update ([`Periodic`]`::rtt_sum`, `rtt_n`).
#[derive(Clone)]
pub struct Fast {
    pub alpha: f64,
    pub gamma: f64,
    pub update_interval_s: f64,
    pub adapt_interval_s: f64,
    pub adapt_w: f64,
    pub adapt_delta: f64,
    state: State,
}

#[derive(Clone, Default)]
struct State {
    /// α of this connection now.
    alpha: f64,
    routes: Vec<Route>,
}

/// One route's counters at the last adaptation (Algorithm 2's interval starts there) and its
/// window after each of the last periodic updates (newest last, at most [`HISTORY`]).
#[derive(Clone, Default)]
struct Route {
    a_sent: u64,
    a_signals: u64,
    windows: std::collections::VecDeque<f64>,
}

/// At most this many periodic updates of window history are kept per route (20 s at the default
/// 20 ms; otherwise 2·RTT/interval + 4); an RTT longer than that uses the oldest window kept.
const HISTORY: usize = 1024;

pub const ALGORITHM: Algorithm = Algorithm {
    name: "fast",
    params: &[
        ("alpha", 50.0),
        ("gamma", 0.5),
        ("update_interval_s", 0.02),
        // Tang et al. Algorithm 2 (α adaptation); adapt_interval_s = 0 turns it off
        ("adapt_interval_s", 0.0),
        ("adapt_w", 125.0),
        ("adapt_delta", 0.1),
    ],
    make: |p| Box::new(Fast::new(p)),
};

/// Eq. (1): min(2w, (1−γ) w + γ (baseRTT/RTT · w_old + α)).
fn eq1(gamma: f64, w: f64, w_old: f64, rtt: f64, base_rtt: f64, alpha: f64) -> f64 {
    let target = (1.0 - gamma) * w + gamma * (base_rtt / rtt * w_old + alpha);
    (2.0 * w).min(target)
}

impl Fast {
    /// From the parameter values in the order of [`ALGORITHM`]`.params`.
    pub fn new(p: &[f64]) -> Fast {
        Fast {
            alpha: p[0],
            gamma: p[1],
            update_interval_s: p[2],
            adapt_interval_s: p[3],
            adapt_w: p[4],
            adapt_delta: p[5],
            state: State::default(),
        }
    }
    /// Eq. (1) with the given α (Algorithm 2 changes α per connection), for a window that has
    /// not changed over the last RTT.
    pub fn update(&self, w: f64, rtt: f64, base_rtt: f64, alpha: f64) -> f64 {
        self.update_with_old(w, w, rtt, base_rtt, alpha)
    }
    /// Eq. (1) from the current window `w` and the window `w_old` under which the packets whose
    /// mean RTT is `rtt` were sent.
    pub fn update_with_old(&self, w: f64, w_old: f64, rtt: f64, base_rtt: f64, alpha: f64) -> f64 {
        eq1(self.gamma, w, w_old, rtt, base_rtt, alpha)
    }
    /// One step of Algorithm 2: new α from the current one, the mean queueing delay `q` (s)
    /// and the loss rate `l` over the last interval.
    pub fn adapt(&self, alpha: f64, q: f64, l: f64) -> f64 {
        let target = if l > 0.0 {
            q / (l * self.adapt_w) * self.alpha
        } else if q > 0.0 {
            f64::INFINITY
        } else {
            return alpha;
        };
        if alpha < target {
            ((1.0 + self.adapt_delta) * alpha).min(target)
        } else if alpha > target {
            ((1.0 - self.adapt_delta) * alpha).max(target)
        } else {
            alpha
        }
    }

    /// Eq. (1) on every route in congestion avoidance with the mean RTT of the interval and the
    /// window of round(RTT / interval) updates ago (the samples of this interval are of packets
    /// sent around now − interval/2 − RTT); then the window is recorded.
    fn periodic_update(&mut self, p: &mut Periodic) {
        if !p.active {
            return;
        }
        let alpha = self.state.alpha;
        let (gamma, interval) = (self.gamma, self.update_interval_s);
        for r in 0..p.cwnd.len() {
            let hist = &mut self.state.routes[r].windows;
            let mut keep = HISTORY;
            if p.rtt_n[r] > 0 {
                let rtt = p.rtt_sum[r] / p.rtt_n[r] as f64;
                let lag = (rtt / interval).round() as usize;
                // twice the current lag (and a few) is enough history; memory follows RTT/interval
                keep = (2 * lag + 4).min(HISTORY);
                if p.in_ca[r] {
                    let w_old = match hist.len() {
                        0 => p.cwnd[r],
                        n => hist[n - 1 - lag.min(n - 1)],
                    };
                    let w = eq1(gamma, p.cwnd[r], w_old, rtt, p.base_rtt[r], alpha);
                    p.cwnd[r] = w.max(1.0);
                }
            }
            while hist.len() >= keep {
                hist.pop_front();
            }
            hist.push_back(p.cwnd[r]);
        }
    }

    /// Algorithm 2 from the connection's mean queueing delay and loss rate over the interval
    /// (ECN marks count as losses: RED marks instead of dropping, §II-B).
    fn adaptation(&mut self, p: &mut Periodic) -> Option<[f64; 3]> {
        let (mut q_sum, mut q_n, mut lost, mut sent) = (0.0, 0u64, 0u64, 0u64);
        for (r, st) in self.state.routes.iter_mut().enumerate() {
            if p.rtt_n[r] > 0 && p.base_rtt[r].is_finite() {
                q_sum += p.rtt_sum[r] - p.rtt_n[r] as f64 * p.base_rtt[r];
                q_n += p.rtt_n[r];
            }
            lost += p.signals[r] - st.a_signals;
            sent += p.sent[r] - st.a_sent;
            st.a_signals = p.signals[r];
            st.a_sent = p.sent[r];
        }
        if q_n > 0 && sent > 0 {
            let (q, l) = (q_sum / q_n as f64, lost as f64 / sent as f64);
            self.state.alpha = self.adapt(self.state.alpha, q, l);
            Some([self.state.alpha, q, l])
        } else {
            None
        }
    }
}

impl Controller for Fast {
    fn name(&self) -> &'static str {
        "fast"
    }
    fn on_ack(&self, _sf: &Subflows, _r: usize) -> f64 {
        0.0
    }
    fn on_loss(&self, sf: &Subflows, r: usize) -> f64 {
        halve(sf, r)
    }
    /// Eq. (1) with the scenario's α.
    fn periodic_window(&self, sf: &Subflows, r: usize) -> Option<f64> {
        Some(self.update(sf.cwnd[r], sf.rtt[r], sf.base_rtt[r], self.alpha))
    }
    fn connection(&self, n: usize) -> Box<dyn Controller> {
        let mut f = self.clone();
        f.state = State {
            alpha: self.alpha,
            routes: vec![Route::default(); n],
        };
        Box::new(f)
    }
    /// FAST reacts to queueing delay, not to ECN marks (Tang et al. §II-B); loss still halves.
    fn reacts_to_ecn(&self) -> bool {
        false
    }
    fn initial_ssthresh(&self, initial_cwnd: f64) -> f64 {
        initial_cwnd
    }
    /// Update 0: eq. (1) every `update_interval_s`; update 1: Algorithm 2 every
    /// `adapt_interval_s` (when > 0).
    fn timers(&self) -> Vec<f64> {
        let mut t = vec![self.update_interval_s];
        if self.adapt_interval_s > 0.0 {
            t.push(self.adapt_interval_s);
        }
        t
    }
    fn on_timer(&mut self, k: usize, p: &mut Periodic) -> Option<[f64; 3]> {
        match k {
            0 => {
                self.periodic_update(p);
                None
            }
            _ => self.adaptation(p),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fast() -> Fast {
        Fast::new(&[50.0, 0.5, 0.02, 120.0, 125.0, 0.1])
    }

    /// Algorithm 2 by hand: α* = q/(l·w)·α₀, one step of at most δ = 10 % towards α*.
    #[test]
    fn algorithm2_steps() {
        let f = fast();
        // α* = 0.02/(1e-4·125)·50 = 80 > 50: up by 10 % to 55
        assert!((f.adapt(50.0, 0.02, 1e-4) - 55.0).abs() < 1e-12);
        // α* = 80, α = 75: 82.5 would overshoot, stop at α* = 80
        assert!((f.adapt(75.0, 0.02, 1e-4) - 80.0).abs() < 1e-12);
        // α* = 0.002/(1e-3·125)·50 = 0.8 < 50: down by 10 % to 45
        assert!((f.adapt(50.0, 0.002, 1e-3) - 45.0).abs() < 1e-12);
        // α* = 0.8, α = 0.85: 0.765 would undershoot, stop at 0.8
        assert!((f.adapt(0.85, 0.002, 1e-3) - 0.8).abs() < 1e-12);
        // no loss in the interval: α* = ∞, up by δ; no loss and no queue: unchanged
        assert!((f.adapt(50.0, 0.01, 0.0) - 55.0).abs() < 1e-12);
        assert_eq!(f.adapt(50.0, 0.0, 0.0), 50.0);
    }

    /// Eq. (1) with the window of one RTT ago: 20 ms updates, RTT 40 ms (2 updates), base RTT
    /// 20 ms. Windows 100, 120, 140 were in force over the last three intervals and the window is
    /// 160 now: w_old = 100, 160/2 + (0.02/0.04·100 + 50)/2 = 130 (the current window in its
    /// place would give 145).
    #[test]
    fn periodic_update_uses_the_window_of_one_rtt_ago() {
        let mut c = Fast::new(&[50.0, 0.5, 0.02, 0.0, 125.0, 0.1]).connection(1);
        let (base, in_ca, sent, signals) = ([0.02], [true], [0u64], [0u64]);
        let (none_sum, none_n) = ([0.0], [0u64]);
        for w in [100.0, 120.0, 140.0] {
            let mut cwnd = [w];
            let mut p = Periodic {
                active: true,
                cwnd: &mut cwnd,
                base_rtt: &base,
                in_ca: &in_ca,
                sent: &sent,
                signals: &signals,
                rtt_sum: &none_sum,
                rtt_n: &none_n,
            };
            c.on_timer(0, &mut p); // no samples: records the window, leaves it
            assert_eq!(p.cwnd[0], w);
        }
        let mut cwnd = [160.0];
        let (sum, n) = ([0.08], [2u64]);
        let mut p = Periodic {
            active: true,
            cwnd: &mut cwnd,
            base_rtt: &base,
            in_ca: &in_ca,
            sent: &sent,
            signals: &signals,
            rtt_sum: &sum,
            rtt_n: &n,
        };
        c.on_timer(0, &mut p);
        assert!((p.cwnd[0] - 130.0).abs() < 1e-12, "{}", p.cwnd[0]);
    }

    /// Eq. (1) with γ = 0.5: w ← min(2w, w/2 + (baseRTT/RTT·w + α)/2).
    #[test]
    fn window_update() {
        let f = fast();
        // 100/2 + (0.1/0.125·100 + 50)/2 = 50 + 65 = 115
        assert!((f.update(100.0, 0.125, 0.1, 50.0) - 115.0).abs() < 1e-12);
        // no queue: w/2 + (w + α)/2 = w + α/2, capped at 2w
        assert!((f.update(10.0, 0.1, 0.1, 50.0) - 20.0).abs() < 1e-12);
    }

    /// The periodic updates by hand: two routes, base RTT 0.1 s; route 0 saw RTTs 0.12 and
    /// 0.13 (mean 0.125) and is in congestion avoidance, route 1 saw 0.2 and is in recovery.
    /// Eq. (1) moves only route 0 (100 → 115, as in `window_update`). Algorithm 2 sees
    /// q = (0.02 + 0.03 + 0.1)/3 = 0.05, l = 1/100 and steps α = 50 toward
    /// α* = 0.05/(0.01·125)·50 = 2 by at most 10 % → 45.
    #[test]
    fn periodic_hooks() {
        let mut c = fast().connection(2);
        assert_eq!(c.timers(), vec![0.02, 120.0]);
        let mut cwnd = [100.0, 40.0];
        let (base, in_ca) = ([0.1, 0.1], [true, false]);
        let (sent, signals) = ([60u64, 40], [1u64, 0]);
        let (sum, n) = ([0.25, 0.2], [2u64, 1]);
        let mut p = Periodic {
            active: true,
            cwnd: &mut cwnd,
            base_rtt: &base,
            in_ca: &in_ca,
            sent: &sent,
            signals: &signals,
            rtt_sum: &sum,
            rtt_n: &n,
        };
        assert_eq!(c.on_timer(0, &mut p), None);
        assert!((p.cwnd[0] - 115.0).abs() < 1e-12);
        assert_eq!(p.cwnd[1], 40.0);
        let rec = c.on_timer(1, &mut p).expect("a record");
        assert!((rec[1] - 0.05).abs() < 1e-12, "{rec:?}");
        assert!((rec[2] - 0.01).abs() < 1e-15);
        assert!((rec[0] - 45.0).abs() < 1e-12);
        // no samples and nothing sent since: no window change, no record
        let (zs, zn) = ([0.0, 0.0], [0u64, 0]);
        let mut cwnd2 = [115.0, 40.0];
        let mut q = Periodic { cwnd: &mut cwnd2, rtt_sum: &zs, rtt_n: &zn, ..p };
        assert_eq!(c.on_timer(0, &mut q), None);
        assert_eq!(q.cwnd[0], 115.0);
        assert_eq!(c.on_timer(1, &mut q), None);
    }
}
