//! Congestion-control algorithms: the same `on_ack` / `on_loss` interface as the Python
//! reference (`python/mpcc/algorithms`) and the BPF programs (`bpf/`), checked against
//! `spec/vectors/algorithms.json`.

/// The windows and RTTs of one connection, as an algorithm sees them.
#[derive(Debug, Clone, Default)]
pub struct Subflows<'a> {
    /// Congestion window of every route, packets.
    pub cwnd: &'a [f64],
    /// Smoothed RTT of every route, seconds.
    pub rtt: &'a [f64],
}

/// One congestion-control algorithm (quinn-style controller interface).
pub trait Controller {
    /// Window increase of route `r` for one ACK on route `r` (packets), I_r(w).
    fn on_ack(&self, sf: &Subflows, r: usize) -> f64;
    /// Window decrease of route `r` for one loss on route `r` (packets), D_r(w).
    fn on_loss(&self, sf: &Subflows, r: usize) -> f64;
}

/// TCP NewReno: I = 1/w, D = w/2.
pub struct Reno;

impl Controller for Reno {
    fn on_ack(&self, sf: &Subflows, r: usize) -> f64 {
        1.0 / sf.cwnd[r]
    }
    fn on_loss(&self, sf: &Subflows, r: usize) -> f64 {
        sf.cwnd[r] / 2.0
    }
}
