//! The buffer of one link, shared by the simulator (`mpcc-core`) and the link emulator
//! (`linkem`): drop-tail, or RED (Floyd & Jacobson 1993, "Random Early Detection Gateways for
//! Congestion Avoidance", Fig. 2) with the gentle mode and ECN marking of ns-2's `red.cc`.
//!
//! The caller keeps the FIFO and the clock; on every arrival it passes the queue length the
//! packet sees (packets waiting or in service), when the queue last became empty and the
//! service time of a typical packet, and a source of U[0, 1) draws. Decisions, in order (ns-2
//! `REDQueue::enque`):
//!
//! 1. **The average runs on every arrival, before any drop test** (FJ93 Fig. 2: "for each
//!    packet arrival, calculate the new average queue size"; ns-2 runs its estimator first and
//!    tests the hard limit last). So a packet dropped because the buffer is full still moves
//!    the average.
//!    - queue non-empty: avg ← (1 − w_q)·avg + w_q·q;
//!    - first arrival after the queue went empty: avg ← (1 − w_q)^(m+1)·avg with m = idle time /
//!      service time of a typical packet. FJ93 decays by (1 − w_q)^m for the m packets that
//!      "might have been transmitted"; ns-2 calls its estimator with m + 1 — the m virtual
//!      arrivals plus this packet's own EWMA step with q = 0 — which is what an arrival to a
//!      non-empty queue gets too. We follow ns-2 (the arrival is not skipped). Each stretch of
//!      idle time is decayed once: when an arrival to the empty queue is dropped, the queue
//!      stays empty and the next arrival decays from that arrival's time (ns-2: the link polls
//!      the queue right after `enque`, finds it empty and sets `idletime_` = now). m is not
//!      rounded down (ns-2: `int(ptc · idle)`): FJ93's f is a linear function of time.
//! 2. **RED decision** on avg: below min_th accept (count = −1); from min_th to max_th
//!    p_b = max_p (avg − min_th)/(max_th − min_th), and with gentle from max_th to 2·max_th
//!    p_b = max_p + (1 − max_p)(avg − max_th)/max_th; p_a = p_b/(1 − count·p_b) (1 when the
//!    denominator is ≤ p_b), one U[0, 1) draw decides (count = 0 after an early drop/mark).
//!    An early ("unforced") drop of an ECN-capable packet on an ECN link becomes a CE mark.
//!    Above that region (avg ≥ max_th, or ≥ 2·max_th with gentle) every packet is dropped,
//!    **ECN-capable or not**: ns-2 marks only in `drop_early` and treats this region as a
//!    "forced" drop, as RFC 3168 §7 asks for a router whose queue is persistently over its
//!    threshold. No draw is made in the forced region or below min_th.
//! 3. **Tail drop**: q ≥ buffer drops the packet whatever RED said (ns-2 `qlen >= qlim`:
//!    forced); a tail drop while avg ≥ min_th restarts RED's count (ns-2 resets count on
//!    forced drops).

/// RED parameters; thresholds in packets of average queue.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RedParams {
    pub min_th: f64,
    pub max_th: f64,
    pub max_p: f64,
    /// EWMA weight w_q of the average queue.
    pub weight: f64,
    /// Between max_th and 2·max_th the probability rises linearly from max_p to 1.
    pub gentle: bool,
    /// Mark CE on ECN-capable packets instead of dropping them early.
    pub ecn: bool,
}

impl RedParams {
    /// Check the parameters; the error starts with the field name.
    pub fn validate(&self) -> Result<(), String> {
        let finite = |v: f64| v.is_finite();
        if !(self.min_th >= 0.0) || !finite(self.min_th) {
            return Err(format!("min_th: {} is not a number ≥ 0", self.min_th));
        }
        if !(self.max_th > self.min_th) || !finite(self.max_th) {
            return Err(format!(
                "max_th: {} must be > min_th = {}",
                self.max_th, self.min_th
            ));
        }
        if !(self.max_p > 0.0 && self.max_p <= 1.0) {
            return Err(format!(
                "max_p: {} is not a probability in (0, 1]",
                self.max_p
            ));
        }
        if !(self.weight > 0.0 && self.weight <= 1.0) {
            return Err(format!("weight: {} is not in (0, 1]", self.weight));
        }
        Ok(())
    }
}

/// Why a packet was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Drop {
    /// RED, early or forced.
    Red,
    /// The buffer was full.
    Tail,
}

/// What happens to an arriving packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Accept,
    /// Accept with CE set.
    Mark,
    Drop(Drop),
}

/// RED's state: the average queue, packets since the last early drop/mark (−1: avg below
/// min_th), and the idle period decayed so far: (when the queue went empty, up to when).
#[derive(Clone, Debug)]
pub struct RedState {
    pub avg: f64,
    pub count: i64,
    idle_decayed: Option<(u64, u64)>,
}

/// The buffer of one link (16 bytes: RED's parameters and state are boxed, so that a
/// simulator link keeps its per-packet state in one cache line).
#[derive(Clone, Debug)]
pub struct Queue {
    /// Capacity in packets, the one in service included.
    pub buffer: u32,
    pub red: Option<Box<(RedParams, RedState)>>,
}

/// The state of the FIFO when a packet arrives.
#[derive(Clone, Copy, Debug)]
pub struct Arrival {
    /// Packets waiting or in service.
    pub queue: u32,
    /// Time of the arrival and when the queue last became empty (meaningful when queue = 0), ns.
    pub now_ns: u64,
    pub empty_since_ns: u64,
    /// Service time of a typical packet, ns (> 0): RED's idle decay counts m = idle/service.
    pub service_ns: f64,
    /// The packet is ECN-capable (ECT).
    pub ect: bool,
}

impl Queue {
    pub fn new(buffer: u32, red: Option<RedParams>) -> Result<Queue, String> {
        if let Some(r) = &red {
            r.validate()?;
        }
        Ok(Queue {
            buffer,
            red: red.map(|r| {
                Box::new((
                    r,
                    RedState {
                        avg: 0.0,
                        count: -1,
                        idle_decayed: None,
                    },
                ))
            }),
        })
    }

    /// The verdict on one arrival; `uniform` is called once for an arrival in RED's early region.
    pub fn arrive(&mut self, a: Arrival, uniform: impl FnOnce() -> f64) -> Verdict {
        let mut verdict = Verdict::Accept;
        let mut above_min = false;
        if let Some(red) = &mut self.red {
            let (p, st) = &mut **red;
            // 1. the average
            if a.queue == 0 {
                let from = match st.idle_decayed {
                    Some((since, until)) if since == a.empty_since_ns => until,
                    _ => a.empty_since_ns,
                };
                let m = a.now_ns.saturating_sub(from) as f64 / a.service_ns;
                st.avg *= (1.0 - p.weight).powf(m + 1.0);
                st.idle_decayed = Some((a.empty_since_ns, a.now_ns));
            } else {
                st.avg += p.weight * (a.queue as f64 - st.avg);
            }
            // 2. RED
            let avg = st.avg;
            let hard = if p.gentle { 2.0 * p.max_th } else { p.max_th };
            above_min = avg >= p.min_th;
            if avg < p.min_th {
                st.count = -1;
            } else if avg < hard {
                st.count += 1;
                let pb = if avg < p.max_th {
                    p.max_p * (avg - p.min_th) / (p.max_th - p.min_th)
                } else {
                    p.max_p + (1.0 - p.max_p) * (avg - p.max_th) / p.max_th
                };
                let denom = 1.0 - st.count as f64 * pb;
                let pa = if denom <= pb { 1.0 } else { pb / denom };
                if uniform() < pa {
                    st.count = 0;
                    verdict = if p.ecn && a.ect {
                        Verdict::Mark
                    } else {
                        Verdict::Drop(Drop::Red)
                    };
                }
            } else {
                st.count = 0;
                verdict = Verdict::Drop(Drop::Red);
            }
        }
        // 3. the hard limit
        if a.queue >= self.buffer && verdict != Verdict::Drop(Drop::Red) {
            if let Some(red) = &mut self.red {
                let st = &mut red.1;
                if above_min {
                    st.count = 0;
                }
            }
            return Verdict::Drop(Drop::Tail);
        }
        verdict
    }

    /// RED's average queue (0 for drop-tail).
    pub fn avg(&self) -> f64 {
        self.red.as_ref().map(|r| r.1.avg).unwrap_or(0.0)
    }
}

#[cfg(test)]
mod tests;
