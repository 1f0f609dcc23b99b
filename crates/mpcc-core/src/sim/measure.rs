//! Measurement: the time series (sampled every `sample_interval_s`), the counters at the
//! measurement window's ends, the controllers' adaptation log, and the output columns.
use super::{Sim, K_SAMPLE, NS_PER_S};

/// Counters at one instant, for the measurement window.
#[derive(Clone, Default)]
pub(super) struct Snapshot {
    taken: bool,
    sf: Vec<[u64; 8]>,
    link: Vec<[u64; 4]>,
}

/// The time series and the adaptation log.
#[derive(Default)]
pub(super) struct Series {
    sf_time: Vec<f64>,
    sf_id: Vec<u32>,
    cwnd: Vec<f64>,
    srtt: Vec<f64>,
    rate: Vec<f64>,
    losses: Vec<u64>,
    link_time: Vec<f64>,
    link_id: Vec<u32>,
    queue: Vec<u32>,
    drops: Vec<u64>,
    /// Controllers' periodic records: (time s, first subflow of the connection, three values).
    pub(super) adapt_log: Vec<(f64, u32, f64, f64, f64)>,
}

/// Bytes of one subflow row and one link row of the time series.
pub(super) const SF_ROW_BYTES: usize = 8 + 4 + 8 + 8 + 8 + 8;
pub(super) const LINK_ROW_BYTES: usize = 8 + 4 + 4 + 8;

impl Series {
    pub(super) fn memory_bytes(&self) -> usize {
        self.sf_time.capacity() * SF_ROW_BYTES
            + self.link_time.capacity() * LINK_ROW_BYTES
            + self.adapt_log.capacity() * 32
    }
}

/// A column of the output.
pub enum Column {
    F64(Vec<f64>),
    U64(Vec<u64>),
    U32(Vec<u32>),
}

/// What a run returns: named columns (per subflow, per link, time series) and counters.
pub struct Output {
    pub columns: Vec<(&'static str, Column)>,
    pub events: u64,
    pub data_packets: u64,
}

impl Output {
    pub fn get(&self, name: &str) -> Option<&Column> {
        self.columns
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, c)| c)
    }
    pub fn f64(&self, name: &str) -> &[f64] {
        match self.get(name) {
            Some(Column::F64(v)) => v,
            _ => panic!("no f64 column {name}"),
        }
    }
    pub fn u64(&self, name: &str) -> &[u64] {
        match self.get(name) {
            Some(Column::U64(v)) => v,
            _ => panic!("no u64 column {name}"),
        }
    }
    pub fn u32(&self, name: &str) -> &[u32] {
        match self.get(name) {
            Some(Column::U32(v)) => v,
            _ => panic!("no u32 column {name}"),
        }
    }
}

impl Sim {
    pub(super) fn sample(&mut self) {
        let now = self.now;
        // the rows of this sample must fit the memory budget (checked before they are added)
        let rows = self.sf.len() * SF_ROW_BYTES + self.links.len() * LINK_ROW_BYTES;
        if let Err(e) = self
            .budget
            .check_now(self.events, self.memory_bytes() + 2 * rows)
        {
            self.exceeded = Some(e);
            self.queue.clear();
            return;
        }
        let t = now as f64 / NS_PER_S;
        let dt = self.sample_ns as f64 / NS_PER_S;
        let ts = &mut self.series;
        for s in 0..self.sf.len() {
            let active = self.conns[self.sf[s].conn as usize].active;
            let sf = &mut self.sf[s];
            let d = sf.delivered - sf.delivered_sample;
            sf.delivered_sample = sf.delivered;
            if !active {
                continue;
            }
            ts.sf_time.push(t);
            ts.sf_id.push(s as u32);
            ts.cwnd.push(self.cwnd[s]);
            ts.srtt
                .push(if sf.have_rtt { self.srtt[s] } else { f64::NAN });
            ts.rate.push(d as f64 * self.pkt_bits / dt / 1e6);
            ts.losses.push(sf.loss_events);
        }
        for (l, link) in self.links.iter_mut().enumerate() {
            let q = link.queue_at(now);
            ts.link_time.push(t);
            ts.link_id.push(l as u32);
            ts.queue.push(q);
            ts.drops.push(link.drops);
        }
        if now + self.sample_ns <= self.end {
            self.push(now + self.sample_ns, K_SAMPLE, 0);
        }
    }

    pub(super) fn snapshot(&mut self, which: usize) {
        self.snaps[which] = Snapshot {
            taken: true,
            sf: self
                .sf
                .iter()
                .map(|f| {
                    [
                        f.delivered,
                        f.sent,
                        f.retrans,
                        f.drops,
                        f.marks,
                        f.loss_events,
                        f.timeouts,
                        f.probes,
                    ]
                })
                .collect(),
            link: self
                .links
                .iter()
                .map(|l| [l.arrivals(), l.drops, l.marks, l.accepted])
                .collect(),
        };
    }

    /// Approximate bytes held by the run's state (for the memory budget).
    pub(super) fn memory_bytes(&self) -> usize {
        self.sf.iter().map(|s| s.memory_bytes()).sum::<usize>()
            + self.sf.capacity() * std::mem::size_of::<super::tcp::Subflow>()
            + self.links.iter().map(|l| l.memory_bytes()).sum::<usize>()
            + self.queue.memory_bytes()
            + self.series.memory_bytes()
            + match &self.mptcp {
                super::Mptcp::Linux(l) => l.memory_bytes(),
                super::Mptcp::Ideal => 0,
            }
            + self.budget.static_bytes
    }

    /// The measurements (call after `run_until` returned true), or the budget that ran out.
    pub fn finish(mut self) -> Result<Output, String> {
        if let Some(e) = self.exceeded.take() {
            return Err(e);
        }
        if !self.snaps[1].taken {
            self.snapshot(1);
        }
        let (s0, s1) = (&self.snaps[0], &self.snaps[1]);
        let sfd = |k: usize| -> Vec<u64> {
            (0..self.sf.len())
                .map(|i| s1.sf[i][k] - s0.sf[i][k])
                .collect()
        };
        let lkd = |k: usize| -> Vec<u64> {
            (0..self.links.len())
                .map(|i| s1.link[i][k] - s0.link[i][k])
                .collect()
        };
        let ts = std::mem::take(&mut self.series);
        let log = &ts.adapt_log;
        let mut columns = vec![
            ("sf_group", Column::U32(self.sf_group.clone())),
            ("sf_flow", Column::U32(self.sf_flow.clone())),
            ("sf_route", Column::U32(self.sf_route.clone())),
            ("sf_delivered", Column::U64(sfd(0))),
            ("sf_sent", Column::U64(sfd(1))),
            ("sf_retrans", Column::U64(sfd(2))),
            ("sf_drops", Column::U64(sfd(3))),
            ("sf_marks", Column::U64(sfd(4))),
            ("sf_loss_events", Column::U64(sfd(5))),
            ("sf_timeouts", Column::U64(sfd(6))),
            ("sf_loss_probes", Column::U64(sfd(7))),
            ("sf_srtt", Column::F64(self.srtt.clone())),
            (
                "sf_ds_sum",
                Column::F64(self.sf.iter().map(|f| f.ds_sum).collect()),
            ),
            (
                "sf_ds_n",
                Column::U64(self.sf.iter().map(|f| f.ds_n).collect()),
            ),
            ("sf_base_rtt", Column::F64(self.base_rtt.clone())),
            // since the start, as ss reports a receiving socket's segs_out / data_segs_in
            (
                "sf_acks_sent",
                Column::U64(self.sf.iter().map(|f| f.acks_sent).collect()),
            ),
            // (data_segs_in: the packets not dropped, those in flight at the end included)
            (
                "sf_segs_in",
                Column::U64(self.sf.iter().map(|f| f.sent - f.drops).collect()),
            ),
            ("link_arrivals", Column::U64(lkd(0))),
            ("link_drops", Column::U64(lkd(1))),
            ("link_marks", Column::U64(lkd(2))),
            ("link_accepted", Column::U64(lkd(3))),
            (
                "link_max_queue",
                Column::U32(self.links.iter().map(|l| l.max_queue).collect()),
            ),
            ("fa_time", Column::F64(log.iter().map(|e| e.0).collect())),
            ("fa_sf", Column::U32(log.iter().map(|e| e.1).collect())),
            ("fa_alpha", Column::F64(log.iter().map(|e| e.2).collect())),
            ("fa_q", Column::F64(log.iter().map(|e| e.3).collect())),
            ("fa_l", Column::F64(log.iter().map(|e| e.4).collect())),
            ("ts_sf_time", Column::F64(ts.sf_time)),
            ("ts_sf_id", Column::U32(ts.sf_id)),
            ("ts_cwnd", Column::F64(ts.cwnd)),
            ("ts_srtt", Column::F64(ts.srtt)),
            ("ts_rate", Column::F64(ts.rate)),
            ("ts_losses", Column::U64(ts.losses)),
            ("ts_link_time", Column::F64(ts.link_time)),
            ("ts_link_id", Column::U32(ts.link_id)),
            ("ts_queue", Column::U32(ts.queue)),
            ("ts_drops", Column::U64(ts.drops)),
        ];
        if let super::Mptcp::Linux(l) = &self.mptcp {
            // per group: the connection-level samples (linux connection level only)
            let g = &l.samples;
            let u = |f: fn(&super::mptcp_linux::GroupSamples) -> u64| {
                Column::U64(g.iter().map(f).collect())
            };
            let x = |f: fn(&super::mptcp_linux::GroupSamples) -> f64| {
                Column::F64(g.iter().map(f).collect())
            };
            columns.extend([
                ("msk_sf_samples", u(|s| s.sf_samples)),
                ("msk_idle", u(|s| s.idle)),
                ("msk_idle_no_data", u(|s| s.idle_no_data)),
                ("msk_idle_rwnd_full", u(|s| s.idle_rwnd_full)),
                ("msk_conn_samples", u(|s| s.conn_samples)),
                ("msk_sndbuf_bytes", x(|s| s.sndbuf_bytes)),
                ("msk_queued_bytes", x(|s| s.queued_bytes)),
                ("msk_sf_queued_bytes", x(|s| s.sf_queued_bytes)),
                ("msk_sf_notsent_bytes", x(|s| s.sf_notsent_bytes)),
                ("msk_wnd_bytes", x(|s| s.wnd_bytes)),
                ("msk_reinjected", u(|s| s.reinjected)),
                ("msk_stale", u(|s| s.stale)),
            ]);
            // per subflow
            columns.extend([
                (
                    "msk_path_samples",
                    Column::U64(l.sfs.iter().map(|f| f.samples).collect()),
                ),
                (
                    "msk_path_idle",
                    Column::U64(l.sfs.iter().map(|f| f.idle_samples).collect()),
                ),
                (
                    "msk_path_queued_bytes",
                    Column::F64(l.sfs.iter().map(|f| f.queued_sum).collect()),
                ),
            ]);
        }
        Ok(Output {
            columns,
            events: self.events,
            data_packets: self.data_packets,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::run_json;

    fn run(measure: &str, sample: f64) -> crate::Output {
        run_json(&format!(
            r#"{{"duration_s": 10, "seed": 2, "measure": {measure}, "sample_interval_s": {sample},
            "links": [{{"capacity_mbps": 12, "delay_ms": 5, "buffer_pkts": 30}}],
            "groups": [{{"algorithm": "reno", "count": 2, "paths": [[0]], "start_s": 0, "stop_s": 10}}],
            "options": {{"start_jitter_s": 0}}}}"#
        ))
        .unwrap()
    }

    /// The summary counts only the measurement window: 12 Mb/s of 1500-byte packets is 1000
    /// packets/s, so a saturated link delivers ≈ 1000·(t1 − t0) in the window.
    #[test]
    fn window_counts_only_the_window() {
        let out = run("[4, 10]", 0.0);
        let d: u64 = out.u64("sf_delivered").iter().sum();
        assert!((d as f64 - 6000.0).abs() < 0.03 * 6000.0, "{d}");
        let out = run("[4, 7]", 0.0);
        let d: u64 = out.u64("sf_delivered").iter().sum();
        assert!((d as f64 - 3000.0).abs() < 0.03 * 3000.0, "{d}");
        assert!(
            out.f64("ts_sf_time").is_empty(),
            "no sampling at interval 0"
        );
    }

    /// Sampling every 0.5 s gives one row per link per sample (t = 0.5 … 10) and one row per
    /// active subflow; from t = 4 s on the two flows' sampled rates add up to the link rate
    /// (12 Mb/s).
    #[test]
    fn samples_have_one_row_per_subflow_and_link() {
        let out = run("[1, 10]", 0.5);
        assert_eq!(out.f64("ts_link_time").len(), 20);
        assert_eq!(out.f64("ts_sf_time").len(), 40);
        let (t, rate) = (out.f64("ts_sf_time"), out.f64("ts_rate"));
        let late: f64 = t
            .iter()
            .zip(rate)
            .filter(|(t, _)| **t >= 4.0)
            .map(|(_, r)| r)
            .sum();
        let samples = t.iter().filter(|t| **t >= 4.0).count() as f64 / 2.0;
        assert!((late / samples - 12.0).abs() < 0.5, "{}", late / samples);
    }
}
