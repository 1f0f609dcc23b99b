/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * mpcc_periodic.h — what a file with a periodic update (MPCC_PERIODIC, FAST) and a slow-timescale
 * rule (MPCC_ADAPT) adds to mpcc_algo.h: the adaptation's inputs, the rules' prototypes and
 * baseRTT_k. Included by mpcc_algo.h only for those files. Units of c->base_rtt, c->adapted and
 * c->w_old: mpcc_math.h (struct mpcc_conn).
 */
#ifndef MPCC_PERIODIC_H
#define MPCC_PERIODIC_H

/* One slow-timescale interval (MPCC_ADAPT, mpcc_algo.h): the inputs of mpcc_on_adapt. The kernel
 * fills it per subflow from its own counters; the host tests from spec/vectors/algorithms.json. */
#define MPCC_RTT_UNITS_PER_S 8000000ULL   /* q_sum's unit: the kernel's srtt_us, 1/8 µs */
struct mpcc_adapt_in {
	__u64 value;    /* the adapted parameter now, in its encoding (FAST: α · 2^32); 0 = as loaded */
	__u64 q_sum;    /* Σ of the interval's queueing-delay samples RTT − baseRTT, 1/8 µs */
	__u64 q_n;      /* number of those samples */
	__u64 lost;     /* congestion signals in the interval: packets lost + CE-marked */
	__u64 sent;     /* packets sent in the interval, retransmissions included */
};

MPCC_RULE __u64 mpcc_on_update(const struct mpcc_conn *c, __u32 r, const struct mpcc_params *p);
MPCC_RULE __u64 mpcc_update_interval_us(const struct mpcc_params *p);
#if MPCC_ADAPT
MPCC_RULE __u64 mpcc_on_adapt(const struct mpcc_adapt_in *a, const struct mpcc_params *p);
MPCC_RULE __u64 mpcc_adapt_interval_us(const struct mpcc_params *p);
#endif

/* baseRTT_k, the route's minimum RTT (a zero counts as 1 unit). */
MPCC_FN mn_t mpcc_route_base_tau(const struct mpcc_conn *c, __u32 k)
{
	__u64 t;

	if (!c || k >= MPCC_MAX_ROUTES)
		return mn_from(1, 0);
	t = c->base_rtt[MPCC_IDX(k)];
	return mn_from(t ? t : 1, 0);
}

/* baseRTT in the unit of srtt_us (1/8 µs) from the kernel's windowed minimum RTT (µs,
 * tcp_min_rtt(); net.ipv4.tcp_min_rtt_wlen, 300 s by default); srtt when there is no sample. */
MPCC_INLINE __u64 mpcc_base_rtt(__u32 min_rtt_us, __u64 srtt)
{
	__u64 b = (__u64)min_rtt_us << 3;

	return (min_rtt_us != ~0U && b) ? b : srtt;
}

MPCC_INLINE void mpcc_set_base_rtt(struct mpcc_conn *c, __u32 k, __u64 base)
{
	c->base_rtt[k & (MPCC_MAX_ROUTES - 1)] = base;
}

/* the walk's base_rtt fill (mpcc_walk.h; a no-op without this header) */
#define MPCC_SET_BASE_RTT(c, k, min_rtt_us, srtt) mpcc_set_base_rtt(c, k, mpcc_base_rtt(min_rtt_us, srtt))

#endif /* MPCC_PERIODIC_H */
