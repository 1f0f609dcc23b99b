// SPDX-License-Identifier: GPL-2.0
/* FAST TCP — Tang, Wei, Low, Chiang, "Equilibrium of Heterogeneous Congestion Control:
 * Optimality and Stability" (ToN 2010) eq. (1) and Algorithm 2; Wei, Jin, Low, Hegde (ToN 2006).
 * Delay-based, run uncoupled on every subflow: every update_interval_s each route sets
 *     w_r ← min(2 w_r, (1 − γ) w_r + γ (baseRTT_r / RTT_r · w_r + α))                  (1)
 * with baseRTT_r the subflow's minimum RTT (the kernel's tcp_min_rtt) and RTT_r its srtt; there
 * is no per-ACK increase (I_r = 0) and no slow start (the 2 w_r cap is FAST's own), and a loss
 * halves the window as in Reno (D_r = w_r / 2, ssthresh ≥ 2). At equilibrium each flow keeps
 * α packets in the queues on its path: x_r (RTT_r − baseRTT_r) = α.
 *
 * Algorithm 2 (α adaptation; adapt_interval_s > 0, 0 = off): every adapt_interval_s
 *     α* = q/(l·w)·α₀,   α ← min((1+δ)α, α*) if α < α*,  max((1−δ)α, α*) if α > α*     (Alg. 2)
 * with α₀ = alpha, w = adapt_w (s), δ = adapt_delta, q the mean of the interval's srtt − baseRTT
 * samples (one per periodic update) and l = lost/sent, the subflow's packets lost + CE-marked
 * (tp->lost + tp->delivered_ce) per packet sent (tp->data_segs_out) in the interval (the glue:
 * MPCC_ADAPT in mpcc_algo.h). No loss and a queue: α* = ∞ (up by δ); neither: α unchanged. α
 * stays in [2^-8, 65536] packets, the range of the alpha parameter. The same equations as
 * crates/mpcc-core/src/cc/fast.rs (Fast::update, Fast::adapt) and python/mpcc/algorithms/fast.py.
 *
 * Parameters per load: α packets ∈ [2^-8, 65536], γ ∈ [2^-8, 1], update_interval_s ∈ [1 ms, 10 s]
 * (the periodic hook of mpcc_algo.h, MPCC_PERIODIC), adapt_interval_s ∈ [0, 10^4] s,
 * adapt_w ∈ [2^-8, 10^6] s, adapt_delta ∈ [2^-8, 0.99].
 */
#define MPCC_KERNEL_NAME mpcc_fast
#define MPCC_PARAMS(P)					\
	P(alpha, Q32, 50.0, 0.00390625, 65536)		\
	P(gamma, Q32, 0.5, 0.00390625, 1)		\
	P(update_interval_s, Q32, 0.02, 0.001, 10)	\
	P(adapt_interval_s, Q32, 0.0, 0, 10000)		\
	P(adapt_w, Q32, 125.0, 0.00390625, 1000000)	\
	P(adapt_delta, Q32, 0.1, 0.00390625, 0.99)
#define MPCC_OWN_ROUTE 1
#define MPCC_PERIODIC 1
#define MPCC_ADAPT 1
#include "mpcc_algo.h"

#define FAST_ALPHA_MIN (1ULL << 24)        /* 2^-8 packets · 2^32 */
#define FAST_ALPHA_MAX (65536ULL << 32)

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

/* eq. (1), packets · 2^32, with α as Algorithm 2 left it (c->adapted) or as loaded */
MPCC_RULE __u64 mpcc_on_update(const struct mpcc_conn *c, __u32 r, const struct mpcc_params *p)
{
	__u64 gamma, alpha;
	mn_t w, seen, target;

	if (!mpcc_route_ok(c, r, p))
		return 0;
	gamma = p->gamma > (1ULL << 32) ? 1ULL << 32 : p->gamma;
	alpha = c->adapted ? c->adapted : p->alpha;
	w = mpcc_route_w(c, r);
	seen = mn_add(mn_mul(mn_div(mpcc_route_base_tau(c, r), mpcc_route_tau(c, r)), w),
		      mn_from(alpha, 32));                                 /* baseRTT/RTT · w + α */
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

/* Algorithm 2: the next α (packets · 2^32) after one interval */
MPCC_RULE __u64 mpcc_on_adapt(const struct mpcc_adapt_in *a, const struct mpcc_params *p)
{
	__u64 alpha, delta, out;
	mn_t al, q, target = MN_ZERO, next;
	__s32 side;

	if (!a || !p)
		return 0;
	alpha = a->value ? a->value : p->alpha;
	if (!a->q_n || !a->sent)                       /* no samples in the interval: unchanged */
		return alpha;
	delta = p->adapt_delta > (1ULL << 32) ? 1ULL << 32 : p->adapt_delta;
	al = mn_from(alpha, 32);
	q = mn_div(mn_from(a->q_sum, 0), mn_mul(mn_from(a->q_n, 0), mn_from(MPCC_RTT_UNITS_PER_S, 0)));
	if (a->lost) {                                 /* α* = q/(l·w)·α₀ with l = lost/sent */
		target = mn_mul(mn_div(q, mn_mul(mn_div(mn_from(a->lost, 0), mn_from(a->sent, 0)),
						 mn_from(p->adapt_w, 32))),
				mn_from(p->alpha, 32));
		side = mn_cmp(al, target);
	} else if (MN_M(q)) {                          /* no loss: α* = ∞ */
		side = -1;
	} else {                                       /* no loss, no queue */
		return alpha;
	}
	if (side < 0) {
		next = mn_mul(mn_from((1ULL << 32) + delta, 32), al);
		if (a->lost)
			next = mn_min(next, target);
	} else if (side > 0) {
		next = mn_max(mn_mul(mn_from((1ULL << 32) - delta, 32), al), target);
	} else {
		next = al;
	}
	out = mn_to_fixed(next, 32);
	if (out < FAST_ALPHA_MIN)
		out = FAST_ALPHA_MIN;
	if (out > FAST_ALPHA_MAX)
		out = FAST_ALPHA_MAX;
	return out;
}

/* adapt_interval_s in µs (0: Algorithm 2 off) */
MPCC_RULE __u64 mpcc_adapt_interval_us(const struct mpcc_params *p)
{
	if (!p)
		return 0;
	return ((p->adapt_interval_s >> 8) * 1000000ULL) >> 24;     /* no overflow up to 10^4 s */
}

MPCC_STRUCT_OPS(fast);
