// SPDX-License-Identifier: GPL-2.0
/* FAST TCP — Tang, Wei, Low, Chiang, "Equilibrium of Heterogeneous Congestion Control:
 * Optimality and Stability" (ToN 2010) eq. (1) and Algorithm 2; Wei, Jin, Low, Hegde (ToN 2006).
 * Delay-based, run uncoupled on every subflow: every update_interval_s each route sets
 *     w_r ← min(2 w_r, (1 − γ) w_r + γ (baseRTT_r / RTT_r · w_old,r + α))              (1)
 * with baseRTT_r the subflow's minimum RTT over its life (the least tcp_min_rtt seen, below), RTT_r
 * its srtt and w_old,r
 * the window round(RTT_r / update_interval_s) periodic updates ago, the one the packets whose RTT
 * was sampled were sent under (as ns-2's FAST module; with the current window instead, updates
 * much more frequent than the RTT make the window and the queue oscillate). The windows left in
 * force by the last periodic updates are kept in a ring of FAST_HISTORY per subflow, trimmed to
 * the last 2·lag + 3 before each push as crates/mpcc-core/src/cc/fast.rs does (lag = the
 * rounded ratio above), in a BPF socket-storage map (the congestion-control area is full; the
 * storage is freed with the socket); an RTT longer than FAST_HISTORY updates (20 s at 20 ms)
 * uses the oldest window kept, and before the first update, or if the storage cannot be
 * allocated, the current window is used. baseRTT is FAST's "minimum RTT observed so far" (Wei et
 * al. 2006; ns-2's module; Linux Vegas keeps its own too): the kernel's tcp_min_rtt is a windowed
 * minimum (net.ipv4.tcp_min_rtt_wlen, 300 s), and behind a queue that never drains — FAST's own
 * α packets, or a Reno flow's sawtooth in a buffer ≈ BDP — it forgets the propagation delay and
 * FAST counts part of the queue as base, so the least tcp_min_rtt seen at the periodic updates
 * is kept in the same storage (every sample stays in the windowed minimum for ≥ wlen/4, so at a
 * 20 ms update interval none is missed). There
 * is no per-ACK increase (I_r = 0) and no slow start (the 2 w_r cap is FAST's own), and a loss
 * halves the window as in Reno (D_r = w_r / 2, ssthresh ≥ 2). At equilibrium each flow keeps
 * α packets in the queues on its path: x_r (RTT_r − baseRTT_r) = α.
 *
 * Algorithm 2 (α adaptation; adapt_interval_s > 0, 0 = off): every adapt_interval_s
 *     α* = q/(l·w)·α₀,   α ← min((1+δ)α, α*) if α < α*,  max((1−δ)α, α*) if α > α*     (Alg. 2)
 * with α₀ = alpha, w = adapt_w (s), δ = adapt_delta, q the mean of the interval's srtt − baseRTT
 * samples (one per periodic update) and l = lost/sent, the subflow's packets lost + CE-marked
 * (tp->lost + tp->delivered_ce) per packet sent (tp->data_segs_out) in the interval (the glue:
 * fast_adapt below). No loss and a queue: α* = ∞ (up by δ); neither: α unchanged. α
 * stays in [2^-8, 65536] packets, the range of the alpha parameter. The same equations as
 * crates/mpcc-core/src/cc/fast.rs (Fast::update, Fast::adapt) and python/mpcc/algorithms/fast.py.
 *
 * Parameters per load: α packets ∈ [2^-8, 65536], γ ∈ [2^-8, 1], update_interval_s ∈ [1 ms, 10 s]
 * (fast_periodic below), adapt_interval_s ∈ [0, 10^4] s,
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
/* the kernel side's own state and callbacks (below) */
#define MPCC_ALGO_CA								\
	__u64 upd_stamp; /* tcp_mstamp (µs) of the last periodic update */			\
	__u64 adapted;   /* α · 2^32 as Algorithm 2 left it; 0 = as loaded */			\
	__u64 ad_stamp;  /* tcp_mstamp (µs) at the start of the interval; 0 = none yet */	\
	__u64 ad_q_sum;  /* Σ srtt − baseRTT over the interval's periodic updates, 1/8 µs */	\
	__u32 ad_q_n;    /* number of those samples */						\
	__u32 ad_lost;   /* tp->lost + tp->delivered_ce at the start of the interval */	\
	__u32 ad_sent;   /* tp->data_segs_out at the start of the interval */
#define MPCC_INIT fast_do_init
#define MPCC_CONG_AVOID fast_do_cong_avoid
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

/* eq. (1), packets · 2^32, with α as Algorithm 2 left it (c->adapted) or as loaded and w_old
 * = c->w_old (the current window when 0) */
MPCC_RULE __u64 mpcc_on_update(const struct mpcc_conn *c, __u32 r, const struct mpcc_params *p)
{
	__u64 gamma, alpha;
	mn_t w, w_old, seen, target;

	if (!mpcc_route_ok(c, r, p))
		return 0;
	gamma = p->gamma > (1ULL << 32) ? 1ULL << 32 : p->gamma;
	alpha = c->adapted ? c->adapted : p->alpha;
	w = mpcc_route_w(c, r);
	w_old = c->w_old ? mn_from(c->w_old, MPCC_CWND_SHIFT) : w;
	seen = mn_add(mn_mul(mn_div(mpcc_route_base_tau(c, r), mpcc_route_tau(c, r)), w_old),
		      mn_from(alpha, 32));                                 /* baseRTT/RTT · w_old + α */
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

/* FAST_HISTORY (a power of two) windows per subflow: the ring w, its next slot head and the
 * number kept n (at most FAST_HISTORY). */
#define FAST_HISTORY 1024
struct fast_history {
	__u32 w[FAST_HISTORY];
	__u32 head;
	__u32 n;
	__u32 base_us;       /* the least tcp_min_rtt seen (µs); 0 = none yet */
};

/* The window lag updates ago (packets), the oldest kept if fewer; 0 = none kept
 * (fast.rs: hist[n − 1 − min(lag, n − 1)]). */
MPCC_INLINE __u32 fast_history_old(const struct fast_history *h, __u64 lag)
{
	__u32 n = h->n > FAST_HISTORY ? FAST_HISTORY : h->n;

	if (!n)
		return 0;
	if (lag > n - 1)
		lag = n - 1;
	return h->w[(h->head - 1 - (__u32)lag) & (FAST_HISTORY - 1)];
}

/* Append window w, first keeping only the last 2·lag + 3 (fast.rs: memory follows the RTT). */
MPCC_INLINE void fast_history_add(struct fast_history *h, __u64 lag, __u32 w)
{
	__u64 keep = 2 * lag + 4;

	if (keep > FAST_HISTORY)
		keep = FAST_HISTORY;
	if (h->n >= keep)
		h->n = keep - 1;
	h->w[h->head & (FAST_HISTORY - 1)] = w;
	h->head = (h->head + 1) & (FAST_HISTORY - 1);
	h->n++;
}

#ifndef __bpf__
/* Host build: steps pushes with lags[i] and windows w[i]; old[i] = the window fast_history_old
 * picked before push i (tests/kernel/test_bpf_math.py checks it against fast.rs's deque). */
void mpcc_host_fast_history(uint32_t steps, const uint64_t *lags, const uint32_t *w, uint32_t *old)
{
	static struct fast_history h;
	uint32_t i;

	memset(&h, 0, sizeof(h));
	for (i = 0; i < steps; i++) {
		old[i] = fast_history_old(&h, lags[i]);
		fast_history_add(&h, lags[i], w[i]);
	}
}
#endif

#ifdef __bpf__
static __always_inline __u32 mpcc_signals(const struct tcp_sock *tp)
{
	return tp->lost + tp->delivered_ce;
}

static __always_inline __u64 fast_base_rtt(struct sock *sk, __u64 base);

/* Algorithm 2, at each periodic update: one queueing-delay sample srtt − baseRTT; at the end of
 * each interval, ca->adapted ← mpcc_on_adapt over it (the lost and sent counts: struct
 * mpcc_adapt_in). The first interval starts at the first periodic update. Counter differences
 * are taken modulo 2^32 like the kernel's own. */
static __always_inline void fast_adapt(struct sock *sk, const struct mpcc_params *p, __u64 now)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct mpcc_ca *ca = inet_csk_ca(sk);
	struct mpcc_adapt_in a = {};
	__u64 iv = mpcc_adapt_interval_us(p), srtt = tp->srtt_us;
	__u64 base = fast_base_rtt(sk, mpcc_base_rtt(tp->rtt_min.s[0].v, srtt));

	if (!iv)
		return;
	if (!ca->ad_stamp) {
		ca->ad_stamp = now ? now : 1;
		ca->ad_q_sum = 0;
		ca->ad_q_n = 0;
		ca->ad_lost = mpcc_signals(tp);
		ca->ad_sent = tp->data_segs_out;
		return;
	}
	ca->ad_q_sum += srtt > base ? srtt - base : 0;
	ca->ad_q_n++;
	if (now - ca->ad_stamp < iv)
		return;
	a.value = ca->adapted;          /* 0 = as loaded: the rule reads its parameter */
	a.q_sum = ca->ad_q_sum;
	a.q_n = ca->ad_q_n;
	a.lost = (__u32)(mpcc_signals(tp) - ca->ad_lost);
	a.sent = (__u32)(tp->data_segs_out - ca->ad_sent);
	ca->adapted = mpcc_on_adapt(&a, p);
	MPCC_TRACE_ADAPT(&a, ca->adapted);
	ca->ad_stamp = now ? now : 1;
	ca->ad_q_sum = 0;
	ca->ad_q_n = 0;
	ca->ad_lost = mpcc_signals(tp);
	ca->ad_sent = tp->data_segs_out;
}

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct fast_history);
} fast_history SEC(".maps");

/* round(RTT / update_interval_s) from srtt (1/8 µs), as fast.rs rounds it */
static __always_inline __u64 fast_lag(const struct sock *sk, const struct mpcc_params *p)
{
	__u64 iv = mpcc_update_interval_us(p) * 8;

	return iv ? (tcp_sk(sk)->srtt_us + iv / 2) / iv : 0;
}

/* A socket that ran FAST before (congestion control switched away and back) starts afresh. */
static __always_inline void fast_history_init(struct sock *sk)
{
	struct fast_history *h = bpf_sk_storage_get(&fast_history, sk, NULL, 0);

	if (h) {
		h->head = 0;
		h->n = 0;
		h->base_us = 0;
	}
}

/* baseRTT (1/8 µs): the least tcp_min_rtt seen so far, folding in the current one; base (the
 * glue's from the current tcp_min_rtt, or srtt before any sample) if the storage cannot be had. */
static __always_inline __u64 fast_base_rtt(struct sock *sk, __u64 base)
{
	struct fast_history *h = bpf_sk_storage_get(&fast_history, sk, NULL, BPF_SK_STORAGE_GET_F_CREATE);
	__u32 now = tcp_sk(sk)->rtt_min.s[0].v;

	if (!h)
		return base;
	if (now && now != ~0U && (!h->base_us || now < h->base_us))
		h->base_us = now;
	return h->base_us ? (__u64)h->base_us << 3 : base;
}

/* The window lag updates ago (packets · 2^32), the oldest kept if fewer; 0 = none kept. */
static __always_inline __u64 fast_w_old(struct sock *sk, const struct mpcc_params *p)
{
	struct fast_history *h = bpf_sk_storage_get(&fast_history, sk, NULL, 0);

	return h ? (__u64)fast_history_old(h, fast_lag(sk, p)) << MPCC_CWND_SHIFT : 0;
}

/* Record the window this update left in force. */
static __always_inline void fast_history_push(struct sock *sk, const struct mpcc_params *p, __u32 w)
{
	struct fast_history *h = bpf_sk_storage_get(&fast_history, sk, NULL, BPF_SK_STORAGE_GET_F_CREATE);

	if (h)
		fast_history_add(h, fast_lag(sk, p), w);
}

static __always_inline void fast_do_init(struct sock *sk)
{
	struct mpcc_ca *ca = inet_csk_ca(sk);

	mpcc_init(sk);
	ca->upd_stamp = 0;
	ca->adapted = 0;
	ca->ad_stamp = 0;
	fast_history_init(sk);
}

/* The periodic update (1): every update_interval_s of the subflow's clock (checked on each ACK),
 * w_r ← mpcc_on_update, rounded to the nearest packet, at least min_cwnd and at most
 * snd_cwnd_clamp; an increase only while the subflow is cwnd-limited (as every window increase
 * in Linux), a decrease always. baseRTT and w_old from the history above. */
static __always_inline void fast_periodic(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct mpcc_ca *ca = inet_csk_ca(sk);
	const struct mpcc_params p = { MPCC_PARAM_VALUES };
	struct mpcc_conn c = {};
	__u64 now = tp->tcp_mstamp, w;
	__u32 floor;

	if (ca->upd_stamp && now - ca->upd_stamp < mpcc_update_interval_us(&p))
		return;
	if (!tp->srtt_us)
		return;
	ca->upd_stamp = now ? now : 1;
	mpcc_fill_own(sk, &c);
	fast_adapt(sk, &p, now);
	c.adapted = ca->adapted;
	c.w_old = fast_w_old(sk, &p);
	c.base_rtt[0] = fast_base_rtt(sk, c.base_rtt[0]);
	w = mpcc_on_update(&c, 0, &p);
	MPCC_TRACE(2, &c, 0, 0, w, 0, 1, 0);
	w = (w + (1ULL << (MPCC_CWND_SHIFT - 1))) >> MPCC_CWND_SHIFT;
	floor = mpcc_min_cwnd(c.n);
	if (w < floor)
		w = floor;
	if (w > tp->snd_cwnd_clamp)
		w = tp->snd_cwnd_clamp;
	if (w != tp->snd_cwnd && (w < tp->snd_cwnd || tcp_is_cwnd_limited(sk))) {
		tp->snd_cwnd = (__u32)w;
		ca->acc = 0;
	}
	fast_history_push(sk, &p, tp->snd_cwnd);   /* the window this update leaves in force */
}

/* The periodic update, then I_r per ACKed packet (0 for FAST) while cwnd-limited; no slow start
 * (the 2 w_r cap is FAST's own). On plain TCP sockets too (one route). */
static __always_inline void fast_do_cong_avoid(struct sock *sk, __u32 ack, __u32 acked)
{
	fast_periodic(sk);
	if (tcp_is_cwnd_limited(sk))
		mpcc_cong_avoid_ai(sk, acked);
}

SEC("struct_ops")
void BPF_PROG(fast_init, struct sock *sk)
{
	fast_do_init(sk);
}

SEC("struct_ops")
void BPF_PROG(fast_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	fast_do_cong_avoid(sk, ack, acked);
}

SEC("struct_ops")
__u32 BPF_PROG(fast_ssthresh, struct sock *sk)
{
	return mpcc_ssthresh(sk);
}

SEC("struct_ops")
__u32 BPF_PROG(fast_undo_cwnd, struct sock *sk)
{
	return mpcc_undo_cwnd(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops MPCC_KERNEL_SYM = {
	.init		= (void *)fast_init,
	.cong_avoid	= (void *)fast_cong_avoid,
	.ssthresh	= (void *)fast_ssthresh,
	.undo_cwnd	= (void *)fast_undo_cwnd,
	MPCC_CONN_OPS
	MPCC_COMPAT_OPS
	.name		= MPCC_KERNEL_STR,
};
#endif
