// SPDX-License-Identifier: GPL-2.0
/* LIA — linked increases (RFC 6356; the "Max" algorithm of Peng et al.):
 *     I_r = min( max_k(w_k/τ_k²) / (Σ_k w_k/τ_k)²,  1/w_r ),   D_r = w_r/2.
 *
 * A tcp_congestion_ops struct_ops for upstream Linux MPTCP (bpf_cubic.c style). The rule is
 * in include/mpcc_math.h (tested on the host against spec/vectors/algorithms.json); the
 * subflow walk, the fractional-window accumulator and the Reno fallback for plain TCP
 * sockets are in include/mpcc_kern.h.
 */
#include "mpcc_kern.h"

SEC("struct_ops")
void BPF_PROG(lia_init, struct sock *sk)
{
	mpcc_init(sk);
}

SEC("struct_ops")
void BPF_PROG(lia_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	mpcc_cong_avoid(sk, ack, acked, MPCC_LIA);
}

SEC("struct_ops")
__u32 BPF_PROG(lia_ssthresh, struct sock *sk)
{
	return mpcc_ssthresh(sk, MPCC_LIA);
}

SEC("struct_ops")
__u32 BPF_PROG(lia_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops mpcc_lia = {
	.init		= (void *)lia_init,
	.cong_avoid	= (void *)lia_cong_avoid,
	.ssthresh	= (void *)lia_ssthresh,
	.undo_cwnd	= (void *)lia_undo_cwnd,
	.name		= "mpcc_lia",
};
