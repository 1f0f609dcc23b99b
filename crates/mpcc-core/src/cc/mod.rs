//! Congestion-control algorithms: the same `on_ack` / `on_loss` interface as the Python
//! reference (`python/mpcc/algorithms`) and the BPF programs (`bpf/`), checked against
//! `spec/vectors/algorithms.json` (see `tests/vectors.rs`).
//!
//! Notation of Peng et al. §II-B: route r of connection s has window w_r (packets) and RTT τ_r
//! (seconds), x_r = w_r/τ_r. `on_ack` returns I_r(w_s), the increase of w_r per ACK on route r;
//! `on_loss` returns D_r(w_s), the decrease of w_r per loss on route r.

mod balia;
mod coupled;
mod ewtcp;
mod fast;
mod generalized;
mod lia;
mod mstcp;
mod mtcp;
mod olia;
mod reno;
mod semicoupled;

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
    /// OLIA's ℓ_r: max(packets acked since the last loss, packets acked between the last two).
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

/// One congestion-control algorithm.
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
    /// FAST TCP: the periodic window update (Tang et al. eq. (1)); None for loss-based ones.
    fn fast(&self) -> Option<&Fast> {
        None
    }
}

/// Problem with an algorithm specification (unknown name or parameter).
#[derive(Debug, Clone, PartialEq)]
pub struct SpecError(pub String);

impl std::fmt::Display for SpecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Parameters of an algorithm table, with the registry defaults of `python/mpcc/algorithms`.
pub struct Params<'a> {
    name: &'a str,
    map: &'a Map<String, Value>,
    used: std::cell::RefCell<Vec<&'a str>>,
}

impl<'a> Params<'a> {
    pub fn get(&self, key: &'a str, default: f64) -> Result<f64, SpecError> {
        self.used.borrow_mut().push(key);
        match self.map.get(key) {
            None => Ok(default),
            Some(Value::Number(n)) => Ok(n.as_f64().unwrap_or(default)),
            Some(Value::String(s))
                if matches!(s.trim().to_lowercase().as_str(), "inf" | "infinity" | "∞") =>
            {
                Ok(f64::INFINITY)
            }
            Some(v) => Err(SpecError(format!(
                "{}: parameter {key} must be a number, got {v}",
                self.name
            ))),
        }
    }
    fn finish(&self) -> Result<(), SpecError> {
        let used = self.used.borrow();
        for k in self.map.keys() {
            if k != "name" && !used.iter().any(|u| u == k) {
                return Err(SpecError(format!("{}: unknown parameter {k}", self.name)));
            }
        }
        Ok(())
    }
}

/// Build an algorithm from its scenario name and parameter table (same names, aliases and
/// defaults as the Python registry `mpcc.algorithms.get`).
pub fn build(name: &str, params: &Map<String, Value>) -> Result<Box<dyn Controller>, SpecError> {
    let key = name.trim().to_lowercase();
    let p = Params {
        name,
        map: params,
        used: Default::default(),
    };
    let (a_mtcp, b_mtcp) = match key.as_str() {
        "coupled-decrease" => (Some(0.0), Some(1.0)),
        "coupled-increase" => (Some(1.0), Some(0.0)),
        "fully-coupled" => (Some(1.0), Some(1.0)),
        _ => (None, None),
    };
    let algo: Box<dyn Controller> = match key.as_str() {
        "reno" => Box::new(Reno),
        "ewtcp" => Box::new(Ewtcp {
            a: p.get("a", 1.0)?,
        }),
        "coupled" => Box::new(Coupled),
        "semicoupled" => Box::new(Semicoupled),
        "lia" | "max" => Box::new(Lia),
        "olia" => Box::new(Olia),
        "balia" => Box::new(Balia),
        "generalized" => Box::new(Generalized {
            beta: p.get("beta", 0.2)?,
            eta: p.get("eta", 0.5)?,
            n: p.get("n", f64::INFINITY)?,
        }),
        "mstcp" => Box::new(Mstcp {
            a: p.get("a", 0.03)?,
            b: p.get("b", 0.5)?,
        }),
        "mtcp" | "coupled-decrease" | "coupled-increase" | "fully-coupled" => Box::new(Mtcp {
            alpha: p.get("alpha", a_mtcp.unwrap_or(0.0))?,
            beta: p.get("beta", b_mtcp.unwrap_or(0.0))?,
            a: p.get("a", 1.0)?,
            b: p.get("b", 0.5)?,
        }),
        "fast" => Box::new(Fast {
            alpha: p.get("alpha", 50.0)?,
            gamma: p.get("gamma", 0.5)?,
            update_interval_s: p.get("update_interval_s", 0.02)?,
            adapt_interval_s: p.get("adapt_interval_s", 0.0)?,
            adapt_w: p.get("adapt_w", 125.0)?,
            adapt_delta: p.get("adapt_delta", 0.1)?,
        }),
        _ => return Err(SpecError(format!("unknown algorithm {name:?}"))),
    };
    p.finish()?;
    Ok(algo)
}

/// D_r = w_r/2, the NewReno decrease.
#[inline]
pub(crate) fn halve(sf: &Subflows, r: usize) -> f64 {
    sf.cwnd[r] / 2.0
}
