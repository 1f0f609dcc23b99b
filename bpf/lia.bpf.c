// SPDX-License-Identifier: GPL-2.0
/* LIA — linked increases (RFC 6356 §3; the "Max" algorithm of Peng et al. §II-B):
 *     I_r = min( max_k(w_k/τ_k²) / (Σ_k w_k/τ_k)²,  1/w_r ),   D_r = w_r/2.
 */
#define MPCC_KERNEL_NAME mpcc_lia
#include "mpcc_algo.h"

/* w_k/τ_k² */
MPCC_FN mn_t lia_route_y(const struct mpcc_conn *c, __u32 k)
{
	mn_t tau = mpcc_route_tau(c, k);

	return mn_div(mpcc_route_w(c, k), mn_mul(tau, tau));
}

MPCC_RULE __s64 mpcc_on_ack(const struct mpcc_conn *c, __u32 r, const struct mpcc_params *p)
{
	struct mpcc_rates q;
	mn_t ymax = MN_ZERO, coupled;
	__u32 k;

	if (!mpcc_route_ok(c, r, p))
		return 0;
	mpcc_rates(c, r, &q);
	for (k = 0; k < MPCC_MAX_ROUTES; k++) {
		if (k >= c->n)
			break;
		ymax = mn_max(ymax, lia_route_y(c, k));
	}
	coupled = mn_div(ymax, mn_mul(q.sum, q.sum));
	return mpcc_inc_fixed(mn_min(coupled, mn_div(mn_from(1, 0), q.w_r)));
}

MPCC_RULE __u64 mpcc_on_loss(const struct mpcc_conn *c, __u32 r, const struct mpcc_params *p)
{
	if (!mpcc_route_ok(c, r, p))
		return 0;
	return mpcc_halve_on_loss(c, r);
}

#ifdef __bpf__   /* the struct_ops programs (the host build, mpcc_host.h, is the rule alone) */
SEC("struct_ops")
void BPF_PROG(lia_init, struct sock *sk)
{
	mpcc_init(sk);
}

SEC("struct_ops")
void BPF_PROG(lia_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	mpcc_cong_avoid(sk, ack, acked);
}

SEC("struct_ops")
__u32 BPF_PROG(lia_ssthresh, struct sock *sk)
{
	return mpcc_ssthresh(sk);
}

SEC("struct_ops")
__u32 BPF_PROG(lia_undo_cwnd, struct sock *sk)
{
	return mpcc_undo_cwnd(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops MPCC_KERNEL_SYM = {
	.init		= (void *)lia_init,
	.cong_avoid	= (void *)lia_cong_avoid,
	.ssthresh	= (void *)lia_ssthresh,
	.undo_cwnd	= (void *)lia_undo_cwnd,
	MPCC_CONN_OPS
	MPCC_COMPAT_OPS
	.name		= MPCC_KERNEL_STR,
};
#endif
