// SPDX-License-Identifier: GPL-2.0
/* EWTCP — equally weighted TCP (Honda et al.; Peng et al. §II-B), a = 1:
 *     I_r = a/w_r,   D_r = w_r/2   (every subflow runs Reno).
 *
 * A tcp_congestion_ops struct_ops for upstream Linux MPTCP (bpf_cubic.c style). The rule is
 * in include/mpcc_math.h (tested on the host against spec/vectors/algorithms.json); the
 * subflow walk, the fractional-window accumulator and the Reno fallback for plain TCP
 * sockets are in include/mpcc_kern.h.
 */
#include "mpcc_kern.h"

SEC("struct_ops")
void BPF_PROG(ewtcp_init, struct sock *sk)
{
	mpcc_init(sk);
}

SEC("struct_ops")
void BPF_PROG(ewtcp_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	mpcc_cong_avoid(sk, ack, acked, MPCC_EWTCP);
}

SEC("struct_ops")
__u32 BPF_PROG(ewtcp_ssthresh, struct sock *sk)
{
	return mpcc_ssthresh(sk, MPCC_EWTCP);
}

SEC("struct_ops")
__u32 BPF_PROG(ewtcp_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops mpcc_ewtcp = {
	.init		= (void *)ewtcp_init,
	.cong_avoid	= (void *)ewtcp_cong_avoid,
	.ssthresh	= (void *)ewtcp_ssthresh,
	.undo_cwnd	= (void *)ewtcp_undo_cwnd,
	.name		= "mpcc_ewtcp",
};
