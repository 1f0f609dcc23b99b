/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mpcc_prr.h — what the kernel does around a congestion control's cong_avoid and stops doing for
 * one that implements cong_control (docs/kernel.md "cong_control"),
 * redone here from the same tcp_sock fields, each mirroring the kernel function it names
 * (Linux 6.1 and 6.10+ alike unless said):
 *
 *   mpcc_cwnd_reduction      net/ipv4/tcp_input.c  tcp_cwnd_reduction()     (PRR, RFC 6937)
 *   mpcc_end_cwnd_reduction  net/ipv4/tcp_input.c  tcp_end_cwnd_reduction()
 *   mpcc_may_raise_cwnd      net/ipv4/tcp_input.c  tcp_may_raise_cwnd()
 *   mpcc_update_pacing_rate  net/ipv4/tcp_input.c  tcp_update_pacing_rate()
 *   mpcc_idle_restart        net/ipv4/tcp_output.c tcp_slow_start_after_idle_check() and
 *                            tcp_cwnd_restart()    (RFC 2861 §2 / RFC 7661: restart after idle)
 *
 * The kernel calls cong_control(sk, rs) (6.1) or cong_control(sk, ack, flag, rs) (6.10+) at the
 * end of tcp_ack() instead of its own tcp_cong_control() body, and the per-ACK inputs that body
 * uses are in the rate sample: rs->acked_sacked (its acked_sacked, the packets this ACK delivered)
 * and rs->losses (newly marked lost), both set by tcp_rate_gen() just before the call. Which
 * argument rs is depends on the kernel's version (mpcc_rate_sample), so one object serves both
 * signatures; each is at most the difference of tp->delivered (tp->lost) since our previous
 * cong_control, which is used instead if rs cannot be read. (Not the differences themselves: a run
 * the platform skipped would carry its ACKs' deliveries into the next one — into a
 * congestion-avoidance step at the end of a reduction episode, or a slow-start step — where the
 * kernel's own rule never adds them.) FLAG_SND_UNA_ADVANCED, which 6.1 does not pass, is "snd_una
 * moved since our last cong_control".
 * Included by mpcc_kern.h after struct mpcc_ca.
 */
#ifndef MPCC_PRR_H
#define MPCC_PRR_H

#define MPCC_TCPF_CA_CWR (1 << TCP_CA_CWR)
#define MPCC_TCPF_CA_RECOVERY (1 << TCP_CA_Recovery)
#define MPCC_TCP_INFINITE_SSTHRESH 0x7fffffffU
#define MPCC_DST_METRICS_FLAGS 0x3UL   /* include/net/dst.h: the flag bits of dst->_metrics */

/* The kernel's version (libbpf fills it at load from uname, a read-only constant to the verifier,
 * which drops the branch it rules out: neither kernel's program reads beyond its arguments). */
extern int LINUX_KERNEL_VERSION __kconfig;

/* What the rate sample cong_control was called with holds for this ACK: its last argument, ctx[3]
 * on 6.10+ (commit "tcp: Add new args for cong_control in tcp_congestion_ops"), ctx[1] before.
 * Read with bpf_probe_read_kernel from a constant slot in each branch (the compiler cannot merge
 * two context loads into one at a variable offset), and only if it is a kernel address (top bit
 * set: a kernel that backported the new signature without the version holds the u32 ack there).
 * (A first version required bits 63..47 set and read nothing under 5-level paging, where the
 * kernel's stacks are below that: `make kernels` on 6.1 under qemu -cpu max, 2026-11-24.) Returns
 * MPCC_RS_VALID | losses << 32 | acked_sacked, or 0 when rs cannot be read (mpcc_cong_control
 * then uses the counters' differences). Its own frame: the probe-read buffers stay off the
 * cong_control → cong_avoid chain (Linux 6.1's 512-byte stack, bench/kernel/bpf_stack.py). */
#define MPCC_RS_VALID (1ULL << 63)
static __noinline __u64 mpcc_rate_sample(unsigned long long *ctx)
{
	const struct rate_sample *rs = NULL;
	__u32 acked;
	int losses;

	if (!ctx)
		return 0;
	if (LINUX_KERNEL_VERSION >= KERNEL_VERSION(6, 10, 0))
		bpf_probe_read_kernel(&rs, sizeof(rs), &ctx[3]);
	else
		bpf_probe_read_kernel(&rs, sizeof(rs), &ctx[1]);
	if ((long)rs >= 0)             /* the kernel's half of the address space (4- or 5-level) */
		return 0;
	acked = BPF_CORE_READ(rs, acked_sacked);
	losses = BPF_CORE_READ(rs, losses);
	if (losses < 0)
		losses = 0;
	return MPCC_RS_VALID | (__u64)(__u32)losses << 32 | acked;
}

static __always_inline __u8 mpcc_ca_state(const struct sock *sk)
{
	return BPF_CORE_READ_BITFIELD(inet_csk(sk), icsk_ca_state);
}

/* include/net/tcp.h tcp_in_cwnd_reduction(): CWR or Recovery */
static __always_inline bool mpcc_state_reduces(__u8 state)
{
	return (MPCC_TCPF_CA_CWR | MPCC_TCPF_CA_RECOVERY) & (1 << state);
}

/* include/net/tcp.h tcp_packets_in_flight(): packets_out − (sacked_out + lost_out) + retrans_out */
static __always_inline __u32 mpcc_packets_in_flight(const struct tcp_sock *tp)
{
	return tp->packets_out - (tp->sacked_out + tp->lost_out) + tp->retrans_out;
}

/* include/net/tcp.h tcp_current_ssthresh() */
static __always_inline __u32 mpcc_current_ssthresh(const struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	__u32 w = (tp->snd_cwnd >> 1) + (tp->snd_cwnd >> 2);

	if (mpcc_state_reduces(mpcc_ca_state(sk)))
		return tp->snd_ssthresh;
	return tp->snd_ssthresh > w ? tp->snd_ssthresh : w;
}

/* A new reduction episode (tcp_init_cwnd_reduction() ran: it set high_seq = snd_nxt,
 * prior_cwnd = snd_cwnd, prr_delivered = prr_out = 0). The kernel's tp->prr_delivered is not
 * counted for a cong_control CC (its tcp_cwnd_reduction does not run) and a BPF CC may not write
 * it, so ours is in the CA area. */
static __always_inline void mpcc_prr_begin(struct sock *sk, struct mpcc_ca *ca, __u8 state)
{
	struct tcp_sock *tp = tcp_sk(sk);

	ca->prr_delivered = 0;
	ca->ep_high_seq = tp->high_seq;
	ca->ep_prior_cwnd = tp->prior_cwnd;
	ca->red = state;
}

/* The episode under way, seen at an ACK in CWR/Recovery: a new one when we saw none (set_state,
 * which marks it, may have been skipped like ssthresh()) or when
 * tcp_init_cwnd_reduction() has run again since (high_seq or prior_cwnd changed). CWR → Recovery
 * (tcp_enter_recovery() inside a CWR episode) does not re-initialise: the same episode. */
static __always_inline void mpcc_prr_track(struct sock *sk, struct mpcc_ca *ca, __u8 state)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (!ca->red || tp->high_seq != ca->ep_high_seq || tp->prior_cwnd != ca->ep_prior_cwnd)
		mpcc_prr_begin(sk, ca, state);
	ca->red = state;
}

/* tcp_input.c tcp_cwnd_reduction(sk, newly_acked_sacked, newly_lost, flag), Proportional Rate
 * Reduction (RFC 6937) with our prr_delivered. With delta = ssthresh − in_flight:
 *   delta < 0 (PRR):  sndcnt = ⌈ssthresh · prr_delivered / prior_cwnd⌉ − prr_out
 *   delta ≥ 0 (SSRB): sndcnt = min(delta, max(prr_delivered − prr_out, newly_acked_sacked)
 *                                          + [snd_una advanced and nothing newly lost])
 *   sndcnt = max(sndcnt, prr_out ? 0 : 1)   (force the fast retransmit)
 *   snd_cwnd = in_flight + sndcnt
 * in the kernel's integer types (int sndcnt and delta, u64 dividend). */
static __always_inline void mpcc_cwnd_reduction(struct sock *sk, struct mpcc_ca *ca, __u32 newly_acked_sacked,
						__u32 newly_lost, bool una_advanced)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 in_flight = mpcc_packets_in_flight(tp), prior_cwnd = tp->prior_cwnd, prr_out = tp->prr_out;
	__s32 delta = (__s32)(tp->snd_ssthresh - in_flight), sndcnt;

	if ((__s32)newly_acked_sacked <= 0 || !prior_cwnd)
		return;
	ca->prr_delivered += newly_acked_sacked;
	if (delta < 0) {
		__u64 dividend = (__u64)tp->snd_ssthresh * ca->prr_delivered + prior_cwnd - 1;

		sndcnt = (__s32)(dividend / prior_cwnd - prr_out);
	} else {
		sndcnt = (__s32)(ca->prr_delivered - prr_out);
		if (sndcnt < (__s32)newly_acked_sacked)
			sndcnt = (__s32)newly_acked_sacked;
		if (una_advanced && !newly_lost)
			sndcnt++;
		if (sndcnt > delta)
			sndcnt = delta;
	}
	if (sndcnt < (prr_out ? 0 : 1))
		sndcnt = prr_out ? 0 : 1;
	tp->snd_cwnd = in_flight + sndcnt;
}

/* tcp_input.c tcp_end_cwnd_reduction() (which returns at once for a cong_control CC): leaving CWR,
 * or Recovery without an undo (undo_marker still set), the window becomes ssthresh. old_state:
 * the state being left. The kernel calls it just before tcp_set_ca_state(Open) from CWR and
 * just after tcp_try_undo_recovery()'s tcp_set_ca_state(Open) from Recovery (tcp_fastretrans_alert),
 * and between CWR and tcp_try_keep_open() in tcp_process_tlp_ack(); so our set_state(Open or
 * Disorder) with the old state CWR or Recovery is the same point. (Its CA_EVENT_COMPLETE_CWR and
 * snd_cwnd_stamp, which no mpcc callback and no cong_control code path reads, are left out.) */
static __always_inline void mpcc_end_cwnd_reduction(struct sock *sk, __u8 old_state)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (tp->snd_ssthresh < MPCC_TCP_INFINITE_SSTHRESH &&
	    (old_state == TCP_CA_CWR || (old_state == TCP_CA_Recovery && tp->undo_marker)))
		tp->snd_cwnd = tp->snd_ssthresh;
}

/* sock_net(sk), read as BTF pointers (no probe-read buffers on the stack) */
static __always_inline struct net *mpcc_sock_net(const struct sock *sk)
{
	return sk->__sk_common.skc_net.net;
}

/* tcp_input.c tcp_may_raise_cwnd(sk, flag): with more reordering than the sysctl allows, any
 * forward progress (FLAG_FORWARD_PROGRESS: ACKed or newly SACKed), else new data cumulatively
 * ACKed (FLAG_DATA_ACKED). Here FLAG_DATA_ACKED is "snd_una advanced" (they differ only for an
 * ACK of less than one segment of a TSO skb, and for the SYN, before init) and a newly SACKed
 * packet is a delivered one without snd_una moving. */
static __always_inline bool mpcc_may_raise_cwnd(struct sock *sk, __u32 acked_sacked, bool una_advanced)
{
	struct net *net = mpcc_sock_net(sk);
	int reordering = net->ipv4.sysctl_tcp_reordering;

	if (tcp_sk(sk)->reordering > (__u32)reordering)
		return una_advanced || acked_sacked;
	return una_advanced;
}

/* tcp_input.c tcp_update_pacing_rate(): 200 % (tcp_pacing_ss_ratio) of mss · cwnd / srtt while
 * cwnd < ssthresh / 2, else 120 % (tcp_pacing_ca_ratio), of max(cwnd, packets_out) packets per
 * srtt, bytes/s, at most sk_max_pacing_rate:
 *   rate = mss · (10⁴ · 8) · ratio · max(cwnd, packets_out) / srtt_us   (srtt in 1/8 µs)
 * MPTCP's scheduler reads the subflows' sk_pacing_rate (mptcp_subflow_get_send), so it must be
 * what the kernel computes for any other CC; writable by a BPF CC since Linux 6.0. */
static __always_inline void mpcc_update_pacing_rate(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct net *net = mpcc_sock_net(sk);
	__u64 rate = (__u64)tp->mss_cache * ((1000000 / 100) << 3);
	__u32 w = tp->snd_cwnd > tp->packets_out ? tp->snd_cwnd : tp->packets_out;
	__u64 max_rate = sk->sk_max_pacing_rate;

	if (tp->snd_cwnd < tp->snd_ssthresh / 2)
		rate *= (__u64)net->ipv4.sysctl_tcp_pacing_ss_ratio;
	else
		rate *= (__u64)net->ipv4.sysctl_tcp_pacing_ca_ratio;
	rate *= w;
	if (tp->srtt_us)
		rate /= tp->srtt_us;
	sk->sk_pacing_rate = rate < max_rate ? rate : max_rate;
}

/* tcp_input.c tcp_init_cwnd(tp, __sk_dst_get(sk)): the route's initcwnd metric, else
 * TCP_INIT_CWND (10), at most snd_cwnd_clamp. dst_metric() reads the u32 array that
 * dst->_metrics points to (its low two bits are flags). */
static __always_inline __u32 mpcc_init_cwnd(struct sock *sk)
{
	struct dst_entry *dst = BPF_CORE_READ(sk, sk_dst_cache);
	__u32 cwnd = 0;

	if (dst) {
		unsigned long m = BPF_CORE_READ(dst, _metrics) & ~MPCC_DST_METRICS_FLAGS;

		if (m)
			bpf_probe_read_kernel(&cwnd, sizeof(cwnd), (void *)(m + (RTAX_INITCWND - 1) * sizeof(__u32)));
	}
	if (!cwnd)
		cwnd = 10;
	return cwnd < tcp_sk(sk)->snd_cwnd_clamp ? cwnd : tcp_sk(sk)->snd_cwnd_clamp;
}

/* tcp_output.c tcp_slow_start_after_idle_check() + tcp_cwnd_restart(), which skip a cong_control
 * CC: with net.ipv4.tcp_slow_start_after_idle, nothing outstanding and no transmission for more
 * than an RTO, ssthresh = tcp_current_ssthresh() and the window halves once per RTO of idleness,
 * down to min(initial window, cwnd). The kernel checks when data is queued (tcp_skb_entail);
 * this runs at CA_EVENT_TX_START (tcp_event_data_sent(), the first transmission with nothing in
 * flight, before lsndtime moves), so the first skb of the burst (tcp_write_xmit sized it with
 * the old window) leaves before the restart. snd_cwnd_stamp and snd_cwnd_used, which only the
 * skipped code reads, are not written (a BPF CC may not). */
static __always_inline void mpcc_idle_restart(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct net *net = mpcc_sock_net(sk);
	__u32 rto = inet_csk(sk)->icsk_rto, restart_cwnd, cwnd = tp->snd_cwnd;
	__s32 delta = (__s32)((__u32)bpf_jiffies64() - tp->lsndtime);
	int i;

	if (!net->ipv4.sysctl_tcp_slow_start_after_idle || tp->packets_out)
		return;
	if (!((__u32)delta > rto))     /* s32 delta against the u32 icsk_rto, as the kernel compares */
		return;
	restart_cwnd = mpcc_init_cwnd(sk);
	tp->snd_ssthresh = mpcc_current_ssthresh(sk);
	if (restart_cwnd > cwnd)
		restart_cwnd = cwnd;
	for (i = 0; i < 32; i++) {     /* the kernel's while loop; a u32 halves to 0 within 32 */
		delta = (__s32)(delta - rto);
		if (delta <= 0 || cwnd <= restart_cwnd)
			break;
		cwnd >>= 1;
	}
	tp->snd_cwnd = cwnd > restart_cwnd ? cwnd : restart_cwnd;
}

#endif /* MPCC_PRR_H */
