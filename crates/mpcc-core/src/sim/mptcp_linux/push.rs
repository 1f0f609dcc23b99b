//! The sender side of the Linux connection level as the engine calls it: ACK processing
//! (DATA_ACK, window, pacing rate), the writer and the default scheduler, the connection-level
//! retransmission timer, the samples.
use super::*;
use crate::sim::{Ack, NS_PER_S};

impl Sim {
    #[inline]
    fn linux(&mut self) -> Option<Box<Linux>> {
        match std::mem::replace(&mut self.mptcp, crate::sim::Mptcp::Ideal) {
            crate::sim::Mptcp::Linux(l) => Some(l),
            crate::sim::Mptcp::Ideal => None,
        }
    }

    /// Bytes subflow `s` has queued (sk_wmem_queued: its write queue and its unacknowledged
    /// segments, SACKed ones included, each payload + skb).
    fn sf_wmem(&self, s: usize, mss: f64) -> f64 {
        let sf = &self.sf[s];
        (sf.data_end - sf.snd_una) as f64 * (mss + SKB_OVERHEAD)
    }

    /// An ACK on subflow `s` was processed (`tcp_ack` then `mptcp_incoming_options`). Not
    /// inlined: the ideal mode's event loop, which never calls it, keeps its own code.
    #[inline(never)]
    pub(in crate::sim) fn linux_ack(&mut self, s: usize, ack: &Ack) {
        let c = self.sf[s].conn as usize;
        if self.conns[c].n < 2 {
            return;
        }
        let Some(mut l) = self.linux() else { return };
        let (first, n) = (self.conns[c].first as usize, self.conns[c].n as usize);
        let mss = l.mss;
        l.sfs[s].last_ack = self.now;
        // the subflow's queues: segments below snd_una left them (tcp_clean_rtx_queue)
        let (snd_una, cwnd) = (self.sf[s].snd_una, self.cwnd[s].max(1.0).floor());
        {
            let f = &mut l.sfs[s];
            f.map.drain(..(snd_una - f.base) as usize);
            f.base = snd_una;
        }
        let sf = &self.sf[s];
        let packets_out = (sf.snd_nxt - sf.snd_una) as f64;
        // tcp_update_pacing_rate
        let ratio = if cwnd < sf.ssthresh / 2.0 { 2.0 } else { 1.2 };
        l.sfs[s].pacing = ratio * cwnd.max(packets_out) * mss / self.srtt[s].max(1e-6);
        // the DATA_ACK and window this ACK carries: the receiver's when the ACK left it
        let left = ack.time.saturating_sub(sf.rev_ns + ack.jit as u64);
        let rmem_max = (l.rmem[2] / RX_TRUESIZE).floor();
        let horizon = l.horizon_ns[c];
        let (sfs, srtt) = (&l.sfs[first..first + n], &self.srtt[first..first + n]);
        let rcv_rtt = |at: u64| {
            sfs.iter()
                .zip(srtt)
                .map(|(f, &r)| super::rcv_rtt_at(at, f.first_rx, (r * NS_PER_S) as u64))
                .max()
                .unwrap_or(0)
        };
        let conn = &mut l.conns[c];
        conn.receive_until(left, rcv_rtt, rmem_max);
        let (data_ack, wnd) = conn.state_at(left);
        conn.trim_history(self.now.saturating_sub(horizon));
        // ack_update_msk: wnd_end = max(wnd_end, DATA_ACK + window); __mptcp_clean_una
        conn.wnd_end = conn.wnd_end.max(data_ack + wnd);
        if data_ack > conn.snd_una {
            conn.snd_una = data_ack;
            // __mptcp_clean_una: stop the timer when everything is acknowledged, else restart
            if conn.snd_una >= conn.snd_nxt && conn.snd_una >= conn.write_seq {
                conn.rtx_deadline = 0;
            } else {
                self.rtx_reset(&mut l, c);
            }
        }
        self.mptcp = crate::sim::Mptcp::Linux(l);
        self.linux_push(c);
    }

    /// tcp_data_snd_check's second half, after the ACK's push (`ack_update_msk` →
    /// `__mptcp_check_push`) and the subflow's own transmission (tcp_push_pending_frames: the
    /// engine's `try_send`): tcp_check_space → tcp_new_space. While the writer waits
    /// (mptcp_sendmsg's wait_for_memory set SOCK_NOSPACE on the MPTCP socket, which is every
    /// subflow's sk_socket: mptcp_sock_graft), a subflow whose window is still not full
    /// (tcp_should_expand_sndbuf: tcp_packets_in_flight < cwnd; its queue or the peer's window
    /// ran out) expands its buffer (tcp_sndbuf_expand, [`Linux::sndbuf_want`]);
    /// bench/kernel/RESULTS.md §17e, §22.
    pub(in crate::sim) fn linux_sndbuf_expand(&mut self, s: usize) {
        let c = self.sf[s].conn as usize;
        if self.conns[c].n < 2 {
            return;
        }
        let Some(mut l) = self.linux() else { return };
        let (first, n) = (self.conns[c].first as usize, self.conns[c].n as usize);
        let cwnd = self.cwnd[s].max(1.0).floor();
        if l.conns[c].writer_waits && (self.sf[s].inflight as f64) < cwnd {
            let want = l.sndbuf_want(cwnd, &self.cwnd[first..first + n]);
            let f = &mut l.sfs[s];
            f.sndbuf = f.sndbuf.max(want);
        }
        self.mptcp = crate::sim::Mptcp::Linux(l);
    }

    /// The application fills the send buffer and the default scheduler hands the data to the
    /// subflows (`mptcp_sendmsg`, `__mptcp_push_pending`, `mptcp_subflow_get_send`).
    pub(in crate::sim) fn linux_push(&mut self, c: usize) {
        if !self.conns[c].active || self.conns[c].n < 2 {
            return;
        }
        let Some(mut l) = self.linux() else { return };
        let (first, n) = (self.conns[c].first as usize, self.conns[c].n as usize);
        let mss = l.mss;
        // mptcp_sendmsg: the writer fills the buffer while sk_stream_memory_free, then waits
        // (sk_stream_wait_memory); it is woken (mptcp_write_space → sk_stream_write_space)
        // only once the free space is at least half the queued data (sk_stream_is_writeable:
        // sk_stream_wspace ≥ sk_stream_min_wspace), i.e. at ≤ 2/3 of the buffer queued
        // (a send timeout ends the wait: the writer calls send() again at once, which copies
        // into any room, sk_stream_memory_free, and waits afresh)
        let buf_pkts = (l.conn_sndbuf(first, n) / mss).ceil() as u32;
        let (now, wait_ns) = (self.now, l.writer_wait_ns);
        let mut timer = None;
        {
            let conn = &mut l.conns[c];
            let queued = conn.write_seq - conn.snd_una;
            if conn.writer_waits
                && (2 * (buf_pkts.saturating_sub(queued)) >= queued
                    || (conn.wait_deadline != 0 && now >= conn.wait_deadline))
            {
                conn.writer_waits = false;
            }
            if !conn.writer_waits {
                conn.write_seq = conn.snd_una + buf_pkts.max(queued);
                conn.writer_waits = true;
                if wait_ns > 0 {
                    conn.wait_deadline = now + wait_ns;
                    timer = Some(conn.wait_deadline);
                }
            }
        }
        if let Some(t) = timer {
            self.push(t, crate::sim::K_MSK_WRITER, c as u32);
        }
        // subflows that got data, in order (they send once the connection's state is back:
        // a packet may reach its receiver within try_send)
        let mut pushed_to = 0u64;
        let mut order = [0u8; 64];
        let mut n_order = 0;
        loop {
            let conn = &l.conns[c];
            if conn.snd_nxt >= conn.write_seq {
                break; // mptcp_send_head() == NULL
            }
            // mptcp_subflow_get_send: the least linger time wmem_queued / avg_pacing_rate
            let mut best = usize::MAX;
            let mut best_linger = f64::INFINITY;
            for s in first..first + n {
                let f = &mut l.sfs[s];
                // mptcp_subflow_active: a stale subflow is skipped until it receives an ACK
                if f.stale {
                    if f.stale_tstamp == f.last_ack {
                        continue;
                    }
                    (f.stale, f.stale_count) = (false, 0);
                }
                if f.avg_pacing == 0.0 {
                    f.avg_pacing = f.pacing;
                }
                if f.avg_pacing == 0.0 {
                    continue;
                }
                let linger = self.sf_wmem(s, mss) / f.avg_pacing;
                if linger < best_linger {
                    best_linger = linger;
                    best = s;
                }
            }
            if best == usize::MAX {
                break;
            }
            let s = best;
            let wmem = self.sf_wmem(s, mss);
            if wmem >= l.sfs[s].sndbuf {
                break; // !sk_stream_memory_free(ssk): nothing is sent
            }
            let conn = &l.conns[c];
            let room = conn.wnd_end.saturating_sub(conn.snd_nxt) as f64 * mss;
            let burst = SEND_BURST_BYTES.min(room);
            if burst <= 0.0 {
                break; // zero window (the zero-window probe is not modelled)
            }
            let f = &mut l.sfs[s];
            f.avg_pacing = (f.avg_pacing * wmem + f.pacing * burst) / (burst + wmem);
            // __subflow_push_pending: up to the burst; the subflow's memory is checked after
            // each page fragment
            let mut pushed = 0.0;
            loop {
                let conn = &mut l.conns[c];
                if conn.snd_nxt >= conn.write_seq || conn.snd_nxt >= conn.wnd_end {
                    break;
                }
                let dsn = conn.snd_nxt;
                conn.snd_nxt += 1;
                l.queue(s, dsn);
                self.sf[s].data_end += 1;
                pushed += mss;
                if pushed >= burst {
                    break;
                }
                let frag_end = ((dsn + 1) as f64 * mss / DFRAG_BYTES).floor()
                    > (dsn as f64 * mss / DFRAG_BYTES).floor();
                if frag_end && self.sf_wmem(s, mss) >= l.sfs[s].sndbuf {
                    break;
                }
            }
            let r = s - first;
            if r < 64 && pushed_to & (1 << r) == 0 {
                pushed_to |= 1 << r;
                order[n_order] = r as u8;
                n_order += 1;
            }
        }
        // __mptcp_push_pending: "ensure the rtx timer is running"
        if n_order > 0 && l.conns[c].rtx_deadline == 0 {
            self.rtx_reset(&mut l, c);
        }
        self.mptcp = crate::sim::Mptcp::Linux(l);
        for &r in &order[..n_order] {
            self.try_send(first + r as usize);
        }
        for s in first + 64..first + n {
            self.try_send(s); // (connections of more than 64 subflows: the rest by index)
        }
    }

    /// The writer's send timeout of connection `c` ends its wait (if this is its deadline: a
    /// wake-up since set a later one).
    pub(in crate::sim) fn linux_writer_event(&mut self, c: usize) {
        let due = match &self.mptcp {
            crate::sim::Mptcp::Linux(l) => l.conns[c].writer_waits && l.conns[c].wait_deadline == self.now,
            crate::sim::Mptcp::Ideal => false,
        };
        if due {
            self.linux_push(c);
        }
    }

    /// mptcp_reset_rtx_timer: expire after the longest remaining timer (RTO or loss probe) of
    /// the subflows that are not stale (`mptcp_timeout_from_subflow`), else TCP_RTO_MIN
    /// (`__mptcp_set_timeout`).
    fn rtx_reset(&mut self, l: &mut Linux, c: usize) {
        let (first, n) = (self.conns[c].first as usize, self.conns[c].n as usize);
        let now = self.now;
        let mut tout = 0;
        for s in first..first + n {
            if l.sfs[s].stale_count == 0 && self.sf[s].rto_deadline > now {
                tout = tout.max(self.sf[s].rto_deadline - now);
            }
        }
        let deadline = now + if tout > 0 { tout } else { RTO_MIN_NS };
        let conn = &mut l.conns[c];
        conn.rtx_deadline = deadline;
        if deadline < conn.rtx_timer_at {
            conn.rtx_timer_at = deadline;
            self.push(deadline, crate::sim::K_MSK_RTX, c as u32);
        }
    }

    /// The connection-level retransmission timer of connection `c` (`mptcp_retransmit_timer`
    /// → `__mptcp_retrans`).
    pub(in crate::sim) fn linux_rtx_event(&mut self, c: usize) {
        let Some(mut l) = self.linux() else { return };
        let now = self.now;
        let conn = &mut l.conns[c];
        let fire = now == conn.rtx_timer_at && conn.rtx_deadline != 0;
        if now == conn.rtx_timer_at {
            conn.rtx_timer_at = u64::MAX;
        }
        if !fire || !self.conns[c].active {
            self.mptcp = crate::sim::Mptcp::Linux(l);
            return;
        }
        if conn.rtx_deadline > now {
            let d = conn.rtx_deadline;
            conn.rtx_timer_at = d;
            self.push(d, crate::sim::K_MSK_RTX, c as u32);
            self.mptcp = crate::sim::Mptcp::Linux(l);
            return;
        }
        conn.rtx_deadline = 0;
        let (first, n) = (self.conns[c].first as usize, self.conns[c].n as usize);
        let g = self.conns[c].group as usize;
        let mut pick = None;
        let mut push_again = false;
        if l.conns[c].snd_una < l.conns[c].snd_nxt {
            // mptcp_subflow_get_retrans: the first subflow whose queues are empty; the others
            // go through the stale check (mptcp_pm_subflow_chk_stale)
            for s in first..first + n {
                if self.sf[s].snd_una != self.sf[s].data_end {
                    let f = &mut l.sfs[s];
                    if f.stale_count == 0 {
                        (f.stale_tstamp, f.stale_count) = (f.last_ack, 1);
                    } else if f.stale_tstamp == f.last_ack {
                        f.stale_count = f.stale_count.saturating_add(1);
                        push_again |= self.chk_stale(&mut l, s, first, n, g);
                    } else {
                        f.stale_count = 0;
                        f.stale = false;
                    }
                    continue;
                }
                if pick.is_none() {
                    pick = Some(s);
                }
            }
        }
        if let Some(p) = pick {
            // the first page fragment not yet DATA_ACKed, the part of it already sent
            let mss = l.mss;
            let conn = &l.conns[c];
            let frag = |d: u32| (d as f64 * mss / DFRAG_BYTES).floor();
            let start = conn.snd_una;
            let mut end = start;
            while end < conn.snd_nxt && frag(end) == frag(start) {
                end += 1;
            }
            for dsn in start..end {
                l.queue(p, dsn);
            }
            self.sf[p].data_end += end - start;
            l.samples[g].reinjected += (end - start) as u64;
        }
        let conn = &l.conns[c];
        if conn.snd_una < conn.snd_nxt || conn.snd_nxt < conn.write_seq {
            self.rtx_reset(&mut l, c);
        }
        self.mptcp = crate::sim::Mptcp::Linux(l);
        if let Some(p) = pick {
            self.try_send(p);
        }
        if push_again {
            self.linux_push(c);
        }
    }

    /// mptcp_pm_nl_subflow_chk_stale: subflow `s` (queued data, no ACK for more than
    /// stale_loss_cnt timer periods) becomes stale if another active subflow is fine; then all
    /// data not yet DATA_ACKed is sent again (`__mptcp_retransmit_pending_data`). True if so.
    fn chk_stale(&mut self, l: &mut Linux, s: usize, first: usize, n: usize, g: usize) -> bool {
        if l.sfs[s].stale || l.sfs[s].stale_count <= STALE_LOSS_CNT {
            return false;
        }
        let ok = (first..first + n).any(|k| {
            k != s && !l.sfs[k].stale && l.sfs[k].stale_count < (STALE_LOSS_CNT - 1).max(1)
        });
        if !ok {
            return false;
        }
        l.sfs[s].stale = true;
        l.samples[g].stale += 1;
        let conn = &mut l.conns[self.sf[s].conn as usize];
        conn.snd_nxt = conn.snd_una;
        true
    }

    /// Every [`SAMPLE_NS`] in the measurement window: the testbed's connection-level samples.
    pub(in crate::sim) fn linux_sample(&mut self) {
        let Some(mut l) = self.linux() else { return };
        let mss = l.mss;
        if self.now >= self.measure_ns.0 && self.now <= self.measure_ns.1 {
            for c in 0..self.conns.len() {
                let conn = &self.conns[c];
                if !conn.active || conn.n < 2 {
                    continue;
                }
                let (first, n) = (conn.first as usize, conn.n as usize);
                let g = conn.group as usize;
                let sndbuf = l.conn_sndbuf(first, n);
                let lc = &l.conns[c];
                let no_data = lc.snd_nxt >= lc.write_seq;
                // connection-level bytes in flight within 2 MSS of the peer's window
                let rwnd_full = lc.snd_nxt + 2 >= lc.wnd_end;
                let queued = (lc.write_seq - lc.snd_una) as f64 * mss;
                let wnd = lc.window() as f64 * mss;
                let notsent: u32 = self.sf[first..first + n]
                    .iter()
                    .map(|sf| sf.data_end - sf.snd_nxt)
                    .sum();
                let gs = &mut l.samples[g];
                gs.conn_samples += 1;
                gs.sf_notsent_bytes += notsent as f64 * mss;
                gs.wnd_bytes += wnd;
                gs.sndbuf_bytes += sndbuf;
                gs.queued_bytes += queued;
                for s in first..first + n {
                    let sf = &self.sf[s];
                    let q = (sf.data_end - sf.snd_una) as f64 * mss;
                    // tcpi_unacked < tcpi_snd_cwnd
                    let idle = ((sf.snd_nxt - sf.snd_una) as f64) < self.cwnd[s].max(1.0).floor();
                    gs.sf_samples += 1;
                    gs.sf_queued_bytes += q;
                    if idle {
                        gs.idle += 1;
                        gs.idle_no_data += no_data as u64;
                        gs.idle_rwnd_full += rwnd_full as u64;
                    }
                    let f = &mut l.sfs[s];
                    f.samples += 1;
                    f.idle_samples += idle as u64;
                    f.queued_sum += q;
                }
            }
        }
        self.mptcp = crate::sim::Mptcp::Linux(l);
        let next = self.now + SAMPLE_NS;
        if next <= self.end {
            self.push(next, crate::sim::K_MSK_SAMPLE, 0);
        }
    }
}
