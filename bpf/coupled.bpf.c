// SPDX-License-Identifier: GPL-2.0
/* Coupled (Kelly–Voice; Han et al.; Peng et al. §II-B):
 *     I_r = (w_r/τ_r²) / (Σ_k w_k/τ_k)²,   D_r = w_r/2;  ssthresh ≥ 1 with more than one subflow (§V).
 */
#define MPCC_KERNEL_NAME mpcc_coupled
#define MPCC_MIN_CWND_MULTIPATH 1
#include "mpcc_algo.h"

MPCC_RULE __s64 mpcc_on_ack(const struct mpcc_conn *c, __u32 r, const struct mpcc_params *p)
{
	struct mpcc_rates q;

	if (!mpcc_route_ok(c, r, p))
		return 0;
	mpcc_rates(c, r, &q);
	return mpcc_inc_fixed(mpcc_coupled_term(&q));
}

MPCC_RULE __u64 mpcc_on_loss(const struct mpcc_conn *c, __u32 r, const struct mpcc_params *p)
{
	if (!mpcc_route_ok(c, r, p))
		return 0;
	return mpcc_halve_on_loss(c, r);
}

MPCC_STRUCT_OPS(coupled);
