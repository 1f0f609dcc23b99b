// SPDX-License-Identifier: GPL-2.0
/* The ε-family (Wischik, Raiciu, Greenhalgh, Handley, NSDI 2011; htsim's COUPLED_EPSILON,
 * mtcp.cpp inflate_window / compute_alfa), ε ∈ [0, 2]. htsim per ACK on route r, W = Σ_k w_k:
 *     I_r = min( a·(a w_r)^(1−ε) / W^(2−ε),  1/w_r ),   D_r = w_r/2,
 *     a = W·(max_k w_k^(ε/2)/τ_k)^(1/(1−ε/2)) / (Σ_k w_k/τ_k)^(1/(1−ε/2))  (0 < ε < 2), else a = 1;
 * with a substituted ((2−ε)/(1−ε/2) = 2), for 0 < ε < 2:
 *     I_r = min( w_r^(1−ε) · (max_k w_k^(ε/2)/τ_k)² / (Σ_k w_k/τ_k)²,  1/w_r ),
 * and min(w_r/W², 1/w_r) at ε = 0, 1/w_r at ε = 2. ε = 1 is LIA (RFC 6356).
 */
#define MPCC_KERNEL_NAME mpcc_epsilon
#define MPCC_PARAMS(P) P(epsilon, Q32, 1.0, 0, 2)
#include "mpcc_algo.h"
#include "mpcc_pow.h"

/* w_k^(ε/2) / τ_k, the exponent ε/2 in Q32 */
MPCC_FN mn_t epsilon_route_y(const struct mpcc_conn *c, __u32 k, __s64 half_eps)
{
	return mn_div(mn_pow(mpcc_route_w(c, k), half_eps), mpcc_route_tau(c, k));
}

MPCC_RULE __s64 mpcc_on_ack(const struct mpcc_conn *c, __u32 r, const struct mpcc_params *p)
{
	struct mpcc_rates q;
	mn_t acc = MN_ZERO, inc, reno;
	__s64 eps = (__s64)p->epsilon;           /* ε · 2^32 */
	__u32 k;

	if (!mpcc_route_ok(c, r, p))
		return 0;
	mpcc_rates(c, r, &q);
	reno = mn_div(mn_from(1, 0), q.w_r);
	if (eps <= 0) {                          /* a = 1: w_r / W² */
		for (k = 0; k < MPCC_MAX_ROUTES; k++) {
			if (k >= c->n)
				break;
			acc = mn_add(acc, mpcc_route_w(c, k));
		}
		inc = mn_div(q.w_r, mn_mul(acc, acc));
	} else if (eps >= 2 * MN_Q32_ONE) {      /* a = 1: 1/w_r */
		inc = reno;
	} else {
		for (k = 0; k < MPCC_MAX_ROUTES; k++) {
			if (k >= c->n)
				break;
			acc = mn_max(acc, epsilon_route_y(c, k, eps >> 1));
		}
		inc = mn_div(mn_mul(mn_pow(q.w_r, MN_Q32_ONE - eps), mn_mul(acc, acc)), mn_mul(q.sum, q.sum));
	}
	return mpcc_inc_fixed(mn_min(inc, reno));
}

MPCC_RULE __u64 mpcc_on_loss(const struct mpcc_conn *c, __u32 r, const struct mpcc_params *p)
{
	if (!mpcc_route_ok(c, r, p))
		return 0;
	return mpcc_halve_on_loss(c, r);
}

#ifdef __bpf__   /* the struct_ops programs (the host build, mpcc_host.h, is the rule alone) */
SEC("struct_ops")
void BPF_PROG(epsilon_init, struct sock *sk)
{
	mpcc_init(sk);
}

SEC("struct_ops")
void BPF_PROG(epsilon_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	mpcc_cong_avoid(sk, ack, acked);
}

SEC("struct_ops")
__u32 BPF_PROG(epsilon_ssthresh, struct sock *sk)
{
	return mpcc_ssthresh(sk);
}

SEC("struct_ops")
__u32 BPF_PROG(epsilon_undo_cwnd, struct sock *sk)
{
	return mpcc_undo_cwnd(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops MPCC_KERNEL_SYM = {
	.init		= (void *)epsilon_init,
	.cong_avoid	= (void *)epsilon_cong_avoid,
	.ssthresh	= (void *)epsilon_ssthresh,
	.undo_cwnd	= (void *)epsilon_undo_cwnd,
	MPCC_CONN_OPS
	MPCC_COMPAT_OPS
	.name		= MPCC_KERNEL_STR,
};
#endif
