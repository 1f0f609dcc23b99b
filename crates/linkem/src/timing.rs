//! Release timing of the forwarding threads: the adaptive busy-wait before each release
//! ([`SpinTuner`]), the merge of several delay lines ([`earliest`]) and the lateness
//! histogram ([`Hist`]).

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

    /// Durations of at least `us` µs (exact: the buckets are 1 µs wide, `us` ≤ RANGE_US).
    pub fn count_at_least_us(&self, us: usize) -> u64 {
        self.buckets[us.min(Self::RANGE_US)..].iter().sum()
    }

    /// Lateness the testbed's health check counts (`over_1ms`): a release 1 ms late adds 1 ms
    /// to that packet's RTT, a tenth of a 10 ms link delay.
    pub const LATE_US: usize = 1000;

    /// `{"n":…,"mean_us":…,"p50_us":…,"p99_us":…,"p999_us":…,"max_us":…,"over_1ms":…}`
    pub fn json(&self) -> String {
        let us = |ns: u64| ns as f64 / 1e3;
        format!(
            "{{\"n\":{},\"mean_us\":{:.3},\"p50_us\":{:.3},\"p99_us\":{:.3},\"p999_us\":{:.3},\"max_us\":{:.3},\"over_1ms\":{}}}",
            self.count,
            self.mean_ns() / 1e3,
            us(self.quantile_ns(0.5)),
            us(self.quantile_ns(0.99)),
            us(self.quantile_ns(0.999)),
            us(self.max_ns),
            self.count_at_least_us(Self::LATE_US)
        )
    }
}

/// Ethernet frame helpers: locate the IP header, read/set its ECN field.

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn count_at_least_us_counts_exactly_the_durations_from_the_threshold_up() {
        let mut h = Hist::default();
        for ns in [0, 999_999, 1_000_000, 1_000_001, 5_000_000, 200_000_000_000] {
            h.record(ns);
        }
        assert_eq!(h.count_at_least_us(Hist::LATE_US), 4);   // 1 ms, 1 ms + 1 ns, 5 ms, 200 s
        assert_eq!(h.count_at_least_us(0), 6);
        assert!(h.json().ends_with(",\"over_1ms\":4}"));
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
}
