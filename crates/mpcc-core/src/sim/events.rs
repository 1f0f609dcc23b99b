//! The event queue: a calendar queue (Brown, CACM 1988) that pops keys in exactly the order a
//! binary heap would (smallest `u128` key first: time, then kind, then id), so runs are
//! bit-identical to the heap's.
//!
//! Why. On a fat tree nearly every event is scheduled "now + one hop" (≈ 99 % of pushes on the
//! k = 8 and 16 fat trees fall 8–32 µs ahead, bench/sim/FATTREE.md), with 3,500 (k = 8) to
//! 27,000 (k = 16) events pending; a binary heap pays a sift-down of 12–15 levels for each.
//! Here time is cut into buckets of 2^`shift` ns; the `ring` holds the next `N` buckets, each
//! one cache line of up to [`SLOT`] keys (more go to the bucket's `spill` vector); the bucket
//! being drained (`head`) is sorted; events beyond the ring (RTOs, say) go to a binary heap
//! (`far`), whose smallest bucket is merged in when the ring reaches it. Bucket
//! width and ring length adapt to the run (`check`, every 2^15 pops: about two of the recent
//! pops per bucket, the ring spanning 95 % of the recent pushes); a retune only redistributes
//! the keys, it never reorders them.
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Keys per bucket in the ring (one 64-byte cache line).
const SLOT: usize = 4;
/// Pops between checks of the bucket width.
const CHECK_EVERY: u64 = 1 << 15;
/// Keys in the bucket being drained above which the width is checked sooner.
const LONG_HEAD: usize = 256;

#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
struct Bucket([u128; SLOT]);

pub(super) struct Events {
    shift: u32,
    /// Absolute index of the bucket being drained (time >> shift).
    cur: u64,
    /// The events of bucket `cur` (and of earlier ones, pushed after it began), sorted from
    /// the last to the first, so that the next one is at the end.
    head: Vec<u128>,
    ring: Vec<Bucket>,
    fill: Vec<u8>,
    /// Keys of a ring bucket beyond its first SLOT (many events at nearly the same time).
    spill: Vec<Vec<u128>>,
    /// One bit per ring bucket: non-empty.
    occupied: Vec<u64>,
    far: BinaryHeap<Reverse<u128>>,
    len: usize,
    /// Time of the last key popped.
    now: u64,
    // statistics since the last check: pops, the time of the first one, pushes by
    // ⌊log2(time − now)⌋ + 1
    pops: u64,
    since: u64,
    ahead: [u32; 65],
}

#[inline(always)]
fn time(k: u128) -> u64 {
    (k >> 64) as u64
}

impl Events {
    pub(super) fn new() -> Events {
        let mut e = Events {
            shift: 10,
            cur: 0,
            head: Vec::new(),
            ring: Vec::new(),
            fill: Vec::new(),
            spill: Vec::new(),
            occupied: Vec::new(),
            far: BinaryHeap::new(),
            len: 0,
            now: 0,
            pops: 0,
            since: 0,
            ahead: [0; 65],
        };
        e.resize_ring(1024);
        e
    }

    fn resize_ring(&mut self, n: usize) {
        self.ring = vec![Bucket::default(); n];
        self.fill = vec![0; n];
        self.spill = vec![Vec::new(); n];
        self.occupied = vec![0; n.div_ceil(64)];
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Bytes held by the queue.
    pub(super) fn memory_bytes(&self) -> usize {
        self.ring.len() * (std::mem::size_of::<Bucket>() + 1 + std::mem::size_of::<Vec<u128>>())
            + self.spill.iter().map(|v| v.capacity() * 16).sum::<usize>()
            + (self.head.capacity() + self.far.capacity()) * 16
    }

    pub(super) fn clear(&mut self) {
        self.head.clear();
        self.far.clear();
        self.fill.iter_mut().for_each(|f| *f = 0);
        self.spill.iter_mut().for_each(|v| v.clear());
        self.occupied.iter_mut().for_each(|w| *w = 0);
        self.len = 0;
    }

    #[inline(always)]
    pub(super) fn push(&mut self, k: u128) {
        self.len += 1;
        self.ahead[64 - time(k).saturating_sub(self.now).leading_zeros() as usize] += 1;
        let b = time(k) >> self.shift;
        let n = self.ring.len() as u64;
        if b <= self.cur {
            // the bucket being drained: keep it sorted (it holds a few keys)
            let i = self.head.partition_point(|&x| x > k);
            self.head.insert(i, k);
        } else if b - self.cur < n {
            let i = (b & (n - 1)) as usize;
            let f = self.fill[i] as usize;
            if f < SLOT {
                self.ring[i].0[f] = k;
                self.fill[i] = f as u8 + 1;
                self.occupied[i >> 6] |= 1 << (i & 63);
            } else {
                self.spill[i].push(k);
            }
        } else {
            self.far.push(Reverse(k));
        }
    }

    /// The next key (the smallest), without removing it.
    #[inline(always)]
    pub(super) fn peek(&mut self) -> Option<u128> {
        if self.head.is_empty() && !self.advance() {
            return None;
        }
        self.head.last().copied()
    }

    /// The next key if it is already in the bucket being drained (a hint for prefetching).
    #[inline(always)]
    pub(super) fn peek_cheap(&self) -> Option<u128> {
        self.head.last().copied()
    }

    #[inline(always)]
    pub(super) fn pop(&mut self) -> Option<u128> {
        if self.head.is_empty() && !self.advance() {
            return None;
        }
        self.len -= 1;
        self.pops += 1;
        let k = self.head.pop();
        self.now = time(k.unwrap());
        // (a long sorted head means buckets too wide for the run's pace now, e.g. after many
        // flows started: insertions into it cost its length; check early)
        if self.pops >= CHECK_EVERY || (self.head.len() > LONG_HEAD && self.pops >= 1024) {
            self.check();
        }
        k
    }

    /// Index distance from `cur` to the next non-empty ring bucket, if any.
    fn next_occupied(&self) -> Option<u64> {
        let n = self.ring.len() as u64;
        let mut d = 1;
        while d < n {
            let pos = ((self.cur + d) & (n - 1)) as usize;
            let bits = self.occupied[pos >> 6] >> (pos & 63);
            if bits != 0 {
                let d = d + bits.trailing_zeros() as u64;
                return (d < n).then_some(d);
            }
            d += 64 - (pos & 63) as u64;
        }
        None
    }

    /// Move to the next non-empty bucket (ring or far) and sort it into `head`; false when no
    /// event is left.
    #[cold]
    fn advance(&mut self) -> bool {
        let ring_b = self.next_occupied().map(|d| self.cur + d);
        let far_b = self.far.peek().map(|&Reverse(k)| time(k) >> self.shift);
        let b = match (ring_b, far_b) {
            (Some(r), Some(f)) => r.min(f),
            (Some(r), None) => r,
            (None, Some(f)) => f,
            (None, None) => return false,
        };
        self.cur = b;
        if ring_b == Some(b) {
            let n = self.ring.len() as u64;
            let i = (b & (n - 1)) as usize;
            let f = self.fill[i] as usize;
            self.head.extend_from_slice(&self.ring[i].0[..f]);
            if f == SLOT {
                self.head.append(&mut self.spill[i]);
            }
            self.fill[i] = 0;
            self.occupied[i >> 6] &= !(1 << (i & 63));
        }
        while let Some(&Reverse(k)) = self.far.peek() {
            if time(k) >> self.shift != b {
                break;
            }
            self.head.push(k);
            self.far.pop();
        }
        self.head.sort_unstable_by(|a, b| b.cmp(a));
        true
    }

    /// Every CHECK_EVERY pops: choose the bucket width (about two of the recent pops per
    /// bucket) and the ring length (spanning 95 % of the recent pushes, at most 4× the pending
    /// events), and redistribute the pending keys if either changed.
    #[cold]
    fn check(&mut self) {
        let spacing = (self.now - self.since) / self.pops;
        if spacing == 0 {
            // pops at one instant (many flows starting together): no bucket width helps
            self.pops = 0;
            self.ahead = [0; 65];
            return;
        }
        let shift = 64 - (2 * spacing).leading_zeros() - 1;
        let total: u64 = self.ahead.iter().map(|&n| n as u64).sum();
        let mut cum = 0;
        let mut horizon = 64;
        for (b, &n) in self.ahead.iter().enumerate() {
            cum += n as u64;
            if 20 * cum >= 19 * total {
                horizon = b as u32; // 95 % of pushes were less than 2^b ns ahead
                break;
            }
        }
        // (and not much longer than the number of pending events: memory stays O(events))
        let most = (4 * self.len).next_power_of_two().clamp(64, 1 << 16);
        let n = (1usize << horizon.saturating_sub(shift).clamp(6, 16)).min(most);
        self.pops = 0;
        self.since = self.now;
        self.ahead = [0; 65];
        // (hysteresis on the length: the horizon of a steady run wavers by a factor of 2)
        let len = self.ring.len();
        if shift != self.shift || n > 2 * len || 4 * n < len {
            self.retune(shift, n);
        }
    }

    /// Redistribute every pending key over buckets of 2^`shift` ns and a ring of `n`.
    #[cold]
    fn retune(&mut self, shift: u32, n: usize) {
        let mut keys: Vec<u128> = Vec::with_capacity(self.len);
        keys.append(&mut self.head);
        keys.extend(self.far.drain().map(|Reverse(k)| k));
        for (i, b) in self.ring.iter().enumerate() {
            keys.extend_from_slice(&b.0[..self.fill[i] as usize]);
            keys.append(&mut self.spill[i]);
        }
        self.shift = shift;
        self.resize_ring(n);
        self.cur = self.now >> shift;
        self.len = 0;
        let ahead = self.ahead;
        for k in keys {
            self.push(k);
        }
        self.ahead = ahead;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    /// Pops come out in the order of a binary heap's, through bucket overflow, far events,
    /// pushes into the bucket being drained, retunes and a clear.
    #[test]
    fn pops_in_heap_order() {
        let mut rng = Rng::new(7);
        let mut q = Events::new();
        let mut h = BinaryHeap::new();
        let mut now = 0u64;
        let mut popped = 0;
        for step in 0..400_000u64 {
            let r = rng.uniform();
            // mostly "now + a hop" (sometimes 0, ties), some far timers, some bursts
            let dt = if r < 0.7 {
                (rng.uniform() * 20_000.0) as u64
            } else if r < 0.75 {
                0
            } else if r < 0.8 {
                (rng.uniform() * 3e8) as u64
            } else {
                1_000 * (step % 7)
            };
            let k = (((now + dt) as u128) << 64) | (rng.uniform() * 12.0) as u128;
            q.push(k);
            h.push(Reverse(k));
            if rng.uniform() < 0.52 || step % 50_000 == 0 {
                for _ in 0..1 + (step % 3) {
                    let a = q.pop();
                    assert_eq!(a, h.pop().map(|Reverse(k)| k), "pop {popped}");
                    if let Some(k) = a {
                        now = time(k);
                        popped += 1;
                    }
                    assert_eq!(q.len(), h.len());
                }
            }
            if step == 300_000 {
                q.clear();
                h.clear();
            }
        }
        while let Some(Reverse(k)) = h.pop() {
            assert_eq!(q.peek(), Some(k));
            assert_eq!(q.pop(), Some(k));
        }
        assert_eq!(q.pop(), None);
        assert!(popped > 150_000);
        // the test went through retunes (the initial ring is 1024 buckets of 2^10 ns)
        assert!((q.shift, q.ring.len()) != (10, 1024));
    }

    /// Many events at one instant (flows starting together) leave the bucket width alone
    /// (a width of 1 ns would not separate them) and pop in heap order.
    #[test]
    fn same_instant_clump_keeps_width() {
        let mut rng = Rng::new(3);
        let mut q = Events::new();
        let mut h = BinaryHeap::new();
        let mut now = 0u64;
        let mut step =
            |q: &mut Events, h: &mut BinaryHeap<Reverse<u128>>, now: &mut u64, k: u128| {
                q.push(k);
                h.push(Reverse(k));
                let a = q.pop();
                assert_eq!(a, h.pop().map(|Reverse(k)| k));
                *now = time(a.unwrap());
            };
        // steady: one pop per push, each "now + 0–20 µs"
        for _ in 0..5 {
            let k = (((now + (rng.uniform() * 20_000.0) as u64) as u128) << 64) | 1;
            q.push(k);
            h.push(Reverse(k));
        }
        for i in 0..3 * CHECK_EVERY {
            let k = (((now + (rng.uniform() * 20_000.0) as u64) as u128) << 64) | i as u128;
            step(&mut q, &mut h, &mut now, k);
        }
        let steady = (q.shift, q.ring.len());
        assert!(
            steady.0 > 5,
            "buckets of about two pops (4 µs apart): {steady:?}"
        );
        // a clump: 5,000 keys at the current instant, drained with the steady traffic going on
        for id in 0..5_000u128 {
            q.push(((now as u128) << 64) | (id << 8));
            h.push(Reverse(((now as u128) << 64) | (id << 8)));
        }
        for i in 0..5_000u128 {
            let k = (((now + 20_000) as u128) << 64) | i;
            step(&mut q, &mut h, &mut now, k);
        }
        assert_eq!(q.shift, steady.0, "no retune for pops at one instant");
        while let Some(Reverse(k)) = h.pop() {
            assert_eq!(q.pop(), Some(k));
        }
    }
}
