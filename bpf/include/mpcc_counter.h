/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * mpcc_counter.h — the per-ACK update's window counter (OLIA's per_ack = 1, mptcp_olia.c), for
 * olia.bpf.c, the compat layer's trace record and the host ABI (mpcc_host.h).
 */
#ifndef MPCC_COUNTER_H
#define MPCC_COUNTER_H

#include "mpcc_math.h"

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

#endif /* MPCC_COUNTER_H */
