// SPDX-License-Identifier: GPL-2.0
/* Balia — balanced linked adaptation (Peng, Walid, Hwang, Low, eqs. (1)–(2)):
 *     I_r = x_r / (τ_r (Σ_k x_k)²) · (1+α_r)/2 · (4+α_r)/5,   D_r = w_r/2 · min(α_r, 1.5),
 *     α_r = max_k x_k / x_r,  x_r = w_r/τ_r;  ssthresh ≥ 1 with more than one subflow (§V).
 */
#define MPCC_KERNEL_NAME mpcc_balia
#define MPCC_MIN_CWND_MULTIPATH 1
#include "mpcc_algo.h"

/* eq. (1) */
MPCC_RULE __s64 mpcc_on_ack(const struct mpcc_conn *c, __u32 r, const struct mpcc_params *p)
{
	struct mpcc_rates q;
	mn_t alpha, f1, f2;

	if (!mpcc_route_ok(c, r, p))
		return 0;
	mpcc_rates(c, r, &q);
	alpha = mpcc_alpha(&q);
	f1 = mn_mul(mn_add(mn_from(1, 0), alpha), mn_from(1, 1));            /* (1+α)/2 */
	f2 = mn_div(mn_add(mn_from(4, 0), alpha), mn_from(5, 0));            /* (4+α)/5 */
	return mpcc_inc_fixed(mn_mul(mn_mul(mpcc_coupled_term(&q), f1), f2));
}

/* eq. (2) */
MPCC_RULE __u64 mpcc_on_loss(const struct mpcc_conn *c, __u32 r, const struct mpcc_params *p)
{
	struct mpcc_rates q;
	mn_t f;

	if (!mpcc_route_ok(c, r, p))
		return 0;
	mpcc_rates(c, r, &q);
	f = mn_min(mpcc_alpha(&q), mn_from(3, 1));
	return mn_to_fixed(mn_mul(mn_mul(q.w_r, mn_from(1, 1)), f), MPCC_CWND_SHIFT);
}

#ifdef __bpf__   /* the struct_ops programs (the host build, mpcc_host.h, is the rule alone) */
SEC("struct_ops")
void BPF_PROG(balia_init, struct sock *sk)
{
	mpcc_init(sk);
}

SEC("struct_ops")
void BPF_PROG(balia_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	mpcc_cong_avoid(sk, ack, acked);
}

SEC("struct_ops")
__u32 BPF_PROG(balia_ssthresh, struct sock *sk)
{
	return mpcc_ssthresh(sk);
}

SEC("struct_ops")
__u32 BPF_PROG(balia_undo_cwnd, struct sock *sk)
{
	return mpcc_undo_cwnd(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops MPCC_KERNEL_SYM = {
	.init		= (void *)balia_init,
	.cong_avoid	= (void *)balia_cong_avoid,
	.ssthresh	= (void *)balia_ssthresh,
	.undo_cwnd	= (void *)balia_undo_cwnd,
	MPCC_CONN_OPS
	MPCC_COMPAT_OPS
	.name		= MPCC_KERNEL_STR,
};
#endif
