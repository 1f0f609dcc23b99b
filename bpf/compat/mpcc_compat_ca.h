/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mpcc_compat_ca.h — the compat layer's fields of struct mpcc_ca (bpf/include/mpcc_kern.h),
 * placed around the shared ones so that FAST, whose own state is the largest, still fits the
 * 104-byte congestion-control area. Readers outside the program (tests, bench scripts) find
 * a field's offset in the object's BTF (struct mpcc_ca), never by a fixed number.
 */
#ifndef MPCC_COMPAT_CA_H
#define MPCC_COMPAT_CA_H

#define MPCC_COMPAT_CA_HEAD                                                                     \
	__u32 ss_ret;    /* the value our ssthresh() last returned */                           \
	__u32 ss_calls;  /* how many times it ran (a state change without a call: skipped) */

#define MPCC_COMPAT_CA_FLAGS                                                                    \
	__u8 red;        /* the reduction episode under way: TCP_CA_CWR, TCP_CA_Recovery, 0 */ \
	__u8 inited;     /* 1 once init ran (0 at cong_control: init was skipped) */

#if !MPCC_PERIODIC
/* the window-jump check's bound on the packets delivered since the last cong_control
 * (mpcc_delivered_bound): what was outstanding then, and the counters at its end */
#define MPCC_COMPAT_CA_BOUND                                                                    \
	__u32 prev_packets_out; /* tp->packets_out at the end of the last cong_control */       \
	__u32 prev_data_segs;   /* tp->data_segs_out then */                                    \
	__u32 prev_segs_in;     /* tp->segs_in then (segments received since: ACKs seen) */     \
	__u32 prev_dsack_dups;  /* tp->dsack_dups then (DSACKed duplicates count as delivered) */
#else
#define MPCC_COMPAT_CA_BOUND
#endif

#define MPCC_COMPAT_CA_TAIL                                                                     \
	__u32 cwnd_left;      /* snd_cwnd as the last cong_avoid left it (the window-jump check) */ \
	__u32 prev_delivered; /* tp->delivered at the last cong_control */                      \
	__u32 prev_lost;      /* tp->lost at the last cong_control */                           \
	__u32 prev_snd_una;   /* tp->snd_una at the last cong_control */                        \
	__u32 prr_delivered;  /* packets delivered in this reduction episode */                 \
	__u32 ep_high_seq;    /* tp->high_seq when the episode began (tcp_init_cwnd_reduction) */ \
	__u32 ep_prior_cwnd;  /* tp->prior_cwnd when it began */                                \
	MPCC_COMPAT_CA_BOUND

#endif /* MPCC_COMPAT_CA_H */
