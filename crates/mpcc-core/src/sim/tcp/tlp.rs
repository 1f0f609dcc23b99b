//! Tail loss probes (RFC 8985 §7) as Linux sends them (`[sim] tlp`; net/ipv4/tcp_output.c and
//! tcp_input.c): when a subflow's last segments are lost, a probe 2·srtt later draws the SACK
//! that lets RACK repair them by a fast recovery, instead of the RTO and a window of 1. The
//! subflow's timer is one: `Subflow::rto_deadline` is the probe's while `probe_armed`.
use super::*;

impl Subflow {
    /// When the oldest outstanding segment's RTO falls due: its last transmission + the RTO
    /// (`tcp_rto_delta_us`).
    fn head_rto_at(&self) -> u64 {
        self.xmit_ts[(self.snd_una & self.mask) as usize] + self.rto_backed_off()
    }
}

impl Sim {
    /// `tcp_schedule_loss_probe` (net/ipv4/tcp_output.c): in Open or CWR with data out, the
    /// timer becomes a probe's, due in PTO = 2·srtt + (rto_min with one segment out, for its
    /// delayed ACK; else TCP_TIMEOUT_MIN = 2 ms), or when the RTO would fire if that is sooner
    /// (`advancing_rto`: a full RTO from now, as after an ACK; else the RTO of the oldest
    /// segment, `tcp_rto_delta_us`). False when no probe applies (the caller keeps the RTO).
    pub(in crate::sim) fn schedule_loss_probe(&mut self, s: usize, advancing_rto: bool) -> bool {
        let now = self.now;
        let rto_min = self.opt.rto_min_s;
        let srtt = self.srtt[s];
        let sf = &mut self.sf[s];
        let out = sf.snd_nxt - sf.snd_una;
        if out == 0 || (sf.state != OPEN && sf.state != CWR) {
            return false;
        }
        let mut t = if sf.have_rtt {
            ns(2.0 * srtt + if out == 1 { rto_min } else { 0.002 })
        } else {
            NS_PER_S as u64 // TCP_TIMEOUT_INIT
        };
        let rto_delta = if advancing_rto {
            sf.rto_backed_off() as i64
        } else {
            sf.head_rto_at() as i64 - now as i64
        };
        if rto_delta > 0 {
            t = t.min(rto_delta as u64);
        }
        sf.probe_armed = true;
        self.arm_rto(s, now + t);
        true
    }

    /// The end of `tcp_ack` with tail loss probes, after [`Sim::process_ack`]: the probe's answer
    /// (`tcp_process_tlp_ack`; here after the ACK's loss detection and window update, where the
    /// kernel has it before, so an ACK that both answers a probe and starts a recovery reduces
    /// once), then `tcp_set_xmit_timer`: an ACK that advanced makes the timer a probe's if one
    /// applies, else it stays the RTO that `process_ack` armed.
    #[inline(never)]
    pub(in crate::sim) fn tlp_ack(
        &mut self,
        s: usize,
        ack: &Ack,
        (advanced, progress): (bool, bool),
    ) {
        self.process_tlp_ack(s, ack, progress);
        if advanced && !self.schedule_loss_probe(s, true) {
            self.sf[s].probe_armed = false;
        }
    }

    /// `tcp_process_tlp_ack`: the ACK that answers a probe (its cumulative ACK reached
    /// tlp_high_seq). A probe of new data ends the episode; a retransmitted one that a DSACK, or
    /// a pure duplicate ACK (`progress` false: nothing newly acknowledged or SACKed), shows
    /// arrived twice was no loss; one whose ACK passes it repaired a loss: a cwnd reduction
    /// (CWR), and Open again.
    fn process_tlp_ack(&mut self, s: usize, ack: &Ack, progress: bool) {
        let sf = &mut self.sf[s];
        if sf.tlp_high == 0 || ack.cum < sf.tlp_high {
            return;
        }
        if !sf.tlp_retrans || (ack.dsack && ack.seq + 1 == sf.tlp_high) {
            sf.tlp_high = 0;
        } else if ack.cum > sf.tlp_high {
            sf.tlp_high = 0;
            self.reduce(s);
        } else if !progress {
            sf.tlp_high = 0;
        }
    }

    /// `tcp_send_loss_probe`: one new segment if the subflow has data beyond its window (sent
    /// whatever cwnd says), else the last segment again; then the RTO from now. With a probe
    /// still unanswered (tlp_high_seq) only the RTO is re-armed, for the oldest segment.
    pub(in crate::sim) fn send_loss_probe(&mut self, s: usize) {
        let now = self.now;
        let ect = self.opt.ecn;
        let sf = &mut self.sf[s];
        if sf.snd_una >= sf.snd_nxt {
            sf.rto_deadline = 0;
            return;
        }
        let mut probe = None;
        if sf.tlp_high == 0 {
            sf.tlp_retrans = false;
            // tcp_send_head && tcp_snd_wnd_test: data the subflow holds beyond its window
            if sf.snd_nxt < sf.data_end
                && (((sf.snd_nxt - sf.snd_una) as usize) < sf.sb.len() || sf.grow_scoreboard())
            {
                let q = sf.snd_nxt;
                sf.sb[(q & sf.mask) as usize] = INFLIGHT;
                sf.snd_nxt += 1;
                sf.inflight += 1;
                probe = Some(q);
            } else {
                let q = sf.snd_nxt - 1;
                let i = (q & sf.mask) as usize;
                if sf.sb[i] & (SACKED | INFLIGHT) == INFLIGHT {
                    sf.sb[i] |= RETRANS;
                    sf.retrans += 1;
                    sf.tlp_retrans = true;
                    probe = Some(q);
                }
            }
        }
        match probe {
            Some(q) => {
                let sf = &mut self.sf[s];
                sf.tlp_high = sf.snd_nxt;
                sf.probes += 1;
                let d = now + sf.rto_backed_off();
                self.arm_rto(s, d);
                self.transmit(s, q, ect);
            }
            None => {
                // tcp_rearm_rto with the probe's timer pending: the oldest segment's RTO
                let d = self.sf[s].head_rto_at().max(now + 1);
                self.arm_rto(s, d);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Four Reno flows on a 1 Mb/s, 80-ms-RTT link (windows of a few packets: tail losses are
    /// common), `tlp` "on" or "off".
    fn small_windows(tlp: &str, seed: u64) -> String {
        format!(
            r#"{{"duration_s": 30, "seed": {seed}, "measure": [5, 30], "sample_interval_s": 0,
            "links": [{{"capacity_mbps": 1, "delay_ms": 40, "buffer_pkts": 20}}],
            "groups": [{{"algorithm": "reno", "count": 4, "paths": [[0]], "start_s": 0, "stop_s": 30}}],
            "options": {{"tlp": "{tlp}"}}}}"#
        )
    }

    /// tcp_schedule_loss_probe: PTO = 2·srtt + 2 ms with two or more segments out, 2·srtt +
    /// rto_min with one (its ACK may be delayed), never after the RTO; none outside Open/CWR.
    #[test]
    fn probe_timeout_is_two_rtts_and_never_after_the_rto() {
        let mut s = Sim::new(&crate::config::parse(&small_windows("on", 1)).unwrap()).unwrap();
        s.run_until(3.0);
        let f = (0..4)
            .find(|&f| s.sf[f].state == OPEN && s.sf[f].snd_nxt - s.sf[f].snd_una >= 2)
            .expect("a flow in Open with two segments out");
        let now = s.now;
        s.srtt[f] = 0.05;
        s.sf[f].rto_ns = 300_000_000;
        s.sf[f].backoff = 0;
        assert!(s.schedule_loss_probe(f, true));
        assert!(s.sf[f].probe_armed);
        assert_eq!(s.sf[f].rto_deadline - now, 102_000_000);
        s.sf[f].snd_una = s.sf[f].snd_nxt - 1;
        s.sf[f].rto_ns = 250_000_000;
        assert!(s.schedule_loss_probe(f, true));
        assert_eq!(s.sf[f].rto_deadline - now, 250_000_000, "the RTO is sooner");
        s.sf[f].rto_ns = 400_000_000;
        assert!(s.schedule_loss_probe(f, true));
        assert_eq!(s.sf[f].rto_deadline - now, 300_000_000, "2·srtt + rto_min");
        s.sf[f].state = RECOVERY;
        assert!(!s.schedule_loss_probe(f, true));
    }

    /// With probes a tail loss is repaired by a fast recovery instead of a timeout: on the same
    /// network and seeds, "on" sends probes and takes fewer than half the timeouts of "off"
    /// (measured: seeds 1–4), and the flows deliver no less. Deterministic per seed.
    #[test]
    fn tail_losses_are_repaired_by_probes_instead_of_timeouts() {
        let (mut on, mut off) = ([0u64; 3], [0u64; 3]);
        for seed in 1..5 {
            for (tlp, acc) in [("on", &mut on), ("off", &mut off)] {
                let out = crate::run_json(&small_windows(tlp, seed)).unwrap();
                acc[0] += out.u64("sf_timeouts").iter().sum::<u64>();
                acc[1] += out.u64("sf_loss_probes").iter().sum::<u64>();
                acc[2] += out.u64("sf_delivered").iter().sum::<u64>();
            }
        }
        assert_eq!(off[1], 0, "no probes when off");
        assert!(on[1] > 0 && off[0] > 20, "{on:?} {off:?}");
        assert!(2 * on[0] < off[0], "timeouts on {} off {}", on[0], off[0]);
        assert!(on[2] as f64 >= 0.98 * off[2] as f64, "{on:?} {off:?}");
    }
}
