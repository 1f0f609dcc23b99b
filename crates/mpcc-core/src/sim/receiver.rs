//! The TCP receiver of one subflow: cumulative ACK plus the SACKed segment, out-of-order
//! buffer, optional delayed ACKs (one ACK per two in-order segments, at most
//! `delayed_ack_s` late), host jitter on the ACK path.
use super::{ns, Ack, Pkt, Sim, K_ACK, K_DELACK};

impl Sim {
    fn emit_ack(&mut self, s: usize, mut ack: Ack) {
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
            sf.delack_pending = false;
            let mut a = sf.pending_ack;
            a.time = sf.delack_at + sf.rev_ns;
            self.emit_ack(s, a);
        }
        let sf = &mut self.sf[s];
        let before = sf.rcv_nxt;
        let in_order = pkt.seq == sf.rcv_nxt && sf.ooo.is_empty();
        if in_order {
            sf.rcv_nxt += 1; // the common case: no hole, nothing buffered
        } else if pkt.seq >= sf.rcv_nxt {
            let idx = (pkt.seq - sf.rcv_nxt) as usize;
            if idx >= sf.ooo.len() {
                sf.ooo.resize(idx + 1, false);
            }
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
        };
        if delayed && in_order && !pkt.ce {
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

    pub(super) fn delack_event(&mut self, s: usize) {
        let sf = &mut self.sf[s];
        if sf.delack_pending && sf.delack_at == self.now {
            sf.delack_pending = false;
            let mut a = sf.pending_ack;
            a.time = self.now + sf.rev_ns;
            self.emit_ack(s, a);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Pkt, Sim};

    fn sim(delayed: bool) -> Sim {
        let cfg = crate::config::parse(&format!(
            r#"{{"duration_s": 2, "measure": [0, 2],
            "links": [{{"capacity_mbps": 10, "delay_ms": 10, "buffer_pkts": 100}}],
            "groups": [{{"algorithm": "reno", "count": 1, "paths": [[0]], "stop_s": 2}}],
            "options": {{"delayed_ack": {delayed}, "host_jitter_s": 0}}}}"#
        ))
        .unwrap();
        Sim::new(&cfg).unwrap()
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
