// SPDX-License-Identifier: GPL-2.0
/* FAST TCP — Tang, Wei, Low, Chiang, "Equilibrium of Heterogeneous Congestion Control:
 * Optimality and Stability" (ToN 2010) eq. (1); Wei, Jin, Low, Hegde (ToN 2006). Delay-based,
 * run uncoupled on every subflow: every update_interval_s each route sets
 *     w_r ← min(2 w_r, (1 − γ) w_r + γ (baseRTT_r / RTT_r · w_r + α))                  (1)
 * with baseRTT_r the subflow's minimum RTT (the kernel's tcp_min_rtt) and RTT_r its srtt; there
 * is no per-ACK increase (I_r = 0) and no slow start (the 2 w_r cap is FAST's own), and a loss
 * halves the window as in Reno (D_r = w_r / 2, ssthresh ≥ 2). At equilibrium each flow keeps
 * α packets in the queues on its path: x_r (RTT_r − baseRTT_r) = α.
 * Parameters per load: α packets ∈ [2^-8, 65536], γ ∈ [2^-8, 1], update_interval_s ∈ [1 ms, 10 s]
 * (the periodic hook of mpcc_algo.h, MPCC_PERIODIC). Tang et al.'s Algorithm 2 (α adaptation)
 * is not in this program.
 */
#define MPCC_KERNEL_NAME mpcc_fast
#define MPCC_PARAMS(P)					\
	P(alpha, Q32, 50.0, 0.00390625, 65536)		\
	P(gamma, Q32, 0.5, 0.00390625, 1)		\
	P(update_interval_s, Q32, 0.02, 0.001, 10)
#define MPCC_OWN_ROUTE 1
#define MPCC_PERIODIC 1
#include "mpcc_algo.h"

MPCC_RULE __s64 mpcc_on_ack(const struct mpcc_conn *c, __u32 r, const struct mpcc_params *p)
{
	if (!mpcc_route_ok(c, r, p))
		return 0;
	return 0;                                                          /* I_r = 0 */
}

MPCC_RULE __u64 mpcc_on_loss(const struct mpcc_conn *c, __u32 r, const struct mpcc_params *p)
{
	if (!mpcc_route_ok(c, r, p))
		return 0;
	return mpcc_halve_on_loss(c, r);                                   /* D_r = w_r / 2 */
}

/* eq. (1), packets · 2^32 */
MPCC_RULE __u64 mpcc_on_update(const struct mpcc_conn *c, __u32 r, const struct mpcc_params *p)
{
	__u64 gamma;
	mn_t w, seen, target;

	if (!mpcc_route_ok(c, r, p))
		return 0;
	gamma = p->gamma > (1ULL << 32) ? 1ULL << 32 : p->gamma;
	w = mpcc_route_w(c, r);
	seen = mn_add(mn_mul(mn_div(mpcc_route_base_tau(c, r), mpcc_route_tau(c, r)), w),
		      mn_from(p->alpha, 32));                             /* baseRTT/RTT · w + α */
	target = mn_add(mn_mul(mn_from((1ULL << 32) - gamma, 32), w), mn_mul(mn_from(gamma, 32), seen));
	return mn_to_fixed(mn_min(mn_add(w, w), target), MPCC_CWND_SHIFT);
}

/* update_interval_s in µs */
MPCC_RULE __u64 mpcc_update_interval_us(const struct mpcc_params *p)
{
	if (!p)
		return 20000;
	return (p->update_interval_s * 1000000ULL) >> 32;
}

MPCC_STRUCT_OPS(fast);
