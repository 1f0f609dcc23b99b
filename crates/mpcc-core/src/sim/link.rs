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

pub(super) struct Link {
    pub(super) tx_ns: u64,
    pub(super) delay_ns: u64,
    /// Departure time of the last accepted packet (the queue is empty from then on).
    pub(super) busy_until: u64,
    /// Packets propagating to their next hop: (arrival time there, packet).
    pipe: VecDeque<(u64, Pkt)>,
    /// Buffer management: drop-tail or RED (shared with linkem).
    queue: Queue,
    loss: f64,
    pub(super) arrivals: u64,
    pub(super) drops: u64,
    pub(super) marks: u64,
    pub(super) accepted: u64,
    pub(super) max_queue: u32,
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
            pipe: VecDeque::new(),
            queue,
            loss: l.loss,
            arrivals: 0,
            drops: 0,
            marks: 0,
            accepted: 0,
            max_queue: 0,
        })
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
        self.pipe.capacity() * std::mem::size_of::<(u64, Pkt)>()
    }

    /// Offer a packet at `now`: drop (random loss, then the queue's verdict) or accept (ECN
    /// marks set `pkt.ce`) and return its departure time. `uniform` draws U[0, 1).
    /// Inlined: once per packet and hop, and a call here cost FAST's benchmark ~4 % more
    /// instructions (bench/sim/BEFORE_AFTER.md).
    #[inline(always)]
    fn offer(&mut self, pkt: &mut Pkt, now: u64, mut uniform: impl FnMut() -> f64) -> Option<u64> {
        let q = self.queue_at(now);
        self.arrivals += 1;
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
                    let pipe = &mut self.links[l].pipe;
                    pipe.push_back((arrive, pkt));
                    if pipe.len() == 1 {
                        self.push(arrive, K_PIPE, l as u32);
                    }
                }
            }
        }
    }

    pub(super) fn pipe_event(&mut self, l: usize) {
        let (_, pkt) = self.links[l]
            .pipe
            .pop_front()
            .expect("pipe event without packet");
        if let Some(&(t, _)) = self.links[l].pipe.front() {
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
        assert_eq!((l.arrivals, l.accepted, l.drops, l.max_queue), (4, 3, 1, 3));
        assert_eq!(l.queue_at(1_999_999), 2);
        assert_eq!(l.queue_at(3_000_000), 0);
        // idle link: service starts at the arrival
        assert_eq!(l.offer(&mut p, 10_000_000, || 0.5), Some(11_000_000));
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
