// SPDX-License-Identifier: GPL-2.0
/* Coupled (Kelly–Voice; Han et al.; Peng et al. §II-B):
 *     I_r = (w_r/τ_r²) / (Σ_k w_k/τ_k)²,   D_r = w_r/2;  ssthresh ≥ 1 with more than one subflow (§V).
 *
 * A tcp_congestion_ops struct_ops for upstream Linux MPTCP (bpf_cubic.c style). The rule is
 * in include/mpcc_math.h (tested on the host against spec/vectors/algorithms.json); the
 * subflow walk, the fractional-window accumulator and the Reno fallback for plain TCP
 * sockets are in include/mpcc_kern.h.
 */
#include "mpcc_kern.h"

SEC("struct_ops")
void BPF_PROG(coupled_init, struct sock *sk)
{
	mpcc_init(sk);
}

SEC("struct_ops")
void BPF_PROG(coupled_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	mpcc_cong_avoid(sk, ack, acked, MPCC_COUPLED);
}

SEC("struct_ops")
__u32 BPF_PROG(coupled_ssthresh, struct sock *sk)
{
	return mpcc_ssthresh(sk, MPCC_COUPLED);
}

SEC("struct_ops")
__u32 BPF_PROG(coupled_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops mpcc_coupled = {
	.init		= (void *)coupled_init,
	.cong_avoid	= (void *)coupled_cong_avoid,
	.ssthresh	= (void *)coupled_ssthresh,
	.undo_cwnd	= (void *)coupled_undo_cwnd,
	.name		= "mpcc_coupled",
};
