//! The limits of one run (issue #12): an event budget and a memory budget, so that any
//! scenario ends — with results, or with an error naming the limit and the field behind it —
//! and never with an allocation abort or an endless loop.
//!
//! Before the run, [`Budget::check`] rejects what cannot fit: too many subflows for the memory
//! budget, time series that would outgrow it. During the run the loop checks the event count
//! and the memory in use every [`CHECK_EVERY`] events and at every sample.
//!
//! Defaults (when the run description gives none): `max_memory_mb` = 4096; `max_events` = 20 ×
//! an upper estimate of the events the scenario needs (every link busy all the time, four events
//! per packet, every periodic update, sample and background packet), at least 10^7.
use super::measure::{LINK_ROW_BYTES, SF_ROW_BYTES};
use crate::config::Config;

/// Events between two budget checks.
pub const CHECK_EVERY: u64 = 1 << 20;

/// Default memory budget, MiB.
pub const DEFAULT_MAX_MEMORY_MB: f64 = 4096.0;

/// Bytes of state per subflow before it sends (struct, rings, controller, path), a bound.
const SUBFLOW_BYTES: f64 = 1536.0;

#[derive(Debug, Clone)]
pub struct Budget {
    pub max_events: u64,
    pub max_memory_bytes: usize,
    /// Number of subflows of the run.
    pub subflows: u64,
    /// Bytes allocated up front (subflows, paths, controllers), counted once.
    pub static_bytes: usize,
    /// Event count at which the loop checks next.
    pub(super) next_check: u64,
}

fn mb(bytes: f64) -> String {
    format!("{:.0} MB", bytes / 1e6)
}

impl Budget {
    /// The budget of a run, or why the run cannot fit in it (the error names the field).
    pub fn check(cfg: &Config) -> Result<Budget, String> {
        let d = cfg.duration_s;
        if !(d > 0.0) || !d.is_finite() {
            return Err(format!(
                "duration_s: {d} is not a positive number of seconds"
            ));
        }
        // 2^64 ns ≈ 584 years: the clock must not overflow
        if d > 1e10 {
            return Err(format!(
                "duration_s: {d} s is longer than the simulator's clock (1e10 s)"
            ));
        }
        let max_memory_mb = cfg.max_memory_mb.unwrap_or(DEFAULT_MAX_MEMORY_MB);
        if !(max_memory_mb > 0.0) {
            return Err(format!(
                "max_memory_mb: {max_memory_mb} is not a positive number"
            ));
        }
        let max_mem = (max_memory_mb * 1e6).min(usize::MAX as f64 / 2.0);
        let pkt_bits = cfg.packet_bytes as f64 * 8.0;
        if cfg.packet_bytes == 0 {
            return Err("packet_bytes: must be ≥ 1".into());
        }
        let ic = cfg.options.initial_cwnd;
        if !(ic >= 1.0) || !(ic <= (super::tcp::MAX_SCOREBOARD / 2) as f64) {
            return Err(format!(
                "sim.initial_cwnd: {ic} packets; use a window from 1 to {}",
                super::tcp::MAX_SCOREBOARD / 2
            ));
        }
        // subflows and their fixed memory
        let mut subflows = 0u64;
        let mut events = 1e6;
        for (gi, g) in cfg.groups.iter().enumerate() {
            let n = g.count as u64 * g.paths.len() as u64;
            subflows += n;
            let bytes = subflows as f64 * SUBFLOW_BYTES;
            if bytes > max_mem {
                return Err(format!(
                    "groups[{gi}].count: {} connections of {} paths bring the run to {subflows} subflows, \
                     ≈ {} of state, over the memory budget of {}; use fewer connections or raise max_memory_mb",
                    g.count,
                    g.paths.len(),
                    mb(bytes),
                    mb(max_mem)
                ));
            }
            events += 16.0 * n as f64;
        }
        let static_bytes = (subflows as f64 * SUBFLOW_BYTES) as usize;
        // time series rows
        if cfg.sample_interval_s > 0.0 {
            let samples = (d / cfg.sample_interval_s).floor();
            let row = subflows as f64 * SF_ROW_BYTES as f64
                + cfg.links.len() as f64 * LINK_ROW_BYTES as f64;
            let bytes = samples * row;
            if !(bytes + static_bytes as f64 <= max_mem) {
                return Err(format!(
                    "sample_interval_s: sampling every {} s for {d} s gives {samples:.3e} samples, \
                     ≈ {} of time series, over the memory budget of {}; use a larger interval or raise max_memory_mb",
                    cfg.sample_interval_s,
                    mb(bytes),
                    mb(max_mem)
                ));
            }
            events += samples;
        } else if cfg.sample_interval_s < 0.0 || cfg.sample_interval_s.is_nan() {
            return Err(format!(
                "sample_interval_s: {} must be ≥ 0",
                cfg.sample_interval_s
            ));
        }
        // events: links busy all the time (≤ 4 events per packet), background sources
        for l in &cfg.links {
            events += 4.0 * d * l.capacity_mbps * 1e6 / pkt_bits;
        }
        for b in &cfg.background {
            events +=
                2.0 * d * b.rate_mbps * 1e6 / pkt_bits + 4.0 * d / (b.mean_on_s + b.mean_off_s);
        }
        // periodic updates are ≥ 1 µs apart (checked when the groups are built)
        for g in &cfg.groups {
            events += g.count as f64 * 2.0 * d / 1e-3;
        }
        let max_events = match cfg.max_events {
            Some(m) => m,
            None => (20.0 * events).max(1e7).min(u64::MAX as f64 / 2.0) as u64,
        };
        Ok(Budget {
            max_events,
            max_memory_bytes: max_mem as usize,
            subflows,
            static_bytes,
            next_check: CHECK_EVERY.min(max_events),
        })
    }

    /// Check the budget with `events` processed and `memory` bytes in use.
    pub(super) fn check_now(&mut self, events: u64, memory: usize) -> Result<(), String> {
        if events >= self.max_events {
            return Err(format!(
                "max_events: the run reached its event budget of {} events; raise max_events \
                 (Python: mpcc.sim.run(..., max_events=N)) or shorten duration_s",
                self.max_events
            ));
        }
        if memory > self.max_memory_bytes {
            return Err(format!(
                "max_memory_mb: the run holds ≈ {} , over its memory budget of {}; raise \
                 max_memory_mb or sample less often (sample_interval_s)",
                mb(memory as f64),
                mb(self.max_memory_bytes as f64)
            ));
        }
        self.next_check = (events + CHECK_EVERY).min(self.max_events);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::run_json;

    fn cfg(extra_top: &str, group: &str, options: &str) -> String {
        format!(
            r#"{{"duration_s": 10, "measure": [0, 10] {extra_top},
            "links": [{{"capacity_mbps": 10, "delay_ms": 5, "buffer_pkts": 50}}],
            "groups": [{{"algorithm": "reno", "count": 2, "paths": [[0]], "start_s": 0, "stop_s": 10 {group}}}],
            "options": {{ {options} }}}}"#
        )
    }

    fn err(json: &str) -> String {
        run_json(json).err().expect("an error")
    }

    /// The event budget stops the run with an error naming it (a 10 s run of two flows on a
    /// 10 Mb/s link takes ≈ 8000 packets, so 1000 events cannot suffice).
    #[test]
    fn event_budget_ends_the_run() {
        let e = err(&cfg(r#", "max_events": 1000"#, "", ""));
        assert!(e.starts_with("max_events:"), "{e}");
        assert!(run_json(&cfg(r#", "max_events": 10000000"#, "", "")).is_ok());
    }

    /// Sampling every nanosecond would need ≈ 10^10 rows: refused before the run.
    #[test]
    fn time_series_that_cannot_fit_are_refused() {
        let e = err(&cfg(r#", "sample_interval_s": 1e-9"#, "", ""));
        assert!(e.starts_with("sample_interval_s:"), "{e}");
        // a budget too small for a fine series that would otherwise fit
        let e = err(&cfg(
            r#", "sample_interval_s": 1e-4, "max_memory_mb": 1"#,
            "",
            "",
        ));
        assert!(e.starts_with("sample_interval_s:"), "{e}");
    }

    /// 2^31 connections, or 10^6 flows under a 100 MB budget, are refused with the field.
    #[test]
    fn too_many_connections_are_refused() {
        let huge = cfg("", "", "").replace(r#""count": 2"#, r#""count": 2147483648"#);
        let e = err(&huge);
        assert!(e.starts_with("groups[0].count:"), "{e}");
        let many = cfg(r#", "max_memory_mb": 100"#, "", "")
            .replace(r#""count": 2"#, r#""count": 1000000"#);
        assert!(err(&many).starts_with("groups[0].count:"));
    }

    /// The up-front estimate of a subflow's memory covers its struct, its initial scoreboard
    /// rings (64 segments: flags and send times), its path (a Vec and one link), the engine's
    /// per-subflow columns (cwnd, srtt, base RTT, group, flow, route) and a controller's
    /// per-route state (FAST: six 8-byte values).
    #[test]
    fn subflow_estimate_covers_a_subflow() {
        let bytes = std::mem::size_of::<super::super::tcp::Subflow>() + 64 * 9 + (24 + 4) + 36 + 48;
        assert!(bytes as f64 <= super::SUBFLOW_BYTES, "{bytes}");
    }

    #[test]
    fn absurd_initial_window_is_refused() {
        let e = err(&cfg("", "", r#""initial_cwnd": 1e9"#));
        assert!(e.starts_with("sim.initial_cwnd:"), "{e}");
    }

    /// Windows that grow without bound (MSTCP with a = inf multiplies the window by ∞ on the
    /// first ACK; EWTCP a = 1e300, generalized η = 1e300) end with an error or run, never abort.
    #[test]
    fn unbounded_windows_end_cleanly() {
        for (name, params) in [
            ("mstcp", r#"{"a": "inf"}"#),
            ("ewtcp", r#"{"a": 1e300}"#),
            ("generalized", r#"{"eta": 1e300}"#),
        ] {
            let algo = format!("{name} {params}");
            let json = cfg("", "", "").replace(
                r#""algorithm": "reno""#,
                &format!(r#""algorithm": "{name}", "params": {params}"#),
            );
            match run_json(&json) {
                Ok(out) => assert!(out.u64("sf_delivered").iter().sum::<u64>() > 0, "{algo}"),
                Err(e) => assert!(
                    e.starts_with("groups[0]") || e.starts_with("max_"),
                    "{algo}: {e}"
                ),
            }
        }
    }

    #[test]
    fn bad_capacity_and_duration_name_the_field() {
        let e =
            err(&cfg("", "", "").replace(r#""capacity_mbps": 10"#, r#""capacity_mbps": 1e-300"#));
        assert!(e.starts_with("links[0].capacity_mbps:"), "{e}");
        let e = err(&cfg("", "", "").replace(r#""duration_s": 10"#, r#""duration_s": 1e300"#));
        assert!(e.starts_with("duration_s:"), "{e}");
    }
}
