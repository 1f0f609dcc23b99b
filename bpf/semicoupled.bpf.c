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

MPCC_STRUCT_OPS(semicoupled);
