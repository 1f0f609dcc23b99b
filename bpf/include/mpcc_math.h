/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * mpcc_math.h — the integer arithmetic of the rules I_r (per ACK) and D_r (per loss) of Peng,
 * Walid, Hwang, Low §II-B, and the per-route quantities they share. Compiles for BPF (no floating
 * point, no 128-bit multiply, unsigned 64-bit divide only) and for the host (the tests against
 * spec/vectors/algorithms.json).
 *
 * Every intermediate is mn_t = m · 2^e, m a 32-bit mantissa in [2^31, 2^32) (or 0), e a signed
 * 32-bit exponent, packed as (u32)e << 32 | m: the quantities span ~10^30, more than one binary
 * point in 64 bits holds. mul/div/add (and mn_sub) truncate the exact result to 32 bits of mantissa,
 * relative error < 2^-30 each (docs/kernel.md, "Fixed-point error bound").
 *
 * Outputs: on_ack → I_r in packets · 2^MPCC_INC_SHIFT (signed: OLIA's ε_r can be negative);
 *          on_loss → D_r in packets · 2^MPCC_CWND_SHIFT.
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

/* One connection: its n routes (subflows that can send). The optional fields exist only for the
 * algorithms that read them: each array is 64 bytes of BPF stack, which Linux 6.1 caps tightly. */
struct mpcc_conn {
	__u32 n;
	__u64 cwnd[MPCC_MAX_ROUTES];   /* packets · 2^MPCC_CWND_SHIFT */
	__u64 rtt[MPCC_MAX_ROUTES];    /* any unit, the same for every route (kernel: srtt_us) */
#if defined(MPCC_LOSS_INTERVAL) && MPCC_LOSS_INTERVAL
	__u64 ell[MPCC_MAX_ROUTES];    /* OLIA's loss interval ℓ_r, any unit (kernel: bytes) */
#endif
#if defined(MPCC_PERIODIC) && MPCC_PERIODIC
	__u64 base_rtt[MPCC_MAX_ROUTES];   /* minimum RTT, in the unit of rtt */
	__u64 adapted;   /* MPCC_ADAPT: the adapted parameter in its encoding; 0 = as loaded */
	__u64 w_old;     /* route r's window round(RTT/interval) updates ago; 0 = the current one */
#endif
};

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

/* max(w_r − D_r, min_cwnd) in packets · 2^MPCC_CWND_SHIFT. */
MPCC_INLINE __u64 mpcc_cwnd_after_loss(__u64 cwnd, __u64 dec, __u32 min_cwnd)
{
	__u64 w = cwnd > dec ? cwnd - dec : 0;
	__u64 floor = (__u64)min_cwnd << MPCC_CWND_SHIFT;

	return w > floor ? w : floor;
}

#endif /* MPCC_MATH_H */
