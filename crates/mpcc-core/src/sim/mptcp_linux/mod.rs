//! Upstream Linux MPTCP's connection level (`[sim] mptcp = "linux"`), as the kernel testbed runs
//! it (net/mptcp/protocol.c, net/ipv4/tcp_input.c and tcp_output.c, Linux 6.x). The ideal
//! connection level (the default) gives every subflow data whenever its window opens; here:
//!
//! * the application writes into the connection's send buffer while it has room
//!   (`mptcp_sendmsg` → `sk_stream_memory_free`), one byte charged per byte of data
//!   (`sk_wmem_queued_add(sk, frag_truesize)`); its size is tcp_wmem[0] plus the sum of the
//!   subflows' send buffers (`__mptcp_sync_sndbuf`); a writer that found it full is woken
//!   only when a third of it is free (`mptcp_write_space` → `sk_stream_write_space`:
//!   `sk_stream_is_writeable`, free ≥ queued / 2), or when its send timeout (`SO_SNDTIMEO`,
//!   `[sim] writer_wait_s`) ends the wait (`sk_stream_wait_memory` → -EAGAIN): it then writes
//!   again at once, into whatever room there is (`sk_stream_memory_free`);
//! * a subflow's send buffer is set by `tcp_init_buffer_space` → `tcp_sndbuf_expand`:
//!   max(tcp_wmem[1], factor × max(cwnd, 10, reordering + 1) × per_mss) (at most tcp_wmem[2]),
//!   and expanded again the same way at an ACK after which its window is not full once it has
//!   sent what it had queued, while the writer waits (`tcp_data_snd_check`:
//!   `tcp_push_pending_frames`, then `tcp_check_space` → `tcp_new_space`; the writer's
//!   SOCK_NOSPACE is on the MPTCP socket, which is every subflow's sk_socket,
//!   `mptcp_sock_graft`; measured on 6.18, bench/kernel/RESULTS.md §17e, §22); it never
//!   shrinks. The factor is the congestion control's `sndbuf_expand` (`[sim] sndbuf_expand`):
//!   the kernel's 2 (`kernel`, the default, as the testbed loads the programs) or that of the
//!   programs built with MPCC_BPF_CONN=sndbuf (`mpcc`, bpf/include/mpcc_conn.h:
//!   2 · 16 · Σ_k max(w_k, 10) / max(w_r, 10)). The subflows start together here, so subflow k
//!   is established seeing k + 1 windows of 10. A queued
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
//!   DATA_ACK + window (`ack_update_msk`: wnd_end);
//! * that RTT is the largest of the subflows' receiver estimates (`rcv_rtt_est`), taken when
//!   the application reads and kept until that long has passed (`msk->rcvq_space.rtt_us`).
//!   A subflow's first data segment echoes the timestamp of its handshake, which is at time 0
//!   here (the testbed establishes every connection before its run starts), so its first
//!   estimate is the time since then, until a segment echoing a fresh ACK replaces it one RTT
//!   later (`tcp_rcv_rtt_measure_ts`; a smaller sample replaces a larger one at once,
//!   `tcp_rcv_rtt_update`): a connection that starts sending at t waits about t before its
//!   buffer first grows.
//!
//! * the connection-level retransmission timer runs while data awaits the DATA_ACK, restarted
//!   at every DATA_ACK advance and started by a push (`__mptcp_clean_una`,
//!   `__mptcp_push_pending`), for the longest remaining subflow timer (RTO or loss probe),
//!   else TCP_RTO_MIN (`mptcp_timeout_from_subflow`, `__mptcp_set_timeout`); when it fires, the
//!   first page fragment not yet DATA_ACKed (the part already sent) is re-injected on the first
//!   subflow whose queues are empty (`mptcp_retransmit_timer`, `__mptcp_retrans`,
//!   `mptcp_subflow_get_retrans`); a subflow with queued data and no ACK over more than
//!   stale_loss_cnt = 4 such periods, while another subflow is fine, is marked stale: the
//!   scheduler skips it until it receives an ACK, and every byte not yet DATA_ACKed is sent
//!   again through the scheduler (`mptcp_pm_subflow_chk_stale`, `mptcp_pm_nl_subflow_chk_stale`,
//!   `__mptcp_retransmit_pending_data`, `mptcp_subflow_active`).
//!
//! Not modelled: the zero-window probe, the join handshake (all subflows start together),
//! backup subflows, the DSS option's bytes.
//!
//! Units: the simulator moves whole packets; a packet carries `mss` = packet_bytes − 52 bytes of
//! data (IPv4 + TCP with timestamps), so buffers in bytes become packets through `mss` (the
//! connection's buffer) or `mss + SKB_OVERHEAD` (a subflow's queue).
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

mod push;
#[cfg(test)]
mod tests;

use super::Sim;
use crate::config::SndbufExpand;

/// MPTCP_SEND_BURST_SIZE (protocol.c).
pub(super) const SEND_BURST_BYTES: f64 = 65536.0;
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
/// TCP_RTO_MIN.
const RTO_MIN_NS: u64 = 200_000_000;
/// net.mptcp.stale_loss_cnt (default).
const STALE_LOSS_CNT: u8 = 4;
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
    /// tp->rcv_tstamp: when the subflow last received an ACK, ns.
    last_ack: u64,
    /// When the subflow's first data segment reached its receiver, ns (u64::MAX: not yet).
    first_rx: u64,
    /// subflow->stale_count, stale_rcv_tstamp, stale (`mptcp_pm_subflow_chk_stale`).
    stale_count: u8,
    stale_tstamp: u64,
    stale: bool,
    /// Connection-level samples of this subflow: count, idle ones (packets out < cwnd), Σ
    /// queued bytes.
    pub(super) samples: u64,
    pub(super) idle_samples: u64,
    pub(super) queued_sum: f64,
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
    /// The writer waits for send-buffer space, until a third of it is free or, with a send
    /// timeout, until `wait_deadline` (0: none).
    pub(super) writer_waits: bool,
    wait_deadline: u64,
    /// The connection-level retransmission timer: when it expires (0: stopped) and when its
    /// pending event is (u64::MAX: none).
    rtx_deadline: u64,
    rtx_timer_at: u64,
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
    /// msk->rcvq_space.rtt_us: the RTT the last measurement found, ns (0: none yet).
    space_rtt: u64,
    /// The subflows' receive windows and DRS space, packets: `mptcp_rcv_space_adjust` makes
    /// every subflow follow a growth of the connection's buffer with `tcp_rcvbuf_grow(ssk,
    /// copied)`, measured against the subflow's own space (10 packets at first, as
    /// `tcp_init_buffer_space` sets it), so all of a connection's subflows have one window.
    sf_rcvwin: f64,
    sf_space: f64,
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
    /// Σ over connection samples of the bytes queued on its subflows but not yet sent (the
    /// testbed's Σ tcpi_notsent_bytes).
    pub(super) sf_notsent_bytes: f64,
    /// Σ over connection samples of the window the receiver advertises (the testbed's mean
    /// tcpi_snd_wnd).
    pub(super) wnd_bytes: f64,
    /// Packets re-injected by the connection-level retransmission timer, subflows marked
    /// stale (whole run).
    pub(super) reinjected: u64,
    pub(super) stale: u64,
}

pub(super) struct Linux {
    pub(super) expand: SndbufExpand,
    /// `per_mss` of `tcp_sndbuf_expand`, bytes ([`crate::config::Options::sndbuf_per_mss`]).
    pub(super) per_mss: f64,
    pub(super) wmem: [f64; 3],
    pub(super) rmem: [f64; 3],
    pub(super) mss: f64,
    /// The writer's send timeout (`SO_SNDTIMEO`), ns (0: none).
    pub(super) writer_wait_ns: u64,
    pub(super) conns: Vec<LinuxConn>,
    pub(super) sfs: Vec<LinuxSf>,
    /// Per connection: the longest reverse delay + host jitter + delayed-ACK timer of its
    /// subflows (how old a DATA_ACK an arriving ACK can carry), ns.
    horizon_ns: Vec<u64>,
    /// Per group.
    pub(super) samples: Vec<GroupSamples>,
}

impl Linux {
    pub(super) fn new(
        wmem: [f64; 3],
        rmem: [f64; 3],
        packet_bytes: u32,
        expand: SndbufExpand,
        per_mss: f64,
        writer_wait_ns: u64,
    ) -> Linux {
        Linux {
            expand,
            per_mss,
            writer_wait_ns,
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
        // tcp_init_buffer_space → tcp_sndbuf_expand: at least tcp_wmem[1]; subflow k is
        // established seeing k + 1 windows of TCP_INIT_CWND
        for k in 0..n {
            let want = self.sndbuf_want(INIT_CWND, &vec![INIT_CWND; k + 1]);
            self.sfs.push(LinuxSf {
                conn: c,
                multi: n >= 2,
                sndbuf: self.wmem[1].max(want),
                first_rx: u64::MAX,
                ..Default::default()
            });
        }
        let rcvwin = (self.rmem[1] / RX_TRUESIZE).floor().max(1.0);
        let mut conn = LinuxConn {
            rcvwin,
            wnd_end: rcvwin as u32,
            space: INIT_CWND,
            sf_rcvwin: rcvwin,
            sf_space: INIT_CWND,
            rtx_timer_at: u64::MAX,
            ..Default::default()
        };
        conn.history.push_back((0, 0, rcvwin as u32));
        self.conns.push(conn);
        self.horizon_ns.push(horizon_ns);
    }

    /// The buffer `tcp_sndbuf_expand` asks for a subflow with window `cwnd` (packets), whose
    /// connection's windows are `windows` (its own included): factor × max(cwnd, 10,
    /// reordering + 1) × per_mss, at most tcp_wmem[2]. The `mpcc` factor is
    /// bpf/include/mpcc_conn.h's mpcc_conn_sndbuf_expand (MPCC_CONN_SNDBUF) in the same integer
    /// steps: 2 · 16 · Σ_k max(w_k, 10) / max(w_r, 10), in [2, 65535].
    pub(super) fn sndbuf_want(&self, cwnd: f64, windows: &[f64]) -> f64 {
        let own = cwnd.floor();
        let factor = match self.expand {
            SndbufExpand::Kernel => 2.0,
            SndbufExpand::Mpcc => {
                let sum: f64 = windows.iter().map(|w| w.floor().max(10.0)).sum();
                (32.0 * sum / own.max(10.0)).floor().clamp(2.0, 65535.0)
            }
        };
        (factor * own.max(INIT_CWND).max(REORDERING + 1.0) * self.per_mss).min(self.wmem[2])
    }

    /// The connection's send buffer, bytes (`__mptcp_sync_sndbuf`: tcp_wmem[0] + Σ subflows').
    pub(super) fn conn_sndbuf(&self, first: usize, n: usize) -> f64 {
        self.wmem[0]
            + self.sfs[first..first + n]
                .iter()
                .map(|f| f.sndbuf)
                .sum::<f64>()
    }

    /// The window clamp of subflow `s`'s receiver, packets: its own receive window, which
    /// follows the connection's growth (`tcp_rcvbuf_grow`: window_clamp = tcp_win_from_space
    /// of the new sk_rcvbuf); None for a TCP socket.
    pub(super) fn rcv_clamp(&self, s: usize) -> Option<f64> {
        let f = &self.sfs[s];
        f.multi.then(|| self.conns[f.conn as usize].sf_rcvwin)
    }

    /// Subflow `s`'s seqs [from, to) became in order on the subflow at `arrive`: they reach
    /// the connection then (`__mptcp_move_skbs_from_subflow`).
    pub(super) fn subflow_delivers(&mut self, s: usize, from: u32, to: u32, arrive: u64) {
        let f = &mut self.sfs[s];
        if !f.multi {
            return;
        }
        f.first_rx = f.first_rx.min(arrive);
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

/// The window a DRS growth asks for, packets (`mptcp_rcvbuf_grow`, `tcp_rcvbuf_grow`): 2 ×
/// `copied` + `extra`, plus twice that times the relative growth of `copied` over `space`, at most
/// `max` (tcp_rmem[2]), whole packets.
fn drs_window(copied: f64, space: f64, extra: f64, max: f64) -> f64 {
    let w = 2.0 * copied + extra;
    (w + 2.0 * w * (copied - space).max(0.0) / space)
        .min(max)
        .floor()
}

/// A subflow's receiver RTT estimate (`tp->rcv_rtt_est`) at time `t`, ns, from when its first
/// data arrived (`first_rx`) and the subflow's RTT (`srtt_ns`, 0 before its first sample):
/// none before the first data; then the time since the handshake at time 0, which the first
/// segment's timestamp echo measures; from one RTT later, the RTT.
pub(super) fn rcv_rtt_at(t: u64, first_rx: u64, srtt_ns: u64) -> u64 {
    if t < first_rx {
        0
    } else if srtt_ns == 0 || t < first_rx.saturating_add(srtt_ns) {
        first_rx
    } else {
        srtt_ns
    }
}

impl LinuxConn {
    /// The receiver window, packets: the buffer minus out-of-order data (`mptcp_space`; the
    /// application reads in-order data at once).
    fn window(&self) -> u32 {
        (self.rcvwin as u32).saturating_sub(self.ooo_n)
    }

    /// Data reaching the connection by time `t` (`mptcp_data_queue_ofo`, `__mptcp_move_skb`),
    /// in order of arrival; the receive buffer grows at most once per RTT, the largest of
    /// `rcv_rtt(at)` over the subflows when the application reads (`mptcp_rcv_space_adjust`).
    fn receive_until(&mut self, t: u64, rcv_rtt: impl Fn(u64) -> u64, rmem_max_pkts: f64) {
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
                // the application reads it (mptcp_recvmsg → mptcp_rcv_space_adjust)
                self.space_adjust(at, &rcv_rtt, rmem_max_pkts);
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
            let w = self.window();
            match self.history.back_mut() {
                Some(h) if h.0 == at => *h = (at, self.rcv_nxt, w),
                _ => self.history.push_back((at, self.rcv_nxt, w)),
            }
        }
    }

    /// `mptcp_rcv_space_adjust` at a read at `at`: nothing while less than the RTT the last
    /// measurement found has passed; then that RTT afresh, the largest of `rcv_rtt(at)`, and
    /// once it has passed since the measurement began, rcvwin = 2 × copied + 16 MSS, grown
    /// again by 2 × the relative growth of copied (never shrinks; at most tcp_rmem[2]), and a
    /// new measurement.
    fn space_adjust(&mut self, at: u64, rcv_rtt: &impl Fn(u64) -> u64, rmem_max_pkts: f64) {
        if self.space_rtt > 0 && at < self.space_time + self.space_rtt {
            return;
        }
        self.space_rtt = rcv_rtt(at);
        if self.space_rtt == 0 || at < self.space_time + self.space_rtt {
            return;
        }
        let copied = (self.rcv_nxt - self.space_seq) as f64;
        if copied > self.space {
            let rcvwin = drs_window(copied, self.space, 16.0, rmem_max_pkts);
            let grown = rcvwin > self.rcvwin;
            self.rcvwin = self.rcvwin.max(rcvwin);
            self.space = copied;
            if grown {
                // tcp_rcvbuf_grow on each subflow, against the subflow's own space
                let w = drs_window(copied, self.sf_space, 0.0, rmem_max_pkts);
                self.sf_rcvwin = self.sf_rcvwin.max(w);
                self.sf_space = copied;
            }
        }
        self.space_time = at;
        self.space_seq = self.rcv_nxt;
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
