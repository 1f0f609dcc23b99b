//! Connections: the subflows of one (MP)TCP connection and its controller instance — start and
//! stop, the window increase and decrease through the controller (in the mode it asks for,
//! [`WindowUpdate`]) and its periodic updates. The engine names no algorithm: everything an
//! algorithm keeps lives in its `cc/` file, reached through the `Controller` hooks.
use super::{ns, Sim, K_TIMER};
use crate::cc::{fixed_point_step, Controller, Periodic, Subflows, WindowUpdate, MAX_TIMERS};

pub(super) struct Conn {
    pub(super) group: u32,
    pub(super) first: u32,
    pub(super) n: u32,
    pub(super) active: bool,
    /// The controller's choices, read once (they are constant).
    update: WindowUpdate,
    pub(super) reacts_to_ecn: bool,
    timers_ns: [u64; MAX_TIMERS],
    /// Number of periodic updates.
    pub(super) n_timers: u8,
}

impl Conn {
    pub(super) fn new(group: u32, first: u32, n: u32, cc: &dyn Controller) -> Conn {
        let mut timers_ns = [0; MAX_TIMERS];
        let mut n_timers = 0;
        for (k, t) in cc.timers().into_iter().enumerate().take(MAX_TIMERS) {
            timers_ns[k] = ns(t);
            n_timers += 1;
        }
        Conn {
            group,
            first,
            n,
            active: false,
            update: cc.window_update(),
            reacts_to_ecn: cc.reacts_to_ecn(),
            timers_ns,
            n_timers,
        }
    }
    fn routes(&self) -> std::ops::Range<usize> {
        self.first as usize..(self.first + self.n) as usize
    }
}

/// The controller's view of connection `c`'s routes.
#[inline]
fn view<'a>(cwnd: &'a [f64], srtt: &'a [f64], base_rtt: &'a [f64], conn: &Conn) -> Subflows<'a> {
    let r = conn.routes();
    Subflows {
        cwnd: &cwnd[r.clone()],
        rtt: &srtt[r.clone()],
        loss_interval: &[],
        base_rtt: &base_rtt[r],
    }
}

impl Sim {
    pub(super) fn start(&mut self, c: usize) {
        self.conns[c].active = true;
        self.linux_push(c);
        // lowest-RTT-first: the subflow with the smallest RTT gets the first segments
        let mut order: Vec<usize> = self.conns[c].routes().collect();
        order.sort_by(|&a, &b| self.srtt[a].partial_cmp(&self.srtt[b]).unwrap());
        for s in order {
            self.try_send(s);
        }
    }

    pub(super) fn stop(&mut self, c: usize) {
        self.conns[c].active = false;
        for s in self.conns[c].routes() {
            self.sf[s].rto_deadline = 0;
        }
    }

    /// An ACK that reaches cong_avoid and acknowledges `delivered` packets: slow start below
    /// ssthresh (one packet per delivered packet), then the controller's I_r per delivered
    /// packet (Linux counts SACKed packets as delivered too), per ACK, or through the
    /// fixed-point counter of mptcp_olia.c — as the controller's [`WindowUpdate`] says.
    pub(super) fn increase(&mut self, s: usize, delivered: u64) {
        let c = self.sf[s].conn as usize;
        let conn = &self.conns[c];
        let r = s - conn.first as usize;
        let mut d = match conn.update {
            WindowUpdate::FixedPoint { scale_bits } => {
                // once per ACK; slow start while w ≤ ssthresh; the window moves by whole
                // packets, ≥ 1. The window that the other routes see during recovery is
                // ssthresh (`mptcp_get_crt_cwnd`), which is what `cwnd` holds here.
                if self.cwnd[s] <= self.sf[s].ssthresh {
                    self.cwnd[s] += 1.0;
                    return;
                }
                let i = self.ccs[c].on_ack(&view(&self.cwnd, &self.srtt, &self.base_rtt, conn), r);
                match fixed_point_step(&mut self.sf[s].cwnd_cnt, i, scale_bits) {
                    1 => self.cwnd[s] += 1.0,
                    -1 => self.cwnd[s] = (self.cwnd[s] - 1.0).max(1.0),
                    _ => {}
                }
                return;
            }
            WindowUpdate::PerAck => 1.0,
            WindowUpdate::Host if self.opt.per_ack_increase => 1.0,
            WindowUpdate::Host => delivered as f64,
        };
        let ss = self.sf[s].ssthresh;
        let w = self.cwnd[s];
        if self.opt.slow_start_at_ssthresh && w <= ss {
            self.cwnd[s] += d;
            return;
        }
        if w < ss {
            let inc = (ss - w).min(d);
            self.cwnd[s] += inc;
            d -= inc;
        }
        if d > 0.0 {
            let i = self.ccs[c].on_ack(&view(&self.cwnd, &self.srtt, &self.base_rtt, conn), r);
            self.cwnd[s] = (self.cwnd[s] + i * d).max(1.0);
        }
    }

    /// Loss event on route s: ssthresh = w = max(w − D_r, min_cwnd) (whole packets for the
    /// fixed-point mode: mptcp_olia.c's tcp_reno_ssthresh = max(w >> 1, 2)).
    pub(super) fn reduce(&mut self, s: usize) {
        let c = self.sf[s].conn as usize;
        let conn = &self.conns[c];
        let r = s - conn.first as usize;
        let v = view(&self.cwnd, &self.srtt, &self.base_rtt, conn);
        let mut w = self.ccs[c].cwnd_after_loss(&v, r);
        if let WindowUpdate::FixedPoint { .. } = conn.update {
            w = w.floor();
        }
        let total: f64 = v.cwnd.iter().sum();
        let decrease = self.cwnd[s] - w;
        if self.now >= self.measure_ns.0 && self.now <= self.measure_ns.1 {
            self.sf[s].ds_sum += decrease / total;
            self.sf[s].ds_n += 1;
        }
        self.cwnd[s] = w;
        let sf = &mut self.sf[s];
        sf.ssthresh = w;
        sf.loss_events += 1;
        let repeated_timeout = sf.backoff != 0;
        self.ccs[c].on_window_reduction(r, repeated_timeout);
    }

    /// Periodic update k of connection c's controller; then the subflows send what the new
    /// windows allow, and the update is scheduled again.
    pub(super) fn timer_event(&mut self, c: usize, k: usize) {
        let conn = &self.conns[c];
        let routes = conn.routes();
        let n = routes.len();
        for (i, s) in routes.clone().enumerate() {
            self.scratch_in_ca[i] = self.in_ca(s);
            self.scratch_sent[i] = self.sf[s].sent;
            self.scratch_signals[i] = self.sf[s].signals;
            let acc = std::mem::take(&mut self.sf[s].timer_rtt[k]);
            self.scratch_rtt_sum[i] = acc.0;
            self.scratch_rtt_n[i] = acc.1;
        }
        let active = conn.active;
        let mut p = Periodic {
            active,
            cwnd: &mut self.cwnd[routes.clone()],
            base_rtt: &self.base_rtt[routes.clone()],
            in_ca: &self.scratch_in_ca[..n],
            sent: &self.scratch_sent[..n],
            signals: &self.scratch_signals[..n],
            rtt_sum: &self.scratch_rtt_sum[..n],
            rtt_n: &self.scratch_rtt_n[..n],
        };
        if let Some(rec) = self.ccs[c].on_timer(k, &mut p) {
            let t = self.now as f64 / super::NS_PER_S;
            self.series
                .adapt_log
                .push((t, routes.start as u32, rec[0], rec[1], rec[2]));
        }
        if active {
            for s in routes {
                self.try_send(s);
            }
        }
        let next = self.now + self.conns[c].timers_ns[k];
        self.push(next, K_TIMER + k as u64, c as u32);
    }
}

#[cfg(test)]
mod tests {
    use crate::run_json;

    fn two_paths(algo: &str, params: &str) -> String {
        format!(
            r#"{{"duration_s": 20, "seed": 5, "measure": [5, 20], "sample_interval_s": 0.5,
            "links": [{{"capacity_mbps": 10, "delay_ms": 10, "buffer_pkts": 50}},
                      {{"capacity_mbps": 10, "delay_ms": 20, "buffer_pkts": 50}}],
            "groups": [{{"algorithm": "{algo}", "params": {params}, "count": 2, "paths": [[0], [1]], "start_s": 0, "stop_s": 20}}]
            }}"#
        )
    }

    /// OLIA's fixed-point window mode (per_ack = 1) keeps every window a whole number of packets.
    #[test]
    fn fixed_point_windows_are_whole_packets() {
        let out = run_json(&two_paths("olia", r#"{"per_ack": 1}"#)).unwrap();
        let w = out.f64("ts_cwnd");
        assert!(!w.is_empty());
        assert!(w.iter().all(|x| x.fract() == 0.0 && *x >= 1.0), "{w:?}");
        // LIA (host mode, per acknowledged packet) has fractional windows
        let out = run_json(&two_paths("lia", "{}")).unwrap();
        assert!(out.f64("ts_cwnd").iter().any(|x| x.fract() != 0.0));
    }

    /// FAST's periodic updates run: with Algorithm 2 every 2 s each connection logs its α
    /// (about 20/2 − 1 records per connection), and α changes by at most δ = 10 % per step.
    #[test]
    fn periodic_updates_run_and_log() {
        let out = run_json(&two_paths("fast", r#"{"adapt_interval_s": 2}"#)).unwrap();
        let alpha = out.f64("fa_alpha");
        let sf = out.u32("fa_sf");
        assert!(alpha.len() >= 2 * 8, "{}", alpha.len());
        for first in [0u32, 2] {
            let a: Vec<f64> = alpha
                .iter()
                .zip(sf)
                .filter(|(_, s)| **s == first)
                .map(|(a, _)| *a)
                .collect();
            let mut prev = 50.0;
            for x in a {
                assert!(
                    x <= prev * 1.1 + 1e-9 && x >= prev * 0.9 - 1e-9,
                    "{prev} → {x}"
                );
                prev = x;
            }
        }
    }

    /// A periodic update shorter than 1 µs is refused (issue #12: it would never let time pass).
    #[test]
    fn absurd_update_interval_is_an_error() {
        let e = run_json(&two_paths("fast", r#"{"update_interval_s": 1e-300}"#))
            .err()
            .unwrap();
        assert!(e.starts_with("groups[0].algorithm:"), "{e}");
        let e = run_json(&two_paths("fast", r#"{"adapt_interval_s": 1e-9}"#))
            .err()
            .unwrap();
        assert!(e.contains("every 1e-9 s"), "{e}");
    }
}
