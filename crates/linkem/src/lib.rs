//! linkem — the pure model of one emulated link direction, in the spirit of Dummynet's pipe:
//!
//! ```text
//!   arrival ──► [random loss] ──► [AQM: drop-tail or RED/ECN] ──► queue ──► bandwidth C ──► delay line T ──► departure
//! ```
//!
//! Everything here is deterministic given the arrival times and the seed, so the timing
//! rules can be unit-tested without sockets; `main.rs` feeds it packets from AF_PACKET.
//!
//! Timing (a work-conserving FIFO server of rate C followed by a pure delay T):
//!   finish_k  = max(arrival_k, finish_{k-1}) + L_k / C
//!   release_k = finish_k + T
//! The queue a packet sees on arrival is the number of earlier packets whose transmission has
//! not finished yet (waiting or in service); drop-tail drops when it is ≥ the buffer.
//! Because `release_k` is non-decreasing, the whole pipe is one FIFO of (release time, packet).

use std::collections::VecDeque;

/// RED parameters (Floyd & Jacobson 1993), thresholds in packets of average queue.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RedConfig {
    pub min_th: f64,
    pub max_th: f64,
    pub max_p: f64,
    /// EWMA weight w_q of the average queue.
    pub weight: f64,
    /// Gentle RED: between max_th and 2·max_th the probability rises linearly from max_p to 1.
    pub gentle: bool,
    /// Mark CE on ECN-capable packets instead of dropping them (early region only).
    pub ecn: bool,
}

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

/// RED state: average queue and the count of packets since the last drop/mark.
#[derive(Clone, Debug)]
pub struct RedState {
    pub avg: f64,
    /// Packets accepted since the last early drop/mark while avg ≥ min_th (−1 = below min_th).
    pub count: i64,
    /// When the queue last became empty (for the idle-time correction), ns.
    pub idle_since: Option<u64>,
}

pub struct Pipe {
    pub cfg: PipeConfig,
    /// Transmission finish times of packets not yet fully transmitted (queue + server).
    finishing: VecDeque<u64>,
    last_finish: u64,
    pub red: RedState,
    pub counters: Counters,
    rng: Rng,
    /// Transmission time of a 1500-byte packet, ns (RED idle correction's "typical packet").
    typical_tx_ns: f64,
}

impl Pipe {
    pub fn new(cfg: PipeConfig, seed: u64) -> Self {
        let typical_tx_ns = match cfg.rate_bps {
            Some(r) => 1500.0 * 8.0 / r * 1e9,
            None => 1.0,
        };
        Pipe {
            cfg,
            finishing: VecDeque::new(),
            last_finish: 0,
            red: RedState { avg: 0.0, count: -1, idle_since: Some(0) },
            counters: Counters::default(),
            rng: Rng::new(seed),
            typical_tx_ns,
        }
    }

    /// Packets whose transmission has not finished at `now` (waiting or in service).
    pub fn queue_len(&mut self, now: u64) -> usize {
        while let Some(&f) = self.finishing.front() {
            if f <= now {
                self.finishing.pop_front();
                if self.finishing.is_empty() {
                    self.red.idle_since = Some(f);
                }
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
        self.counters.arrivals += 1;
        let q = self.queue_len(now);
        if self.cfg.loss > 0.0 && self.rng.uniform() < self.cfg.loss {
            self.counters.drops_loss += 1;
            return Verdict::DropLoss;
        }
        let mut mark = false;
        if let Some(red) = self.cfg.red {
            match self.red_decide(&red, now, q) {
                RedDecision::Accept => {}
                RedDecision::Early => {
                    if red.ecn && ect {
                        mark = true;
                    } else {
                        self.counters.drops_red += 1;
                        return Verdict::DropRed;
                    }
                }
                RedDecision::Forced => {
                    self.counters.drops_red += 1;
                    return Verdict::DropRed;
                }
            }
        }
        if q >= self.cfg.buffer_pkts {
            self.counters.drops_tail += 1;
            return Verdict::DropTail;
        }
        let start = now.max(self.last_finish);
        let finish = start + self.tx_ns(bytes);
        self.last_finish = finish;
        if finish > now {
            self.finishing.push_back(finish);
            self.red.idle_since = None;
        }
        self.counters.accepted += 1;
        if mark {
            self.counters.marks += 1;
        }
        Verdict::Forward { release_ns: finish + self.cfg.delay_ns, mark }
    }

    /// RED (Floyd & Jacobson 1993, Fig. 2), with ns-2's idle-time correction and gentle mode:
    ///   avg ← (1 − w_q)·avg + w_q·q                       (queue busy)
    ///   avg ← (1 − w_q)^m·avg,  m = idle time / typical packet time   (queue was empty)
    ///   p_b = max_p·(avg − min_th)/(max_th − min_th)       (min_th ≤ avg < max_th)
    ///   p_b = max_p + (1 − max_p)·(avg − max_th)/max_th    (gentle, max_th ≤ avg < 2·max_th)
    ///   p_a = p_b / (1 − count·p_b)                        (spreads drops uniformly)
    fn red_decide(&mut self, red: &RedConfig, now: u64, q: usize) -> RedDecision {
        let w = red.weight;
        match self.red.idle_since {
            Some(t0) if q == 0 => {
                let m = (now.saturating_sub(t0)) as f64 / self.typical_tx_ns;
                self.red.avg *= (1.0 - w).powf(m);
                // the idle period is accounted for; the next packet starts a busy period
                self.red.idle_since = Some(now);
            }
            _ => self.red.avg = (1.0 - w) * self.red.avg + w * q as f64,
        }
        let avg = self.red.avg;
        let p_b = if avg < red.min_th {
            self.red.count = -1;
            return RedDecision::Accept;
        } else if avg < red.max_th {
            red.max_p * (avg - red.min_th) / (red.max_th - red.min_th)
        } else if red.gentle && avg < 2.0 * red.max_th {
            red.max_p + (1.0 - red.max_p) * (avg - red.max_th) / red.max_th
        } else {
            self.red.count = 0;
            return RedDecision::Forced;
        };
        self.red.count += 1;
        let denom = 1.0 - self.red.count as f64 * p_b;
        let p_a = if denom <= 0.0 { 1.0 } else { (p_b / denom).min(1.0) };
        if self.rng.uniform() < p_a {
            self.red.count = 0;
            RedDecision::Early
        } else {
            RedDecision::Accept
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RedDecision {
    Accept,
    Early,
    Forced,
}

/// How long to busy-wait before a release instant: long enough to cover the thread's wake-up
/// latency — measured as the overshoot of its own timed sleeps — within [min_ns, max_ns].
/// On a VM whose idle vCPUs halt, waking from a sleep takes 50–150 µs; on a busy CPU 5–20 µs;
/// a fixed spin either misses the first or wastes a core on the second.
///
/// The estimate e tracks a high quantile of the overshoot o: e += (o − e)/2 when o > e,
/// e −= (e − o)/128 otherwise (equilibrium: P(o > e)·E[o − e | o > e]/2 = P(o < e)·E[e − o | o < e]/128);
/// and e −= e/256 for every release that needed no sleep at all (the thread is busy, its CPU
/// awake, and no overshoot is observed), so the spin comes down again. spin = e + 10 µs.
#[derive(Clone, Debug)]
pub struct SpinTuner {
    pub min_ns: u64,
    pub max_ns: u64,
    est_ns: f64,
}

impl SpinTuner {
    pub const MARGIN_NS: f64 = 10_000.0;

    /// Starts at the maximum (conservative) and adapts from there.
    pub fn new(min_ns: u64, max_ns: u64) -> Self {
        let max_ns = max_ns.max(min_ns);
        SpinTuner { min_ns, max_ns, est_ns: max_ns as f64 }
    }

    pub fn spin_ns(&self) -> u64 {
        ((self.est_ns + Self::MARGIN_NS) as u64).clamp(self.min_ns, self.max_ns)
    }

    /// A timed sleep woke `ns` after the instant it asked for.
    pub fn overshoot(&mut self, ns: u64) {
        let o = (ns as f64).min(10.0 * self.max_ns as f64);
        if o > self.est_ns {
            self.est_ns += (o - self.est_ns) / 2.0;
        } else {
            self.est_ns -= (self.est_ns - o) / 128.0;
        }
    }

    /// A release came due without the thread sleeping since the previous one.
    pub fn no_sleep(&mut self) {
        self.est_ns -= self.est_ns / 256.0;
    }
}

/// The earliest of several delay lines' next release times: `(index, release_ns)` of the
/// smallest `Some`, the lowest index on ties; `None` when every line is empty. One forwarding
/// thread serving both directions sends their frames in this order.
pub fn earliest(fronts: impl IntoIterator<Item = Option<u64>>) -> Option<(usize, u64)> {
    let mut best: Option<(usize, u64)> = None;
    for (i, f) in fronts.into_iter().enumerate() {
        if let Some(t) = f {
            if best.is_none_or(|(_, b)| t < b) {
                best = Some((i, t));
            }
        }
    }
    best
}

/// Histogram of non-negative durations (ns) at 1 µs resolution up to `Hist::RANGE_US`; longer
/// durations share the last bucket, and the exact maximum and mean are kept. linkem records
/// how late each release was (send time − release_k) and how long frames sat in the socket
/// before it read them, and reports their quantiles (`--timing FILE`).
#[derive(Clone, Debug)]
pub struct Hist {
    buckets: Vec<u64>,
    pub count: u64,
    pub max_ns: u64,
    sum_ns: u128,
}

impl Default for Hist {
    fn default() -> Self {
        Hist { buckets: vec![0; Self::RANGE_US + 1], count: 0, max_ns: 0, sum_ns: 0 }
    }
}

impl Hist {
    pub const RANGE_US: usize = 100_000;

    pub fn record(&mut self, ns: u64) {
        let b = ((ns / 1000) as usize).min(Self::RANGE_US);
        self.buckets[b] += 1;
        self.count += 1;
        self.max_ns = self.max_ns.max(ns);
        self.sum_ns += ns as u128;
    }

    pub fn mean_ns(&self) -> f64 {
        if self.count == 0 { 0.0 } else { self.sum_ns as f64 / self.count as f64 }
    }

    /// Nearest-rank q-quantile (the smallest recorded value v with #{x ≤ v} ≥ ⌈q·n⌉), returned
    /// as the upper edge of v's 1 µs bucket (never below the true quantile, at most 1 µs above;
    /// capped at the maximum). 0 when empty.
    pub fn quantile_ns(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0u64;
        for (b, &c) in self.buckets.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return if b == Self::RANGE_US { self.max_ns } else { (((b + 1) * 1000) as u64).min(self.max_ns) };
            }
        }
        self.max_ns
    }

    /// `{"n":…,"mean_us":…,"p50_us":…,"p99_us":…,"p999_us":…,"max_us":…}`
    pub fn json(&self) -> String {
        let us = |ns: u64| ns as f64 / 1e3;
        format!(
            "{{\"n\":{},\"mean_us\":{:.3},\"p50_us\":{:.3},\"p99_us\":{:.3},\"p999_us\":{:.3},\"max_us\":{:.3}}}",
            self.count,
            self.mean_ns() / 1e3,
            us(self.quantile_ns(0.5)),
            us(self.quantile_ns(0.99)),
            us(self.quantile_ns(0.999)),
            us(self.max_ns)
        )
    }
}

/// Ethernet frame helpers: locate the IP header, read/set its ECN field.
pub mod frame {
    pub const ETH_HLEN: usize = 14;
    const ETH_P_IP: u16 = 0x0800;
    const ETH_P_IPV6: u16 = 0x86DD;

    fn ethertype(f: &[u8]) -> Option<u16> {
        if f.len() < ETH_HLEN {
            return None;
        }
        Some(u16::from_be_bytes([f[12], f[13]]))
    }

    /// Bytes the link is charged for: the IP packet (frame minus the Ethernet header), so a
    /// 1500-byte MTU packet costs 1500 bytes as in the scenario's `packet_bytes`.
    pub fn wire_bytes(f: &[u8]) -> usize {
        f.len().saturating_sub(ETH_HLEN).max(1)
    }

    /// ECN field (RFC 3168): 0 = Not-ECT, 1 = ECT(1), 2 = ECT(0), 3 = CE. None if not IP.
    pub fn ecn(f: &[u8]) -> Option<u8> {
        match ethertype(f)? {
            ETH_P_IP if f.len() >= ETH_HLEN + 20 => Some(f[ETH_HLEN + 1] & 3),
            ETH_P_IPV6 if f.len() >= ETH_HLEN + 40 => Some((f[ETH_HLEN + 1] >> 4) & 3),
            _ => None,
        }
    }

    pub fn is_ect(f: &[u8]) -> bool {
        matches!(ecn(f), Some(1) | Some(2))
    }

    /// Set CE (both ECN bits) and, for IPv4, fix the header checksum (RFC 1624 incremental
    /// update HC' = ~(~HC + ~m + m') on the 16-bit word holding the TOS byte).
    pub fn set_ce(f: &mut [u8]) -> bool {
        match ethertype(f) {
            Some(ETH_P_IP) if f.len() >= ETH_HLEN + 20 => {
                let ip = &mut f[ETH_HLEN..];
                let old = u16::from_be_bytes([ip[0], ip[1]]);
                ip[1] |= 3;
                let new = u16::from_be_bytes([ip[0], ip[1]]);
                let hc = u16::from_be_bytes([ip[10], ip[11]]);
                let mut sum = (!hc as u32) + (!old as u32) + (new as u32);
                while sum > 0xffff {
                    sum = (sum & 0xffff) + (sum >> 16);
                }
                let hc2 = !(sum as u16);
                ip[10..12].copy_from_slice(&hc2.to_be_bytes());
                true
            }
            Some(ETH_P_IPV6) if f.len() >= ETH_HLEN + 40 => {
                f[ETH_HLEN + 1] |= 3 << 4;
                true
            }
            _ => false,
        }
    }

    /// Internet checksum of an IPv4 header (0 when the header is valid).
    pub fn ipv4_header_checksum(ip: &[u8]) -> u16 {
        let ihl = ((ip[0] & 0xf) as usize) * 4;
        let mut sum: u32 = 0;
        for i in (0..ihl).step_by(2) {
            sum += u16::from_be_bytes([ip[i], ip[i + 1]]) as u32;
        }
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        !(sum as u16)
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

    fn red_cfg(ecn: bool, gentle: bool) -> PipeConfig {
        let mut c = cfg(Some(1000.0), 0.0, 1000);
        c.red = Some(RedConfig { min_th: 5.0, max_th: 15.0, max_p: 0.1, weight: 1.0, gentle, ecn });
        c
    }

    /// Keep the instantaneous queue at `q` (weight 1 ⇒ avg = q) and measure the early-drop rate.
    fn red_rate_at(q: usize, ecn: bool, gentle: bool, ect: bool) -> (f64, Counters) {
        let mut p = Pipe::new(red_cfg(ecn, gentle), 11);
        // pin the queue: a huge packet in service plus q−1 waiting makes q unfinished packets
        // for the whole test (the clock never advances past the first finish time)
        let n = 100_000u64;
        for _ in 0..q {
            p.finishing.push_back(u64::MAX);
        }
        p.red.idle_since = None;
        let mut hits = 0u64;
        for _ in 0..n {
            let before = p.counters;
            let v = p.arrive(1, 1, ect);
            // undo the enqueue so the queue stays at q
            if matches!(v, Verdict::Forward { .. }) {
                p.finishing.pop_back();
            }
            if p.counters.drops_red > before.drops_red || p.counters.marks > before.marks {
                hits += 1;
            }
        }
        (hits as f64 / n as f64, p.counters)
    }

    /// Long-run early-drop rate 1/E[X] of the count rule p_a(n) = p_b/(1 − n·p_b), where X is
    /// the number of packets from one drop to the next (n counts packets since the last drop,
    /// the current one included): P(X = n) = p_a(n)·Π_{j<n}(1 − p_a(j)).
    fn count_rule_rate(p_b: f64) -> f64 {
        let (mut survive, mut mean, mut n) = (1.0f64, 0.0f64, 1.0f64);
        while survive > 1e-15 {
            let d = 1.0 - n * p_b;
            let p_a = if d <= 0.0 { 1.0 } else { (p_b / d).min(1.0) };
            mean += n * survive * p_a;
            survive *= 1.0 - p_a;
            n += 1.0;
        }
        1.0 / mean
    }

    #[test]
    fn red_early_drop_rate_follows_the_count_rule() {
        // p_b = max_p·(avg − min_th)/(max_th − min_th) with avg = q (weight 1)
        for (q, p_b) in [(10usize, 0.05f64), (14, 0.09)] {
            let (rate, c) = red_rate_at(q, false, true, false);
            let expect = count_rule_rate(p_b);
            // 100k Bernoulli-like trials: binomial sd ≤ 1e-3; allow 5 sd
            assert!((rate - expect).abs() < 5e-3, "q={q} rate={rate} expect={expect}");
            assert_eq!(c.marks, 0);
        }
        // below min_th nothing is dropped
        assert_eq!(red_rate_at(4, false, true, false).0, 0.0);
        // non-gentle above max_th: every packet is dropped
        assert_eq!(red_rate_at(16, false, false, false).0, 1.0);
        // gentle between max_th and 2 max_th: p_b = max_p + (1 − max_p)(avg − max_th)/max_th
        let p_b = 0.1 + 0.9 * (20.0 - 15.0) / 15.0;
        let (rate, _) = red_rate_at(20, false, true, false);
        let expect = count_rule_rate(p_b);
        assert!((rate - expect).abs() < 5e-3, "gentle rate={rate} expect={expect}");
    }

    #[test]
    fn red_with_ecn_marks_ect_packets_and_drops_others() {
        let (rate_ect, c) = red_rate_at(10, true, true, true);
        assert!(rate_ect > 0.05 && c.drops_red == 0 && c.marks > 0);
        let (_, c) = red_rate_at(10, true, true, false);
        assert!(c.marks == 0 && c.drops_red > 0);
    }

    #[test]
    fn red_average_decays_over_idle_time() {
        // avg ← (1 − w)^m·avg with m = idle / (1500 B transmission time)
        let mut c = cfg(Some(12.0), 0.0, 100);
        c.red = Some(RedConfig { min_th: 50.0, max_th: 90.0, max_p: 0.1, weight: 0.1, gentle: true, ecn: false });
        let mut p = Pipe::new(c, 1);
        p.red.avg = 10.0;
        p.red.idle_since = Some(0);
        p.arrive(10_000_000, 1500, false); // idle 10 ms = 10 packet times at 12 Mb/s
        let expect = 10.0 * 0.9f64.powi(10);
        assert!((p.red.avg - expect).abs() < 1e-9, "{} vs {}", p.red.avg, expect);
    }

    #[test]
    fn spin_tuner_covers_the_wakeup_latency_within_its_bounds() {
        let us = 1000u64;
        // a CPU that wakes fast: the spin falls to the minimum
        let mut t = SpinTuner::new(30 * us, 200 * us);
        assert_eq!(t.spin_ns(), 200 * us); // starts conservative
        for _ in 0..2000 {
            t.overshoot(5 * us);
        }
        assert_eq!(t.spin_ns(), 30 * us);
        // a halted vCPU: every wake-up 150 µs late → spin ≈ 150 + 10 µs
        for _ in 0..200 {
            t.overshoot(150 * us);
        }
        assert!((t.spin_ns() as i64 - 160_000).abs() <= 1000, "{}", t.spin_ns());
        // never above the maximum, whatever the overshoot
        t.overshoot(50_000 * us);
        assert_eq!(t.spin_ns(), 200 * us);
        // 90 % of wake-ups 20 µs late, 10 % 100 µs: the equilibrium of the update rule,
        // 0.1·(100 − e)/2 = 0.9·(e − 20)/128  ⇒  e = (5 + 0.9·20/128)/(0.05 + 0.9/128) = 90.1 µs;
        // averaged over the cycle the spin (e + 10 µs) is within 10 % of 100.1 µs
        let mut t = SpinTuner::new(10 * us, 500 * us);
        let mut sum = 0.0;
        let n = 100_000;
        for i in 0..n {
            t.overshoot(if i % 10 == 9 { 100 * us } else { 20 * us });
            if i >= n / 2 {
                sum += t.spin_ns() as f64;
            }
        }
        let mean = sum / (n / 2) as f64;
        let e = (5.0 + 0.9 * 20.0 / 128.0) / (0.05 + 0.9 / 128.0);
        assert!((mean / 1e3 - (e + 10.0)).abs() < 0.1 * (e + 10.0), "mean spin {mean} ns, e {e} µs");
        // busy thread (releases without sleeping): the spin decays to the minimum
        for _ in 0..3000 {
            t.no_sleep();
        }
        assert_eq!(t.spin_ns(), 10 * us);
    }

    #[test]
    fn earliest_picks_the_smallest_release_and_the_first_line_on_ties() {
        assert_eq!(earliest([None, None]), None);
        assert_eq!(earliest(Vec::<Option<u64>>::new()), None);
        assert_eq!(earliest([Some(5), None]), Some((0, 5)));
        assert_eq!(earliest([None, Some(7)]), Some((1, 7)));
        assert_eq!(earliest([Some(9), Some(7)]), Some((1, 7)));
        assert_eq!(earliest([Some(7), Some(7)]), Some((0, 7)));
        // merging two non-decreasing lines by repeated `earliest` yields one non-decreasing order
        let mut a: std::collections::VecDeque<u64> = [1, 4, 4, 10].into();
        let mut b: std::collections::VecDeque<u64> = [2, 4, 9].into();
        let mut out = Vec::new();
        while let Some((i, t)) = earliest([a.front().copied(), b.front().copied()]) {
            if i == 0 { a.pop_front() } else { b.pop_front() };
            out.push((i, t));
        }
        assert_eq!(out, vec![(0, 1), (1, 2), (0, 4), (0, 4), (1, 4), (1, 9), (0, 10)]);
    }

    #[test]
    fn histogram_quantiles_bracket_the_exact_nearest_rank_quantiles() {
        // values from an LCG (independent of the histogram), spread over 0–30 ms, plus one huge
        let mut x = 12345u64;
        let mut vals = Vec::new();
        for _ in 0..20_000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            vals.push((x >> 33) % 30_000_000);
        }
        vals.push(5_000_000_000);
        let mut h = Hist::default();
        for &v in &vals {
            h.record(v);
        }
        vals.sort();
        let n = vals.len();
        for q in [0.01, 0.5, 0.9, 0.99, 0.999] {
            let exact = vals[((q * n as f64).ceil() as usize).max(1) - 1];
            let got = h.quantile_ns(q);
            assert!(got >= exact && got <= exact + 1000, "q={q}: {got} vs exact {exact}");
        }
        assert_eq!(h.quantile_ns(1.0), 5_000_000_000);
        assert_eq!(h.max_ns, 5_000_000_000);
        let mean = vals.iter().map(|&v| v as f64).sum::<f64>() / n as f64;
        assert!((h.mean_ns() - mean).abs() < 1e-6 * mean);
        assert_eq!(Hist::default().quantile_ns(0.99), 0);
    }

    #[test]
    fn ce_marking_keeps_the_ipv4_checksum_valid() {
        // Ethernet + minimal IPv4 header with ECT(0), checksum computed independently below.
        let mut f = vec![0u8; 14 + 20];
        f[12] = 0x08;
        f[13] = 0x00;
        let ip = [0x45u8, 0x02, 0x00, 0x28, 0x12, 0x34, 0x40, 0x00, 0x40, 0x06, 0, 0, 198, 18, 0, 1, 198, 18, 0, 2];
        f[14..34].copy_from_slice(&ip);
        let c = frame::ipv4_header_checksum(&f[14..34]);
        f[24..26].copy_from_slice(&c.to_be_bytes());
        assert_eq!(frame::ipv4_header_checksum(&f[14..34]), 0);
        assert!(frame::is_ect(&f));
        assert!(frame::set_ce(&mut f));
        assert_eq!(frame::ecn(&f), Some(3));
        assert_eq!(frame::ipv4_header_checksum(&f[14..34]), 0);
        assert_eq!(frame::wire_bytes(&f), 20);
    }
}
