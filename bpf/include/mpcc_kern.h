/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mpcc_kern.h — what every mpcc BPF congestion control shares: reading the connection's
 * subflows from upstream MPTCP, the fractional-window accumulator, and the tcp_congestion_ops
 * callbacks (init, cong_control, ssthresh, undo_cwnd, set_state, cwnd_event) with
 * MPCC_STRUCT_OPS, which writes them and the ops table for an algorithm file. Included by mpcc_algo.h when compiling for BPF, after the
 * algorithm's settings (MPCC_OWN_ROUTE, MPCC_LOSS_INTERVAL, ...) and before its rule
 * (mpcc_on_ack, mpcc_on_loss), which lives in bpf/<algorithm>.bpf.c.
 *
 * The walk over the connection's subflows (the routes the rule sees) is in mpcc_walk.h; the
 * per-ACK entry point (cong_control) and set_state are in mpcc_control.h.
 */
#ifndef MPCC_KERN_H
#define MPCC_KERN_H


char _license[] SEC("license") = "GPL";

extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;
extern __u32 tcp_slow_start(struct tcp_sock *tp, __u32 acked) __ksym;
extern void tcp_cong_avoid_ai(struct tcp_sock *tp, __u32 w, __u32 acked) __ksym;

#define MPCC_TCPF_CAN_SEND ((1 << TCP_ESTABLISHED) | (1 << TCP_CLOSE_WAIT))
#define MPCC_INC_ONE (1LL << MPCC_INC_SHIFT)

/* Per-subflow state in the socket's congestion-control area (inet_csk_ca, ICSK_CA_PRIV_SIZE =
 * 104 bytes on Linux 6.1 to 6.18): a field only one kind of algorithm uses is compiled in for it
 * alone (FAST, the only MPCC_PERIODIC file, fills all 104 bytes). */
struct mpcc_ca {
	/* at bytes 0 and 4 for every algorithm (bench/kernel/ssthresh_watch.py reads them) */
	__u32 ss_ret;    /* the value our ssthresh() last returned (the bad-ssthresh diagnosis) */
	__u32 ss_calls;  /* how many times it ran */
#if MPCC_LOSS_INTERVAL   /* a sibling reads the two from our CA area (mpcc_walk.h) */
	__u64 loss1;    /* OLIA: bytes_acked at the loss before the last one (read by siblings) */
	__u64 loss2;    /* OLIA: bytes_acked at the last loss (read by siblings) */
#endif
	__s64 acc;      /* window increase not yet applied, packets · 2^MPCC_INC_SHIFT */
	__s64 inc;      /* I_r per ACKed packet, packets · 2^MPCC_INC_SHIFT, as last computed */
	__u32 inc_cwnd; /* snd_cwnd when inc was computed */
	__u16 inc_age;  /* ACK events since inc was computed (≤ MPCC_REFRESH_ACKS) */
	__u8 red;       /* the reduction episode under way: TCP_CA_CWR, TCP_CA_Recovery, 0 = none */
	__u8 inited;    /* 1 once init ran (the kernel zeroes the area before init; 0 at cong_control =
			 * init was skipped, KERNEL_BUG.md §5: initialised there, mpcc_late_init) */
#if MPCC_PER_ACK_MODE
	__s64 cnt;      /* per-ACK update: mptcp_olia.c's counter, 2^-MPCC_COUNTER_BITS packets */
#endif
#if MPCC_PERIODIC
	__u64 upd_stamp; /* tcp_mstamp (µs) of the last periodic update */
	/* MPCC_ADAPT (mpcc_algo.h): the slow-timescale interval under way and its result */
	__u64 adapted;   /* the adapted parameter (FAST: α · 2^32); 0 = as loaded */
	__u64 ad_stamp;  /* tcp_mstamp (µs) at the start of the interval; 0 = none yet */
	__u64 ad_q_sum;  /* Σ srtt − baseRTT over the interval's periodic updates, 1/8 µs */
	__u32 ad_q_n;    /* number of those samples */
	__u32 ad_lost;   /* tp->lost + tp->delivered_ce at the start of the interval */
	__u32 ad_sent;   /* tp->data_segs_out at the start of the interval */
#endif
	__u32 cwnd_left; /* snd_cwnd as the last cong_avoid left it (the window-jump check) */
	/* cong_control (mpcc_prr.h): snd_una at the last call (FLAG_SND_UNA_ADVANCED), and PRR */
	__u32 prev_delivered; /* tp->delivered at the last cong_control */
	__u32 prev_lost;      /* tp->lost at the last cong_control */
	__u32 prev_snd_una;   /* tp->snd_una at the last cong_control */
	__u32 prr_delivered;  /* packets delivered in this reduction episode (tcp_cwnd_reduction's) */
	__u32 ep_high_seq;    /* tp->high_seq when the episode began (tcp_init_cwnd_reduction) */
	__u32 ep_prior_cwnd;  /* tp->prior_cwnd when it began */
#if !MPCC_PERIODIC
	/* the window-jump check's bound on the packets delivered since the last cong_control
	 * (mpcc_delivered_bound): what was outstanding then, and the counters at its end */
	__u32 prev_packets_out; /* tp->packets_out at the end of the last cong_control */
	__u32 prev_data_segs;   /* tp->data_segs_out then */
	__u32 prev_segs_in;     /* tp->segs_in then (segments received since: ACKs seen) */
	__u32 prev_dsack_dups;  /* tp->dsack_dups then (DSACKed duplicates count as delivered) */
#endif
};
_Static_assert(sizeof(struct mpcc_ca) <= sizeof(((struct inet_connection_sock *)0)->icsk_ca_priv),
	       "struct mpcc_ca must fit in the socket's congestion-control area");
#if !MPCC_LOSS_INTERVAL && !MPCC_PER_ACK_MODE && !MPCC_PERIODIC
_Static_assert(__builtin_offsetof(struct mpcc_ca, prev_segs_in) == 68,
	       "tests/kernel/test_cong_control.py reads prev_segs_in at byte 68 (PREV_SEGS_IN)");
#endif

#if MPCC_ADAPT
/* The slow-timescale adaptation (mpcc_algo.h), at each periodic update; defined by the
 * algorithm file (FAST: bpf/fast.bpf.c). */
static __always_inline void mpcc_adapt(struct sock *sk, const struct mpcc_params *p, __u64 now);
#endif
#if MPCC_WINDOW_HISTORY
/* Each subflow's windows at its last periodic updates (mpcc_algo.h), kept by the algorithm file. */
static __always_inline void mpcc_history_init(struct sock *sk);
static __always_inline __u64 mpcc_history_w_old(struct sock *sk, const struct mpcc_params *p);
static __always_inline void mpcc_history_push(struct sock *sk, const struct mpcc_params *p, __u32 w);
/* The subflow's baseRTT over its life (1/8 µs), given the one from the current tcp_min_rtt. */
static __always_inline __u64 mpcc_history_base_rtt(struct sock *sk, __u64 base);
#endif

/* I_r is recomputed (subflow walk + rule) when this subflow's window changed since the last
 * computation, and at least every MPCC_REFRESH_ACKS ACK events otherwise, so a change of a
 * sibling's window or RTT is seen within a few ACKs. Like the out-of-tree kernel, which
 * recomputed LIA's α only when a window changed, this keeps the per-ACK cost of the
 * congestion-avoidance path near Reno's (bench/kernel/RESULTS.md). */
#define MPCC_REFRESH_ACKS 16

static __always_inline struct tcp_sock *tcp_sk(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline struct inet_connection_sock *inet_csk(const struct sock *sk)
{
	return (struct inet_connection_sock *)sk;
}

static __always_inline void *inet_csk_ca(const struct sock *sk)
{
	return (void *)inet_csk(sk)->icsk_ca_priv;
}

static __always_inline bool tcp_in_slow_start(const struct tcp_sock *tp)
{
	return tp->snd_cwnd < tp->snd_ssthresh;
}

/* As include/net/tcp.h (Linux >= 6.4), so that mpcc_ewtcp grows exactly like the kernel's Reno. */
static __always_inline bool tcp_is_cwnd_limited(const struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	if (BPF_CORE_READ_BITFIELD(tp, is_cwnd_limited))
		return true;
	/* in slow start, ensure cwnd grows to twice what was ACKed */
	if (tcp_in_slow_start(tp))
		return tp->snd_cwnd < 2 * tp->max_packets_out;
	return false;
}

#include "mpcc_records.h"
#include "mpcc_walk.h"
#include "mpcc_prr.h"


/* The counters cong_control's next run takes its differences from (the rate sample's bound,
 * FLAG_SND_UNA_ADVANCED and the window-jump records): at init and at the end of each run. */
static __always_inline void mpcc_mark_counters(const struct tcp_sock *tp, struct mpcc_ca *ca)
{
	ca->prev_delivered = tp->delivered;
	ca->prev_lost = tp->lost;
	ca->prev_snd_una = tp->snd_una;
#if !MPCC_PERIODIC
	ca->prev_packets_out = tp->packets_out;
	ca->prev_data_segs = tp->data_segs_out;
	ca->prev_segs_in = tp->segs_in;
	ca->prev_dsack_dups = tp->dsack_dups;
#endif
}

/* I_r of sk's route now (walk + rule); -1 when sk is not an MPTCP subflow. */
static __always_inline int mpcc_compute_inc(struct sock *sk, __s64 *inc)
{
	const struct mpcc_params p = { MPCC_PARAM_VALUES };
	struct mpcc_conn c = {};
	__u32 self = 0;
	int per_ack = MPCC_PER_ACK(&p);

	if (MPCC_OWN_ROUTE) {              /* I_r reads route r only: no walk */
		mpcc_fill_own(sk, &c);
	} else if (mpcc_gather(sk, &c, &self, per_ack) < 0) {
		return -1;
	}
	*inc = mpcc_on_ack(&c, self, &p);
	mpcc_record(0, &c, self, *inc, per_ack ? (__u64)mpcc_counter_increment(*inc) : 0, 0,
		    MPCC_OWN_ROUTE ? 1 : 2, per_ack);
	return 0;
}

static __always_inline void mpcc_init(struct sock *sk)
{
	struct mpcc_ca *ca = inet_csk_ca(sk);

	struct tcp_sock *tp = tcp_sk(sk);

	ca->acc = 0;
	ca->inc = 0;
	ca->inc_cwnd = 0;
	ca->inc_age = MPCC_REFRESH_ACKS;   /* compute on the first ACK */
#if MPCC_LOSS_INTERVAL
	ca->loss1 = tp->bytes_acked;
	ca->loss2 = ca->loss1;
#endif
#if MPCC_PER_ACK_MODE
	ca->cnt = 0;
#endif
#if MPCC_PERIODIC
	ca->upd_stamp = 0;
	ca->adapted = 0;
	ca->ad_stamp = 0;
#endif
	ca->cwnd_left = 0;
	ca->red = 0;
	ca->prr_delivered = 0;
	mpcc_mark_counters(tp, ca);
#if MPCC_WINDOW_HISTORY
	mpcc_history_init(sk);
#endif
	ca->inited = 1;
}

#if MPCC_PER_ACK_MODE
/* The per-ACK update (mpcc_algo.h; mptcp_olia.c's cong_avoid): once per ACK, slow start by one
 * packet while w ≤ ssthresh (Linux 3.11's tcp_slow_start), else I_r afresh through the counter. */
static __always_inline void mpcc_cong_avoid_per_ack(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct mpcc_ca *ca = inet_csk_ca(sk);
	__s64 inc;
	__s32 step;

	if (!tcp_is_cwnd_limited(sk))
		return;
	if (tp->snd_cwnd <= tp->snd_ssthresh) {
		if (tp->snd_cwnd < tp->snd_cwnd_clamp)
			tp->snd_cwnd++;
		return;
	}
	if (mpcc_compute_inc(sk, &inc) < 0) {
		tcp_cong_avoid_ai(tp, tp->snd_cwnd, 1);
		return;
	}
	step = mpcc_counter_step(&ca->cnt, mpcc_counter_increment(inc));
	if (step > 0 && tp->snd_cwnd < tp->snd_cwnd_clamp)
		tp->snd_cwnd++;
	else if (step < 0 && tp->snd_cwnd > 1)
		tp->snd_cwnd--;
}
#endif

#if MPCC_PERIODIC
/* The periodic update (mpcc_algo.h): every mpcc_update_interval_us(p), w_r ← mpcc_on_update,
 * rounded to the nearest packet, at least min_cwnd and at most snd_cwnd_clamp. An increase is
 * applied only while the subflow is cwnd-limited (as every window increase in Linux). */
static __always_inline void mpcc_periodic(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct mpcc_ca *ca = inet_csk_ca(sk);
	const struct mpcc_params p = { MPCC_PARAM_VALUES };
	struct mpcc_conn c = {};
	__u32 self = 0, floor;
	__u64 now = tp->tcp_mstamp, w;

	if (ca->upd_stamp && now - ca->upd_stamp < mpcc_update_interval_us(&p))
		return;
	if (!tp->srtt_us)
		return;
	ca->upd_stamp = now ? now : 1;
	if (MPCC_OWN_ROUTE || mpcc_gather(sk, &c, &self, 0) < 0) {
		c = (struct mpcc_conn){};
		self = 0;
		mpcc_fill_own(sk, &c);
	}
	self &= MPCC_MAX_ROUTES - 1;
#if MPCC_ADAPT
	mpcc_adapt(sk, &p, now);
#endif
	c.adapted = ca->adapted;
#if MPCC_WINDOW_HISTORY
	c.w_old = mpcc_history_w_old(sk, &p);
	c.base_rtt[self] = mpcc_history_base_rtt(sk, c.base_rtt[self]);
#endif
	w = mpcc_on_update(&c, self, &p);
	mpcc_record(2, &c, self, 0, w, 0, 1, 0);
	w = (w + (1ULL << (MPCC_CWND_SHIFT - 1))) >> MPCC_CWND_SHIFT;
	floor = mpcc_min_cwnd(c.n);
	if (w < floor)
		w = floor;
	if (w > tp->snd_cwnd_clamp)
		w = tp->snd_cwnd_clamp;
	if (w != tp->snd_cwnd && (w < tp->snd_cwnd || tcp_is_cwnd_limited(sk))) {
		tp->snd_cwnd = (__u32)w;
		ca->acc = 0;
	}
#if MPCC_WINDOW_HISTORY
	mpcc_history_push(sk, &p, tp->snd_cwnd);   /* the window this update leaves in force */
#endif
}
#endif

/* Congestion avoidance: slow start as tcp_slow_start(), then add I_r per ACKed packet to the
 * accumulator and move snd_cwnd by whole packets when it passes ±1 (like tcp_cong_avoid_ai). */
static __always_inline void mpcc_cong_avoid(struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct mpcc_ca *ca = inet_csk_ca(sk);
	__u32 cwnd;
	__s64 acc;
	__u64 whole;

#if MPCC_PERIODIC
	if (!tp->is_mptcp && !MPCC_OWN_ROUTE) {
		tcp_reno_cong_avoid(sk, ack, acked);
		return;
	}
	mpcc_periodic(sk);
#else
	if (!tp->is_mptcp) {
		tcp_reno_cong_avoid(sk, ack, acked);
		return;
	}
#if MPCC_PER_ACK_MODE
	const struct mpcc_params p = { MPCC_PARAM_VALUES };

	if (MPCC_PER_ACK(&p)) {
		mpcc_cong_avoid_per_ack(sk);
		return;
	}
#endif
#endif
	cwnd = tp->snd_cwnd;
	if (ca->cwnd_left && mpcc_jumped(ca->cwnd_left > tp->prior_cwnd ? ca->cwnd_left : tp->prior_cwnd, cwnd))
		mpcc_jump(sk, MPCC_JUMP_BETWEEN, ca->cwnd_left, acked);
	ca->cwnd_left = cwnd;
	if (!tcp_is_cwnd_limited(sk))
		return;
#if !MPCC_PERIODIC
	if (tcp_in_slow_start(tp)) {
		__u32 delivered = acked;

		acked = tcp_slow_start(tp, acked);
		/* more than doubled: the kernel's rule if that many were delivered since our last run
		 * (MPCC_JUMP_DELIVERED), a stale count if more than can have been (mpcc_records.h) */
		if (mpcc_jumped(cwnd, tp->snd_cwnd))
			mpcc_jump(sk, delivered <= mpcc_delivered_bound(tp, ca) ? MPCC_JUMP_DELIVERED :
				  MPCC_JUMP_SLOW_START, cwnd, delivered);
		ca->cwnd_left = tp->snd_cwnd;
		if (!acked)
			return;
	}
#endif
	if (tp->snd_cwnd != ca->inc_cwnd || ca->inc_age >= MPCC_REFRESH_ACKS) {
		if (mpcc_compute_inc(sk, &ca->inc) < 0) {
			tcp_cong_avoid_ai(tp, tp->snd_cwnd, acked);
			return;
		}
		ca->inc_cwnd = tp->snd_cwnd;
		ca->inc_age = 0;
	}
	ca->inc_age++;
	if (acked > 0xffff)
		acked = 0xffff;
	acc = ca->acc + ca->inc * (__s64)acked;
	cwnd = tp->snd_cwnd;
	if (acc >= MPCC_INC_ONE) {
		whole = (__u64)acc >> MPCC_INC_SHIFT;
		acc -= (__s64)(whole << MPCC_INC_SHIFT);
		cwnd += (__u32)whole;
		if (cwnd > tp->snd_cwnd_clamp)
			cwnd = tp->snd_cwnd_clamp;
	} else if (acc <= -MPCC_INC_ONE) {    /* OLIA's ε_r < 0 shrinks the window */
		whole = (__u64)(-acc) >> MPCC_INC_SHIFT;
		acc += (__s64)(whole << MPCC_INC_SHIFT);
		cwnd = cwnd > whole + 1 ? cwnd - (__u32)whole : 1;
	}
	if (mpcc_jumped(tp->snd_cwnd, cwnd))
		mpcc_jump(sk, MPCC_JUMP_RULE, tp->snd_cwnd, acked);
	tp->snd_cwnd = cwnd;
	ca->cwnd_left = cwnd;
	ca->acc = acc;
}

/* Reno's ssthresh and undo (tcp_reno_ssthresh, tcp_reno_undo_cwnd) computed here rather than
 * called as kfuncs: the same values, two fewer kernel symbols to resolve on older kernels. (It
 * did not remove the bad ssthresh seen under churn, bench/kernel/CHURN.md §3b.) */
static __always_inline __u32 mpcc_reno_ssthresh(const struct tcp_sock *tp)
{
	__u32 half = tp->snd_cwnd >> 1;

	return half > 2 ? half : 2;
}

/* undo: max(snd_cwnd, prior_cwnd) as tcp_reno_undo_cwnd, over the values that are windows only.
 * Either can hold the stale 0x81104110 of a skipped program (KERNEL_BUG.md: a skipped undo_cwnd
 * writes it to snd_cwnd, and a reduction entered before cong_control repaired it copies it to
 * prior_cwnd, which no BPF program may write); returned, it would be negative as an int, which
 * tcp_snd_cwnd_set() WARNs on (seen on a fresh host boot, CHURN.md §10). Neither: the initial window. */
static __always_inline __u32 mpcc_reno_undo_cwnd(const struct tcp_sock *tp)
{
	__u32 cwnd = tp->snd_cwnd, prior = tp->prior_cwnd;

	if (cwnd > MPCC_TCP_INFINITE_SSTHRESH)
		cwnd = 0;
	if (prior > MPCC_TCP_INFINITE_SSTHRESH)
		prior = 0;
	cwnd = cwnd > prior ? cwnd : prior;
	return cwnd ? cwnd : 10;
}

/* What ssthresh() returns, noted in the CA area (ss_ret, and ss_calls counts the calls): a socket
 * left with another value at a state change did not run it (CHURN.md §3c, mpcc_repair_unwritten). */
static __always_inline __u32 mpcc_ssthresh_ran(struct mpcc_ca *ca, __u32 ss)
{
	ca->ss_ret = ss;
	ca->ss_calls++;
	return ss;
}

/* On a loss: ssthresh = max(w_r − D_r, min_cwnd) (Peng et al. §V: min 1 for Balia and Coupled
 * with more than one route, else 2), rounded down like Reno's max(w/2, 2). */
static __always_inline __u32 mpcc_ssthresh(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct mpcc_ca *ca = inet_csk_ca(sk);
	const struct mpcc_params p = { MPCC_PARAM_VALUES };
	struct mpcc_conn c = {};
	__u32 self;
	__u64 w, dec;

#if MPCC_LOSS_INTERVAL
	if (tp->bytes_acked != ca->loss2) {   /* a new loss interval */
		ca->loss1 = ca->loss2;
		ca->loss2 = tp->bytes_acked;
	}
#endif
	ca->inc_age = MPCC_REFRESH_ACKS;   /* recompute I_r after the window reduction */
	if (mpcc_gather(sk, &c, &self, MPCC_PER_ACK(&p)) < 0)
		return mpcc_ssthresh_ran(ca, mpcc_reno_ssthresh(tp));
	self &= MPCC_MAX_ROUTES - 1;
	dec = mpcc_on_loss(&c, self, &p);
	w = mpcc_cwnd_after_loss(c.cwnd[self], dec, mpcc_min_cwnd(c.n));
	mpcc_record(1, &c, self, 0, dec, (__u32)(w >> MPCC_CWND_SHIFT), 2, MPCC_PER_ACK(&p));
	if ((w >> MPCC_CWND_SHIFT) > tp->snd_cwnd && (w >> MPCC_CWND_SHIFT) > mpcc_min_cwnd(c.n))
		mpcc_jump(sk, MPCC_JUMP_SSTHRESH, tp->snd_cwnd, (__u32)(c.cwnd[self] >> MPCC_CWND_SHIFT));
	return mpcc_ssthresh_ran(ca, (__u32)(w >> MPCC_CWND_SHIFT));
}

/* An ssthresh the rule cannot have produced: above TCP_INFINITE_SSTHRESH (0x7fffffff), which no
 * valid ssthresh exceeds. On the 6.18 testbed kernel a socket is sometimes left, at a
 * congestion-state change (tcp_enter_cwr / tcp_enter_loss / tcp_init_cwnd_reduction), with
 * 0x81104110 — the low half of srso_alias_return_thunk + 5, a return address left on the stack —
 * although our ssthresh() did not run for it (ss_calls above did not move): the kernel stored an
 * unwritten return value of the struct_ops call (bench/kernel/CHURN.md §3c; plain TCP too). The
 * kernel's PRR would multiply it into a window of ~10⁹ packets; with our own cong_control the
 * kernel's PRR does not run, and this repair runs first in it (before our PRR and congestion
 * avoidance, mpcc_cong_control), so no window is ever computed from the bad value (§3d). The
 * loss's ssthresh is redone with the rule at the window the loss reduced (prior_cwnd, what
 * ssthresh() would have seen: tcp_init_cwnd_reduction and tcp_enter_loss call it before they
 * touch snd_cwnd; the current window if prior_cwnd is bad too), the window left at
 * min(snd_cwnd, prior_cwnd), and the repair is recorded in mpcc_jumps (kind 5; cwnd_before: the
 * window found). A subprogram: the rule's frame is not
 * added to the frame of the congestion-avoidance path it runs beside. */
/* The same unwritten return value from undo_cwnd(): tcp_undo_cwnd_reduction() sets
 * snd_cwnd = ca_ops->undo_cwnd(sk) (seen under churn: snd_cwnd = 0x81104110, CHURN.md §3d).
 * Ours returns max(snd_cwnd, prior_cwnd), which an undo (of a reduction found spurious) makes
 * prior_cwnd; the window the undo found is overwritten, so prior_cwnd it is, or the initial
 * window if that is bad too. Kind 6 in mpcc_jumps. Run first in cong_control, and at
 * CA_EVENT_TX_START: an undo on an ACK that reaches no cong_control (nothing was in flight, or
 * an old ACK) is then repaired before the burst that follows it (but its first skb). */
static __always_inline void mpcc_repair_cwnd(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 cwnd = tp->snd_cwnd, prior;

	if (cwnd <= MPCC_TCP_INFINITE_SSTHRESH)
		return;
	prior = tp->prior_cwnd;
	tp->snd_cwnd = prior && prior <= MPCC_TCP_INFINITE_SSTHRESH ? prior : 10;
	mpcc_jump(sk, MPCC_JUMP_CWND_REPAIRED, cwnd, tp->snd_cwnd);
}

static __noinline void mpcc_repair_unwritten(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 cwnd, ss, prior;

	if (!sk)
		return;
	mpcc_repair_cwnd(sk);
	if (tp->snd_ssthresh <= MPCC_TCP_INFINITE_SSTHRESH)
		return;
	cwnd = tp->snd_cwnd;
	prior = tp->prior_cwnd;
	if (prior && prior <= MPCC_TCP_INFINITE_SSTHRESH)
		tp->snd_cwnd = prior;
	ss = mpcc_ssthresh(sk);
	tp->snd_ssthresh = ss;
	if (cwnd < tp->snd_cwnd)
		tp->snd_cwnd = cwnd;
	mpcc_jump(sk, MPCC_JUMP_REPAIRED, cwnd, ss);
}

/* mpcc_cong_avoid in a frame of its own: beside the repair's (which runs the rule's ssthresh),
 * not on top of it, in the verifier's combined-stack sum (bench/kernel/bpf_stack.py). */
static __noinline void mpcc_cong_avoid_frame(struct sock *sk, __u32 ack, __u32 acked)
{
	if (sk)
		mpcc_cong_avoid(sk, ack, acked);
}

#include "mpcc_control.h"

#define MPCC_STR_(x) #x
#define MPCC_STR(x) MPCC_STR_(x)

/* The five struct_ops programs (named <algo>_init, <algo>_cong_avoid, ...) and the
 * tcp_congestion_ops table, named MPCC_KERNEL_SYM (the kernel name; also the struct_ops map's). */
#define MPCC_STRUCT_OPS(algo)								\
SEC("struct_ops")									\
void BPF_PROG(algo##_init, struct sock *sk)						\
{											\
	mpcc_init(sk);									\
}											\
											\
SEC("struct_ops")									\
void BPF_PROG(algo##_cong_control, struct sock *sk)					\
{											\
	mpcc_cong_control(sk, mpcc_rate_sample(ctx));					\
}											\
											\
SEC("struct_ops")									\
__u32 BPF_PROG(algo##_ssthresh, struct sock *sk)					\
{											\
	return mpcc_ssthresh(sk);							\
}											\
											\
SEC("struct_ops")									\
__u32 BPF_PROG(algo##_undo_cwnd, struct sock *sk)					\
{											\
	return mpcc_reno_undo_cwnd(tcp_sk(sk));						\
}											\
											\
SEC("struct_ops")									\
void BPF_PROG(algo##_set_state, struct sock *sk, __u8 new_state)			\
{											\
	mpcc_set_state(sk, new_state);							\
}											\
											\
SEC("struct_ops")									\
void BPF_PROG(algo##_cwnd_event, struct sock *sk, enum tcp_ca_event ev)		\
{											\
	if (ev == CA_EVENT_TX_START) {							\
		mpcc_repair_cwnd(sk);							\
		mpcc_idle_restart(sk);							\
	}										\
}											\
											\
SEC(".struct_ops")									\
struct tcp_congestion_ops MPCC_KERNEL_SYM = {						\
	.init		= (void *)algo##_init,						\
	.cong_control	= (void *)algo##_cong_control,					\
	.ssthresh	= (void *)algo##_ssthresh,					\
	.undo_cwnd	= (void *)algo##_undo_cwnd,					\
	.set_state	= (void *)algo##_set_state,					\
	.cwnd_event	= (void *)algo##_cwnd_event,					\
	.name		= MPCC_STR(MPCC_KERNEL_SYM),					\
}

#endif /* MPCC_KERN_H */
