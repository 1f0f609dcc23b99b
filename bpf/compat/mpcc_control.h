/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mpcc_control.h — the per-ACK entry point (cong_control) and the state callback (set_state) of
 * every mpcc BPF congestion control: what the kernel's tcp_cong_control() and
 * tcp_end_cwnd_reduction() do for a CC without cong_control, over the pieces in mpcc_prr.h (PRR,
 * may_raise, pacing, the rate sample) and mpcc_kern.h (congestion avoidance with the coupled rule,
 * the repairs). Included by mpcc_kern.h before MPCC_STRUCT_OPS.
 */
#ifndef MPCC_CONTROL_H
#define MPCC_CONTROL_H

/* init did not run for this socket (the congestion-control area is still the zeroes the kernel
 * wrote before calling it: the platform skipped it): run it at the first
 * cong_control, so that the per-ACK deltas start from now, and record it (kind 8). */
static __noinline void mpcc_late_init(struct sock *sk)
{
	if (!sk)
		return;
	MPCC_INIT(sk);
	mpcc_jump(sk, MPCC_JUMP_LATE_INIT, tcp_sk(sk)->snd_cwnd, tcp_sk(sk)->delivered);
}

/* cong_control: what tcp_input.c tcp_cong_control() does for a CC without it, with the bad
 * ssthresh repaired first (mpcc_repair_unwritten). The kernel calls it at the end of tcp_ack(),
 * after the ACK's state processing (tcp_fastretrans_alert), on 6.1 as (sk, rs) and on 6.10+ as
 * (sk, ack, flag, rs); sk and rs are read (mpcc_rate_sample, mpcc_prr.h). The kernel's body, mirrored:
 *   if (tcp_in_cwnd_reduction(sk))          tcp_cwnd_reduction(sk, acked_sacked, rs->losses, flag);
 *   else if (tcp_may_raise_cwnd(sk, flag))  tcp_cong_avoid(sk, ack, acked_sacked);
 *   tcp_update_pacing_rate(sk);
 * and the end of a reduction episode (tcp_end_cwnd_reduction, skipped for a cong_control CC) is
 * applied by set_state (mpcc_set_state), or here when that call was bypassed. Before the
 * handshake completes (the SYN-ACK's tcp_ack(), before init) only the pacing rate is set: the
 * kernel's may_raise test is false for an ACK of the SYN alone. */
static __always_inline void mpcc_cong_control(struct sock *sk, __u64 rs)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct mpcc_ca *ca = inet_csk_ca(sk);
	__u32 acked_sacked, newly_lost, unseen;
	bool una_advanced;
	__u8 state;

	if ((1 << sk->__sk_common.skc_state) & ((1 << TCP_SYN_SENT) | (1 << TCP_SYN_RECV))) {
		mpcc_update_pacing_rate(sk);
		return;
	}
	if (!ca->inited)
		mpcc_late_init(sk);
	mpcc_repair_unwritten(sk);     /* first (it reads none of the inputs below) */
	/* this ACK's deliveries and losses, as tcp_ack() passes them (rs), at most what the counters
	 * moved since our last run; the rest were delivered by ACKs no run of ours was passed */
	acked_sacked = tp->delivered - ca->prev_delivered;
	newly_lost = tp->lost - ca->prev_lost;
	if (rs & MPCC_RS_VALID) {
		unseen = acked_sacked - (__u32)rs;
		if ((__s32)unseen > 0) {
			mpcc_unseen(unseen);
			acked_sacked = (__u32)rs;
		}
		if (((rs >> 32) & 0x7fffffff) < newly_lost)
			newly_lost = (rs >> 32) & 0x7fffffff;
	} else {
		mpcc_unseen(0);         /* counted: the kernels check requires none */
	}
#if !MPCC_PERIODIC
	/* More than can have been delivered since our last run (mpcc_delivered_bound: outstanding
	 * then + sent since + DSACKed since + 1) is no count to grow a window from, though the
	 * kernel's own rule would take it whole (seen in the random-churn soaks: ~210 with <= 10
	 * outstanding and nothing sent, the kernel's rs->acked_sacked): the bound is
	 * used, and the count recorded (kind 9). */
	if (acked_sacked > mpcc_delivered_bound(tp, ca)) {
		mpcc_jump(sk, MPCC_JUMP_CLAMPED, tp->snd_cwnd, acked_sacked);
		acked_sacked = mpcc_delivered_bound(tp, ca);
	}
#endif
	una_advanced = (__s32)(tp->snd_una - ca->prev_snd_una) > 0;
	state = mpcc_ca_state(sk);
	if (mpcc_state_reduces(state)) {
		mpcc_prr_track(sk, ca, state);
		mpcc_cwnd_reduction(sk, ca, acked_sacked, newly_lost, una_advanced);
	} else {
		if (ca->red && state <= TCP_CA_Disorder)   /* set_state did not see the episode end */
			mpcc_end_cwnd_reduction(sk, ca->red);
		ca->red = 0;
		if (mpcc_may_raise_cwnd(sk, acked_sacked, una_advanced))
			mpcc_cong_avoid_checked(sk, tp->snd_una, acked_sacked);
	}
	mpcc_update_pacing_rate(sk);
	mpcc_conn_pacing(sk);          /* MPCC_CONN_PACING (mpcc_conn.h) */
	/* this run's counters, for the next one's deltas (set last: the window-jump records read
	 * the deltas of the run they are made in) */
	mpcc_mark_counters(tp, ca);
}

/* set_state(sk, new): tcp_cong.c tcp_set_ca_state() calls it before it stores the new state, so
 * icsk_ca_state is still the old one. Entering CWR/Recovery from outside them follows
 * tcp_init_cwnd_reduction(): a new PRR episode. Leaving them for Open/Disorder is where the
 * kernel ends the reduction (mpcc_end_cwnd_reduction); leaving for Loss is not (tcp_enter_loss
 * sets the window itself). */
static __always_inline void mpcc_set_state(struct sock *sk, __u8 new_state)
{
	struct mpcc_ca *ca = inet_csk_ca(sk);
	__u8 old = mpcc_ca_state(sk);

	if (mpcc_state_reduces(new_state)) {
		if (!mpcc_state_reduces(old))
			mpcc_prr_begin(sk, ca, new_state);
		ca->red = new_state;
		return;
	}
	if (new_state <= TCP_CA_Disorder && mpcc_state_reduces(old))
		mpcc_end_cwnd_reduction(sk, old);
	ca->red = 0;
}

#endif /* MPCC_CONTROL_H */
