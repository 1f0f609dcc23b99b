//! One direction of the emulated link (Dummynet's pipe): random loss, the buffer (drop-tail
//! or RED/ECN: the queue model `mpcc-queue` shared with the simulator), a work-conserving
//! FIFO server of rate C and a pure delay T.
//!
//! Timing:
//!   finish_k  = max(arrival_k, finish_{k-1}) + L_k / C
//!   release_k = finish_k + T
//! The queue a packet sees on arrival is the number of earlier packets whose transmission has
//! not finished yet (waiting or in service). Because `release_k` is non-decreasing, the whole
//! pipe is one FIFO of (release time, packet).
use std::collections::VecDeque;

use mpcc_queue::{Arrival, Drop, Queue};

/// RED parameters (the shared queue model's).
pub use mpcc_queue::RedParams as RedConfig;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PipeConfig {
    /// Bandwidth in bit/s; `None` = infinitely fast (delay only).
    pub rate_bps: Option<f64>,
    /// One-way propagation delay in ns.
    pub delay_ns: u64,
    /// Queue capacity in packets (waiting + in service).
    pub buffer_pkts: usize,
    /// Random (Bernoulli) loss probability applied on arrival.
    pub loss: f64,
    pub red: Option<RedConfig>,
    /// Deterministic loss: drop the N-th, 2N-th, … arrival of at least `drop_min_bytes` (IP
    /// length: data segments, not pure ACKs or SYNs); 0 = off. Counted in `drops_loss`.
    pub drop_every: u64,
    pub drop_min_bytes: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Accepted; departs at `release_ns`; `mark` = set CE before sending.
    Forward { release_ns: u64, mark: bool },
    DropLoss,
    DropRed,
    DropTail,
}

/// Counters of one direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    pub arrivals: u64,
    pub accepted: u64,
    pub drops_tail: u64,
    pub drops_red: u64,
    pub drops_loss: u64,
    pub marks: u64,
}

/// SplitMix64 (Steele, Lea, Flood 2014): small, fast, good enough for loss/RED coin flips.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

pub struct Pipe {
    pub cfg: PipeConfig,
    /// Transmission finish times of packets not yet fully transmitted (queue + server).
    finishing: VecDeque<u64>,
    last_finish: u64,
    /// Buffer management (drop-tail or RED), shared with the simulator.
    pub queue: Queue,
    pub counters: Counters,
    rng: Rng,
    /// Transmission time of a 1500-byte packet, ns (RED idle correction's "typical packet").
    typical_tx_ns: f64,
    /// Arrivals of at least `drop_min_bytes` so far (the deterministic loss's count).
    long_arrivals: u64,
}

impl Pipe {
    /// A pipe; the configuration must be valid (RED thresholds ordered, probabilities in
    /// range: `cli.rs` checks them), else this panics.
    pub fn new(cfg: PipeConfig, seed: u64) -> Self {
        let typical_tx_ns = match cfg.rate_bps {
            Some(r) => 1500.0 * 8.0 / r * 1e9,
            None => 1.0,
        };
        let buffer = cfg.buffer_pkts.min(u32::MAX as usize) as u32;
        Pipe {
            cfg,
            finishing: VecDeque::new(),
            last_finish: 0,
            queue: Queue::new(buffer, cfg.red).expect("valid RED parameters"),
            counters: Counters::default(),
            rng: Rng::new(seed),
            typical_tx_ns,
            long_arrivals: 0,
        }
    }

    /// Packets whose transmission has not finished at `now` (waiting or in service).
    pub fn queue_len(&mut self, now: u64) -> usize {
        while let Some(&f) = self.finishing.front() {
            if f <= now {
                self.finishing.pop_front();
            } else {
                break;
            }
        }
        self.finishing.len()
    }

    /// Serialisation time of `bytes` at the pipe's rate, ns.
    pub fn tx_ns(&self, bytes: usize) -> u64 {
        match self.cfg.rate_bps {
            Some(r) => ((bytes as f64) * 8.0 / r * 1e9).round() as u64,
            None => 0,
        }
    }

    /// One packet of `bytes` (IP length) arrives at `now`; `ect` = it is ECN-capable.
    pub fn arrive(&mut self, now: u64, bytes: usize, ect: bool) -> Verdict {
        let mut rng = self.rng.clone();
        let v = self.arrive_with(now, bytes, ect, || rng.uniform());
        self.rng = rng;
        v
    }

    /// `arrive` with the U[0, 1) draws from `uniform`: first the loss draw (when loss > 0),
    /// then RED's (in its early region) — the order of the simulator's links.
    pub fn arrive_with(&mut self, now: u64, bytes: usize, ect: bool, mut uniform: impl FnMut() -> f64) -> Verdict {
        self.counters.arrivals += 1;
        let q = self.queue_len(now);
        if self.cfg.drop_every > 0 && bytes >= self.cfg.drop_min_bytes {
            self.long_arrivals += 1;
            if self.long_arrivals % self.cfg.drop_every == 0 {
                self.counters.drops_loss += 1;
                return Verdict::DropLoss;
            }
        }
        if self.cfg.loss > 0.0 && uniform() < self.cfg.loss {
            self.counters.drops_loss += 1;
            return Verdict::DropLoss;
        }
        let a = Arrival {
            queue: q.min(u32::MAX as usize) as u32,
            now_ns: now,
            // the queue went empty when the last transmission finished
            empty_since_ns: self.last_finish.min(now),
            service_ns: self.typical_tx_ns,
            ect,
        };
        let mark = match self.queue.arrive(a, uniform) {
            mpcc_queue::Verdict::Accept => false,
            mpcc_queue::Verdict::Mark => true,
            mpcc_queue::Verdict::Drop(Drop::Red) => {
                self.counters.drops_red += 1;
                return Verdict::DropRed;
            }
            mpcc_queue::Verdict::Drop(Drop::Tail) => {
                self.counters.drops_tail += 1;
                return Verdict::DropTail;
            }
        };
        let start = now.max(self.last_finish);
        let finish = start + self.tx_ns(bytes);
        self.last_finish = finish;
        if finish > now {
            self.finishing.push_back(finish);
        }
        self.counters.accepted += 1;
        if mark {
            self.counters.marks += 1;
        }
        Verdict::Forward { release_ns: finish + self.cfg.delay_ns, mark }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(rate_mbps: Option<f64>, delay_ms: f64, buffer: usize) -> PipeConfig {
        PipeConfig {
            rate_bps: rate_mbps.map(|r| r * 1e6),
            delay_ns: (delay_ms * 1e6) as u64,
            buffer_pkts: buffer,
            loss: 0.0,
            red: None,
            drop_every: 0,
            drop_min_bytes: 0,
        }
    }

    #[test]
    fn drop_every_n_drops_exactly_every_nth_long_packet_and_no_short_one() {
        // Interleave 1500-byte segments with 52-byte ACKs: the 5th, 10th, … segments are
        // dropped (positions counted over segments only), every ACK passes, and the random
        // loss stream is not consumed (no draw: the verdicts do not depend on the seed).
        let mut c = cfg(None, 1.0, 1000);
        c.drop_every = 5;
        c.drop_min_bytes = 200;
        for seed in [1, 2] {
            let mut p = Pipe::new(c, seed);
            let mut dropped = Vec::new();
            for k in 1..=100u64 {
                assert!(matches!(p.arrive(k * 1000, 52, false), Verdict::Forward { .. }));
                if p.arrive(k * 1000 + 1, 1500, false) == Verdict::DropLoss {
                    dropped.push(k);
                }
            }
            assert_eq!(dropped, (1..=20).map(|i| 5 * i).collect::<Vec<u64>>());
            assert_eq!(p.counters.drops_loss, 20);
            assert_eq!(p.counters.accepted, 180);
        }
    }

    #[test]
    fn back_to_back_packets_leave_one_transmission_time_apart_after_the_delay() {
        // 12 Mb/s, 1500 B → 1 ms per packet; 10 ms delay. A burst of 5 at t = 0 departs at
        // 11, 12, 13, 14, 15 ms (closed form: k·L/C + T).
        let mut p = Pipe::new(cfg(Some(12.0), 10.0, 50), 1);
        for k in 1..=5u64 {
            match p.arrive(0, 1500, false) {
                Verdict::Forward { release_ns, mark } => {
                    assert!(!mark);
                    assert_eq!(release_ns, k * 1_000_000 + 10_000_000);
                }
                v => panic!("unexpected {v:?}"),
            }
        }
        // after the burst drained, a new packet is served immediately
        match p.arrive(20_000_000, 1500, false) {
            Verdict::Forward { release_ns, .. } => assert_eq!(release_ns, 31_000_000),
            v => panic!("unexpected {v:?}"),
        }
    }

    #[test]
    fn delay_only_direction_adds_exactly_the_delay() {
        let mut p = Pipe::new(cfg(None, 50.0, 10_000), 1);
        for t in [0u64, 5, 5, 7_000_000] {
            assert_eq!(p.arrive(t, 1500, false), Verdict::Forward { release_ns: t + 50_000_000, mark: false });
        }
    }

    #[test]
    fn drop_tail_holds_at_most_buffer_packets() {
        // A burst of 100 into a buffer of 20: exactly 20 accepted, 80 tail drops.
        let mut p = Pipe::new(cfg(Some(10.0), 0.0, 20), 1);
        let accepted = (0..100).filter(|_| matches!(p.arrive(0, 1500, false), Verdict::Forward { .. })).count();
        assert_eq!(accepted, 20);
        assert_eq!(p.counters.drops_tail, 80);
        // one transmission time (1.2 ms) later exactly one slot is free again
        assert_eq!(p.queue_len(1_200_000), 19);
        assert!(matches!(p.arrive(1_200_000, 1500, false), Verdict::Forward { .. }));
        assert_eq!(p.arrive(1_200_000, 1500, false), Verdict::DropTail);
    }

    #[test]
    fn random_loss_rate_matches_probability() {
        let mut c = cfg(None, 0.0, 1 << 20);
        c.loss = 0.05;
        let mut p = Pipe::new(c, 7);
        let n = 200_000;
        for i in 0..n {
            p.arrive(i, 100, false);
        }
        let rate = p.counters.drops_loss as f64 / n as f64;
        // binomial standard deviation sqrt(p(1-p)/n) ≈ 4.9e-4: allow 5 sigma
        assert!((rate - 0.05).abs() < 5.0 * (0.05f64 * 0.95 / n as f64).sqrt(), "rate {rate}");
    }

    /// The glue to the queue model: with ECN an early decision marks ECT packets and drops
    /// the others; the forced region drops ECT packets too (ns-2, RFC 3168 §7).
    #[test]
    fn red_marks_ect_early_and_drops_when_forced() {
        let red = RedConfig { min_th: 5.0, max_th: 15.0, max_p: 0.1, weight: 1.0, gentle: true, ecn: true };
        let mut c = cfg(Some(1.2), 0.0, 1000); // 10 ms per packet: a burst stays queued
        c.red = Some(red);
        let mut p = Pipe::new(c, 1);
        for _ in 0..10 {
            assert!(matches!(p.arrive_with(0, 1500, true, || 0.99), Verdict::Forward { mark: false, .. }));
        }
        // q = 10 → avg 10, p_b = 0.05: the draw 0.0 marks an ECT packet, drops a non-ECT one
        assert!(matches!(p.arrive_with(0, 1500, true, || 0.0), Verdict::Forward { mark: true, .. }));
        assert_eq!(p.arrive_with(0, 1500, false, || 0.0), Verdict::DropRed);
        for _ in 0..19 {
            p.arrive_with(0, 1500, true, || 0.99);
        }
        assert!(p.queue_len(0) >= 30);
        assert_eq!(p.arrive_with(0, 1500, true, || panic!("no draw when forced")), Verdict::DropRed);
    }

    /// avg ← (1 − w)^(m+1)·avg after m = 10 idle packet times (12 Mb/s, 1500 B: 1 ms each).
    #[test]
    fn red_average_decays_over_idle_time() {
        let mut c = cfg(Some(12.0), 0.0, 100);
        c.red = Some(RedConfig { min_th: 50.0, max_th: 90.0, max_p: 0.1, weight: 0.1, gentle: true, ecn: false });
        let mut p = Pipe::new(c, 1);
        p.queue.red.as_mut().unwrap().1.avg = 10.0;
        p.arrive(10_000_000, 1500, false); // empty since 0: idle 10 ms
        let expect = 10.0 * 0.9f64.powi(11);
        assert!((p.queue.avg() - expect).abs() < 1e-9, "{} vs {}", p.queue.avg(), expect);
    }
}
