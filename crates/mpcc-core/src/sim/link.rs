//! Links: a FIFO server with a constant service time per packet, a propagation delay, a
//! buffer (drop-tail or RED, the queue model of `mpcc-queue`) and random loss; forwarding of
//! packets hop by hop along their path.
//!
//! The queue needs no per-packet state: service is FIFO with a constant time per packet, so
//! while the link is busy its departures are exactly `tx_ns` apart and end at `busy_until`,
//! and the packets still queued at `now` are ⌈(busy_until − now) / tx_ns⌉ (see `queue_at`).
use std::collections::VecDeque;

use mpcc_queue::{Arrival, Queue, Verdict};

use super::{ns, Pkt, Sim, BG, K_PIPE, NO_HOP};
use crate::config::LinkCfg;

/// Packets of a link's pipe kept in the link's second cache line; more (a propagation delay
/// longer than the service time) go to `pipe_spill`.
const PIPE_INLINE: usize = 2;

/// A link. Laid out by hand: every arrival reads and writes the first cache line only, a
/// packet entering or leaving the pipe to the next hop the second one (`repr(C)`; a fat tree
/// has thousands of links, so each line touched per hop is a cache miss).
#[repr(C, align(64))]
pub(super) struct Link {
    // --- line 1 (62 bytes)
    /// Departure time of the last accepted packet (the queue is empty from then on).
    pub(super) busy_until: u64,
    pub(super) tx_ns: u64,
    pub(super) delay_ns: u64,
    pub(super) accepted: u64,
    loss: f64,
    /// Buffer management: drop-tail or RED (shared with linkem).
    queue: Queue,
    pub(super) max_queue: u32,
    /// Packets propagating to their next hop, in departure order: `pipe_n` of them in
    /// `pipe_inline` from `pipe_head` on (a ring of PIPE_INLINE), then those in `pipe_spill`
    /// (non-empty only when the inline ring is full, so that push and pop read it only then).
    pipe_head: u8,
    pipe_n: u8,
    // --- line 2
    /// (arrival time at the next hop, packet).
    pipe_inline: [(u64, Pkt); PIPE_INLINE],
    // --- line 3 (rarely touched)
    pipe_spill: VecDeque<(u64, Pkt)>,
    /// Arrivals = accepted + drops.
    pub(super) drops: u64,
    pub(super) marks: u64,
}

impl Link {
    /// A link from its configuration; the error names the field (after `links[i].`).
    pub(super) fn new(l: &LinkCfg, pkt_bits: f64) -> Result<Link, String> {
        if !(l.capacity_mbps > 0.0) || !l.capacity_mbps.is_finite() {
            return Err(format!(
                "capacity_mbps: {} is not a positive number",
                l.capacity_mbps
            ));
        }
        if l.buffer_pkts == 0 {
            return Err("buffer_pkts: must be ≥ 1".into());
        }
        if !(l.delay_ms >= 0.0) || !l.delay_ms.is_finite() {
            return Err(format!("delay_ms: {} is not a number ≥ 0", l.delay_ms));
        }
        if !(0.0..=1.0).contains(&l.loss) {
            return Err(format!("loss: {} is not a probability in [0, 1]", l.loss));
        }
        let tx = pkt_bits / (l.capacity_mbps * 1e6);
        // a packet must leave within a day: ns() of longer times saturates and time overflows
        if !(tx <= 86_400.0) {
            return Err(format!(
                "capacity_mbps: {} Mb/s takes {tx:.3e} s per packet; use a capacity ≥ 1e-6 Mb/s",
                l.capacity_mbps
            ));
        }
        if l.delay_ms > 86_400e3 {
            return Err(format!("delay_ms: {} ms is longer than a day", l.delay_ms));
        }
        let queue = Queue::new(l.buffer_pkts, l.red.as_ref().map(|r| r.to_queue()))
            .map_err(|e| format!("red.{e}"))?;
        Ok(Link {
            tx_ns: ns(tx).max(1),
            delay_ns: ns(l.delay_ms * 1e-3),
            busy_until: 0,
            queue,
            loss: l.loss,
            drops: 0,
            marks: 0,
            accepted: 0,
            max_queue: 0,
            pipe_head: 0,
            pipe_n: 0,
            pipe_inline: Default::default(),
            pipe_spill: VecDeque::new(),
        })
    }

    /// A packet enters the pipe to the next hop (where it arrives at `arrive`); true when it
    /// is the only one (the pipe needs an event).
    #[inline(always)]
    fn pipe_push(&mut self, arrive: u64, pkt: Pkt) -> bool {
        let n = self.pipe_n as usize;
        // (the spill holds packets only while the inline ring is full: no need to read the
        // third cache line)
        if n < PIPE_INLINE {
            self.pipe_inline[(self.pipe_head as usize + n) % PIPE_INLINE] = (arrive, pkt);
            self.pipe_n += 1;
            n == 0
        } else {
            self.pipe_spill.push_back((arrive, pkt));
            false
        }
    }

    /// The pipe's first packet leaves it; returns it and the arrival time of the next one.
    #[inline(always)]
    fn pipe_pop(&mut self) -> (Pkt, Option<u64>) {
        assert!(self.pipe_n > 0, "pipe event without packet");
        let h = self.pipe_head as usize;
        let (_, pkt) = self.pipe_inline[h];
        self.pipe_head = ((h + 1) % PIPE_INLINE) as u8;
        let was_full = self.pipe_n as usize == PIPE_INLINE;
        self.pipe_n -= 1;
        // the spill is touched only when the inline ring was full (otherwise it is empty)
        if was_full {
            if let Some(e) = self.pipe_spill.pop_front() {
                let i = (self.pipe_head as usize + self.pipe_n as usize) % PIPE_INLINE;
                self.pipe_inline[i] = e;
                self.pipe_n += 1;
            }
        }
        let next = (self.pipe_n > 0).then(|| self.pipe_inline[self.pipe_head as usize].0);
        (pkt, next)
    }

    /// Arrivals so far (every arrival is accepted or dropped).
    pub(super) fn arrivals(&self) -> u64 {
        self.accepted + self.drops
    }

    /// Packets in the queue at `now` (the one in transmission included): those whose departure
    /// is later than `now`. The current busy period began with an arrival at some a ≤ now and
    /// its n packets leave at a + tx, a + 2·tx, …, busy_until = a + n·tx, so the count is
    /// ⌈(busy_until − now) / tx⌉ (≤ n). `now` never decreases (the event loop's clock).
    #[inline(always)]
    pub(super) fn queue_at(&self, now: u64) -> u32 {
        if self.busy_until > now {
            (self.busy_until - now).div_ceil(self.tx_ns) as u32
        } else {
            0
        }
    }

    /// Bytes held by this link's ring.
    pub(super) fn memory_bytes(&self) -> usize {
        self.pipe_spill.capacity() * std::mem::size_of::<(u64, Pkt)>()
    }

    /// Offer a packet at `now`: drop (random loss, then the queue's verdict) or accept (ECN
    /// marks set `pkt.ce`) and return its departure time. `uniform` draws U[0, 1).
    /// Inlined: once per packet and hop, and a call here cost FAST's benchmark ~4 % more
    /// instructions (bench/sim/BEFORE_AFTER.md).
    #[inline(always)]
    fn offer(&mut self, pkt: &mut Pkt, now: u64, mut uniform: impl FnMut() -> f64) -> Option<u64> {
        let q = self.queue_at(now);
        if self.loss > 0.0 && uniform() < self.loss {
            self.drops += 1;
            return None;
        }
        // the queue went empty when the last accepted packet left (busy_until)
        let a = Arrival {
            queue: q,
            now_ns: now,
            empty_since_ns: self.busy_until.min(now),
            service_ns: self.tx_ns as f64,
            ect: pkt.ect,
        };
        match self.queue.arrive(a, uniform) {
            Verdict::Drop(_) => {
                self.drops += 1;
                return None;
            }
            Verdict::Mark => {
                pkt.ce = true;
                self.marks += 1;
            }
            Verdict::Accept => {}
        }
        let depart = self.busy_until.max(now) + self.tx_ns;
        self.busy_until = depart;
        self.accepted += 1;
        self.max_queue = self.max_queue.max(q + 1);
        Some(depart)
    }
}

/// What a link did with one packet of a replayed trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Accepted (with CE set when `marked`), leaving the link's server at `depart_ns`.
    Accept {
        depart_ns: u64,
        marked: bool,
    },
    Drop,
}

/// Offer a trace of arrivals (time ns, ECN-capable) to one simulator link, with the U[0, 1)
/// draws from `uniform` — the cross-check with linkem's pipe (`crates/linkem/tests`).
pub fn replay_link(
    cfg: &LinkCfg,
    packet_bytes: u32,
    trace: &[(u64, bool)],
    mut uniform: impl FnMut() -> f64,
) -> Result<Vec<Decision>, String> {
    let mut link = Link::new(cfg, packet_bytes as f64 * 8.0)?;
    Ok(trace
        .iter()
        .map(|&(t, ect)| {
            let mut pkt = Pkt {
                ect,
                ..Default::default()
            };
            match link.offer(&mut pkt, t, &mut uniform) {
                Some(depart_ns) => Decision::Accept {
                    depart_ns,
                    marked: pkt.ce,
                },
                None => Decision::Drop,
            }
        })
        .collect())
}

impl Sim {
    /// Offer a packet to link `l` at `now`: drop or accept and return its departure time.
    fn enqueue(&mut self, l: usize, pkt: &mut Pkt, now: u64) -> Option<u64> {
        let rng = &mut self.rng;
        self.links[l].offer(pkt, now, || rng.uniform())
    }

    /// Offer the packet to the link of its current hop; deliver it to the receiver after the
    /// last one, or put it in the link's pipe to the next hop.
    pub(super) fn forward(&mut self, mut pkt: Pkt, now: u64) {
        let bg = pkt.owner & BG != 0;
        let l = self.hops[pkt.hop as usize] as usize;
        let last = self.hops[pkt.hop as usize + 1] == NO_HOP;
        let was_ce = pkt.ce;
        match self.enqueue(l, &mut pkt, now) {
            None => {
                if !bg {
                    self.sf[pkt.owner as usize].drops += 1;
                }
            }
            Some(depart) => {
                if pkt.ce && !was_ce && !bg {
                    self.sf[pkt.owner as usize].marks += 1;
                }
                let arrive = depart + self.links[l].delay_ns;
                if last {
                    if !bg {
                        self.receive(pkt, arrive);
                    }
                } else {
                    pkt.hop += 1;
                    if self.links[l].pipe_push(arrive, pkt) {
                        self.push(arrive, K_PIPE, l as u32);
                    }
                }
            }
        }
    }

    pub(super) fn pipe_event(&mut self, l: usize) {
        let (pkt, next) = self.links[l].pipe_pop();
        if let Some(t) = next {
            self.push(t, K_PIPE, l as u32);
        }
        self.forward(pkt, self.now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::RedCfg;

    fn link(buffer: u32, red: Option<RedCfg>) -> Link {
        let cfg = LinkCfg {
            capacity_mbps: 12.0, // 1500 B → 1 ms per packet
            delay_ms: 5.0,
            buffer_pkts: buffer,
            red,
            loss: 0.0,
        };
        Link::new(&cfg, 12_000.0).unwrap()
    }

    /// Back-to-back arrivals leave one service time apart; the buffer (transmitting packet
    /// included) holds at most `buffer` packets; the queue drains by departure times.
    #[test]
    fn fifo_departures_and_tail_drop() {
        let mut l = link(3, None);
        let mut p = Pkt::default();
        let d: Vec<Option<u64>> = (0..4).map(|_| l.offer(&mut p, 0, || 0.5)).collect();
        assert_eq!(
            d,
            vec![Some(1_000_000), Some(2_000_000), Some(3_000_000), None]
        );
        assert_eq!(
            (l.arrivals(), l.accepted, l.drops, l.max_queue),
            (4, 3, 1, 3)
        );
        assert_eq!(l.queue_at(1_999_999), 2);
        assert_eq!(l.queue_at(3_000_000), 0);
        // idle link: service starts at the arrival
        assert_eq!(l.offer(&mut p, 10_000_000, || 0.5), Some(11_000_000));
    }

    /// The per-arrival fields fill the first cache line, the inline pipe the second.
    #[test]
    fn link_layout() {
        use std::mem::{offset_of, size_of};
        assert_eq!(size_of::<Pkt>(), 24);
        assert!(offset_of!(Link, pipe_n) < 64);
        assert_eq!(offset_of!(Link, pipe_inline), 64);
        assert_eq!(offset_of!(Link, pipe_spill), 128);
    }

    /// The pipe keeps departure order through its inline slots and the spill ring, and asks
    /// for an event only when it goes from empty to one packet.
    #[test]
    fn pipe_is_fifo() {
        let mut l = link(3, None);
        let pkt = |seq| Pkt {
            seq,
            ..Default::default()
        };
        let mut out = vec![];
        let mut events = 0;
        for round in 0..3u32 {
            for i in 0..5 {
                events += l.pipe_push(10 * (round * 5 + i) as u64, pkt(round * 5 + i)) as u32;
            }
            for _ in 0..4 {
                let (p, next) = l.pipe_pop();
                out.push(p.seq);
                assert_eq!(next.is_some(), l.pipe_n > 0);
            }
        }
        while l.pipe_n > 0 {
            out.push(l.pipe_pop().0.seq);
        }
        assert_eq!(out, (0..15).collect::<Vec<_>>());
        assert_eq!(events, 1, "the pipe was never empty after the first push");
    }

    /// Random loss draws first: u < loss drops before the queue sees the packet.
    #[test]
    fn random_loss_uses_the_first_draw() {
        let mut cfg_l = link(10, None);
        cfg_l.loss = 0.1;
        let mut p = Pkt::default();
        assert_eq!(cfg_l.offer(&mut p, 0, || 0.05), None);
        assert!(cfg_l.offer(&mut p, 0, || 0.2).is_some());
        assert_eq!((cfg_l.drops, cfg_l.accepted), (1, 1));
    }

    #[test]
    fn bad_links_name_the_field() {
        let mut cfg = LinkCfg {
            capacity_mbps: 1e-300,
            delay_ms: 1.0,
            buffer_pkts: 10,
            red: None,
            loss: 0.0,
        };
        assert!(Link::new(&cfg, 12_000.0)
            .err()
            .unwrap()
            .starts_with("capacity_mbps:"));
        cfg.capacity_mbps = 10.0;
        cfg.delay_ms = f64::NAN;
        assert!(Link::new(&cfg, 12_000.0)
            .err()
            .unwrap()
            .starts_with("delay_ms:"));
        cfg.delay_ms = 1.0;
        cfg.buffer_pkts = 0;
        assert!(Link::new(&cfg, 12_000.0)
            .err()
            .unwrap()
            .starts_with("buffer_pkts:"));
    }
}
