/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/* mpcc_cap.h — Jiang et al.'s decrease cap, for the files that apply it (mstcp, mtcp). */
#ifndef MPCC_CAP_H
#define MPCC_CAP_H

#include "mpcc_math.h"

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

#endif /* MPCC_CAP_H */
