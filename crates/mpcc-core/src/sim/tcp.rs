//! The TCP sender of one subflow: transmissions, SACK scoreboard, RACK loss detection, RTT
//! estimation, the congestion state machine (Open / CWR / Recovery / Loss), tail loss probes
//! (`[sim] tlp`) and the RTO. The window arithmetic that involves the connection's controller
//! is in `mptcp.rs`.
use std::collections::VecDeque;

use super::{ns, Ack, Pkt, Sim, K_RTO, NS_PER_S};
use crate::cc::{AckEvent, MAX_TIMERS};

mod tlp;

// Scoreboard flags of a sent segment.
const SACKED: u8 = 1;
const LOST: u8 = 2;
const RETRANS: u8 = 4;
const INFLIGHT: u8 = 8;

// Congestion states (Linux tcp_ca_state).
pub(super) const OPEN: u8 = 0;
const CWR: u8 = 1;
const RECOVERY: u8 = 2;
pub(super) const LOSS: u8 = 3;

const MAX_RTO_NS: u64 = 120_000_000_000;

/// Largest scoreboard (outstanding segments) of one subflow: 2^22 segments = 6 GB of data in
/// flight, above the bandwidth-delay product of a 100 Gb/s path with a 0.5 s RTT; beyond it the
/// run stops with an error (issue #12: a window that grows without bound, e.g. MSTCP with
/// a = inf, must not exhaust memory).
pub(super) const MAX_SCOREBOARD: usize = 1 << 22;

#[derive(Default)]
pub(super) struct Subflow {
    pub(super) conn: u32,
    /// Index of the path's first link in `Sim::hops`.
    pub(super) path: u32,
    /// Reverse-path (ACK) delay: Σ one-way delays of the path.
    pub(super) rev_ns: u64,
    // --- sender
    pub(super) snd_una: u32,
    pub(super) snd_nxt: u32,
    pub(super) inflight: u32,
    /// RACK: send time and sequence of the most recently sent segment known delivered.
    rack_ts: u64,
    rack_seq: u32,
    /// Transmissions in send order (seq, send time); stale entries are skipped.
    tsorted: VecDeque<(u32, u64)>,
    /// Latest transmission time of every outstanding segment (ring like `sb`).
    xmit_ts: Vec<u64>,
    pub(super) ssthresh: f64,
    /// New data ends before this sequence number: u32::MAX with the ideal connection level
    /// (the application always has data), else what the connection level handed this subflow.
    pub(super) data_end: u32,
    pub(super) state: u8,
    recover: u32,
    pub(super) have_rtt: bool,
    rttvar: f64,
    rto_ns: u64,
    pub(super) backoff: u32,
    /// When the retransmission timer fires: the RTO's, or a loss probe's (`probe_armed`);
    /// 0 when nothing is outstanding.
    pub(super) rto_deadline: u64,
    /// The timer armed at `rto_deadline` is a tail loss probe's (ICSK_TIME_LOSS_PROBE).
    probe_armed: bool,
    /// snd_nxt when the outstanding probe was sent, 0 if none (tp->tlp_high_seq).
    tlp_high: u32,
    /// The outstanding probe retransmitted the last segment (tp->tlp_retrans).
    tlp_retrans: bool,
    rto_timer_at: u64,
    sb: Vec<u8>,
    mask: u32,
    retx: VecDeque<u32>,
    pub(super) acks: VecDeque<Ack>,
    /// Fixed-point window counter of `WindowUpdate::FixedPoint` (Linux `snd_cwnd_cnt`).
    pub(super) cwnd_cnt: i64,
    /// Congestion signals so far: packets detected lost plus ECN-marked ACKs.
    pub(super) signals: u64,
    /// RTT samples (Σ s, count) since each of the controller's periodic updates last ran.
    pub(super) timer_rtt: [(f64, u64); MAX_TIMERS],
    // --- receiver (receiver.rs)
    pub(super) rcv_nxt: u32,
    pub(super) ooo: VecDeque<bool>,
    pub(super) delack_pending: bool,
    pub(super) delack_at: u64,
    pub(super) last_ack_time: u64,
    pub(super) pending_ack: Ack,
    /// The Linux TCP receiver's delayed-ACK engine (None: every segment ACKed at once, or the
    /// `delayed_ack` rule); boxed, so that the default receiver's subflows stay small.
    pub(super) linux_ack: Option<Box<super::receiver::LinuxAck>>,
    /// ACKs sent since the start (ss `segs_out` of the receiving socket).
    pub(super) acks_sent: u64,
    // --- statistics (cumulative)
    pub(super) delivered: u64,
    pub(super) sent: u64,
    pub(super) retrans: u64,
    pub(super) drops: u64,
    pub(super) marks: u64,
    pub(super) loss_events: u64,
    pub(super) timeouts: u64,
    /// Tail loss probes sent (LINUX_MIB_TCPLOSSPROBES).
    pub(super) probes: u64,
    pub(super) delivered_sample: u64,
    /// Σ over loss events in the measurement window of (w_r − w_r') / Σ_k w_k, and their count:
    /// the empirical D_s of Peng et al. §III-F (relative decrease of the total window per loss).
    pub(super) ds_sum: f64,
    pub(super) ds_n: u64,
}

impl Subflow {
    pub(super) fn new(conn: u32, path: u32, rev_ns: u64, ssthresh: f64) -> Subflow {
        Subflow {
            conn,
            path,
            rev_ns,
            ssthresh,
            rto_ns: ns(1.0),
            rto_timer_at: u64::MAX,
            data_end: u32::MAX,
            sb: vec![0; 64],
            xmit_ts: vec![0; 64],
            mask: 63,
            ..Default::default()
        }
    }

    fn rto_backed_off(&self) -> u64 {
        (self.rto_ns << self.backoff.min(16)).min(MAX_RTO_NS)
    }

    /// Bytes held by this subflow's buffers.
    pub(super) fn memory_bytes(&self) -> usize {
        self.sb.capacity() * 9
            + self.tsorted.capacity() * 16
            + self.retx.capacity() * 4
            + self.acks.capacity() * std::mem::size_of::<Ack>()
            + self.ooo.capacity()
    }

    /// Double the scoreboard rings (sequence numbers map to slots by `seq & mask`); false when
    /// they are at [`MAX_SCOREBOARD`] already.
    fn grow_scoreboard(&mut self) -> bool {
        let cap = self.sb.len() * 2;
        if cap > MAX_SCOREBOARD {
            return false;
        }
        let old_mask = self.mask;
        let mut nb = vec![0u8; cap];
        let mut nt = vec![0u64; cap];
        for q in self.snd_una..self.snd_nxt {
            nb[q as usize & (cap - 1)] = self.sb[(q & old_mask) as usize];
            nt[q as usize & (cap - 1)] = self.xmit_ts[(q & old_mask) as usize];
        }
        self.sb = nb;
        self.xmit_ts = nt;
        self.mask = (cap - 1) as u32;
        true
    }
}

impl Sim {
    fn arm_rto(&mut self, s: usize, deadline: u64) {
        let sf = &mut self.sf[s];
        sf.rto_deadline = deadline;
        if deadline != 0 && deadline < sf.rto_timer_at {
            sf.rto_timer_at = deadline;
            self.push(deadline, K_RTO, s as u32);
        }
    }

    /// Send while the window allows: lost segments first (lowest sequence), then new data up
    /// to `data_end` (ideal connection level: the application always has data).
    pub(super) fn try_send(&mut self, s: usize) {
        let c = self.sf[s].conn as usize;
        if !self.conns[c].active {
            return;
        }
        let ect = self.opt.ecn;
        let snd_nxt = self.sf[s].snd_nxt;
        // sending changes no window: read it once
        let win = self.cwnd[s].max(1.0) as u32;
        loop {
            let sf = &mut self.sf[s];
            if sf.inflight >= win {
                break;
            }
            let mut retx = None;
            while let Some(q) = sf.retx.pop_front() {
                let f = sf.sb[(q & sf.mask) as usize];
                if q >= sf.snd_una && f & LOST != 0 && f & (SACKED | INFLIGHT) == 0 {
                    retx = Some(q);
                    break;
                }
            }
            let seq = match retx {
                Some(q) => {
                    sf.sb[(q & sf.mask) as usize] |= RETRANS | INFLIGHT;
                    sf.retrans += 1;
                    q
                }
                None => {
                    if sf.snd_nxt >= sf.data_end {
                        break;
                    }
                    if (sf.snd_nxt - sf.snd_una) as usize >= sf.sb.len() && !sf.grow_scoreboard() {
                        self.exceeded = Some(format!(
                            "groups[{}]: a subflow's window reached {} segments in flight, more than \
                             the simulator's limit of {MAX_SCOREBOARD}; check the algorithm's \
                             parameters and [sim] initial_cwnd",
                            self.conns[c].group,
                            sf.inflight
                        ));
                        // stop the run: drain the event queue
                        self.queue.clear();
                        return;
                    }
                    let q = sf.snd_nxt;
                    sf.sb[(q & sf.mask) as usize] = INFLIGHT;
                    sf.snd_nxt += 1;
                    q
                }
            };
            sf.inflight += 1;
            self.transmit(s, seq, ect);
        }
        // tcp_write_xmit: one loss probe per tail loss episode, after new data
        if self.tlp && self.sf[s].snd_nxt > snd_nxt {
            self.schedule_loss_probe(s, false);
        }
    }

    /// Segment `seq` of subflow `s` leaves now (its scoreboard flags and in-flight count are the
    /// caller's); the RTO is armed if no timer is.
    #[inline(always)]
    fn transmit(&mut self, s: usize, seq: u32, ect: bool) {
        let now = self.now;
        let sf = &mut self.sf[s];
        sf.xmit_ts[(seq & sf.mask) as usize] = now;
        sf.tsorted.push_back((seq, now));
        sf.sent += 1;
        let sf_path = sf.path;
        if sf.rto_deadline == 0 {
            sf.probe_armed = false;
            let d = now + sf.rto_backed_off();
            self.arm_rto(s, d);
        }
        self.data_packets += 1;
        self.forward(
            Pkt {
                ts: now,
                owner: s as u32,
                seq,
                hop: sf_path,
                ce: false,
                ect,
            },
            now,
        );
    }

    /// One ACK of subflow `s`; returns (the cumulative ACK advanced, the ACK acknowledged or
    /// SACKed something new) for [`Sim::tlp_ack`].
    pub(super) fn process_ack(&mut self, s: usize, ack: Ack) -> (bool, bool) {
        let now = self.now;
        let c = self.sf[s].conn as usize;
        let ecn_reacts = self.conns[c].reacts_to_ecn;
        let rto_min = self.opt.rto_min_s;
        let sf = &mut self.sf[s];
        // RTT sample from the echoed timestamp (valid for retransmissions too); RFC 6298
        // smoothing; Linux RTO = srtt + max(4·rttvar, rto_min).
        let r = (now - ack.ts) as f64 / NS_PER_S;
        if sf.have_rtt {
            sf.rttvar = 0.75 * sf.rttvar + 0.25 * (self.srtt[s] - r).abs();
            self.srtt[s] = 0.875 * self.srtt[s] + 0.125 * r;
        } else {
            sf.have_rtt = true;
            self.srtt[s] = r;
            sf.rttvar = r / 2.0;
        }
        sf.rto_ns =
            (((self.srtt[s] + (4.0 * sf.rttvar).max(rto_min)) * NS_PER_S) as u64).min(MAX_RTO_NS);
        if r < self.base_rtt[s] {
            self.base_rtt[s] = r;
        }
        for acc in &mut sf.timer_rtt[..self.conns[c].n_timers as usize] {
            acc.0 += r;
            acc.1 += 1;
        }

        // The segment that triggered this ACK is SACKed; the cumulative ACK covers the rest.
        let mut delivered = 0u64;
        if ack.seq >= sf.snd_una && ack.seq < sf.snd_nxt {
            let i = (ack.seq & sf.mask) as usize;
            let f = sf.sb[i];
            if f & SACKED == 0 {
                if f & INFLIGHT != 0 {
                    sf.inflight -= 1;
                }
                sf.sb[i] = SACKED;
                delivered += 1;
            }
        }
        // RACK: the delivered transmission is the one whose timestamp the ACK echoes.
        if (ack.ts, ack.seq) > (sf.rack_ts, sf.rack_seq) {
            sf.rack_ts = ack.ts;
            sf.rack_seq = ack.seq;
        }
        let advanced = ack.cum > sf.snd_una;
        if advanced {
            for q in sf.snd_una..ack.cum {
                let i = (q & sf.mask) as usize;
                let f = sf.sb[i];
                if f & SACKED == 0 {
                    delivered += 1;
                    if f & INFLIGHT != 0 {
                        sf.inflight -= 1;
                    }
                }
                sf.sb[i] = 0;
            }
            sf.snd_una = ack.cum;
            sf.backoff = 0;
        }
        // Loss detection (RACK, RFC 8985, with a zero reordering window: the network never
        // reorders a subflow's packets): a transmission is lost when one sent after it has
        // been delivered. Lost retransmissions are detected the same way.
        let mut newly_lost = 0u64;
        while let Some(&(q, ts)) = sf.tsorted.front() {
            if (ts, q) >= (sf.rack_ts, sf.rack_seq) {
                break;
            }
            sf.tsorted.pop_front();
            if q < sf.snd_una {
                continue;
            }
            let i = (q & sf.mask) as usize;
            let f = sf.sb[i];
            if f & SACKED != 0 || sf.xmit_ts[i] != ts || f & INFLIGHT == 0 {
                continue; // delivered, or a newer transmission of q exists, or already lost
            }
            sf.inflight -= 1;
            sf.sb[i] = LOST | (f & RETRANS);
            sf.retx.push_back(q);
            newly_lost += 1;
        }
        sf.delivered += delivered;
        sf.signals += newly_lost + ack.ece as u64;
        if advanced {
            let d = if sf.snd_una < sf.snd_nxt {
                now + sf.rto_backed_off()
            } else {
                0
            };
            self.arm_rto(s, d);
        }
        let sf = &mut self.sf[s];
        if sf.state != OPEN && sf.snd_una >= sf.recover {
            sf.state = OPEN;
        }
        // One window reduction per recovery episode (loss) or per window of data (ECN).
        if newly_lost > 0 {
            match sf.state {
                OPEN => {
                    sf.state = RECOVERY;
                    sf.recover = sf.snd_nxt;
                    sf.tlp_high = 0;
                    self.reduce(s);
                }
                CWR => {
                    sf.state = RECOVERY;
                    sf.recover = sf.snd_nxt;
                    sf.tlp_high = 0;
                }
                _ => {}
            }
        } else if ack.ece && ecn_reacts && sf.state == OPEN {
            sf.state = CWR;
            sf.recover = sf.snd_nxt;
            self.reduce(s);
        }
        let sf = &self.sf[s];
        let cong_avoid = (sf.state == OPEN || sf.state == LOSS) && delivered > 0;
        let ev = AckEvent {
            rtt_s: r,
            snd_una: sf.snd_una,
            cong_avoid,
        };
        let first = self.conns[c].first as usize;
        self.ccs[c].on_ack_event(s - first, &ev);
        if cong_avoid {
            self.increase(s, delivered);
        }
        (advanced, delivered > 0)
    }

    pub(super) fn rto_event(&mut self, s: usize) {
        let now = self.now;
        let sf = &mut self.sf[s];
        if now != sf.rto_timer_at {
            return; // stale entry
        }
        sf.rto_timer_at = u64::MAX;
        if sf.rto_deadline == 0 {
            return;
        }
        if sf.rto_deadline > now {
            let d = sf.rto_deadline;
            self.arm_rto(s, d);
            return;
        }
        if !self.conns[sf.conn as usize].active {
            sf.rto_deadline = 0;
            return;
        }
        if sf.probe_armed {
            sf.probe_armed = false;
            self.send_loss_probe(s);
            return;
        }
        // Timeout: reduce (unless this episode already did), window 1, every unSACKed
        // segment is lost, back off the timer, slow start back to ssthresh.
        sf.timeouts += 1;
        if sf.state == OPEN || sf.state == CWR {
            self.reduce(s);
        }
        self.cwnd[s] = 1.0;
        let sf = &mut self.sf[s];
        sf.retx.clear();
        let mut lost = 0;
        for q in sf.snd_una..sf.snd_nxt {
            let i = (q & sf.mask) as usize;
            if sf.sb[i] & SACKED == 0 {
                sf.sb[i] = LOST;
                sf.retx.push_back(q);
                lost += 1;
            }
        }
        sf.signals += lost;
        sf.inflight = 0;
        sf.tsorted.clear();
        sf.state = LOSS;
        sf.tlp_high = 0;
        sf.recover = sf.snd_nxt;
        sf.backoff = (sf.backoff + 1).min(16);
        let d = now + sf.rto_backed_off();
        self.arm_rto(s, d);
        self.try_send(s);
    }

    /// The subflow is in congestion avoidance with no recovery under way.
    pub(super) fn in_ca(&self, s: usize) -> bool {
        self.sf[s].state == OPEN && self.cwnd[s] >= self.sf[s].ssthresh
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Growing the scoreboard keeps every outstanding segment's flags and send time at its new
    /// slot (seq & new mask), including across the wrap of the old ring.
    #[test]
    fn scoreboard_growth_keeps_outstanding_segments() {
        let mut sf = Subflow::new(0, 0, 0, f64::INFINITY);
        sf.snd_una = 100;
        sf.snd_nxt = 164; // 64 outstanding, wrapping the 64-slot ring
        for q in 100..164u32 {
            sf.sb[(q & 63) as usize] = if q % 3 == 0 { SACKED } else { INFLIGHT };
            sf.xmit_ts[(q & 63) as usize] = q as u64 * 10;
        }
        assert!(sf.grow_scoreboard());
        assert_eq!((sf.sb.len(), sf.mask), (128, 127));
        for q in 100..164u32 {
            let i = (q & 127) as usize;
            assert_eq!(sf.sb[i], if q % 3 == 0 { SACKED } else { INFLIGHT });
            assert_eq!(sf.xmit_ts[i], q as u64 * 10);
        }
    }

    /// The RTO doubles per backoff and stops at 120 s.
    #[test]
    fn rto_backoff_is_capped() {
        let mut sf = Subflow::new(0, 0, 0, f64::INFINITY);
        sf.rto_ns = 300_000_000;
        assert_eq!(sf.rto_backed_off(), 300_000_000);
        sf.backoff = 3;
        assert_eq!(sf.rto_backed_off(), 2_400_000_000);
        sf.backoff = 16;
        assert_eq!(sf.rto_backed_off(), MAX_RTO_NS);
    }

    /// One reno flow through a lossy link (1 %) keeps delivering: every loss is detected by
    /// RACK or the RTO and retransmitted, so the receiver's cumulative ACK keeps moving and
    /// retransmissions ≈ drops.
    #[test]
    fn losses_are_recovered() {
        let out = crate::run_json(
            r#"{"duration_s": 20, "seed": 3, "measure": [2, 20],
            "links": [{"capacity_mbps": 10, "delay_ms": 10, "buffer_pkts": 100, "loss": 0.01}],
            "groups": [{"algorithm": "reno", "count": 1, "paths": [[0]], "start_s": 0, "stop_s": 20}]}"#,
        )
        .unwrap();
        let (drops, retrans) = (out.u64("sf_drops")[0], out.u64("sf_retrans")[0]);
        assert!(drops > 50, "{drops}");
        // a retransmission per drop, give or take those still outstanding at the window edges
        assert!(
            (retrans as i64 - drops as i64).abs() <= 5,
            "{retrans} vs {drops}"
        );
        assert!(out.u64("sf_delivered")[0] > 1000);
    }
}
