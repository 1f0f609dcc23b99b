// SPDX-License-Identifier: GPL-2.0
/* MTCP(α, β) — Jiang, Cai, Towsley, "On the Resource Utilization and Traffic Distribution of
 * Multipath Transmission Control" (UM-CS-2011-005), eq. (2): AIMD with coupling α in the increase
 * and β in the decrease, W = Σ_k w_k,
 *     I_r = a / ((1 − α) w_r + α W),   D_r = min(b [(1 − β) w_r + β W], w_r − 1)
 * (a window below 1 packet is not decreased; min_cwnd 1 for any number of routes). The defaults
 * (α, β) = (0, 0) are uncoupled Reno; the named points of the (α, β) square are parameter sets:
 *     coupled-decrease (0, 1),  coupled-increase (1, 0),  fully-coupled (1, 1)
 * e.g. `mpcc kernel load coupled-increase` (kernel name mpcc_mt + a hash; docs/kernel.md).
 * α, β ∈ [0, 1] (1 − α is exact in Q32: 2^32 − α·2^32); a ∈ [2^-8, 64], b ∈ [2^-8, 1].
 */
#define MPCC_KERNEL_NAME mpcc_mtcp
#define MPCC_PARAMS(P)				\
	P(alpha, Q32, 0.0, 0.0, 1)		\
	P(beta, Q32, 0.0, 0.0, 1)		\
	P(a, Q32, 1.0, 0.00390625, 64)		\
	P(b, Q32, 0.5, 0.00390625, 1)
#define MPCC_MIN_CWND_MULTIPATH 1
#define MPCC_MIN_CWND_SINGLE 1
#include "mpcc_algo.h"
#include "mpcc_cap.h"

/* (1 − κ) w_r + κ W for a coupling κ ∈ [0, 1] given as κ·2^32. */
MPCC_FN mn_t mtcp_mix(const struct mpcc_conn *c, __u32 r, __u64 kappa)
{
	mn_t total = MN_ZERO;
	__u32 k;

	if (!c || r >= MPCC_MAX_ROUTES)
		return mn_from(1, 0);
	if (kappa > (1ULL << 32))
		kappa = 1ULL << 32;
	for (k = 0; k < MPCC_MAX_ROUTES; k++) {
		if (k >= c->n)
			break;
		total = mn_add(total, mpcc_route_w(c, k));                 /* W = Σ_k w_k */
	}
	return mn_add(mn_mul(mn_from((1ULL << 32) - kappa, 32), mpcc_route_w(c, r)),
		      mn_mul(mn_from(kappa, 32), total));
}

MPCC_RULE __s64 mpcc_on_ack(const struct mpcc_conn *c, __u32 r, const struct mpcc_params *p)
{
	if (!mpcc_route_ok(c, r, p))
		return 0;
	return mpcc_inc_fixed(mn_div(mn_from(p->a, 32), mtcp_mix(c, r, p->alpha)));
}

MPCC_RULE __u64 mpcc_on_loss(const struct mpcc_conn *c, __u32 r, const struct mpcc_params *p)
{
	mn_t cut;

	if (!mpcc_route_ok(c, r, p))
		return 0;
	cut = mn_mul(mn_from(p->b, 32), mtcp_mix(c, r, p->beta));   /* b[(1 − β) w_r + β W] */
	return mpcc_cap_at_w_minus_1(c, r, mn_to_fixed(cut, MPCC_CWND_SHIFT));
}

#ifdef __bpf__   /* the struct_ops programs (the host build, mpcc_host.h, is the rule alone) */
SEC("struct_ops")
void BPF_PROG(mtcp_init, struct sock *sk)
{
	mpcc_init(sk);
}

SEC("struct_ops")
void BPF_PROG(mtcp_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	mpcc_cong_avoid(sk, ack, acked);
}

SEC("struct_ops")
__u32 BPF_PROG(mtcp_ssthresh, struct sock *sk)
{
	return mpcc_ssthresh(sk);
}

SEC("struct_ops")
__u32 BPF_PROG(mtcp_undo_cwnd, struct sock *sk)
{
	return mpcc_undo_cwnd(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops MPCC_KERNEL_SYM = {
	.init		= (void *)mtcp_init,
	.cong_avoid	= (void *)mtcp_cong_avoid,
	.ssthresh	= (void *)mtcp_ssthresh,
	.undo_cwnd	= (void *)mtcp_undo_cwnd,
	MPCC_CONN_OPS
	MPCC_COMPAT_OPS
	.name		= MPCC_KERNEL_STR,
};
#endif
