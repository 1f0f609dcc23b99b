//! Congestion-control algorithms: the same `on_ack` / `on_loss` interface as the Python
//! reference (`python/mpcc/algorithms`) and the BPF programs (`bpf/`), checked against
//! `spec/vectors/algorithms.json` (see `tests/vectors.rs`).
//!
//! Notation of Peng et al. §II-B: route r of connection s has window w_r (packets) and RTT τ_r
//! (seconds), x_r = w_r/τ_r. `on_ack` returns I_r(w_s), the increase of w_r per ACK on route r;
//! `on_loss` returns D_r(w_s), the decrease of w_r per loss on route r.

/// The algorithms: each name is a file `cc/<name>.rs` with `pub const ALGORITHM` (its name,
/// parameters with defaults, constructor). Adding an algorithm = its file + its name here.
macro_rules! algorithms {
    ($($m:ident),* $(,)?) => {
        $(pub mod $m;)*
        /// Every algorithm, in the order of the Python registry.
        pub const REGISTRY: &[Algorithm] = &[$($m::ALGORITHM),*];
    };
}

algorithms!(
    reno,
    ewtcp,
    coupled,
    semicoupled,
    lia,
    olia,
    balia,
    generalized,
    mstcp,
    mtcp,
    fast,
    scalable,
    epsilon
);

pub use balia::Balia;
pub use coupled::Coupled;
pub use ewtcp::Ewtcp;
pub use fast::Fast;
pub use generalized::Generalized;
pub use lia::Lia;
pub use mstcp::Mstcp;
pub use mtcp::Mtcp;
pub use olia::Olia;
pub use reno::Reno;
pub use semicoupled::Semicoupled;

use serde_json::{Map, Value};

/// The windows, RTTs and per-route state of one connection, as an algorithm sees them.
#[derive(Debug, Clone, Copy, Default)]
pub struct Subflows<'a> {
    /// Congestion window of every route, packets.
    pub cwnd: &'a [f64],
    /// Smoothed RTT of every route, seconds.
    pub rtt: &'a [f64],
    /// OLIA's ℓ_r: max(packets acked since the last loss, packets acked between the last two),
    /// when the caller supplies it (spec vectors); empty: the controller's own measurement.
    pub loss_interval: &'a [f64],
    /// FAST's base (minimum) RTT of every route, seconds.
    pub base_rtt: &'a [f64],
}

impl<'a> Subflows<'a> {
    pub fn new(cwnd: &'a [f64], rtt: &'a [f64]) -> Self {
        Subflows {
            cwnd,
            rtt,
            loss_interval: &[],
            base_rtt: &[],
        }
    }
    #[inline]
    pub fn n(&self) -> usize {
        self.cwnd.len()
    }
    /// Σ_k w_k/τ_k.
    #[inline]
    pub fn total_rate(&self) -> f64 {
        self.cwnd.iter().zip(self.rtt).map(|(w, t)| w / t).sum()
    }
    /// max_k w_k/τ_k.
    #[inline]
    pub fn max_rate(&self) -> f64 {
        self.cwnd
            .iter()
            .zip(self.rtt)
            .map(|(w, t)| w / t)
            .fold(f64::NEG_INFINITY, f64::max)
    }
    /// Σ_k w_k.
    #[inline]
    pub fn total_cwnd(&self) -> f64 {
        self.cwnd.iter().sum()
    }
}

/// How a window follows I_r on an ACK in congestion avoidance (the engine implements each mode;
/// an algorithm picks one with [`Controller::window_update`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowUpdate {
    /// The host's TCP: slow start while w < ssthresh, then I_r per acknowledged packet (Linux
    /// ≥ 4.0), or per ACK when the scenario's `[sim] per_ack_increase` says so (Linux 3.x).
    Host,
    /// Always once per ACK, whatever it acknowledges.
    PerAck,
    /// mptcp_olia.c: once per ACK; slow start while w ≤ ssthresh; otherwise ⌊2^scale_bits·I_r⌋
    /// (rounded toward zero) is added to an integer counter and the window moves by one packet
    /// when the counter reaches ±(2^scale_bits − 1) (the counter is then reset, dropping the
    /// remainder); the window stays a whole number of packets (rounded down after a loss).
    FixedPoint { scale_bits: u32 },
}

/// What the sender tells a controller about one ACK (after loss detection and any window
/// reduction, before the window increase).
#[derive(Debug, Clone, Copy)]
pub struct AckEvent {
    /// The RTT sample of this ACK, seconds.
    pub rtt_s: f64,
    /// First unacknowledged sequence number (packets) after this ACK.
    pub snd_una: u32,
    /// The ACK reaches congestion avoidance / slow start (Linux `cong_avoid`): new data was
    /// delivered and the subflow is not in recovery.
    pub cong_avoid: bool,
}

/// What a periodic update ([`Controller::timers`]) may read and change: the routes of one
/// connection (index r = 0..n).
pub struct Periodic<'a> {
    /// The connection is sending (between its start and stop times).
    pub active: bool,
    /// Congestion windows (packets), which the update may set.
    pub cwnd: &'a mut [f64],
    /// Base (minimum) RTT of every route so far, seconds (∞ before the first sample).
    pub base_rtt: &'a [f64],
    /// Route r is in congestion avoidance with no loss recovery under way.
    pub in_ca: &'a [bool],
    /// Cumulative transmissions of every route (packets, retransmissions included).
    pub sent: &'a [u64],
    /// Cumulative congestion signals of every route: packets detected lost plus ECN-marked ACKs.
    pub signals: &'a [u64],
    /// Σ (seconds) and number of the RTT samples of every route since this update last ran
    /// (the engine keeps one pair per periodic update and clears it after the update).
    pub rtt_sum: &'a [f64],
    pub rtt_n: &'a [u64],
}

/// The pure rules of an algorithm: I_r, D_r, the smallest and the resulting window after a loss
/// and (delay-based algorithms) the periodic window, as functions of one connection's windows
/// and RTTs — no state, no engine hook. This is what `spec/vectors/algorithms.json` checks
/// (`tests/vectors.rs`), the same in Python and BPF. Every [`Controller`] is a `Rule` through its
/// rule methods, so an algorithm is still one file with one `impl Controller`; an engine drives
/// the stateful [`Controller`] (hooks, timers, per-connection instances) and nothing else needs it.
pub trait Rule {
    fn name(&self) -> &'static str;
    /// I_r(w): window increase of route `r` for one ACK on route `r` (packets).
    fn on_ack(&self, sf: &Subflows, r: usize) -> f64;
    /// D_r(w): window decrease of route `r` for one loss on route `r` (packets).
    fn on_loss(&self, sf: &Subflows, r: usize) -> f64;
    /// Smallest window after a loss.
    fn min_cwnd(&self, n_routes: usize) -> f64;
    /// max(w_r − D_r, min_cwnd).
    fn cwnd_after_loss(&self, sf: &Subflows, r: usize) -> f64;
    /// The periodic window of a delay-based rule (FAST eq. (1)); None for loss-based ones.
    fn periodic_window(&self, sf: &Subflows, r: usize) -> Option<f64>;
}

impl<C: Controller + ?Sized> Rule for C {
    fn name(&self) -> &'static str {
        Controller::name(self)
    }
    fn on_ack(&self, sf: &Subflows, r: usize) -> f64 {
        Controller::on_ack(self, sf, r)
    }
    fn on_loss(&self, sf: &Subflows, r: usize) -> f64 {
        Controller::on_loss(self, sf, r)
    }
    fn min_cwnd(&self, n_routes: usize) -> f64 {
        Controller::min_cwnd(self, n_routes)
    }
    fn cwnd_after_loss(&self, sf: &Subflows, r: usize) -> f64 {
        Controller::cwnd_after_loss(self, sf, r)
    }
    fn periodic_window(&self, sf: &Subflows, r: usize) -> Option<f64> {
        Controller::periodic_window(self, sf, r)
    }
}

/// One congestion-control algorithm: its [`Rule`] (the methods up to `periodic_window`) and the
/// engine hooks below. The engine makes one instance per connection
/// ([`Controller::connection`]), so per-connection and per-subflow state lives in the
/// algorithm's own struct, updated through the hooks below (all optional).
pub trait Controller: Send + Sync {
    fn name(&self) -> &'static str;
    /// Window increase of route `r` for one ACK on route `r` (packets), I_r(w).
    fn on_ack(&self, sf: &Subflows, r: usize) -> f64;
    /// Window decrease of route `r` for one loss on route `r` (packets), D_r(w).
    fn on_loss(&self, sf: &Subflows, r: usize) -> f64;
    /// Smallest window after a loss (Linux: ssthresh ≥ 2).
    fn min_cwnd(&self, _n_routes: usize) -> f64 {
        2.0
    }
    /// max(w_r − D_r, min_cwnd): the window (and ssthresh) after a loss event on route r.
    fn cwnd_after_loss(&self, sf: &Subflows, r: usize) -> f64 {
        (sf.cwnd[r] - self.on_loss(sf, r)).max(self.min_cwnd(sf.n()))
    }
    /// A delay-based algorithm's periodic window (FAST: Tang et al. eq. (1)) for route r, with
    /// `sf.rtt` the mean RTT of the last interval and the scenario's parameters; None for the
    /// loss-based ones. The pure rule checked against the spec vectors.
    fn periodic_window(&self, _sf: &Subflows, _r: usize) -> Option<f64> {
        None
    }

    // ---- engine hooks
    /// A fresh instance for one connection with `n_routes` subflows (its own state).
    fn connection(&self, n_routes: usize) -> Box<dyn Controller>;
    /// How the window follows I_r (see [`WindowUpdate`]).
    fn window_update(&self) -> WindowUpdate {
        WindowUpdate::Host
    }
    /// The algorithm halves its window on ECN-marked ACKs (RFC 3168); false for delay-based ones.
    fn reacts_to_ecn(&self) -> bool {
        true
    }
    /// ssthresh of a new subflow (∞: slow start until the first loss).
    fn initial_ssthresh(&self, _initial_cwnd: f64) -> f64 {
        f64::INFINITY
    }
    /// Every ACK of route r (see [`AckEvent`]).
    fn on_ack_event(&mut self, _r: usize, _ev: &AckEvent) {}
    /// Route r reduced its window for a loss or ECN episode; `repeated_timeout`: a timeout
    /// while the retransmission timer is already backed off.
    fn on_window_reduction(&mut self, _r: usize, _repeated_timeout: bool) {}
    /// Intervals (seconds) of the algorithm's periodic updates: update k first runs
    /// interval_k after the connection starts, then every interval_k. At most [`MAX_TIMERS`].
    fn timers(&self) -> Vec<f64> {
        Vec::new()
    }
    /// Periodic update k. May return a record (parameter, q, l) for the output's adaptation
    /// log (columns `fa_*`: FAST Algorithm 2's α, mean queueing delay and loss rate).
    fn on_timer(&mut self, _k: usize, _p: &mut Periodic) -> Option<[f64; 3]> {
        None
    }
}

/// Most periodic updates one algorithm may have.
pub const MAX_TIMERS: usize = 4;

/// Problem with an algorithm specification (unknown name or parameter).
#[derive(Debug, Clone, PartialEq)]
pub struct SpecError(pub String);

impl std::fmt::Display for SpecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// One registry entry: the scenario name, the parameters with their defaults (equal to
/// `python/mpcc/algorithms/__init__.py` REGISTRY; `tests/sim/test_registry.py` checks), and a
/// constructor taking the parameter values in that order.
pub struct Algorithm {
    pub name: &'static str,
    pub params: &'static [(&'static str, f64)],
    pub make: fn(&[f64]) -> Box<dyn Controller>,
}

/// Other names: (alias, algorithm, preset parameters) (Python: `ALIASES`).
pub const ALIASES: &[(&str, &str, &[(&str, f64)])] = &[
    ("max", "lia", &[]),
    ("coupled-decrease", "mtcp", &[("alpha", 0.0), ("beta", 1.0)]),
    ("coupled-increase", "mtcp", &[("alpha", 1.0), ("beta", 0.0)]),
    ("fully-coupled", "mtcp", &[("alpha", 1.0), ("beta", 1.0)]),
];

fn param_value(algo: &str, key: &str, v: &Value) -> Result<f64, SpecError> {
    match v {
        Value::Number(n) => n
            .as_f64()
            .ok_or_else(|| SpecError(format!("{algo}: parameter {key} is not a number"))),
        Value::String(s)
            if matches!(s.trim().to_lowercase().as_str(), "inf" | "infinity" | "∞") =>
        {
            Ok(f64::INFINITY)
        }
        v => Err(SpecError(format!(
            "{algo}: parameter {key} must be a number, got {v}"
        ))),
    }
}

/// Build an algorithm from its scenario name and parameter table (same names, aliases and
/// defaults as the Python registry `mpcc.algorithms.get`).
pub fn build(name: &str, params: &Map<String, Value>) -> Result<Box<dyn Controller>, SpecError> {
    let key = name.trim().to_lowercase();
    let (target, preset): (&str, &[(&str, f64)]) = ALIASES
        .iter()
        .find(|(alias, _, _)| *alias == key)
        .map(|&(_, t, p)| (t, p))
        .unwrap_or((key.as_str(), &[]));
    let entry = REGISTRY
        .iter()
        .find(|a| a.name == target)
        .ok_or_else(|| SpecError(format!("unknown algorithm {name:?}")))?;
    let mut values: Vec<f64> = entry.params.iter().map(|&(_, d)| d).collect();
    for (k, v) in preset {
        if let Some(i) = entry.params.iter().position(|(p, _)| p == k) {
            values[i] = *v;
        }
    }
    for (k, v) in params {
        if k == "name" {
            continue;
        }
        match entry.params.iter().position(|(p, _)| p == k) {
            Some(i) => values[i] = param_value(name, k, v)?,
            None => return Err(SpecError(format!("{name}: unknown parameter {k}"))),
        }
    }
    Ok((entry.make)(&values))
}

/// D_r = w_r/2, the NewReno decrease.
#[inline]
pub(crate) fn halve(sf: &Subflows, r: usize) -> f64 {
    sf.cwnd[r] / 2.0
}

/// One ACK of [`WindowUpdate::FixedPoint`]: add I_r (packets) to the fixed-point counter `cnt`
/// (units of 2^−scale_bits packet) as mptcp_olia.c does — `div64_u64(|num| << 10, den)` rounds
/// the magnitude down, the sign is applied after — and return the window step: +1 when
/// cnt ≥ 2^scale_bits − 1, −1 when cnt ≤ −(2^scale_bits − 1) (cnt is then reset to 0, dropping
/// the remainder), else 0.
#[inline]
pub fn fixed_point_step(cnt: &mut i64, inc: f64, scale_bits: u32) -> i32 {
    let one = 1i64 << scale_bits;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Aliases and presets resolve as in Python (`max` = LIA; the MTCP variants' (α, β)), an
    /// explicit parameter beats a preset, unknown names and parameters are errors.
    #[test]
    fn registry_resolves_names() {
        let mut m = Map::new();
        assert_eq!(build("max", &m).unwrap().name(), "lia");
        assert_eq!(build(" Balia ", &m).unwrap().name(), "balia");
        // fully-coupled: α = β = 1 → I = a/W; with w = (2, 3), I_0 = 1/5
        let fc = build("fully-coupled", &m).unwrap();
        let (w, t) = ([2.0, 3.0], [0.1, 0.1]);
        assert!((fc.on_ack(&Subflows::new(&w, &t), 0) - 0.2).abs() < 1e-15);
        m.insert("alpha".into(), Value::from(0.0));
        // α = 0 overrides the preset: I_0 = 1/w_0
        let cd = build("fully-coupled", &m).unwrap();
        assert!((cd.on_ack(&Subflows::new(&w, &t), 0) - 0.5).abs() < 1e-15);
        assert!(build("cubic", &Map::new()).is_err());
        assert!(build("reno", &m)
            .err()
            .unwrap()
            .0
            .contains("unknown parameter alpha"));
        let mut s = Map::new();
        s.insert("a".into(), Value::from("inf"));
        assert!(build("ewtcp", &s).is_ok());
        s.insert("a".into(), Value::from(true));
        assert!(build("ewtcp", &s).is_err());
    }

    /// Every registry name is unique and every alias points at an entry with its presets.
    #[test]
    fn registry_is_consistent() {
        for (i, a) in REGISTRY.iter().enumerate() {
            assert!(REGISTRY[i + 1..].iter().all(|b| b.name != a.name));
            assert_eq!(
                (a.make)(&a.params.iter().map(|p| p.1).collect::<Vec<_>>()).name(),
                a.name
            );
        }
        for (alias, target, preset) in ALIASES {
            let e = REGISTRY.iter().find(|a| a.name == *target).expect(alias);
            assert!(preset
                .iter()
                .all(|(k, _)| e.params.iter().any(|(p, _)| p == k)));
        }
    }
}
