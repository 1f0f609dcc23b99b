// SPDX-License-Identifier: GPL-2.0
/* The generalized (β, η, n) family of Peng, Walid, Hwang, Low, eq. (16), as packet rules
 * (eq. (16) inverted through eq. (7), α_r = ‖x‖_∞ / x_r, x_r = w_r/τ_r):
 *     I_r = ((1−β) x_r + β‖x‖_n) (1 + η(α_r − 1)) / (τ_r ‖x‖_1²),
 *     D_r = w_r/2 · (1 + η(α_r − 1)),     ssthresh ≥ 2.
 * (0.2, 0.5, ∞) has Balia's increase (1) (its decrease lacks Balia's min(α, 1.5) cap);
 * (0, 0, ·) is Coupled and (1, 0, ∞) is LIA's coupled term without its 1/w_r cap.
 * The fixed point computes 1 − β unsigned (β ∈ [0, 1]) and ‖x‖_n with at most an integer
 * square root (n ∈ {1, 2, ∞}).
 */
#define MPCC_KERNEL_NAME mpcc_gen
#define MPCC_PARAMS(P)				\
	P(beta, Q32, 0.2, 0, 1)			\
	P(eta, Q32, 0.5, 0, 1000000)		\
	P(n, NORM, INF, 1, INF)
#include "mpcc_algo.h"
#include "mpcc_pow.h"

/* max(a − b, 0). */
MPCC_FN mn_t mn_sub(mn_t a, mn_t b)
{
	__s64 d;
	__u64 sa, sb;

	if (MN_M(b) == 0)
		return a;
	if (MN_M(a) == 0 || MN_E(a) < MN_E(b))
		return MN_ZERO;
	d = (__s64)MN_E(a) - MN_E(b);
	if (d > 62)
		return a;
	sa = MN_M(a) << 31;
	sb = (MN_M(b) << 31) >> d;
	if (sb >= sa)
		return MN_ZERO;
	return mn_norm(sa - sb, (__s64)MN_E(a) - 31);
}

/* ‖x‖_n for n = 1, 2 or ∞ (n = 0). */
MPCC_INLINE mn_t gen_lnorm(const struct mpcc_conn *c, const struct mpcc_rates *q, __u64 n)
{
	mn_t s = MN_ZERO;
	__u32 k;

	if (n == 0)
		return q->max;
	if (n == 1)
		return q->sum;
	for (k = 0; k < MPCC_MAX_ROUTES; k++) {
		mn_t x;

		if (k >= c->n)
			break;
		x = mpcc_route_x(c, k);
		s = mn_add(s, mn_mul(x, x));
	}
	return mn_sqrt(s);
}

/* The gain 1 + η(α_r − 1) of eq. (16). */
MPCC_INLINE mn_t gen_gain(const struct mpcc_rates *q, __u64 eta_q32)
{
	return mn_add(mn_from(1, 0), mn_mul(mn_from(eta_q32, 32), mn_sub(mpcc_alpha(q), mn_from(1, 0))));
}

MPCC_RULE __s64 mpcc_on_ack(const struct mpcc_conn *c, __u32 r, const struct mpcc_params *p)
{
	struct mpcc_rates q;
	mn_t num, beta, one_m_beta;

	if (!mpcc_route_ok(c, r, p))
		return 0;
	mpcc_rates(c, r, &q);
	beta = mn_from(p->beta, 32);
	one_m_beta = mn_sub(mn_from(1, 0), beta);
	num = mn_add(mn_mul(one_m_beta, q.x_r), mn_mul(beta, gen_lnorm(c, &q, p->n)));
	return mpcc_inc_fixed(mn_div(mn_mul(num, gen_gain(&q, p->eta)),
				     mn_mul(q.tau_r, mn_mul(q.sum, q.sum))));
}

MPCC_RULE __u64 mpcc_on_loss(const struct mpcc_conn *c, __u32 r, const struct mpcc_params *p)
{
	struct mpcc_rates q;

	if (!mpcc_route_ok(c, r, p))
		return 0;
	mpcc_rates(c, r, &q);
	return mn_to_fixed(mn_mul(mn_mul(q.w_r, mn_from(1, 1)), gen_gain(&q, p->eta)), MPCC_CWND_SHIFT);
}

#ifdef __bpf__   /* the struct_ops programs (the host build, mpcc_host.h, is the rule alone) */
SEC("struct_ops")
void BPF_PROG(generalized_init, struct sock *sk)
{
	mpcc_init(sk);
}

SEC("struct_ops")
void BPF_PROG(generalized_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	mpcc_cong_avoid(sk, ack, acked);
}

SEC("struct_ops")
__u32 BPF_PROG(generalized_ssthresh, struct sock *sk)
{
	return mpcc_ssthresh(sk);
}

SEC("struct_ops")
__u32 BPF_PROG(generalized_undo_cwnd, struct sock *sk)
{
	return mpcc_undo_cwnd(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops MPCC_KERNEL_SYM = {
	.init		= (void *)generalized_init,
	.cong_avoid	= (void *)generalized_cong_avoid,
	.ssthresh	= (void *)generalized_ssthresh,
	.undo_cwnd	= (void *)generalized_undo_cwnd,
	MPCC_CONN_OPS
	MPCC_COMPAT_OPS
	.name		= MPCC_KERNEL_STR,
};
#endif
