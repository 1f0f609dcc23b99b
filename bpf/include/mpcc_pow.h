/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * mpcc_pow.h — √a, log2, exp2 and a^y on the mn_t numbers of mpcc_math.h, for the rule files
 * that use them (generalized: mn_sqrt; epsilon: mn_pow). Same builds and rules as mpcc_math.h:
 * BPF and host, 64-bit unsigned operations only.
 */
#ifndef MPCC_POW_H
#define MPCC_POW_H

#include "mpcc_math.h"

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

#endif /* MPCC_POW_H */
