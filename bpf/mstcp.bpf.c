// SPDX-License-Identifier: GPL-2.0
/* MSTCP — Jiang, Cai, Towsley, "On the Resource Utilization and Traffic Distribution of
 * Multipath Transmission Control" (UM-CS-2011-005), eq. (1): multiplicative increase /
 * multiplicative decrease of the total window W = Σ_k w_k,
 *     I_r = a,   D_r = min(b · W, w_r − 1)      (a window below 1 packet is not decreased)
 * and the window never drops below 1 packet (min_cwnd 1 for any number of routes).
 * I_r reads route r only (MPCC_OWN_ROUTE); D_r reads every route's window. Parameters per load:
 * a ∈ [2^-8, 64] (a ≥ 2^-8 keeps the rounding of a·2^32 within the header's bound), b ∈ [2^-8, 1].
 */
#define MPCC_KERNEL_NAME mpcc_mstcp
#define MPCC_PARAMS(P)				\
	P(a, Q32, 0.03, 0.00390625, 64)		\
	P(b, Q32, 0.5, 0.00390625, 1)
#define MPCC_OWN_ROUTE 1
#define MPCC_MIN_CWND_MULTIPATH 1
#define MPCC_MIN_CWND_SINGLE 1
#include "mpcc_algo.h"
#include "mpcc_cap.h"

MPCC_RULE __s64 mpcc_on_ack(const struct mpcc_conn *c, __u32 r, const struct mpcc_params *p)
{
	if (!mpcc_route_ok(c, r, p))
		return 0;
	return mpcc_inc_fixed(mn_from(p->a, 32));                          /* I_r = a */
}

MPCC_RULE __u64 mpcc_on_loss(const struct mpcc_conn *c, __u32 r, const struct mpcc_params *p)
{
	mn_t total = MN_ZERO, cut;
	__u32 k;

	if (!mpcc_route_ok(c, r, p))
		return 0;
	for (k = 0; k < MPCC_MAX_ROUTES; k++) {
		if (k >= c->n)
			break;
		total = mn_add(total, mpcc_route_w(c, k));                 /* W = Σ_k w_k */
	}
	cut = mn_mul(mn_from(p->b, 32), total);                           /* b·W */
	return mpcc_cap_at_w_minus_1(c, r, mn_to_fixed(cut, MPCC_CWND_SHIFT));
}

#ifdef __bpf__   /* the struct_ops programs (the host build, mpcc_host.h, is the rule alone) */
SEC("struct_ops")
void BPF_PROG(mstcp_init, struct sock *sk)
{
	mpcc_init(sk);
}

SEC("struct_ops")
void BPF_PROG(mstcp_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	mpcc_cong_avoid(sk, ack, acked);
}

SEC("struct_ops")
__u32 BPF_PROG(mstcp_ssthresh, struct sock *sk)
{
	return mpcc_ssthresh(sk);
}

SEC("struct_ops")
__u32 BPF_PROG(mstcp_undo_cwnd, struct sock *sk)
{
	return mpcc_undo_cwnd(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops MPCC_KERNEL_SYM = {
	.init		= (void *)mstcp_init,
	.cong_avoid	= (void *)mstcp_cong_avoid,
	.ssthresh	= (void *)mstcp_ssthresh,
	.undo_cwnd	= (void *)mstcp_undo_cwnd,
	MPCC_CONN_OPS
	MPCC_COMPAT_OPS
	.name		= MPCC_KERNEL_STR,
};
#endif
