//! Background traffic: on/off UDP sources (exponential on and off periods) that send at a
//! constant rate while on, along a path of links, and never react to congestion.
use super::{ns, Pkt, Sim, BG, K_BG_SEND, K_BG_TOGGLE};
use crate::config::BackgroundCfg;

pub(super) struct Background {
    /// Index of the path's first link in `Sim::hops`.
    pub(super) path: u32,
    interval_ns: u64,
    mean_on_s: f64,
    mean_off_s: f64,
    stop_ns: u64,
    on: bool,
    next_send: u64,
}

impl Background {
    /// A source from its configuration; the error names the field (after `background[i].`).
    pub(super) fn new(
        b: &BackgroundCfg,
        path: u32,
        pkt_bits: f64,
        end: u64,
    ) -> Result<Background, String> {
        if !(b.rate_mbps > 0.0) || !b.rate_mbps.is_finite() {
            return Err(format!(
                "rate_mbps: {} is not a positive number",
                b.rate_mbps
            ));
        }
        let interval = pkt_bits / (b.rate_mbps * 1e6);
        // at least one packet per simulated day, at most one per nanosecond (issue #12: a rate
        // of 1e-300 Mb/s overflowed the clock; the event count of fast sources is bounded by the
        // event budget)
        if !(interval <= 86_400.0) {
            return Err(format!(
                "rate_mbps: {} Mb/s sends one packet per {interval:.3e} s; use a rate ≥ 1e-6 Mb/s",
                b.rate_mbps
            ));
        }
        for (name, v) in [("mean_on_s", b.mean_on_s), ("mean_off_s", b.mean_off_s)] {
            if !(v > 0.0) || !v.is_finite() {
                return Err(format!("{name}: {v} is not a positive number of seconds"));
            }
        }
        Ok(Background {
            path,
            interval_ns: ns(interval).max(1),
            mean_on_s: b.mean_on_s,
            mean_off_s: b.mean_off_s,
            stop_ns: ns(b.stop_s).min(end),
            on: false,
            next_send: 0,
        })
    }
}

impl Sim {
    pub(super) fn bg_toggle(&mut self, b: usize) {
        let now = self.now;
        let (on, mean_on, mean_off, stop) = {
            let g = &self.bgs[b];
            (g.on, g.mean_on_s, g.mean_off_s, g.stop_ns)
        };
        if now >= stop {
            self.bgs[b].on = false;
            return;
        }
        if on {
            self.bgs[b].on = false;
            let t = now + ns(self.rng.exponential(mean_off));
            self.push(t, K_BG_TOGGLE, b as u32);
        } else {
            self.bgs[b].on = true;
            self.bgs[b].next_send = now;
            self.push(now, K_BG_SEND, b as u32);
            let t = now + ns(self.rng.exponential(mean_on)).max(1);
            self.push(t, K_BG_TOGGLE, b as u32);
        }
    }

    pub(super) fn bg_send(&mut self, b: usize) {
        let now = self.now;
        let g = &mut self.bgs[b];
        if !g.on || now != g.next_send || now >= g.stop_ns {
            return;
        }
        g.next_send = now + g.interval_ns;
        let t = g.next_send;
        let path = g.path;
        self.push(t, K_BG_SEND, b as u32);
        self.forward(
            Pkt {
                ts: now,
                owner: BG | b as u32,
                seq: 0,
                hop: path,
                ce: false,
                ect: false,
            },
            now,
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::run_json;

    /// A 2 Mb/s source, on and off for 0.5 s on average, offers about half its rate: 2 Mb/s of
    /// 1500-byte packets is 166.7 packets/s, so about 83 packets/s over 40 s (a loose 25 %
    /// band: the on/off periods are random, ~40 cycles).
    #[test]
    fn on_off_source_offers_half_its_rate() {
        let out = run_json(
            r#"{"duration_s": 40, "seed": 9, "measure": [0.001, 40],
            "links": [{"capacity_mbps": 100, "delay_ms": 1, "buffer_pkts": 100}],
            "groups": [],
            "background": [{"path": [0], "rate_mbps": 2, "mean_on_s": 0.5, "mean_off_s": 0.5, "start_s": 0, "stop_s": 40}]}"#,
        )
        .unwrap();
        let arrivals = out.u64("link_arrivals")[0] as f64;
        assert!((arrivals / 40.0 - 83.3).abs() < 0.25 * 83.3, "{arrivals}");
    }

    #[test]
    fn absurd_rates_name_the_field() {
        let cfg = |rate: &str| {
            format!(
                r#"{{"duration_s": 1, "measure": [0, 1],
                "links": [{{"capacity_mbps": 10, "delay_ms": 1, "buffer_pkts": 10}}], "groups": [],
                "background": [{{"path": [0], "rate_mbps": {rate}, "mean_on_s": 1, "mean_off_s": 1, "stop_s": 1}}]}}"#
            )
        };
        let e = run_json(&cfg("1e-300")).err().unwrap();
        assert!(e.starts_with("background[0].rate_mbps:"), "{e}");
        let e = run_json(&cfg("0")).err().unwrap();
        assert!(e.starts_with("background[0].rate_mbps:"), "{e}");
    }
}
