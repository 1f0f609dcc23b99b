//! Upstream Linux MPTCP's connection level (`[sim] mptcp = "linux"`), as the kernel testbed runs
//! it (net/mptcp/protocol.c, net/ipv4/tcp_input.c and tcp_output.c, Linux 6.x). The ideal
//! connection level (the default) gives every subflow data whenever its window opens; here:
//!
//! * the application writes into the connection's send buffer while it has room
//!   (`mptcp_sendmsg` → `sk_stream_memory_free`), one byte charged per byte of data
//!   (`sk_wmem_queued_add(sk, frag_truesize)`); its size is tcp_wmem[0] plus the sum of the
//!   subflows' send buffers (`__mptcp_sync_sndbuf`); a writer that found it full is woken
//!   only when a third of it is free (`mptcp_write_space` → `sk_stream_write_space`:
//!   `sk_stream_is_writeable`, free ≥ queued / 2);
//! * a subflow's send buffer is set once, by `tcp_init_buffer_space` → `tcp_sndbuf_expand`:
//!   max(tcp_wmem[1], 2 × max(cwnd, 10, reordering + 1) × per_mss) (at most tcp_wmem[2]); it
//!   does not grow later, because `tcp_check_space` calls `tcp_new_space` only for a socket a
//!   writer found full (SOCK_NOSPACE), and nobody writes to a subflow's socket; a queued
//!   segment charges its subflow its payload plus the skb (`mptcp_sendmsg_frag`);
//! * the default scheduler (`mptcp_subflow_get_send`) picks the subflow with the least linger
//!   time, sk_wmem_queued / avg_pacing_rate; if that subflow's send buffer is full nothing is
//!   sent; otherwise it gets a burst of up to MPTCP_SEND_BURST_SIZE (64 KB) bytes, bounded by
//!   the peer's connection-level window (`mptcp_wnd_end`), whatever its cwnd; the subflow's
//!   memory is checked after each page fragment (`__subflow_push_pending`); the push repeats
//!   while the connection has unsent data (`__mptcp_push_pending`) and runs after every ACK
//!   (`ack_update_msk` → `__mptcp_check_push`);
//! * avg_pacing_rate: the pacing-weighted average of `mptcp_subflow_get_send`, fed by
//!   `tcp_update_pacing_rate` (2× cwnd·mss/srtt while cwnd < ssthresh/2, else 1.2×;
//!   max(cwnd, packets_out));
//! * data leaves the connection's send buffer only when the connection-level ACK (DATA_ACK)
//!   passes it (`__mptcp_clean_una`); the DATA_ACK an ACK carries is the receiver's
//!   connection-level in-order point when the ACK left it;
//! * the receiver takes a subflow's data when it is in order on that subflow
//!   (`__mptcp_move_skbs_from_subflow`), keeps data ahead of the connection-level in-order
//!   point in its out-of-order queue (`mptcp_data_queue_ofo`), and advertises one shared
//!   window on every subflow: its receive buffer minus out-of-order data (the application reads
//!   in-order data at once), as `mptcp_space`/`tcp_win_from_space`; the buffer starts at
//!   tcp_rmem[1] and grows by `mptcp_rcv_space_adjust` (once per RTT, to 2× the data read
//!   then, more when that grew), at most tcp_rmem[2]; the sender never hands out data beyond
//!   DATA_ACK + window (`ack_update_msk`: wnd_end).
//!
//! Not modelled: the connection-level retransmission timer (`mptcp_retransmit_timer`,
//! `__mptcp_retrans`) and stale subflows (`mptcp_subflow_get_retrans`, stale_loss_cnt), the
//! zero-window probe, the join handshake (all subflows start together), backup subflows.
//!
//! Units: the simulator moves whole packets; a packet carries `mss` = packet_bytes − 52 bytes of
//! data (IPv4 + TCP with timestamps), so buffers in bytes become packets through `mss` (the
//! connection's buffer) or `mss + SKB_OVERHEAD` (a subflow's queue).
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use super::{Ack, Sim, NS_PER_S};

/// MPTCP_SEND_BURST_SIZE (protocol.c).
pub(super) const SEND_BURST_BYTES: f64 = 65536.0;
/// `per_mss` of `tcp_sndbuf_expand` on x86-64 for a 1448–1460-byte MSS:
/// roundup_pow_of_two(mss_clamp + MAX_TCP_HEADER + SKB_DATA_ALIGN(sizeof(skb_shared_info)))
/// + SKB_DATA_ALIGN(sizeof(struct sk_buff)) = 4096 + 256.
pub(super) const SNDBUF_PER_MSS: f64 = 4352.0;
/// What a queued segment charges its subflow's sk_wmem_queued beyond its payload: the skb
/// of `__mptcp_alloc_tx_skb` (alloc_skb_fclone(MAX_TCP_HEADER): truesize ≈ 1280 on x86-64).
pub(super) const SKB_OVERHEAD: f64 = 1280.0;
/// Truesize of a received 1500-byte frame (a 2 KB head + struct sk_buff): the receive buffer's
/// charge per packet, which `tcp_win_from_space` turns into window.
pub(super) const RX_TRUESIZE: f64 = 2304.0;
/// The MPTCP send buffer's page fragments (sk_page_frag: 32 KB): `__subflow_push_pending`
/// checks the subflow's memory after each.
pub(super) const DFRAG_BYTES: f64 = 32768.0;
/// TCP_INIT_CWND.
const INIT_CWND: f64 = 10.0;
/// tp->reordering default (sysctl tcp_reordering).
const REORDERING: f64 = 3.0;
/// Connection-level sampling interval (the testbed's `sample_ms`).
pub(super) const SAMPLE_NS: u64 = 100_000_000;

/// Per subflow.
#[derive(Default)]
pub(super) struct LinuxSf {
    conn: u32,
    /// Of a connection with ≥ 2 subflows (a single-path one is a TCP socket: not modelled).
    multi: bool,
    /// DSN of subflow sequence number `base + i`: the subflow's write and retransmission
    /// queues (from its snd_una to `data_end`).
    map: VecDeque<u32>,
    base: u32,
    /// sk_sndbuf, bytes.
    pub(super) sndbuf: f64,
    /// sk_pacing_rate (`tcp_update_pacing_rate`), bytes/s.
    pub(super) pacing: f64,
    /// subflow->avg_pacing_rate (`mptcp_subflow_get_send`), bytes/s; 0 until first used.
    pub(super) avg_pacing: f64,
}

/// Per connection. Sequence numbers are data sequence numbers (DSN) in packets.
#[derive(Default)]
pub(super) struct LinuxConn {
    // --- sender (msk)
    /// Data written by the application: the send buffer holds [snd_una, write_seq).
    pub(super) write_seq: u32,
    /// Next DSN to hand to a subflow (msk->snd_nxt).
    pub(super) snd_nxt: u32,
    /// Connection-level ACK as the sender has seen it (msk->snd_una).
    pub(super) snd_una: u32,
    /// msk->wnd_end: no data beyond it goes out.
    pub(super) wnd_end: u32,
    /// The writer waits for send-buffer space.
    pub(super) writer_waits: bool,
    // --- receiver
    pub(super) rcv_nxt: u32,
    /// Out-of-order queue: bit i = DSN rcv_nxt + 1 + i received (DSN rcv_nxt never is).
    ooo: VecDeque<bool>,
    pub(super) ooo_n: u32,
    /// Receive window before out-of-order data, packets (rcvbuf / RX_TRUESIZE).
    pub(super) rcvwin: f64,
    /// mptcp_rcv_space_adjust: start of the current measurement and the in-order point then.
    space_time: u64,
    space_seq: u32,
    space: f64,
    /// Data on its way from the subflows to the connection: (time it is in order on its
    /// subflow, DSN), earliest first.
    transit: BinaryHeap<Reverse<(u64, u32)>>,
    /// (time, DATA_ACK, window) at each change of the receiver, oldest first (kept for the
    /// ACKs still travelling).
    history: VecDeque<(u64, u32, u32)>,
}

/// Connection-level samples of one group (the testbed's `connection_limits`).
#[derive(Default, Clone)]
pub(super) struct GroupSamples {
    pub(super) sf_samples: u64,
    pub(super) idle: u64,
    pub(super) idle_no_data: u64,
    pub(super) idle_rwnd_full: u64,
    pub(super) conn_samples: u64,
    pub(super) sndbuf_bytes: f64,
    pub(super) queued_bytes: f64,
    /// Σ over subflow samples of the subflow's queued bytes (write + retransmission queue).
    pub(super) sf_queued_bytes: f64,
}

pub(super) struct Linux {
    pub(super) wmem: [f64; 3],
    pub(super) rmem: [f64; 3],
    pub(super) mss: f64,
    pub(super) conns: Vec<LinuxConn>,
    pub(super) sfs: Vec<LinuxSf>,
    /// Per connection: the longest reverse delay + host jitter + delayed-ACK timer of its
    /// subflows (how old a DATA_ACK an arriving ACK can carry), ns.
    horizon_ns: Vec<u64>,
    /// Per group.
    pub(super) samples: Vec<GroupSamples>,
}

impl Linux {
    pub(super) fn new(wmem: [f64; 3], rmem: [f64; 3], packet_bytes: u32) -> Linux {
        Linux {
            wmem,
            rmem,
            mss: (packet_bytes as f64 - 52.0).max(1.0),
            conns: Vec::new(),
            sfs: Vec::new(),
            horizon_ns: Vec::new(),
            samples: Vec::new(),
        }
    }

    /// The next connection, with `n` subflows; `horizon_ns` as in [`Linux::horizon_ns`].
    pub(super) fn add_conn(&mut self, n: usize, horizon_ns: u64) {
        let c = self.conns.len() as u32;
        // tcp_init_buffer_space → tcp_sndbuf_expand: at least tcp_wmem[1]
        let sndbuf = self.wmem[1]
            .max((2.0 * INIT_CWND.max(REORDERING + 1.0) * SNDBUF_PER_MSS).min(self.wmem[2]));
        for _ in 0..n {
            self.sfs.push(LinuxSf {
                conn: c,
                multi: n >= 2,
                sndbuf,
                ..Default::default()
            });
        }
        let rcvwin = (self.rmem[1] / RX_TRUESIZE).floor().max(1.0);
        let mut conn = LinuxConn {
            rcvwin,
            wnd_end: rcvwin as u32,
            space: INIT_CWND,
            ..Default::default()
        };
        conn.history.push_back((0, 0, rcvwin as u32));
        self.conns.push(conn);
        self.horizon_ns.push(horizon_ns);
    }

    /// The connection's send buffer, bytes (`__mptcp_sync_sndbuf`: tcp_wmem[0] + Σ subflows').
    pub(super) fn conn_sndbuf(&self, first: usize, n: usize) -> f64 {
        self.wmem[0]
            + self.sfs[first..first + n]
                .iter()
                .map(|f| f.sndbuf)
                .sum::<f64>()
    }

    /// Subflow `s`'s seqs [from, to) became in order on the subflow at `arrive`: they reach
    /// the connection then (`__mptcp_move_skbs_from_subflow`).
    pub(super) fn subflow_delivers(&mut self, s: usize, from: u32, to: u32, arrive: u64) {
        let f = &self.sfs[s];
        if !f.multi {
            return;
        }
        let conn = &mut self.conns[f.conn as usize];
        for q in from..to {
            // the sender trims the map at its snd_una, which never passes the receiver's rcv_nxt
            let dsn = f.map[(q - f.base) as usize];
            conn.transit.push(Reverse((arrive, dsn)));
        }
    }

    /// sk_pacing_rate before the first ACK: `tcp_update_pacing_rate` at the end of the
    /// handshake (slow start: 2 × the initial window per RTT).
    pub(super) fn init_pacing(&mut self, s: usize, rtt_s: f64, init_cwnd: f64) {
        self.sfs[s].pacing = 2.0 * init_cwnd * self.mss / rtt_s.max(1e-6);
    }

    /// Bytes held.
    pub(super) fn memory_bytes(&self) -> usize {
        self.sfs.iter().map(|f| f.map.capacity() * 4).sum::<usize>()
            + self
                .conns
                .iter()
                .map(|c| c.ooo.capacity() + c.transit.capacity() * 16 + c.history.capacity() * 16)
                .sum::<usize>()
            + (self.sfs.len() * std::mem::size_of::<LinuxSf>())
            + (self.conns.len() * std::mem::size_of::<LinuxConn>())
    }

    /// Subflow `s` queues DSN `dsn` (its next sequence number is `base + map.len()`).
    fn queue(&mut self, s: usize, dsn: u32) {
        self.sfs[s].map.push_back(dsn);
    }
}

impl LinuxConn {
    /// The receiver window, packets: the buffer minus out-of-order data (`mptcp_space`; the
    /// application reads in-order data at once).
    fn window(&self) -> u32 {
        (self.rcvwin as u32).saturating_sub(self.ooo_n)
    }

    /// Data reaching the connection by time `t` (`mptcp_data_queue_ofo`, `__mptcp_move_skb`),
    /// in order of arrival; the receive buffer grows once per `rtt_ns` (`mptcp_rcv_space_adjust`).
    fn receive_until(&mut self, t: u64, rtt_ns: u64, rmem_max_pkts: f64) {
        while let Some(&Reverse((at, dsn))) = self.transit.peek() {
            if at > t {
                break;
            }
            self.transit.pop();
            if dsn < self.rcv_nxt {
                continue; // a duplicate (spurious retransmission)
            }
            if dsn == self.rcv_nxt {
                self.rcv_nxt += 1;
                while self.ooo.front() == Some(&true) {
                    self.ooo.pop_front();
                    self.ooo_n -= 1;
                    self.rcv_nxt += 1;
                }
                if !self.ooo.is_empty() {
                    self.ooo.pop_front(); // the slot of the new rcv_nxt (not received)
                }
            } else {
                let i = (dsn - self.rcv_nxt - 1) as usize;
                if i >= self.ooo.len() {
                    self.ooo.resize(i + 1, false);
                }
                if !self.ooo[i] {
                    self.ooo[i] = true;
                    self.ooo_n += 1;
                }
            }
            // mptcp_rcv_space_adjust: once per RTT, rcvwin = 2 × copied + 16 MSS, grown again
            // by 2 × the relative growth of copied; never shrinks; at most tcp_rmem[2]
            if at >= self.space_time + rtt_ns {
                let copied = (self.rcv_nxt - self.space_seq) as f64;
                if copied > self.space {
                    let mut rcvwin = 2.0 * copied + 16.0;
                    rcvwin += 2.0 * rcvwin * (copied - self.space) / self.space;
                    self.rcvwin = self.rcvwin.max(rcvwin.min(rmem_max_pkts)).floor();
                    self.space = copied;
                }
                self.space_time = at;
                self.space_seq = self.rcv_nxt;
            }
            let w = self.window();
            match self.history.back_mut() {
                Some(h) if h.0 == at => *h = (at, self.rcv_nxt, w),
                _ => self.history.push_back((at, self.rcv_nxt, w)),
            }
        }
    }

    /// (DATA_ACK, window) of the receiver at time `t` (≤ the last `receive_until`).
    fn state_at(&self, t: u64) -> (u32, u32) {
        let i = self.history.partition_point(|h| h.0 <= t);
        let h = self.history[i.max(1) - 1];
        (h.1, h.2)
    }

    /// Forget receiver states older than `oldest`, keeping the one in force then.
    fn trim_history(&mut self, oldest: u64) {
        while self.history.len() > 1 && self.history[1].0 <= oldest {
            self.history.pop_front();
        }
    }
}

impl Sim {
    #[inline]
    fn linux(&mut self) -> Option<Box<Linux>> {
        match std::mem::replace(&mut self.mptcp, super::Mptcp::Ideal) {
            super::Mptcp::Linux(l) => Some(l),
            super::Mptcp::Ideal => None,
        }
    }

    /// Bytes subflow `s` has queued (sk_wmem_queued: its write queue and its unacknowledged
    /// segments, SACKed ones included, each payload + skb).
    fn sf_wmem(&self, s: usize, mss: f64) -> f64 {
        let sf = &self.sf[s];
        (sf.data_end - sf.snd_una) as f64 * (mss + SKB_OVERHEAD)
    }

    /// An ACK on subflow `s` was processed (`tcp_ack` then `mptcp_incoming_options`).
    pub(super) fn linux_ack(&mut self, s: usize, ack: &Ack) {
        let c = self.sf[s].conn as usize;
        if self.conns[c].n < 2 {
            return;
        }
        let Some(mut l) = self.linux() else { return };
        let (first, n) = (self.conns[c].first as usize, self.conns[c].n as usize);
        let mss = l.mss;
        // the subflow's queues: segments below snd_una left them (tcp_clean_rtx_queue)
        let (snd_una, cwnd) = (self.sf[s].snd_una, self.cwnd[s].max(1.0).floor());
        let freed = {
            let f = &mut l.sfs[s];
            let k = snd_una - f.base;
            f.map.drain(..k as usize);
            f.base = snd_una;
            k > 0
        };
        let sf = &self.sf[s];
        let packets_out = (sf.snd_nxt - sf.snd_una) as f64;
        // tcp_new_space (→ tcp_sndbuf_expand) runs from tcp_check_space only when a writer
        // found the socket full (SOCK_NOSPACE): nobody writes to a subflow's socket, so its
        // buffer stays as tcp_init_buffer_space set it (the testbed measures 2 × 256 KB + 4 KB
        // for two subflows: bench/kernel/RESULTS.md §13)
        let _ = (freed, SNDBUF_PER_MSS, REORDERING);
        // tcp_update_pacing_rate
        let ratio = if cwnd < sf.ssthresh / 2.0 { 2.0 } else { 1.2 };
        l.sfs[s].pacing = ratio * cwnd.max(packets_out) * mss / self.srtt[s].max(1e-6);
        // the DATA_ACK and window this ACK carries: the receiver's when the ACK left it
        let left = ack.time.saturating_sub(sf.rev_ns + ack.jit as u64);
        let rtt_ns = (self.srtt[first..first + n]
            .iter()
            .cloned()
            .fold(0.0, f64::max)
            * NS_PER_S) as u64;
        let rmem_max = (l.rmem[2] / RX_TRUESIZE).floor();
        let horizon = l.horizon_ns[c];
        let conn = &mut l.conns[c];
        conn.receive_until(left, rtt_ns, rmem_max);
        let (data_ack, wnd) = conn.state_at(left);
        conn.trim_history(self.now.saturating_sub(horizon));
        // ack_update_msk: wnd_end = max(wnd_end, DATA_ACK + window); __mptcp_clean_una
        conn.wnd_end = conn.wnd_end.max(data_ack + wnd);
        if data_ack > conn.snd_una {
            conn.snd_una = data_ack;
        }
        self.mptcp = super::Mptcp::Linux(l);
        self.linux_push(c);
    }

    /// The application fills the send buffer and the default scheduler hands the data to the
    /// subflows (`mptcp_sendmsg`, `__mptcp_push_pending`, `mptcp_subflow_get_send`).
    pub(super) fn linux_push(&mut self, c: usize) {
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
        let buf_pkts = (l.conn_sndbuf(first, n) / mss).ceil() as u32;
        {
            let conn = &mut l.conns[c];
            let queued = conn.write_seq - conn.snd_una;
            if conn.writer_waits && 2 * (buf_pkts.saturating_sub(queued)) >= queued {
                conn.writer_waits = false;
            }
            if !conn.writer_waits {
                conn.write_seq = conn.snd_una + buf_pkts.max(queued);
                conn.writer_waits = true;
            }
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
        self.mptcp = super::Mptcp::Linux(l);
        for &r in &order[..n_order] {
            self.try_send(first + r as usize);
        }
        for s in first + 64..first + n {
            self.try_send(s); // (connections of more than 64 subflows: the rest by index)
        }
    }

    /// Every [`SAMPLE_NS`] in the measurement window: the testbed's connection-level samples.
    pub(super) fn linux_sample(&mut self) {
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
                let gs = &mut l.samples[g];
                gs.conn_samples += 1;
                gs.sndbuf_bytes += sndbuf;
                gs.queued_bytes += queued;
                for s in first..first + n {
                    let sf = &self.sf[s];
                    gs.sf_samples += 1;
                    gs.sf_queued_bytes += (sf.data_end - sf.snd_una) as f64 * mss;
                    // tcpi_unacked < tcpi_snd_cwnd
                    if ((sf.snd_nxt - sf.snd_una) as f64) < self.cwnd[s].max(1.0).floor() {
                        gs.idle += 1;
                        gs.idle_no_data += no_data as u64;
                        gs.idle_rwnd_full += rwnd_full as u64;
                    }
                }
            }
        }
        self.mptcp = super::Mptcp::Linux(l);
        let next = self.now + SAMPLE_NS;
        if next <= self.end {
            self.push(next, super::K_MSK_SAMPLE, 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Mptcp, Sim};
    use super::*;

    /// Coupled over a 10 Mb/s path and a 1 Mb/s path shared with four Reno flows (the coupled
    /// subflow's window there is 1–2 packets), 20 ms and 80 ms RTT.
    fn hol_json(mode: &str) -> String {
        format!(
            r#"{{"duration_s": 30, "seed": 5, "measure": [10, 30], "sample_interval_s": 0,
            "links": [{{"capacity_mbps": 10, "delay_ms": 10, "buffer_pkts": 50}},
                      {{"capacity_mbps": 1, "delay_ms": 40, "buffer_pkts": 20}}],
            "groups": [{{"algorithm": "coupled", "count": 1, "paths": [[0], [1]], "start_s": 0, "stop_s": 30}},
                       {{"algorithm": "reno", "count": 4, "paths": [[1]], "start_s": 0, "stop_s": 30}}],
            "options": {{"mptcp": "{mode}"}}}}"#
        )
    }

    fn sim(json: &str) -> Sim {
        Sim::new(&crate::config::parse(json).unwrap()).unwrap()
    }

    fn linux(s: &Sim) -> &Linux {
        match &s.mptcp {
            Mptcp::Linux(l) => l,
            Mptcp::Ideal => panic!("ideal"),
        }
    }

    /// The application fills the connection's send buffer (tcp_wmem[0] + the subflows' 256 KB:
    /// 365 packets of 1448 bytes) and no further, and is woken again at 2/3 of it; the buffer
    /// holds data until the
    /// connection-level ACK: behind the 1–2-packet subflow it is full of data already sent,
    /// some of it acknowledged on its own subflow, so the fast subflow sits idle with nothing
    /// to send.
    #[test]
    fn send_buffer_blocks_the_writer_and_holds_data_until_the_data_ack() {
        let mut s = sim(&hol_json("linux"));
        let buf = ((4096.0 + 2.0 * 262144.0) / 1448.0_f64).ceil() as u32;
        let (mut blocked, mut held, mut idle_no_data, mut n, mut partial) = (0, 0, 0, 0, 0);
        let mut t = 5.0;
        while !s.run_until(t) {
            t += 0.05;
            let l = linux(&s);
            let c = &l.conns[0];
            let queued = c.write_seq - c.snd_una;
            assert!(queued <= buf, "the writer fills the buffer, no more");
            // (after every ACK a woken writer refills it: it never stays below 2/3)
            assert!(3 * queued + 3 >= 2 * buf, "{queued} of {buf}");
            partial += (queued < buf - 10) as u32;
            assert!(c.snd_nxt <= c.write_seq && c.snd_una <= c.rcv_nxt);
            // data in the buffer not queued on any subflow and sent: acknowledged on its
            // subflow but not at the connection level
            let on_subflows: u32 = (0..2).map(|k| s.sf[k].data_end - s.sf[k].snd_una).sum();
            let unsent = c.write_seq - c.snd_nxt;
            let acked_not_freed =
                (c.write_seq - c.snd_una) - unsent - on_subflows.min(buf - unsent);
            n += 1;
            blocked += (unsent == 0) as u32;
            held += (acked_not_freed > 0) as u32;
            let fast_idle = s.sf[0].snd_nxt - s.sf[0].snd_una < s.cwnd[0].floor() as u32
                && s.sf[0].snd_nxt == s.sf[0].data_end;
            idle_no_data += (fast_idle && unsent == 0) as u32;
        }
        assert!(n > 400);
        assert!(
            partial > n / 10,
            "the waiting writer lets the buffer drain: {partial} of {n}"
        );
        assert!(
            blocked > n / 2,
            "writer blocked in {blocked} of {n} samples"
        );
        assert!(
            held > n / 2,
            "subflow-acked data held in {held} of {n} samples"
        );
        assert!(
            idle_no_data > n / 5,
            "fast subflow idle with no data in {idle_no_data} of {n}"
        );
    }

    /// The same network with the ideal connection level: the coupled connection gets more,
    /// and only the linux mode reports connection-level samples.
    #[test]
    fn head_of_line_blocking_costs_throughput() {
        let ideal = crate::run_json(&hol_json("ideal")).unwrap();
        let lx = crate::run_json(&hol_json("linux")).unwrap();
        let mp = |o: &crate::Output| o.u64("sf_delivered")[..2].iter().sum::<u64>();
        assert!(
            (mp(&lx) as f64) < 0.8 * mp(&ideal) as f64,
            "{} vs {}",
            mp(&lx),
            mp(&ideal)
        );
        assert!(ideal.get("msk_idle").is_none());
        let (n, idle, nodata) = (
            lx.u64("msk_sf_samples")[0],
            lx.u64("msk_idle")[0],
            lx.u64("msk_idle_no_data")[0],
        );
        assert_eq!(
            n,
            2 * 201,
            "two subflows every 100 ms in [10, 30] s, both ends included"
        );
        assert!(
            idle > 0 && nodata * 10 >= idle * 9,
            "{idle} idle, {nodata} without data"
        );
        assert_eq!(
            lx.u64("msk_sf_samples")[1],
            0,
            "single-path groups have no samples"
        );
    }

    /// mptcp_subflow_get_send: the subflow with the least queued bytes ÷ avg_pacing_rate gets
    /// the first burst (≤ 64 KB), whatever its window; a pick whose buffer is full sends nothing.
    #[test]
    fn scheduler_picks_least_linger_time() {
        let two = r#"{"duration_s": 10, "measure": [0, 10],
            "links": [{"capacity_mbps": 10, "delay_ms": 10, "buffer_pkts": 50},
                      {"capacity_mbps": 10, "delay_ms": 10, "buffer_pkts": 50}],
            "groups": [{"algorithm": "lia", "count": 1, "paths": [[0], [1]], "stop_s": 10}],
            "options": {"mptcp": "linux", "start_jitter_s": 0}}"#;
        // (queued packets, pacing bytes/s) of subflows 0 and 1 → the subflow picked
        for (q0, p0, q1, p1, want) in [
            (10u32, 1e6, 5u32, 1e5, 0usize), // linger 27 ms vs 68 ms
            (10, 1e5, 5, 1e5, 1),            // 273 ms vs 136 ms
            (0, 1e3, 3, 1e9, 0),             // an empty queue lingers 0
        ] {
            let mut s = sim(two);
            for (k, q, p) in [(0, q0, p0), (1, q1, p1)] {
                s.sf[k].data_end = q;
                if let Mptcp::Linux(l) = &mut s.mptcp {
                    l.sfs[k].pacing = p;
                    l.sfs[k]
                        .map
                        .extend(std::iter::repeat(u32::MAX).take(q as usize));
                    l.conns[0].snd_nxt = q0 + q1; // DSNs below are queued already
                }
            }
            s.conns[0].active = true;
            s.linux_push(0);
            let l = linux(&s);
            let first = [q0, q1][want] as usize;
            assert_eq!(l.sfs[want].map[first], q0 + q1, "case {q0} {p0} {q1} {p1}");
            // the burst: 64 KB = 46 packets of 1448 bytes (the last one partly), in DSN order
            let burst: Vec<u32> = l.sfs[want]
                .map
                .iter()
                .skip(first)
                .take(46)
                .cloned()
                .collect();
            assert_eq!(burst, (q0 + q1..q0 + q1 + 46).collect::<Vec<u32>>());
        }
        // the least linger time has a full buffer: nothing is handed out
        let mut s = sim(two);
        s.sf[0].data_end = 200; // 200 × 2728 B > 256 KB
        if let Mptcp::Linux(l) = &mut s.mptcp {
            l.sfs[0].pacing = 1e12;
            l.sfs[1].pacing = 1.0;
            l.sfs[1].map.push_back(u32::MAX);
        }
        s.sf[1].data_end = 1;
        s.conns[0].active = true;
        s.linux_push(0);
        let l = linux(&s);
        assert_eq!((l.conns[0].snd_nxt, l.sfs[1].map.len()), (0, 1));
    }

    /// The shared receive window is the buffer minus out-of-order data, and the DATA_ACK an
    /// ACK carries is the receiver's state when the ACK left it.
    #[test]
    fn receive_window_shrinks_with_out_of_order_data() {
        let mut c = LinuxConn {
            rcvwin: 100.0,
            space: 10.0,
            ..Default::default()
        };
        c.history.push_back((0, 0, 100));
        for d in 1..=20u32 {
            c.transit.push(Reverse((1_000 + d as u64, d)));
        }
        c.transit.push(Reverse((5_000, 0)));
        let big = u64::MAX / 2;
        c.receive_until(2_000, big, 1e9);
        assert_eq!((c.rcv_nxt, c.ooo_n, c.window()), (0, 20, 80));
        c.receive_until(6_000, big, 1e9);
        assert_eq!((c.rcv_nxt, c.ooo_n, c.window()), (21, 0, 100));
        assert_eq!(c.state_at(1_010), (0, 90));
        assert_eq!(c.state_at(4_999), (0, 80));
        assert_eq!(c.state_at(5_000), (21, 100));
        c.trim_history(4_000);
        assert_eq!(c.state_at(4_500), (0, 80));
        // a duplicate changes nothing
        c.transit.push(Reverse((7_000, 3)));
        c.receive_until(8_000, big, 1e9);
        assert_eq!((c.rcv_nxt, c.window()), (21, 100));
    }

    /// mptcp_rcv_space_adjust: once per RTT the window becomes 2 × what was read + 16, more
    /// when that grew, never less, at most tcp_rmem[2].
    #[test]
    fn receive_buffer_autotunes() {
        let mut c = LinuxConn {
            rcvwin: 100.0,
            space: 10.0,
            ..Default::default()
        };
        for d in 0..50u32 {
            c.transit.push(Reverse((10 + d as u64, d)));
        }
        c.receive_until(100, 10, 1e9);
        // first RTT (10 ns): DSNs 0..=0 read by t = 10? the first adjustment happens at the
        // first arrival ≥ 10 ns: copied = 1 ≤ space: no change
        assert_eq!(c.rcvwin, 100.0);
        for d in 50..500u32 {
            c.transit.push(Reverse((100 + d as u64, d)));
        }
        c.receive_until(1_000, 100, 1e9);
        assert!(c.rcvwin > 100.0 && c.rcvwin <= 1e9, "{}", c.rcvwin);
        let w = c.rcvwin;
        c.receive_until(2_000, 100, 1e9);
        assert_eq!(c.rcvwin, w, "never shrinks");
        let mut d = LinuxConn {
            rcvwin: 100.0,
            space: 10.0,
            ..Default::default()
        };
        for q in 0..5000u32 {
            d.transit.push(Reverse((q as u64, q)));
        }
        d.receive_until(10_000, 1_000, 300.0);
        assert_eq!(d.rcvwin, 300.0, "at most tcp_rmem[2]");
    }

    /// tcp_update_pacing_rate: 2 × max(cwnd, packets_out)·mss/srtt while cwnd < ssthresh/2,
    /// else 1.2 ×; set by every ACK.
    #[test]
    fn pacing_rate_as_the_kernel_computes_it() {
        let mut s = sim(&hol_json("linux"));
        s.run_until(12.0);
        let ack = super::super::Ack {
            time: s.now,
            ..Default::default()
        };
        for (cwnd, ssthresh, ratio) in [(20.0, 100.0, 2.0), (20.0, 40.0, 1.2), (20.0, 30.0, 1.2)] {
            s.cwnd[0] = cwnd;
            s.sf[0].ssthresh = ssthresh;
            s.srtt[0] = 0.05;
            s.linux_ack(0, &ack);
            let out = (s.sf[0].snd_nxt - s.sf[0].snd_una) as f64;
            let want = ratio * f64::max(cwnd, out) * 1448.0 / 0.05;
            let got = linux(&s).sfs[0].pacing;
            assert!((got / want - 1.0).abs() < 1e-12, "{got} vs {want}");
        }
    }
}
