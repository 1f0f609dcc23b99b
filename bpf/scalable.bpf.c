// SPDX-License-Identifier: GPL-2.0
/* Scalable TCP (Kelly, "Scalable TCP: improving performance in highspeed wide area networks",
 * CCR 33(2), 2003), run uncoupled on every subflow — the worked example of the "Adding an
 * algorithm" walkthrough (docs/algorithms.md):
 *     I_r = a,   D_r = b · w_r          (Kelly's a = 0.01, b = 0.125; Linux tcp_scalable.c)
 * Neither reads a sibling subflow (MPCC_OWN_ROUTE). Parameters per load, a, b ∈ [2^-8, ...]
 * (a ≥ 2^-8 keeps the rounding of a·2^32 within the header's error bound).
 */
#define MPCC_KERNEL_NAME mpcc_scalable
#define MPCC_PARAMS(P)				\
	P(a, Q32, 0.01, 0.00390625, 64)		\
	P(b, Q32, 0.125, 0.00390625, 1)
#define MPCC_OWN_ROUTE 1
#include "mpcc_algo.h"

MPCC_RULE __s64 mpcc_on_ack(const struct mpcc_conn *c, __u32 r, const struct mpcc_params *p)
{
	if (!mpcc_route_ok(c, r, p))
		return 0;
	return mpcc_inc_fixed(mn_from(p->a, 32));
}

MPCC_RULE __u64 mpcc_on_loss(const struct mpcc_conn *c, __u32 r, const struct mpcc_params *p)
{
	if (!mpcc_route_ok(c, r, p))
		return 0;
	return mn_to_fixed(mn_mul(mpcc_route_w(c, r), mn_from(p->b, 32)), MPCC_CWND_SHIFT);
}

#ifdef __bpf__   /* the struct_ops programs (the host build, mpcc_host.h, is the rule alone) */
SEC("struct_ops")
void BPF_PROG(scalable_init, struct sock *sk)
{
	mpcc_init(sk);
}

SEC("struct_ops")
void BPF_PROG(scalable_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	mpcc_cong_avoid(sk, ack, acked);
}

SEC("struct_ops")
__u32 BPF_PROG(scalable_ssthresh, struct sock *sk)
{
	return mpcc_ssthresh(sk);
}

SEC("struct_ops")
__u32 BPF_PROG(scalable_undo_cwnd, struct sock *sk)
{
	return mpcc_undo_cwnd(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops MPCC_KERNEL_SYM = {
	.init		= (void *)scalable_init,
	.cong_avoid	= (void *)scalable_cong_avoid,
	.ssthresh	= (void *)scalable_ssthresh,
	.undo_cwnd	= (void *)scalable_undo_cwnd,
	MPCC_CONN_OPS
	MPCC_COMPAT_OPS
	.name		= MPCC_KERNEL_STR,
};
#endif
