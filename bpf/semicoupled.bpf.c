// SPDX-License-Identifier: GPL-2.0
/* Semicoupled (Wischik et al.; Peng et al. §II-B):
 *     I_r = 1 / (τ_r Σ_k w_k/τ_k),   D_r = w_r/2.
 * Kernel name mpcc_semicoup: congestion-control names are limited to 15 characters.
 */
#define MPCC_KERNEL_NAME mpcc_semicoup
#include "mpcc_algo.h"

MPCC_RULE __s64 mpcc_on_ack(const struct mpcc_conn *c, __u32 r, const struct mpcc_params *p)
{
	struct mpcc_rates q;

	if (!mpcc_route_ok(c, r, p))
		return 0;
	mpcc_rates(c, r, &q);
	return mpcc_inc_fixed(mn_div(mn_from(1, 0), mn_mul(q.tau_r, q.sum)));
}

MPCC_RULE __u64 mpcc_on_loss(const struct mpcc_conn *c, __u32 r, const struct mpcc_params *p)
{
	if (!mpcc_route_ok(c, r, p))
		return 0;
	return mpcc_halve_on_loss(c, r);
}

#ifdef __bpf__   /* the struct_ops programs (the host build, mpcc_host.h, is the rule alone) */
SEC("struct_ops")
void BPF_PROG(semicoupled_init, struct sock *sk)
{
	mpcc_init(sk);
}

SEC("struct_ops")
void BPF_PROG(semicoupled_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	mpcc_cong_avoid(sk, ack, acked);
}

SEC("struct_ops")
__u32 BPF_PROG(semicoupled_ssthresh, struct sock *sk)
{
	return mpcc_ssthresh(sk);
}

SEC("struct_ops")
__u32 BPF_PROG(semicoupled_undo_cwnd, struct sock *sk)
{
	return mpcc_undo_cwnd(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops MPCC_KERNEL_SYM = {
	.init		= (void *)semicoupled_init,
	.cong_avoid	= (void *)semicoupled_cong_avoid,
	.ssthresh	= (void *)semicoupled_ssthresh,
	.undo_cwnd	= (void *)semicoupled_undo_cwnd,
	MPCC_CONN_OPS
	MPCC_COMPAT_OPS
	.name		= MPCC_KERNEL_STR,
};
#endif
