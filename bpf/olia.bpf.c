// SPDX-License-Identifier: GPL-2.0
/* OLIA — opportunistic linked increases (Khalili et al., ToN 2013):
 *     I_r = (w_r/τ_r²)/(Σ_p w_p/τ_p)² + ε_r/w_r,   D_r = w_r/2,
 *     ε_r from the best paths (max ℓ_p/τ_p², ℓ = bytes between losses) and the max-window paths.
 *
 * A tcp_congestion_ops struct_ops for upstream Linux MPTCP (bpf_cubic.c style). The rule is
 * in include/mpcc_math.h (tested on the host against spec/vectors/algorithms.json); the
 * subflow walk, the fractional-window accumulator and the Reno fallback for plain TCP
 * sockets are in include/mpcc_kern.h.
 */
#include "mpcc_kern.h"

SEC("struct_ops")
void BPF_PROG(olia_init, struct sock *sk)
{
	mpcc_init(sk);
}

SEC("struct_ops")
void BPF_PROG(olia_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	mpcc_cong_avoid(sk, ack, acked, MPCC_OLIA);
}

SEC("struct_ops")
__u32 BPF_PROG(olia_ssthresh, struct sock *sk)
{
	return mpcc_ssthresh(sk, MPCC_OLIA);
}

SEC("struct_ops")
__u32 BPF_PROG(olia_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops mpcc_olia = {
	.init		= (void *)olia_init,
	.cong_avoid	= (void *)olia_cong_avoid,
	.ssthresh	= (void *)olia_ssthresh,
	.undo_cwnd	= (void *)olia_undo_cwnd,
	.name		= "mpcc_olia",
};
