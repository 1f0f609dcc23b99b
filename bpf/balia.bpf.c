// SPDX-License-Identifier: GPL-2.0
/* Balia — balanced linked adaptation (Peng, Walid, Hwang, Low, eqs. (1)–(2)):
 *     I_r = x_r / (τ_r (Σ_k x_k)²) · (1+α_r)/2 · (4+α_r)/5,   D_r = w_r/2 · min(α_r, 1.5),
 *     α_r = max_k x_k / x_r,  x_r = w_r/τ_r;  ssthresh ≥ 1 with more than one subflow (§V).
 *
 * A tcp_congestion_ops struct_ops for upstream Linux MPTCP (bpf_cubic.c style). The rule is
 * in include/mpcc_math.h (tested on the host against spec/vectors/algorithms.json); the
 * subflow walk, the fractional-window accumulator and the Reno fallback for plain TCP
 * sockets are in include/mpcc_kern.h.
 */
#include "mpcc_kern.h"

SEC("struct_ops")
void BPF_PROG(balia_init, struct sock *sk)
{
	mpcc_init(sk);
}

SEC("struct_ops")
void BPF_PROG(balia_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	mpcc_cong_avoid(sk, ack, acked, MPCC_BALIA);
}

SEC("struct_ops")
__u32 BPF_PROG(balia_ssthresh, struct sock *sk)
{
	return mpcc_ssthresh(sk, MPCC_BALIA);
}

SEC("struct_ops")
__u32 BPF_PROG(balia_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops mpcc_balia = {
	.init		= (void *)balia_init,
	.cong_avoid	= (void *)balia_cong_avoid,
	.ssthresh	= (void *)balia_ssthresh,
	.undo_cwnd	= (void *)balia_undo_cwnd,
	.name		= "mpcc_balia",
};
