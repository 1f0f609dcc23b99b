/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * mpcc_math.h — the integer arithmetic in which every algorithm file (bpf/<algorithm>.bpf.c)
 * writes its per-ACK increase I_r and per-loss decrease D_r (Peng, Walid, Hwang, Low, "Multipath
 * TCP: Analysis, Design and Implementation", §II-B), and the per-route quantities the rules
 * share. It compiles both for BPF (clang -target bpf, no floating point, no 128-bit multiply,
 * unsigned 64-bit divide only) and for the host (cc), so the same rule source is tested against
 * spec/vectors/algorithms.json and run in the kernel.
 *
 * Numbers. Windows span 1..10^6 packets and RTTs 10^-3..0.5 s, and the rules divide by
 * (Σ_k w_k/τ_k)², so the quantities span ~10^30: one global binary point cannot hold them in
 * 64 bits. Every intermediate is therefore a fixed-point number with its own binary point:
 *
 *     mn_t = m · 2^e,   m a 32-bit mantissa normalised to [2^31, 2^32) (or m = 0),
 *                       e a signed 32-bit exponent;   packed as (u32)e << 32 | m.
 *
 * mul/div/add/sub truncate the exact result of their operands to a 32-bit mantissa, so each
 * has relative error < 2^-30 (derivation in docs/kernel.md, "Fixed-point error bound").
 * Products of two mantissas fit in 64 bits (< 2^64) and a quotient is (m_a << 32) / m_b,
 * so only 64-bit unsigned operations are used.
 *
 * Units of the inputs (struct mpcc_conn):
 *     cwnd  packets · 2^MPCC_CWND_SHIFT (the kernel passes snd_cwnd << 32; the host tests
 *           pass fractional windows);
 *     rtt   any unit, the same for every route — every rule depends on RTTs only through
 *           their ratios (the kernel passes srtt_us, i.e. 1/8 µs; the host tests picoseconds);
 *     ell   OLIA's loss interval ℓ_r in any unit, the same for every route (kernel: bytes);
 *     base_rtt  minimum RTT of each route, in the unit of rtt (filled for MPCC_PERIODIC only);
 *     adapted   the current value of the parameter the algorithm adapts on a slow timescale
 *           (MPCC_ADAPT; FAST's α under Tang et al.'s Algorithm 2), in that parameter's
 *           encoding; 0 = not adapted (yet): the rule uses the parameter as loaded;
 *     w_old     (MPCC_PERIODIC only) the window of the route being updated round(RTT/interval)
 *           periodic updates ago, the one its RTT samples' packets were sent under, in the
 *           unit of cwnd; 0 = none kept: the rule uses the current window.
 * Outputs of an algorithm's rules:
 *     on_ack  → I_r in packets · 2^MPCC_INC_SHIFT (signed: OLIA's ε_r can make it negative);
 *     on_loss → D_r in packets · 2^MPCC_CWND_SHIFT.
 */
#ifndef MPCC_MATH_H
#define MPCC_MATH_H

#ifdef __bpf__
/* vmlinux.h (included before this header) provides __u64, __s64, __u32, __s32. */
#define MPCC_FN __attribute__((noinline))      /* global BPF subprogram: verified once */
#define MPCC_INLINE static __always_inline
#else
#include <stdint.h>
typedef uint64_t __u64;
typedef int64_t __s64;
typedef uint32_t __u32;
typedef int32_t __s32;
#define MPCC_FN static inline
#define MPCC_INLINE static inline
#endif

#define MPCC_MAX_ROUTES 8
/* Index of route r after a bounds check; the mask (a no-op there) lets the BPF verifier see
 * the bound even when the compiler reuses the unchecked register (the empty asm keeps clang
 * from folding the mask away). */
#ifdef __bpf__
#define MPCC_IDX(r) ({ __u64 __i = (r); asm volatile("" : "+r"(__i)); __i & (MPCC_MAX_ROUTES - 1); })
#else
#define MPCC_IDX(r) ((r) & (MPCC_MAX_ROUTES - 1))
#endif
#define MPCC_CWND_SHIFT 32
#define MPCC_INC_SHIFT 40

/* One connection: its n routes (subflows that can send). */
struct mpcc_conn {
	__u32 n;
	__u64 cwnd[MPCC_MAX_ROUTES];
	__u64 rtt[MPCC_MAX_ROUTES];
	/* the fields below exist only for the algorithms that read them: each array is 64 bytes of
	 * the BPF program's stack, which Linux 6.1 caps tightly (bench/kernel/bpf_stack.py) */
#if defined(MPCC_LOSS_INTERVAL) && MPCC_LOSS_INTERVAL
	__u64 ell[MPCC_MAX_ROUTES];
#endif
#if defined(MPCC_PERIODIC) && MPCC_PERIODIC
	__u64 base_rtt[MPCC_MAX_ROUTES];
	__u64 adapted;
	__u64 w_old;
#endif
};

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

/* ---------------------------------------------------------------------------------------- */
/* mn_t: mantissa/exponent fixed point                                                       */
/* ---------------------------------------------------------------------------------------- */
typedef __u64 mn_t;

#define MN_M(a) ((a) & 0xffffffffULL)
#define MN_E(a) ((__s32)((a) >> 32))
#define MN_ZERO ((mn_t)0)

MPCC_INLINE mn_t mn_pack(__u64 m, __s64 e)
{
	return (m & 0xffffffffULL) | ((__u64)(__u32)(__s32)e << 32);
}

/* Index of the most significant set bit of v > 0 (branch-light binary search; BPF has no clz).
 * Inlined into mn_norm: a subprogram of its own would cost a 32-byte frame on Linux 6.1, whose
 * verifier counts even a frame without stack in its 512-byte limit (bench/kernel/bpf_stack.py). */
MPCC_INLINE __u32 mn_msb(__u64 v)
{
	__u32 p = 0;

	if (v >> 32) { v >>= 32; p += 32; }
	if (v >> 16) { v >>= 16; p += 16; }
	if (v >> 8) { v >>= 8; p += 8; }
	if (v >> 4) { v >>= 4; p += 4; }
	if (v >> 2) { v >>= 2; p += 2; }
	if (v >> 1) { p += 1; }
	return p;
}

/* v · 2^e, normalised (truncating to 32 significant bits: relative error < 2^-31). */
MPCC_FN mn_t mn_norm(__u64 v, __s64 e)
{
	__u32 p;

	if (v == 0)
		return MN_ZERO;
	p = mn_msb(v);
	if (p > 31)
		return mn_pack(v >> (p - 31), e + (__s64)(p - 31));
	return mn_pack(v << (31 - p), e - (__s64)(31 - p));
}

/* v / 2^shift for an unsigned integer v. */
MPCC_INLINE mn_t mn_from(__u64 v, __s64 shift)
{
	return mn_norm(v, -shift);
}

MPCC_FN mn_t mn_mul(mn_t a, mn_t b)
{
	if (MN_M(a) == 0 || MN_M(b) == 0)
		return MN_ZERO;
	/* m_a·m_b < 2^64 */
	return mn_norm(MN_M(a) * MN_M(b), (__s64)MN_E(a) + MN_E(b));
}

/* a / b; b = 0 saturates to the largest number. */
MPCC_FN mn_t mn_div(mn_t a, mn_t b)
{
	if (MN_M(a) == 0)
		return MN_ZERO;
	if (MN_M(b) == 0)
		return mn_pack(0xffffffffULL, 0x3fffffff);
	/* (m_a << 32) / m_b ∈ (2^31, 2^33) */
	return mn_norm((MN_M(a) << 32) / MN_M(b), (__s64)MN_E(a) - MN_E(b) - 32);
}

/* a + b (both ≥ 0). Mantissas are aligned at 2^62 so only bits below 2^-31 of the larger
 * operand are dropped. */
MPCC_FN mn_t mn_add(mn_t a, mn_t b)
{
	__s64 d;
	mn_t t;

	if (MN_M(a) == 0)
		return b;
	if (MN_M(b) == 0)
		return a;
	if (MN_E(a) < MN_E(b)) { t = a; a = b; b = t; }
	d = (__s64)MN_E(a) - MN_E(b);
	if (d > 62)
		return a;
	return mn_norm((MN_M(a) << 31) + ((MN_M(b) << 31) >> d), (__s64)MN_E(a) - 31);
}

/* max(a − b, 0). */
MPCC_FN mn_t mn_sub(mn_t a, mn_t b)
{
	__s64 d;
	__u64 sa, sb;

	if (MN_M(b) == 0)
		return a;
	if (MN_M(a) == 0 || MN_E(a) < MN_E(b))
		return MN_ZERO;
	d = (__s64)MN_E(a) - MN_E(b);
	if (d > 62)
		return a;
	sa = MN_M(a) << 31;
	sb = (MN_M(b) << 31) >> d;
	if (sb >= sa)
		return MN_ZERO;
	return mn_norm(sa - sb, (__s64)MN_E(a) - 31);
}

/* −1, 0, 1 as a <, =, > b (both ≥ 0). */
MPCC_FN __s32 mn_cmp(mn_t a, mn_t b)
{
	if (MN_M(a) == 0 || MN_M(b) == 0)
		return (MN_M(a) != 0) - (MN_M(b) != 0);
	if (MN_E(a) != MN_E(b))
		return MN_E(a) < MN_E(b) ? -1 : 1;
	if (MN_M(a) != MN_M(b))
		return MN_M(a) < MN_M(b) ? -1 : 1;
	return 0;
}

MPCC_FN mn_t mn_max(mn_t a, mn_t b) { return mn_cmp(a, b) >= 0 ? a : b; }
MPCC_FN mn_t mn_min(mn_t a, mn_t b) { return mn_cmp(a, b) <= 0 ? a : b; }
MPCC_FN __u64 mpcc_u64_max(__u64 a, __u64 b) { return a > b ? a : b; }

/* a · 2^shift as an unsigned integer (truncated, saturating at 2^63). */
MPCC_FN __u64 mn_to_fixed(mn_t a, __s64 shift)
{
	__s64 s = (__s64)MN_E(a) + shift;

	if (MN_M(a) == 0 || s <= -64)
		return 0;
	if (s < 0)
		return MN_M(a) >> -s;
	if (s > 31)
		return 1ULL << 63;
	return MN_M(a) << s;
}

/* √a: bitwise integer square root of a radicand v ∈ [2^60, 2^62), so ⌊√v⌋ ∈ [2^30, 2^31) and the
 * truncation costs < 2^-30 relative. The loop body is branch-free (a mask from the sign bit of
 * v − t, valid because v, t < 2^63): with a branch per step the BPF verifier would explore 2^31
 * paths (it cannot prune states whose scalar ranges differ). */
MPCC_FN mn_t mn_sqrt(mn_t a)
{
	__u64 v, res = 0, bit = 1ULL << 60;
	__s64 e = MN_E(a);
	int i;

	if (MN_M(a) == 0)
		return MN_ZERO;
	/* m·2^e = (m·2^s)·2^(e−s) with e−s even; m ∈ [2^31, 2^32) so m·2^s ∈ [2^60, 2^62) */
	if (e & 1) { v = MN_M(a) << 29; e -= 29; }
	else       { v = MN_M(a) << 30; e -= 30; }
	for (i = 0; i < 31; i++) {
		__u64 t = res + bit;
		__u64 take = (((v - t) >> 63) ^ 1);      /* 1 iff v ≥ t */
		__u64 mask = (__u64)0 - take;

		v -= t & mask;
		res = (res >> 1) + (bit & mask);
		bit >>= 2;
	}
	return mn_norm(res, e >> 1);   /* e even: an exact halving (arithmetic shift) */
}

/* ---------------------------------------------------------------------------------------- */
/* log2, exp2, pow                                                                           */
/* ---------------------------------------------------------------------------------------- */
/* Logarithms and the exponents of mn_pow are signed fixed point with 32 fractional bits (Q32,
 * value · 2^32, an __s64). Each function is straight-line code: a leading-bit count (inside
 * mn_norm) and a short polynomial, no loop, no table, no stack beyond a few registers.
 *
 * Stated error bounds (checked on spec/vectors/math.json, tests/kernel/test_bpf_mathlib.py;
 * derivation in docs/algorithms.md, "Fixed-point log2, exp2, pow"), for the number a = m·2^e
 * as stored (its own truncation is the caller's):
 *     mn_log2(a):    |result·2^-32 − log2 a|            ≤ 2^-28          (absolute)
 *     mn_exp2(y):    |result − 2^(y·2^-32)|              ≤ 2^-29 · 2^(y·2^-32)   (relative)
 *     mn_pow(a, y):  |result − a^(y·2^-32)|              ≤ (2^-28 + |y·2^-32|·2^-28) · a^(y·2^-32)
 * (relative, for |y·2^-32 · log2 a| < 2^30; outside, the result saturates). */
#define MN_Q32_ONE (1LL << 32)
#define MN_LOG2_OF_ZERO (-(1LL << 62))   /* mn_log2(0): below every finite logarithm */

/* log2 a in Q32, a > 0. With x = m/2^31 ∈ [1, 2) (or x/2 when x ≥ √2, so x ∈ [√2/2, √2)),
 * log2 x = (2/ln 2)·atanh(t), t = (x−1)/(x+1), |t| ≤ 3 − 2√2 < 0.1716, summed to t^9
 * (the remainder is < 2^-29.9). */
MPCC_FN __s64 mn_log2(mn_t a)
{
	__u64 m = MN_M(a), num, den, t, t2, p, f;
	__s64 k = (__s64)MN_E(a) + 31;           /* a = (m/2^31) · 2^k */
	int below_one;

	if (m == 0)
		return MN_LOG2_OF_ZERO;
	if (m >= 3037000500ULL) {                /* ⌈√2 · 2^31⌉: use x/2 = m/2^32 < 1 */
		k += 1;
		num = (1ULL << 32) - m;          /* |x/2 − 1| · 2^32 < 2^31 */
		den = (1ULL << 32) + m;
		below_one = 1;
	} else {
		num = m - (1ULL << 31);          /* (x − 1) · 2^31 < 2^31 */
		den = m + (1ULL << 31);
		below_one = 0;
	}
	t = (num << 32) / den;                   /* |t| · 2^32 < 2^30 */
	t2 = (t * t) >> 32;                      /* t² · 2^32 < 2^27 */
	p = (1ULL << 32) / 9;                    /* Horner: 1 + t²/3 + t⁴/5 + t⁶/7 + t⁸/9, Q32 */
	p = (1ULL << 32) / 7 + ((t2 * p) >> 32);
	p = (1ULL << 32) / 5 + ((t2 * p) >> 32);
	p = (1ULL << 32) / 3 + ((t2 * p) >> 32);
	p = (1ULL << 32) + ((t2 * p) >> 32);     /* < 1.01 · 2^32 */
	f = (t * p) >> 32;                       /* atanh|t| · 2^32 < 2^30 */
	f = (f * 3098164009ULL) >> 30;           /* · 2/ln 2 (Q30 constant): |log2 x| · 2^32 */
	if (k > (1LL << 30))
		k = 1LL << 30;
	if (k < -(1LL << 30))
		k = -(1LL << 30);
	return (__s64)((__u64)k << 32) + (below_one ? -(__s64)f : (__s64)f);
}

/* 2^(y/2^32) for y in Q32: 2^n · e^(f ln 2) with n = ⌊y⌋, f ∈ [0, 1), z = f ln 2 < 0.6932 in
 * Q31, e^z summed to z^11/11! by Horner (the remainder is < 2^-35); |n| is capped at 2^29. */
#define MN_EXP_STEP(k) p = (1ULL << 31) + (((z * p) >> 31) / (k))
MPCC_FN mn_t mn_exp2(__s64 y)
{
	__s64 n = y >> 32;                       /* arithmetic shift: ⌊y⌋ */
	__u64 f = (__u64)y & 0xffffffffULL;
	__u64 z = (f * 2977044472ULL) >> 33;     /* f · ln 2 · 2^31 (ln 2 in Q32) */
	__u64 p = 1ULL << 31;

	MN_EXP_STEP(11); MN_EXP_STEP(10); MN_EXP_STEP(9); MN_EXP_STEP(8);
	MN_EXP_STEP(7); MN_EXP_STEP(6); MN_EXP_STEP(5); MN_EXP_STEP(4);
	MN_EXP_STEP(3); MN_EXP_STEP(2); MN_EXP_STEP(1);   /* p = e^z · 2^31 ∈ [2^31, 2^32] */
	if (n > (1LL << 29))
		n = 1LL << 29;
	if (n < -(1LL << 29))
		return MN_ZERO;
	return mn_norm(p, n - 31);
}
#undef MN_EXP_STEP

/* a^(y/2^32) = 2^(y · log2 a / 2^32) for a ≥ 0 and y in Q32 (of either sign); 0^y is 0 for
 * y > 0, 1 for y = 0 and the largest number for y < 0 (as mn_div by 0). The product y · log2 a
 * is formed from 32-bit halves of the magnitudes (no 128-bit multiply in BPF). */
MPCC_FN mn_t mn_pow(mn_t a, __s64 y)
{
	__s64 l;
	__u64 ym, lm, yh, yl, lh, ll, hi, prod;
	int neg;

	if (y == 0)
		return mn_from(1, 0);
	if (MN_M(a) == 0)
		return y > 0 ? MN_ZERO : mn_pack(0xffffffffULL, 0x3fffffff);
	l = mn_log2(a);
	neg = (y < 0) != (l < 0);
	ym = y < 0 ? (__u64)0 - (__u64)y : (__u64)y;
	lm = l < 0 ? (__u64)0 - (__u64)l : (__u64)l;
	yh = ym >> 32; yl = ym & 0xffffffffULL;
	lh = lm >> 32; ll = lm & 0xffffffffULL;
	hi = yh * lh;
	if (hi >= (1ULL << 30))                  /* |y · log2 a| ≥ 2^30: saturate */
		return neg ? MN_ZERO : mn_pack(0xffffffffULL, 0x3fffffff);
	prod = (hi << 32) + yh * ll + yl * lh + ((yl * ll) >> 32);   /* |y · log2 a| in Q32 */
	if (prod >= (1ULL << 62))
		return neg ? MN_ZERO : mn_pack(0xffffffffULL, 0x3fffffff);
	return mn_exp2(neg ? -(__s64)prod : (__s64)prod);
}

/* ---------------------------------------------------------------------------------------- */
/* Quantities the rules of Peng et al. §II-B share (the rules: bpf/<algorithm>.bpf.c)        */
/* ---------------------------------------------------------------------------------------- */

/* Per-route quantities (global BPF subprograms, so the loops over routes below have
 * branch-free bodies and the verifier walks each loop once). A zero RTT counts as 1 unit. */
MPCC_FN mn_t mpcc_route_w(const struct mpcc_conn *c, __u32 k)
{
	if (!c || k >= MPCC_MAX_ROUTES)
		return mn_from(1, 0);
	return mn_from(c->cwnd[MPCC_IDX(k)], MPCC_CWND_SHIFT);
}

MPCC_FN mn_t mpcc_route_tau(const struct mpcc_conn *c, __u32 k)
{
	__u64 t;

	if (!c || k >= MPCC_MAX_ROUTES)
		return mn_from(1, 0);
	t = c->rtt[MPCC_IDX(k)];
	return mn_from(t ? t : 1, 0);
}

#if defined(MPCC_PERIODIC) && MPCC_PERIODIC
/* baseRTT_k, the route's minimum RTT (a zero counts as 1 unit). */
MPCC_FN mn_t mpcc_route_base_tau(const struct mpcc_conn *c, __u32 k)
{
	__u64 t;

	if (!c || k >= MPCC_MAX_ROUTES)
		return mn_from(1, 0);
	t = c->base_rtt[MPCC_IDX(k)];
	return mn_from(t ? t : 1, 0);
}
#endif

/* x_k = w_k/τ_k */
MPCC_FN mn_t mpcc_route_x(const struct mpcc_conn *c, __u32 k)
{
	return mn_div(mpcc_route_w(c, k), mpcc_route_tau(c, k));
}

/* Σ_k x_k and max_k x_k with x_k = w_k/τ_k (the route rates), and route r's own values. */
struct mpcc_rates {
	mn_t x_r, tau_r, w_r, sum, max;
};

MPCC_INLINE void mpcc_rates(const struct mpcc_conn *c, __u32 r, struct mpcc_rates *out)
{
	__u32 k;

	out->sum = MN_ZERO;
	out->max = MN_ZERO;
	for (k = 0; k < MPCC_MAX_ROUTES; k++) {
		mn_t x;

		if (k >= c->n)
			break;
		x = mpcc_route_x(c, k);
		out->sum = mn_add(out->sum, x);
		out->max = mn_max(out->max, x);
	}
	out->x_r = mpcc_route_x(c, r);     /* the same operations: bit-identical to the loop's */
	out->tau_r = mpcc_route_tau(c, r);
	out->w_r = mpcc_route_w(c, r);
}

/* x_r / (τ_r (Σ_k x_k)²) = (w_r/τ_r²)/(Σ_k w_k/τ_k)²: Coupled's increase, the first term of
 * OLIA's and the common factor of Balia's eq. (1). */
MPCC_INLINE mn_t mpcc_coupled_term(const struct mpcc_rates *q)
{
	return mn_div(q->x_r, mn_mul(q->tau_r, mn_mul(q->sum, q->sum)));
}

/* The multiplicative gain of Balia / the generalized family, as a function of α_r. */
MPCC_INLINE mn_t mpcc_alpha(const struct mpcc_rates *q)
{
	return mn_div(q->max, q->x_r); /* α_r = max_k x_k / x_r */
}

MPCC_INLINE __s64 mpcc_inc_fixed(mn_t v)
{
	return (__s64)mn_to_fixed(v, MPCC_INC_SHIFT);
}

/* D_r = w_r/2: NewReno's halving (Reno, EWTCP, Coupled, Semicoupled, LIA, OLIA). Exact. */
MPCC_FN __u64 mpcc_halve_on_loss(const struct mpcc_conn *c, __u32 r)
{
	if (!c || r >= MPCC_MAX_ROUTES || r >= c->n)
		return 0;
	return c->cwnd[MPCC_IDX(r)] >> 1;
}

/* min(D, w_r − 1), and 0 when w_r ≤ 1 (Jiang et al.'s cap: a decrease never takes a window below
 * one packet), in packets · 2^MPCC_CWND_SHIFT. w_r − 1 is exact here, so a capped window lands
 * on exactly one packet. */
MPCC_FN __u64 mpcc_cap_at_w_minus_1(const struct mpcc_conn *c, __u32 r, __u64 dec)
{
	__u64 w, one = 1ULL << MPCC_CWND_SHIFT;

	if (!c || r >= MPCC_MAX_ROUTES)
		return 0;
	w = c->cwnd[MPCC_IDX(r)];
	if (w <= one)
		return 0;
	return dec < w - one ? dec : w - one;
}

/* max(w_r − D_r, min_cwnd) in packets · 2^MPCC_CWND_SHIFT. */
MPCC_INLINE __u64 mpcc_cwnd_after_loss(__u64 cwnd, __u64 dec, __u32 min_cwnd)
{
	__u64 w = cwnd > dec ? cwnd - dec : 0;
	__u64 floor = (__u64)min_cwnd << MPCC_CWND_SHIFT;

	return w > floor ? w : floor;
}

/* mptcp_olia.c's per-ACK window counter (the per-ACK update of mpcc_algo.h, MPCC_PER_ACK_MODE):
 * each ACK adds I_r, rounded toward zero to units of 2^-MPCC_COUNTER_BITS packet, to a signed
 * counter; when the counter reaches +(2^MPCC_COUNTER_BITS − 1) the window grows one packet, at
 * −(2^MPCC_COUNTER_BITS − 1) it shrinks one packet, and the counter is reset to 0 (the remainder
 * is dropped). mptcp_olia.c computes |I_r|·2^10 as div64_u64 of its integer terms (the magnitude
 * rounded down, the sign applied after); here it is I_r (packets · 2^MPCC_INC_SHIFT) shifted. */
#define MPCC_COUNTER_BITS 10

MPCC_INLINE __s64 mpcc_counter_increment(__s64 inc)
{
	return inc >= 0 ? (inc >> (MPCC_INC_SHIFT - MPCC_COUNTER_BITS))
			: -((-inc) >> (MPCC_INC_SHIFT - MPCC_COUNTER_BITS));
}

/* Add one ACK's increment d (mpcc_counter_increment) to *cnt; the window step: +1, −1 or 0. */
MPCC_INLINE __s32 mpcc_counter_step(__s64 *cnt, __s64 d)
{
	__s64 one = 1LL << MPCC_COUNTER_BITS;

	*cnt += d;
	if (*cnt >= one - 1) {
		*cnt = 0;
		return 1;
	}
	if (*cnt <= 1 - one) {
		*cnt = 0;
		return -1;
	}
	return 0;
}

#endif /* MPCC_MATH_H */
