/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * mpcc_algo.h — the one header an algorithm file (bpf/<algorithm>.bpf.c) includes. The same
 * source builds a tcp_congestion_ops struct_ops object (clang -target bpf; glue: mpcc_kern.h)
 * and a host library (cc -shared; mpcc_host.h) tested against spec/vectors/algorithms.json.
 * The file's shape (docs/kernel.md, "Design of the kernel side"), defines before the include:
 *
 *   MPCC_KERNEL_NAME mpcc_foo        kernel name with the default parameters (≤ 15 chars)
 *   MPCC_PARAMS(P) P(name, enc, default, min, max) ...   (optional; encodings below)
 *   MPCC_OWN_ROUTE 1                 I_r reads route r only: no subflow walk
 *   MPCC_LOSS_INTERVAL 1             the rule reads c->ell (OLIA's ℓ)
 *   MPCC_MIN_CWND_MULTIPATH / _SINGLE   ssthresh floor with > 1 / 1 route (default 2)
 *   MPCC_PERIODIC 1, MPCC_ADAPT 1    a periodic update rule / a slow-timescale rule (FAST;
 *                                    mpcc_periodic.h)
 *   MPCC_PER_ACK_MODE 1              a FLAG parameter per_ack selects the per-ACK update (OLIA)
 *   MPCC_ALGO_CA, MPCC_INIT, MPCC_CONG_AVOID, MPCC_SSTHRESH, MPCC_ROUTE_SELF,
 *   MPCC_ROUTE_SIBLING               the kernel side's own state and callbacks (mpcc_kern.h,
 *                                    mpcc_walk.h)
 *
 * then the rules mpcc_on_ack / mpcc_on_loss and, under __bpf__, the struct_ops programs and the
 * ops table as in bpf_cubic.c, ending in MPCC_COMPAT_OPS (empty in the default build).
 *
 * Parameter encodings (the rules read p->name, a __u64): Q32 = value · 2^32 rounded; NORM = n of
 * ‖x‖_n, 1, 2 or INF (stored 0); FLAG = 0 or 1. The loader compiles one object per parameter set
 * with -DMPCC_PARAM_VALUES=v1,…,0 and -DMPCC_KERNEL_SYM=… (bpftool cannot set .rodata before
 * registering); without them, the defaults and MPCC_KERNEL_NAME.
 */
#ifndef MPCC_ALGO_H
#define MPCC_ALGO_H

#ifndef MPCC_KERNEL_NAME
#error "an algorithm file defines MPCC_KERNEL_NAME before including mpcc_algo.h"
#endif
#ifndef MPCC_PARAMS
#define MPCC_PARAMS(P)
#endif
#ifndef MPCC_OWN_ROUTE
#define MPCC_OWN_ROUTE 0
#endif
#ifndef MPCC_LOSS_INTERVAL
#define MPCC_LOSS_INTERVAL 0
#endif
#ifndef MPCC_MIN_CWND_MULTIPATH
#define MPCC_MIN_CWND_MULTIPATH 2
#endif
#ifndef MPCC_MIN_CWND_SINGLE
#define MPCC_MIN_CWND_SINGLE 2
#endif
#ifndef MPCC_PERIODIC
#define MPCC_PERIODIC 0
#endif
#ifndef MPCC_PER_ACK_MODE
#define MPCC_PER_ACK_MODE 0
#endif
#ifndef MPCC_ADAPT
#define MPCC_ADAPT 0
#endif
#if MPCC_ADAPT && !MPCC_PERIODIC
#error "MPCC_ADAPT needs MPCC_PERIODIC (the adaptation samples the queue at each periodic update)"
#endif
#ifndef MPCC_KERNEL_SYM
#define MPCC_KERNEL_SYM MPCC_KERNEL_NAME
#endif

#ifdef __bpf__
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#endif
#include "mpcc_math.h"

/* The algorithm's parameters in the order of MPCC_PARAMS (end_ keeps the struct non-empty). */
struct mpcc_params {
#define MPCC_PARAM_FIELD(name, enc, dflt, lo, hi) __u64 name;
	MPCC_PARAMS(MPCC_PARAM_FIELD)
#undef MPCC_PARAM_FIELD
	__u64 end_;
};

#define MPCC_ENC_Q32(v) ((__u64)((v) * 4294967296.0 + 0.5))
#define MPCC_NORM_1 1
#define MPCC_NORM_2 2
#define MPCC_NORM_INF 0
#define MPCC_ENC_NORM(v) MPCC_NORM_##v
#define MPCC_ENC_FLAG(v) ((__u64)(v))
#ifndef MPCC_PARAM_VALUES
#define MPCC_PARAM_DEFAULT(name, enc, dflt, lo, hi) MPCC_ENC_##enc(dflt),
#define MPCC_PARAM_VALUES MPCC_PARAMS(MPCC_PARAM_DEFAULT) 0
#endif

/* The rule, defined by the algorithm file (I_r in packets · 2^MPCC_INC_SHIFT, D_r in
 * packets · 2^MPCC_CWND_SHIFT; units of struct mpcc_conn in mpcc_math.h). In BPF each is a
 * global subprogram, verified once for any arguments: it starts with
 *     if (!mpcc_route_ok(c, r, p)) return 0;
 * which bounds r for the verifier and uses every argument (clang passes an undefined value for
 * an argument the function never reads, which the verifier rejects). */
#define MPCC_RULE MPCC_FN
MPCC_RULE __s64 mpcc_on_ack(const struct mpcc_conn *c, __u32 r, const struct mpcc_params *p);
MPCC_RULE __u64 mpcc_on_loss(const struct mpcc_conn *c, __u32 r, const struct mpcc_params *p);
#if MPCC_PERIODIC
#include "mpcc_periodic.h"
#endif

/* The per-ACK update is on (MPCC_PER_ACK_MODE files only: they declare P(per_ack, FLAG, ...)). */
#if MPCC_PER_ACK_MODE
#define MPCC_PER_ACK(p) ((p)->per_ack != 0)
#else
#define MPCC_PER_ACK(p) ((void)(p), 0)
#endif

MPCC_INLINE int mpcc_route_ok(const struct mpcc_conn *c, __u32 r, const struct mpcc_params *p)
{
	return c && p && r < MPCC_MAX_ROUTES && r < c->n;
}

/* Smallest window after a loss, in packets (Linux's ssthresh floor 2; Peng et al. §V use 1 for
 * Coupled and Balia when the connection has more than one route; Jiang et al.'s MSTCP/MTCP 1). */
MPCC_INLINE __u32 mpcc_min_cwnd(__u32 n_routes)
{
	return n_routes > 1 ? MPCC_MIN_CWND_MULTIPATH : MPCC_MIN_CWND_SINGLE;
}

#ifdef __bpf__
#include "mpcc_kern.h"
#else
#include "mpcc_host.h"
#endif

#endif /* MPCC_ALGO_H */
