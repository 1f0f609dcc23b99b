/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mpcc_compat.h — the compat build (-DMPCC_COMPAT=1) of every algorithm: for a kernel that skips
 * struct_ops programs called in softirq while PID 1 is the interrupted task
 * (bench/kernel/notes/KERNEL_BUG.md; not mainline). A skipped ssthresh() or undo_cwnd() leaves its
 * unwritten return value (stack garbage such as 0x81104110) in snd_ssthresh or snd_cwnd, and the
 * kernel's PRR would multiply it into a window of ~10⁹ packets before any program of ours runs
 * again. So this build takes the per-ACK path over with cong_control, which repairs such values
 * first and then does what the kernel's tcp_cong_control() does for a CC without cong_control
 * (mpcc_control.h over mpcc_prr.h: PRR, tcp_may_raise_cwnd, pacing, restart after idle), and
 * counts each repair in mpcc_health (mpcc_records.h). The loader builds it only where the
 * defect is detected (python/mpcc/kernel/bpf.py detect_build). Included at the end of
 * mpcc_kern.h; the algorithm file's ops table takes its programs through MPCC_COMPAT_OPS.
 */
#ifndef MPCC_COMPAT_H
#define MPCC_COMPAT_H

#include "mpcc_prr.h"

/* undo: max(snd_cwnd, prior_cwnd) as tcp_reno_undo_cwnd, over the values that are windows only:
 * either can hold the stale value of a skipped program (a skipped undo_cwnd writes it to
 * snd_cwnd, and a reduction entered before cong_control repaired it copies it to prior_cwnd);
 * returned, it would be negative as an int, which tcp_snd_cwnd_set() WARNs on. Neither: the
 * initial window. */
static __always_inline __u32 mpcc_undo_cwnd(struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	__u32 cwnd = tp->snd_cwnd, prior = tp->prior_cwnd;

	if (cwnd > MPCC_TCP_INFINITE_SSTHRESH)
		cwnd = 0;
	if (prior > MPCC_TCP_INFINITE_SSTHRESH)
		prior = 0;
	cwnd = cwnd > prior ? cwnd : prior;
	return cwnd ? cwnd : 10;
}

/* A snd_cwnd no window can be (above TCP_INFINITE_SSTHRESH): the unwritten return value of a
 * skipped undo_cwnd() (tcp_undo_cwnd_reduction sets snd_cwnd = undo_cwnd(sk)). Ours returns
 * max(snd_cwnd, prior_cwnd), which an undo makes prior_cwnd, so prior_cwnd it is, or the initial
 * window if that is bad too. Kind 6. Run first in cong_control, and at CA_EVENT_TX_START. */
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

/* An ssthresh above TCP_INFINITE_SSTHRESH: the unwritten return value of a skipped ssthresh()
 * (tcp_enter_cwr / tcp_enter_loss / tcp_init_cwnd_reduction stored it; ss_calls did not move).
 * Redone with the rule at the window the loss reduced (prior_cwnd, what ssthresh() would have
 * seen; the current window if prior_cwnd is bad too), the window left at
 * min(snd_cwnd, prior_cwnd). Kind 5. A subprogram: the rule's frame is not added to the frame of
 * the congestion-avoidance path it runs beside. */
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
	ss = MPCC_SSTHRESH(sk);
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
		MPCC_CONG_AVOID(sk, ack, acked);
}

/* The window-jump check around it (in cong_control's frame) on the sockets the rule runs for
 * (MPTCP subflows; FAST's own route on plain TCP too): snd_cwnd more than doubled since the last
 * cong_avoid left it, beyond what an undo may restore (prior_cwnd) (kind 1), or within this one:
 * in slow start the kernel's own rule when that many packets can have been delivered since our
 * last run (kind 7), else a stale count (kind 2); in congestion avoidance the rule's step
 * (kind 3). */
static __always_inline void mpcc_cong_avoid_checked(struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct mpcc_ca *ca = inet_csk_ca(sk);
	__u32 cwnd = tp->snd_cwnd;
	__u32 left = ca->cwnd_left > tp->prior_cwnd ? ca->cwnd_left : tp->prior_cwnd;
	bool ss = tcp_in_slow_start(tp);

	if (!tp->is_mptcp && !(MPCC_PERIODIC && MPCC_OWN_ROUTE)) {   /* tcp_reno_cong_avoid's */
		mpcc_cong_avoid_frame(sk, ack, acked);
		return;
	}
	if (ca->cwnd_left && mpcc_jumped(left, cwnd))
		mpcc_jump(sk, MPCC_JUMP_BETWEEN, ca->cwnd_left, acked);
	mpcc_cong_avoid_frame(sk, ack, acked);
	if (mpcc_jumped(cwnd, tp->snd_cwnd)) {
#if !MPCC_PERIODIC
		if (ss)   /* (the periodic update has no slow start) */
			mpcc_jump(sk, acked <= mpcc_delivered_bound(tp, ca) ? MPCC_JUMP_DELIVERED :
				  MPCC_JUMP_SLOW_START, cwnd, acked);
		else
#endif
			mpcc_jump(sk, MPCC_JUMP_RULE, cwnd, acked);
	}
	(void)ss;
	ca->cwnd_left = tp->snd_cwnd;
}

#include "mpcc_control.h"

SEC("struct_ops")
void BPF_PROG(mpcc_compat_cong_control, struct sock *sk)
{
	mpcc_cong_control(sk, mpcc_rate_sample(ctx));
}

SEC("struct_ops")
void BPF_PROG(mpcc_compat_set_state, struct sock *sk, __u8 new_state)
{
	mpcc_set_state(sk, new_state);
}

SEC("struct_ops")
void BPF_PROG(mpcc_compat_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	if (ev == CA_EVENT_TX_START) {
		mpcc_repair_cwnd(sk);
		mpcc_idle_restart(sk);
	}
}

/* The compat programs in the algorithm file's ops table. With cong_control set the kernel's
 * tcp_cong_control() calls it alone: the table's cong_avoid is then not called. */
#define MPCC_COMPAT_OPS							\
	.cong_control	= (void *)mpcc_compat_cong_control,		\
	.set_state	= (void *)mpcc_compat_set_state,		\
	.cwnd_event	= (void *)mpcc_compat_cwnd_event,

#endif /* MPCC_COMPAT_H */
