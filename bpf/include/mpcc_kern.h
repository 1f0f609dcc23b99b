/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mpcc_kern.h — the kernel side of an algorithm file: per-subflow state and the bodies of the
 * four callbacks its programs call (mpcc_init, mpcc_cong_avoid, mpcc_ssthresh, mpcc_undo_cwnd).
 * The kernel does the rest as for any congestion control without cong_control: loss recovery
 * (PRR), tcp_may_raise_cwnd, pacing, restart after idle. With -DMPCC_COMPAT=1 (a kernel that
 * skips struct_ops programs, docs/kernel.md "Builds") bpf/compat/ adds its state and programs.
 */
#ifndef MPCC_KERN_H
#define MPCC_KERN_H

#ifndef MPCC_COMPAT
#define MPCC_COMPAT 0
#endif

char _license[] SEC("license") = "GPL";

extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;
extern __u32 tcp_slow_start(struct tcp_sock *tp, __u32 acked) __ksym;
extern void tcp_cong_avoid_ai(struct tcp_sock *tp, __u32 w, __u32 acked) __ksym;

#define MPCC_TCPF_CAN_SEND ((1 << TCP_ESTABLISHED) | (1 << TCP_CLOSE_WAIT))
#define MPCC_INC_ONE (1LL << MPCC_INC_SHIFT)
#define MPCC_STR_(x) #x
#define MPCC_STR(x) MPCC_STR_(x)
/* the ops table's .name: the kernel name of this parameter set (bpf_sources.py) */
#define MPCC_KERNEL_STR MPCC_STR(MPCC_KERNEL_SYM)

#ifndef MPCC_ALGO_CA
#define MPCC_ALGO_CA
#endif
#if MPCC_COMPAT
#include "../compat/mpcc_compat_ca.h"
#else
#define MPCC_COMPAT_CA_HEAD
#define MPCC_COMPAT_CA_FLAGS
#define MPCC_COMPAT_CA_TAIL
#endif

/* Per-subflow state in the socket's congestion-control area (inet_csk_ca, ICSK_CA_PRIV_SIZE =
 * 104 bytes on Linux 6.1 to 6.18). */
struct mpcc_ca {
	MPCC_COMPAT_CA_HEAD
	__s64 acc;      /* window increase not yet applied, packets · 2^MPCC_INC_SHIFT */
	__s64 inc;      /* I_r per ACKed packet, packets · 2^MPCC_INC_SHIFT, as last computed */
	__u32 inc_cwnd; /* snd_cwnd when inc was computed */
	__u16 inc_age;  /* ACK events since inc was computed (≤ MPCC_REFRESH_ACKS) */
	MPCC_COMPAT_CA_FLAGS
	MPCC_ALGO_CA    /* the algorithm file's own fields (mpcc_algo.h) */
	MPCC_COMPAT_CA_TAIL
};
_Static_assert(sizeof(struct mpcc_ca) <= sizeof(((struct inet_connection_sock *)0)->icsk_ca_priv),
	       "struct mpcc_ca must fit in the socket's congestion-control area");

/* An algorithm file whose callbacks do more than the shared ones names its own (mpcc_algo.h);
 * the compat layer calls them through these names. */
#ifdef MPCC_INIT
static __always_inline void MPCC_INIT(struct sock *sk);
#else
#define MPCC_INIT mpcc_init
#endif
#ifdef MPCC_CONG_AVOID
static __always_inline void MPCC_CONG_AVOID(struct sock *sk, __u32 ack, __u32 acked);
#else
#define MPCC_CONG_AVOID mpcc_cong_avoid
#endif
#ifdef MPCC_SSTHRESH
static __always_inline __u32 MPCC_SSTHRESH(struct sock *sk);
#else
#define MPCC_SSTHRESH mpcc_ssthresh
#endif

/* I_r is recomputed (walk + rule) when this subflow's window changed, and at least every
 * MPCC_REFRESH_ACKS ACK events, so a sibling's change is seen within a few ACKs. */
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

#if MPCC_COMPAT
#include "../compat/mpcc_records.h"
#else
/* Observation points of the compat layer's diagnostic records (bpf/compat/mpcc_records.h). */
#define MPCC_TRACE(...) do { } while (0)
#define MPCC_TRACE_ADAPT(a, out) do { } while (0)
#define MPCC_SSTHRESH_RET(sk, ss, w_seen) (ss)
#define MPCC_WALK_BEGIN(msk) do { } while (0)
#define MPCC_WALK_PORT(k, port) do { } while (0)
#define MPCC_WALK_SILENT(i, port) do { } while (0)
#define MPCC_WALK_END(c, self, msk) do { } while (0)
#endif

#include "mpcc_walk.h"
#if defined(MPCC_CONN) && MPCC_CONN	/* opt-in connection-level mechanisms (MPCC_BPF_CONN) */
#include "mpcc_conn.h"
#else
#define mpcc_conn_on_cong_avoid(sk) do { } while (0)
#define mpcc_conn_pacing(sk) do { } while (0)
#define MPCC_CONN_OPS
#endif

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
	MPCC_TRACE(0, &c, self, *inc, per_ack ? (__u64)mpcc_counter_increment(*inc) : 0, 0,
		   MPCC_OWN_ROUTE ? 1 : 2, per_ack);
	return 0;
}

/* init: the kernel zeroes the area before calling it (tcp_init_congestion_control). */
static __always_inline void mpcc_init(struct sock *sk)
{
	struct mpcc_ca *ca = inet_csk_ca(sk);

	ca->acc = 0;
	ca->inc = 0;
	ca->inc_cwnd = 0;
	ca->inc_age = MPCC_REFRESH_ACKS;   /* compute on the first ACK */
#if MPCC_COMPAT
	mpcc_compat_init(sk, ca);
#endif
}

/* I_r per ACKed packet into the accumulator, as tcp_cong_avoid_ai's snd_cwnd_cnt: snd_cwnd moves
 * by whole packets past ±1, the remainder kept (OLIA's I_r can be < 0). A positive I_r counts one
 * unit more: w ACKs of a/w (rounded down) then reach a packets at Reno's ACK. I_r is recomputed when
 * snd_cwnd changed, or after MPCC_REFRESH_ACKS ACKs. Not an MPTCP subflow: Reno's step. */
static __always_inline void mpcc_cong_avoid_ai(struct sock *sk, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct mpcc_ca *ca = inet_csk_ca(sk);
	__u32 cwnd;
	__s64 acc;
	__u64 whole;

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
	acc = ca->acc + (ca->inc + (ca->inc > 0)) * (__s64)acked;
	cwnd = tp->snd_cwnd;
	if (acc >= MPCC_INC_ONE) {
		whole = (__u64)acc >> MPCC_INC_SHIFT;
		acc -= (__s64)(whole << MPCC_INC_SHIFT);
		cwnd += (__u32)whole;
		if (cwnd > tp->snd_cwnd_clamp)
			cwnd = tp->snd_cwnd_clamp;
	} else if (acc <= -MPCC_INC_ONE) {
		whole = (__u64)(-acc) >> MPCC_INC_SHIFT;
		acc += (__s64)(whole << MPCC_INC_SHIFT);
		cwnd = cwnd > whole + 1 ? cwnd - (__u32)whole : 1;
	}
	tp->snd_cwnd = cwnd;
	ca->acc = acc;
}

/* cong_avoid(sk, ack, acked), as tcp_reno_cong_avoid: nothing unless cwnd-limited, slow start
 * by tcp_slow_start(), then mpcc_cong_avoid_ai. A plain TCP socket (no MPTCP) runs
 * tcp_reno_cong_avoid itself. The kernel calls it only outside CWR/Recovery and when
 * tcp_may_raise_cwnd() allows. */
static __always_inline void mpcc_cong_avoid(struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (!tp->is_mptcp) {
		tcp_reno_cong_avoid(sk, ack, acked);
		return;
	}
	mpcc_conn_on_cong_avoid(sk);
	if (!tcp_is_cwnd_limited(sk))
		return;
	if (tcp_in_slow_start(tp)) {
		acked = tcp_slow_start(tp, acked);
		if (!acked)
			return;
	}
	mpcc_cong_avoid_ai(sk, acked);
}

/* tcp_reno_ssthresh: max(snd_cwnd / 2, 2) (a plain TCP socket). */
static __always_inline __u32 mpcc_reno_ssthresh(const struct tcp_sock *tp)
{
	__u32 half = tp->snd_cwnd >> 1;

	return half > 2 ? half : 2;
}

/* ssthresh, called by the kernel as the loss or ECN is detected (tcp_init_cwnd_reduction,
 * tcp_enter_loss), before it touches snd_cwnd: max(w_r − D_r, min_cwnd) (Peng et al. §V: min 1
 * for Balia and Coupled with more than one route, else 2), rounded down like Reno's
 * max(w/2, 2). The kernel's PRR then brings snd_cwnd down to it. */
static __always_inline __u32 mpcc_ssthresh(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct mpcc_ca *ca = inet_csk_ca(sk);
	const struct mpcc_params p = { MPCC_PARAM_VALUES };
	struct mpcc_conn c = {};
	__u32 self;
	__u64 w, dec;

	ca->inc_age = MPCC_REFRESH_ACKS;   /* recompute I_r after the window reduction */
	ca->acc = 0;                       /* as tcp_init_cwnd_reduction's snd_cwnd_cnt = 0 */
	if (mpcc_gather(sk, &c, &self, MPCC_PER_ACK(&p)) < 0)
		return MPCC_SSTHRESH_RET(sk, mpcc_reno_ssthresh(tp), 0);
	self &= MPCC_MAX_ROUTES - 1;
	dec = mpcc_on_loss(&c, self, &p);
	w = mpcc_cwnd_after_loss(c.cwnd[self], dec, mpcc_min_cwnd(c.n));
	MPCC_TRACE(1, &c, self, 0, dec, (__u32)(w >> MPCC_CWND_SHIFT), 2, MPCC_PER_ACK(&p));
	return MPCC_SSTHRESH_RET(sk, (__u32)(w >> MPCC_CWND_SHIFT), (__u32)(c.cwnd[self] >> MPCC_CWND_SHIFT));
}

#if MPCC_COMPAT
#include "../compat/mpcc_compat.h"
#else
/* undo_cwnd, as tcp_reno_undo_cwnd: max(snd_cwnd, prior_cwnd). */
static __always_inline __u32 mpcc_undo_cwnd(struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	return tp->snd_cwnd > tp->prior_cwnd ? tp->snd_cwnd : tp->prior_cwnd;
}

#define MPCC_COMPAT_OPS
#endif

#endif /* MPCC_KERN_H */
