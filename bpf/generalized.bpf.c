// SPDX-License-Identifier: GPL-2.0
/* The generalized (β, η, n) family of Peng, Walid, Hwang, Low, eq. (16), as packet rules
 * (eq. (16) inverted through eq. (7), α_r = ‖x‖_∞ / x_r, x_r = w_r/τ_r):
 *     I_r = ((1−β) x_r + β‖x‖_n) (1 + η(α_r − 1)) / (τ_r ‖x‖_1²),
 *     D_r = w_r/2 · (1 + η(α_r − 1)),     ssthresh ≥ 2.
 * (0.2, 0.5, ∞) has Balia's increase (1) (its decrease lacks Balia's min(α, 1.5) cap);
 * (0, 0, ·) is Coupled and (1, 0, ∞) is LIA's coupled term without its 1/w_r cap.
 *
 * One object per parameter set. bpftool's `struct_ops register` cannot set read-only data
 * before loading, so β, η and n are compiled in (the loader, python/mpcc/testbed/bpf.py, passes
 * them with -D) and every parameter set gets its own kernel name, "mpcc_g" + 9 hex digits of a
 * hash of (β, η, n) (TCP_CA_NAME_MAX: 15 characters):
 *     MPCC_GEN_BETA_Q32  β · 2^32 (an integer, β ∈ [0, 1])
 *     MPCC_GEN_ETA_Q32   η · 2^32 (η ≥ 0)
 *     MPCC_GEN_NORM      n: 1, 2, or 0 for ∞
 *     MPCC_GEN_SYM       the kernel name (also the struct_ops map's name)
 *
 * A tcp_congestion_ops struct_ops for upstream Linux MPTCP (bpf_cubic.c style). The rule is
 * in include/mpcc_math.h (tested on the host against spec/vectors/algorithms.json); the
 * subflow walk, the fractional-window accumulator and the Reno fallback for plain TCP
 * sockets are in include/mpcc_kern.h.
 */
#if !defined(MPCC_GEN_BETA_Q32) || !defined(MPCC_GEN_ETA_Q32) || !defined(MPCC_GEN_NORM) || !defined(MPCC_GEN_SYM)
#error "build with -DMPCC_GEN_BETA_Q32=… -DMPCC_GEN_ETA_Q32=… -DMPCC_GEN_NORM=… -DMPCC_GEN_SYM=… (mpcc kernel build generalized)"
#endif
#include "mpcc_kern.h"

#define MPCC_STR_(x) #x
#define MPCC_STR(x) MPCC_STR_(x)

SEC("struct_ops")
void BPF_PROG(generalized_init, struct sock *sk)
{
	mpcc_init(sk);
}

SEC("struct_ops")
void BPF_PROG(generalized_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	mpcc_cong_avoid(sk, ack, acked, MPCC_GENERALIZED);
}

SEC("struct_ops")
__u32 BPF_PROG(generalized_ssthresh, struct sock *sk)
{
	return mpcc_ssthresh(sk, MPCC_GENERALIZED);
}

SEC("struct_ops")
__u32 BPF_PROG(generalized_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops MPCC_GEN_SYM = {
	.init		= (void *)generalized_init,
	.cong_avoid	= (void *)generalized_cong_avoid,
	.ssthresh	= (void *)generalized_ssthresh,
	.undo_cwnd	= (void *)generalized_undo_cwnd,
	.name		= MPCC_STR(MPCC_GEN_SYM),
};
