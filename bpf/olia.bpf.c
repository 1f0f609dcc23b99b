// SPDX-License-Identifier: GPL-2.0
/* OLIA — opportunistic linked increases (Khalili et al., ToN 2013):
 *     I_r = (w_r/τ_r²)/(Σ_p w_p/τ_p)² + ε_r/w_r,   D_r = w_r/2,
 * with B the routes that maximise ℓ_p/τ_p² (ℓ = bytes between losses, MPCC_LOSS_INTERVAL) and
 * M those that maximise w_p:
 *     ε_r = 1/(n|B∖M|) for r ∈ B∖M;  −1/(n|M|) for r ∈ M when B∖M ≠ ∅;  0 otherwise.
 * per_ack = 1 applies I_r as the out-of-tree mptcp_olia.c did (once per ACK through a 2^-10-packet
 * counter; mpcc_algo.h, "Per-ACK window update"); per_ack = 0 (default) per acknowledged packet.
 */
#define MPCC_KERNEL_NAME mpcc_olia
#define MPCC_PARAMS(P) P(per_ack, FLAG, 0, 0, 1)
#define MPCC_PER_ACK_MODE 1
#define MPCC_LOSS_INTERVAL 1
#include "mpcc_algo.h"

/* ℓ_k/τ_k² (the path quality) */
MPCC_FN mn_t olia_route_quality(const struct mpcc_conn *c, __u32 k)
{
	mn_t tau = mpcc_route_tau(c, k);

	if (!c || k >= MPCC_MAX_ROUTES)
		return MN_ZERO;
	return mn_div(mn_from(c->ell[MPCC_IDX(k)], 0), mn_mul(tau, tau));
}

MPCC_RULE __s64 mpcc_on_ack(const struct mpcc_conn *c, __u32 r, const struct mpcc_params *p)
{
	struct mpcc_rates q;
	mn_t qual_max = MN_ZERO;
	__u64 wmax = 0, n_collected = 0, n_m = 0, r_in_b, r_in_m;
	__s64 inc, eps;
	__u32 k;

	if (!mpcc_route_ok(c, r, p))
		return 0;
	mpcc_rates(c, r, &q);
	for (k = 0; k < MPCC_MAX_ROUTES; k++) {
		if (k >= c->n)
			break;
		qual_max = mn_max(qual_max, olia_route_quality(c, k));
		wmax = mpcc_u64_max(wmax, c->cwnd[k]);
	}
	/* second pass: |M| and |B∖M| (B and M are the ties with the maxima) */
	for (k = 0; k < MPCC_MAX_ROUTES; k++) {
		__u64 in_m, in_b;

		if (k >= c->n)
			break;
		in_m = mpcc_u64_max(wmax, c->cwnd[k]) == c->cwnd[k];
		in_b = mn_cmp(olia_route_quality(c, k), qual_max) == 0;
		n_m += in_m;
		n_collected += in_b & (in_m ^ 1);
	}
	r_in_m = c->cwnd[MPCC_IDX(r)] == wmax;
	r_in_b = mn_cmp(olia_route_quality(c, r), qual_max) == 0;

	inc = mpcc_inc_fixed(mpcc_coupled_term(&q));
	eps = 0;
	if (r_in_b && !r_in_m && n_collected > 0)   /* +1/(n |B∖M| w_r) */
		eps = mpcc_inc_fixed(mn_div(mn_from(1, 0),
			mn_mul(mn_from((__u64)c->n * n_collected, 0), q.w_r)));
	else if (r_in_m && n_collected > 0 && n_m > 0)   /* −1/(n |M| w_r) */
		eps = -mpcc_inc_fixed(mn_div(mn_from(1, 0),
			mn_mul(mn_from((__u64)c->n * n_m, 0), q.w_r)));
	return inc + eps;
}

MPCC_RULE __u64 mpcc_on_loss(const struct mpcc_conn *c, __u32 r, const struct mpcc_params *p)
{
	if (!mpcc_route_ok(c, r, p))
		return 0;
	return mpcc_halve_on_loss(c, r);
}

MPCC_STRUCT_OPS(olia);
