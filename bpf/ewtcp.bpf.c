// SPDX-License-Identifier: GPL-2.0
/* EWTCP — equally weighted TCP (Honda et al.; Peng et al. §II-B, fluid model via eq. (7):
 * k_r = x_r²/2, φ_r = 2a/(τ_r² x_r²)):
 *     I_r = a/w_r,   D_r = w_r/2   (every subflow runs Reno with increase a).
 * Peng et al.'s experiments use a = 1 (kernel name mpcc_ewtcp); any other a in
 * [2^-8, 2^16] gets its own object and kernel name (mpcc_e + a hash; docs/kernel.md). a ≥ 2^-8
 * keeps the rounding of a·2^32 within the header's stated error bound.
 */
#define MPCC_KERNEL_NAME mpcc_ewtcp
#define MPCC_PARAMS(P) P(a, Q32, 1.0, 0.00390625, 65536)
#define MPCC_OWN_ROUTE 1
#include "mpcc_algo.h"

MPCC_RULE __s64 mpcc_on_ack(const struct mpcc_conn *c, __u32 r, const struct mpcc_params *p)
{
	if (!mpcc_route_ok(c, r, p))
		return 0;
	return mpcc_inc_fixed(mn_div(mn_from(p->a, 32), mpcc_route_w(c, r)));
}

MPCC_RULE __u64 mpcc_on_loss(const struct mpcc_conn *c, __u32 r, const struct mpcc_params *p)
{
	if (!mpcc_route_ok(c, r, p))
		return 0;
	return mpcc_halve_on_loss(c, r);
}

#ifdef __bpf__   /* the struct_ops programs (the host build, mpcc_host.h, is the rule alone) */
SEC("struct_ops")
void BPF_PROG(ewtcp_init, struct sock *sk)
{
	mpcc_init(sk);
}

SEC("struct_ops")
void BPF_PROG(ewtcp_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	mpcc_cong_avoid(sk, ack, acked);
}

SEC("struct_ops")
__u32 BPF_PROG(ewtcp_ssthresh, struct sock *sk)
{
	return mpcc_ssthresh(sk);
}

SEC("struct_ops")
__u32 BPF_PROG(ewtcp_undo_cwnd, struct sock *sk)
{
	return mpcc_undo_cwnd(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops MPCC_KERNEL_SYM = {
	.init		= (void *)ewtcp_init,
	.cong_avoid	= (void *)ewtcp_cong_avoid,
	.ssthresh	= (void *)ewtcp_ssthresh,
	.undo_cwnd	= (void *)ewtcp_undo_cwnd,
	MPCC_CONN_OPS
	MPCC_COMPAT_OPS
	.name		= MPCC_KERNEL_STR,
};
#endif
