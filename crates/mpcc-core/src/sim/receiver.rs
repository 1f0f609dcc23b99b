//! The TCP receiver of one subflow: cumulative ACK plus the SACKed segment, out-of-order
//! buffer, host jitter on the ACK path, and one of three ACK policies:
//! * every segment ACKed at once (the papers' model);
//! * `delayed_ack`: one ACK per two in-order segments, at most `delayed_ack_s` late;
//! * [`LinuxAck`]: the delayed-ACK engine of a Linux TCP socket (the linux receiver).
use super::{ns, Ack, Pkt, Sim, K_ACK, K_DELACK};

/// `TCP_ATO_MIN` = `TCP_DELACK_MIN` = HZ/25 (include/net/tcp.h, HZ = 1000).
const TCP_ATO_MIN: u64 = 40_000_000;
/// `TCP_DELACK_MAX` = HZ/5: the default `icsk_delack_max`.
pub(super) const TCP_DELACK_MAX: u64 = 200_000_000;
/// `HZ/2`: `tcp_send_delayed_ack`'s bound on the timeout outside ping-pong mode.
const MAX_ATO: u64 = 500_000_000;
/// `TCP_MAX_QUICKACKS`.
const TCP_MAX_QUICKACKS: u32 = 16;

/// The delayed-ACK engine of a Linux TCP receiver (`inet_connection_sock.icsk_ack`), for a
/// reader that empties its socket at once (the window test of `__tcp_ack_snd_check` holds):
/// * `tcp_event_data_recv` (tcp_input.c), per in-order data segment: the first one starts
///   quick-ACK mode (`tcp_incr_quickack`: min(rcv_wnd / 2 MSS, 16) ACKs) with ato =
///   TCP_ATO_MIN; after that, with m the time since the previous one, ato ← ato/2 + ATO_MIN/2
///   if m ≤ ATO_MIN/2, ato ← min(ato/2 + m, rto) if m < ato, and quick-ACK mode again if m > rto;
/// * `tcp_data_queue`: a segment already received enters quick-ACK mode
///   (`tcp_enter_quickack_mode`, ato = TCP_ATO_MIN) and is ACKed at once (D-SACK); one that
///   fills the last hole sets ICSK_ACK_NOW;
/// * `__tcp_ack_snd_check`: ACK now when more than one full segment is unACKed, in quick-ACK
///   mode, on ICSK_ACK_NOW, or while the out-of-order queue is not empty (the first dupACKs;
///   compressed SACKs, ≤ 1 ms later, are sent at once here); else `tcp_send_delayed_ack`;
/// * `__tcp_ecn_check_ce`: a CE-marked segment enters quick-ACK mode (here: ACKed at once);
/// * `tcp_send_delayed_ack` (tcp_output.c): timeout = ato, bounded when ato > TCP_DELACK_MIN by
///   min(HZ/2, max(srtt, TCP_DELACK_MIN)), then by TCP_DELACK_MAX; an armed timer is kept;
/// * `tcp_event_ack_sent` → `tcp_dec_quickack_mode`: each ACK uses one quick ACK (ato =
///   TCP_ATO_MIN when they run out);
/// * `tcp_delack_timer_handler` (tcp_timer.c): the timer's ACK doubles ato, at most rto;
/// * `tcp_grow_window` (tcp_input.c), per new data segment (in order or not): while
///   rcv_ssthresh is below the window clamp, it grows by 2 segments (max(2 advmss, 2 len)) and
///   sets `icsk_ack.quick |= 1`, so the segment is ACKed at once. rcv_ssthresh starts at the
///   initial window, 10 segments (`tcp_select_initial_window`). The clamp is the window of the
///   receive buffer (`tcp_space`, `tcp_win_from_space`): for an MPTCP subflow the connection's
///   buffer, which `mptcp_rcv_space_adjust` grows (the linux connection level's `rcvwin`); for a
///   TCP socket, and for every receiver without the linux connection level, tcp_rmem[1]'s (a
///   TCP socket's own buffer growth, `tcp_rcv_space_adjust`, is not modelled).
///
/// The receiver sends no data, so its srtt is its handshake's (the path's RTT) and its rto
/// srtt + tcp_rto_min (`tcp_set_rto`).
#[derive(Clone, Copy, Default)]
pub(super) struct LinuxAck {
    ato: u64,
    lrcv: u64,
    quick: u32,
    /// Data segments since the last ACK (rcv_nxt − rcv_wup, in segments).
    unacked: u32,
    srtt: u64,
    rto: u64,
    /// `tp->rcv_ssthresh` and the window clamp without the linux connection level, segments.
    rcv_ssthresh: f64,
    clamp: f64,
}

/// `TCP_DEFAULT_INIT_RCVWND`: the initial receive window, segments.
const INIT_RCVWND: f64 = 10.0;

impl LinuxAck {
    pub(super) fn new(rtt_ns: u64, rto_min_ns: u64, clamp: f64) -> LinuxAck {
        LinuxAck {
            srtt: rtt_ns,
            rto: rtt_ns + rto_min_ns,
            rcv_ssthresh: INIT_RCVWND.min(clamp),
            clamp,
            ..Default::default()
        }
    }

    /// `tcp_grow_window` for one new data segment, under the window clamp `clamp` (segments).
    fn grow_window(&mut self, clamp: f64) {
        if self.rcv_ssthresh < clamp {
            self.rcv_ssthresh = (self.rcv_ssthresh + 2.0).min(clamp);
            self.quick |= 1;
        }
    }

    /// `tcp_incr_quickack` with the initial receive window (64 KB: 22 segments → 16).
    fn incr_quickack(&mut self) {
        self.quick = self.quick.max(TCP_MAX_QUICKACKS);
    }

    /// `tcp_event_data_recv`'s ATO estimator, at the arrival `now` of in-order data.
    fn data_recv(&mut self, now: u64) {
        if self.ato == 0 {
            self.incr_quickack();
            self.ato = TCP_ATO_MIN;
        } else {
            let m = now.saturating_sub(self.lrcv);
            if m <= TCP_ATO_MIN / 2 {
                self.ato = self.ato / 2 + TCP_ATO_MIN / 2;
            } else if m < self.ato {
                self.ato = (self.ato / 2 + m).min(self.rto);
            } else if m > self.rto {
                self.incr_quickack();
            }
        }
        self.lrcv = now;
    }

    /// `tcp_send_delayed_ack`'s timeout.
    fn timeout(&self) -> u64 {
        let mut ato = self.ato;
        if ato > TCP_ATO_MIN {
            ato = ato.min(MAX_ATO.min(self.srtt.max(TCP_ATO_MIN)));
        }
        ato.min(TCP_DELACK_MAX)
    }

    /// `tcp_event_ack_sent`.
    fn ack_sent(&mut self) {
        self.unacked = 0;
        if self.quick > 0 {
            self.quick -= 1;
            if self.quick == 0 {
                self.ato = TCP_ATO_MIN;
            }
        }
    }
}

impl Sim {
    fn emit_ack(&mut self, s: usize, mut ack: Ack) {
        self.sf[s].acks_sent += 1;
        if let Some(lx) = self.sf[s].linux_ack.as_mut() {
            lx.ack_sent();
        }
        // Host jitter: a random delay (sender/receiver processing) that breaks the phase
        // effects of a perfectly deterministic network; ACKs of a subflow stay in order.
        if self.ack_jitter_ns > 0 {
            let j = (self.rng.uniform() * self.ack_jitter_ns as f64) as u64;
            ack.time += j;
            ack.jit = j as u32;
        }
        let sf = &mut self.sf[s];
        if let Some(last) = sf.acks.back() {
            ack.time = ack.time.max(last.time);
        } else {
            ack.time = ack.time.max(sf.last_ack_time);
        }
        sf.last_ack_time = ack.time;
        sf.acks.push_back(ack);
        if sf.acks.len() == 1 {
            self.push(ack.time, K_ACK, s as u32);
        }
    }

    /// Packet `pkt` reaches its receiver at `arrive` (computed when the last link accepted it).
    pub(super) fn receive(&mut self, pkt: Pkt, arrive: u64) {
        let s = pkt.owner as usize;
        let delayed = self.opt.delayed_ack;
        let sf = &mut self.sf[s];
        if sf.delack_pending && sf.delack_at <= arrive {
            // the delayed-ACK timer expired before this packet arrived
            let at = sf.delack_at;
            self.delack_fire(s, at);
        }
        let sf = &mut self.sf[s];
        let before = sf.rcv_nxt;
        let had_hole = !sf.ooo.is_empty();
        let in_order = pkt.seq == sf.rcv_nxt && !had_hole;
        let mut duplicate = pkt.seq < before;
        if in_order {
            sf.rcv_nxt += 1; // the common case: no hole, nothing buffered
        } else if pkt.seq >= sf.rcv_nxt {
            let idx = (pkt.seq - sf.rcv_nxt) as usize;
            if idx >= sf.ooo.len() {
                sf.ooo.resize(idx + 1, false);
            }
            duplicate = sf.ooo[idx];
            sf.ooo[idx] = true;
            while sf.ooo.front() == Some(&true) {
                sf.ooo.pop_front();
                sf.rcv_nxt += 1;
            }
        }
        if let super::Mptcp::Linux(l) = &mut self.mptcp {
            // the subflow hands its in-order data to the connection (linux mode)
            if sf.rcv_nxt > before {
                l.subflow_delivers(s, before, sf.rcv_nxt, arrive);
            }
        }
        let sf = &mut self.sf[s];
        let ack = Ack {
            time: arrive + sf.rev_ns,
            ts: pkt.ts,
            cum: sf.rcv_nxt,
            seq: pkt.seq,
            jit: 0,
            ece: pkt.ce,
            dsack: duplicate,
        };
        if let Some(lx) = sf.linux_ack.as_mut() {
            let new = sf.rcv_nxt - before;
            if duplicate {
                lx.incr_quickack(); // tcp_enter_quickack_mode
                lx.ato = TCP_ATO_MIN;
            } else {
                if new > 0 {
                    lx.data_recv(arrive);
                    lx.unacked += new;
                }
                let clamp = match &self.mptcp {
                    super::Mptcp::Linux(l) => l.rcv_clamp(s),
                    _ => None,
                };
                lx.grow_window(clamp.unwrap_or(lx.clamp));
            }
            let now = lx.unacked >= 2
                || lx.quick > 0
                || duplicate
                || pkt.ce
                || !sf.ooo.is_empty()
                || (had_hole && new > 0);
            if now {
                let mut a = ack;
                if sf.delack_pending {
                    a.ts = sf.pending_ack.ts; // echo the oldest unACKed segment's (RFC 7323)
                }
                sf.delack_pending = false;
                self.emit_ack(s, a);
            } else if sf.delack_pending {
                // an armed timer is kept; its ACK will carry the newest cumulative ACK
                sf.pending_ack.cum = ack.cum;
                sf.pending_ack.seq = ack.seq;
            } else {
                sf.delack_pending = true;
                sf.pending_ack = ack;
                sf.delack_at = arrive + lx.timeout();
                let t = sf.delack_at;
                self.push(t, K_DELACK, s as u32);
            }
        } else if delayed && in_order && !pkt.ce {
            if sf.delack_pending {
                // second full segment: ACK both now; echo the first one's timestamp (RFC 7323)
                sf.delack_pending = false;
                let mut a = ack;
                a.ts = sf.pending_ack.ts;
                self.emit_ack(s, a);
            } else {
                sf.delack_pending = true;
                sf.pending_ack = ack;
                sf.delack_at = arrive + ns(self.opt.delayed_ack_s);
                let t = sf.delack_at;
                self.push(t, K_DELACK, s as u32);
            }
        } else {
            sf.delack_pending = false; // covered by this (immediate) ACK
            self.emit_ack(s, ack);
        }
    }

    /// The delayed-ACK timer of subflow `s` fires at `at` (`tcp_delack_timer_handler`).
    fn delack_fire(&mut self, s: usize, at: u64) {
        let sf = &mut self.sf[s];
        sf.delack_pending = false;
        if let Some(lx) = sf.linux_ack.as_mut() {
            lx.ato = (2 * lx.ato).min(lx.rto);
        }
        let mut a = sf.pending_ack;
        a.time = at + sf.rev_ns;
        self.emit_ack(s, a);
    }

    pub(super) fn delack_event(&mut self, s: usize) {
        let sf = &self.sf[s];
        if sf.delack_pending && sf.delack_at == self.now {
            self.delack_fire(s, self.now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Pkt, Sim};

    fn sim(delayed: bool) -> Sim {
        sim_with(10, &format!(r#""delayed_ack": {delayed}"#))
    }

    /// One Reno flow over one link of one-way delay `delay_ms`, with the `[sim]` options `opts`.
    fn sim_with(delay_ms: u32, opts: &str) -> Sim {
        let cfg = crate::config::parse(&format!(
            r#"{{"duration_s": 2, "measure": [0, 2],
            "links": [{{"capacity_mbps": 10, "delay_ms": {delay_ms}, "buffer_pkts": 100}}],
            "groups": [{{"algorithm": "reno", "count": 1, "paths": [[0]], "stop_s": 2}}],
            "options": {{{opts}, "host_jitter_s": 0}}}}"#
        ))
        .unwrap();
        Sim::new(&cfg).unwrap()
    }

    const MS: u64 = 1_000_000;

    /// The Linux receiver: quick ACKs while rcv_ssthresh grows from 10 segments to its clamp
    /// (tcp_rmem[1] = 256 KB: 113 segments, 2 per segment: 52 segments; `quick |= 1` keeps the
    /// 16 of the first segment, spent after that: 68), then one ACK per two segments; a lone
    /// segment waits for the timer (TCP_ATO_MIN = 40 ms at 1-ms arrivals), whose ACK doubles
    /// ato. The bound of `tcp_send_delayed_ack` (max(srtt, 40 ms)) then decides the next
    /// timeout.
    #[test]
    fn linux_receiver_delayed_ack_engine() {
        for (delay_ms, next_timeout) in [(10, 40 * MS), (100, 80 * MS)] {
            let mut s = sim_with(delay_ms, r#""receiver": "linux""#);
            let at = |q: u32| MS * q as u64;
            for q in 0..68 {
                s.receive(pkt(q), at(q));
            }
            assert_eq!(s.sf[0].acks.len(), 68, "quick ACKs while the window grows");
            for q in 68..78 {
                s.receive(pkt(q), at(q));
            }
            assert_eq!(s.sf[0].acks.len(), 73, "then one ACK per two segments");
            s.receive(pkt(78), at(78));
            assert!(s.sf[0].delack_pending);
            assert_eq!(s.sf[0].delack_at, at(78) + 40 * MS, "ato = TCP_ATO_MIN");
            s.now = at(78) + 40 * MS;
            s.delack_event(0);
            assert_eq!(s.sf[0].acks.len(), 74);
            assert_eq!(s.sf[0].acks.back().unwrap().cum, 79);
            // 140 ms later (ato ≤ m < rto): ato stays 80 ms, bounded by max(srtt, 40 ms)
            s.receive(pkt(79), at(218));
            assert_eq!(
                s.sf[0].delack_at,
                at(218) + next_timeout,
                "delay {delay_ms} ms"
            );
            // a segment received twice: an immediate ACK, and quick-ACK mode again
            s.receive(pkt(20), at(219));
            assert!(!s.sf[0].delack_pending);
            assert_eq!(s.sf[0].acks.len(), 75);
            s.receive(pkt(80), at(220));
            assert_eq!(s.sf[0].acks.len(), 76, "quick ACK");
        }
    }

    /// The Linux receiver ACKs out-of-order data, and the segment that fills the hole, at once.
    #[test]
    fn linux_receiver_acks_holes_at_once() {
        let mut s = sim_with(10, r#""receiver": "linux""#);
        for q in 0..80 {
            s.receive(pkt(q), MS * q as u64);
        }
        let n = s.sf[0].acks.len();
        s.receive(pkt(81), 81 * MS);
        s.receive(pkt(82), 82 * MS);
        assert_eq!(
            s.sf[0].acks.len(),
            n + 2,
            "one ACK per out-of-order segment"
        );
        s.receive(pkt(80), 83 * MS);
        assert_eq!(s.sf[0].acks.len(), n + 3);
        assert_eq!(s.sf[0].acks.back().unwrap().cum, 83);
        assert_eq!(s.sf[0].acks_sent, (n + 3) as u64);
    }

    fn pkt(seq: u32) -> Pkt {
        Pkt {
            ts: 0,
            owner: 0,
            seq,
            hop: 0,
            ce: false,
            ect: true,
        }
    }

    /// In-order segments 1 ms apart: one ACK each, or one per two with delayed ACKs (the odd
    /// one waits for its timer). A hole is ACKed at once, duplicate cumulative ACK included.
    #[test]
    fn acks_per_segment() {
        let mut s = sim(false);
        for q in 0..10 {
            s.receive(pkt(q), 1_000_000 * q as u64);
        }
        assert_eq!(s.sf[0].acks.len(), 10);
        assert_eq!(s.sf[0].acks.back().unwrap().cum, 10);
        let mut s = sim(true);
        for q in 0..9 {
            s.receive(pkt(q), 1_000_000 * q as u64);
        }
        assert_eq!(s.sf[0].acks.len(), 4, "9 segments: 4 ACKs, the 9th pending");
        assert!(s.sf[0].delack_pending);
        s.receive(pkt(11), 9_000_000); // out of order: immediate ACK, cum stays 9
        assert_eq!(s.sf[0].acks.len(), 5);
        let a = *s.sf[0].acks.back().unwrap();
        assert_eq!((a.cum, a.seq), (9, 11));
        assert!(!s.sf[0].delack_pending, "covered by the immediate ACK");
        // the ACK reaches the sender one reverse delay (10 ms) after the arrival
        assert_eq!(a.time, 9_000_000 + 10_000_000);
    }
}
