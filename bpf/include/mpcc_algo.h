/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * mpcc_algo.h — the one header an algorithm file (bpf/<algorithm>.bpf.c) includes. The file
 * compiles two ways from the same source:
 *
 *   clang -target bpf  → a tcp_congestion_ops struct_ops object (the glue: mpcc_kern.h);
 *   cc -shared         → a host library with the flat C ABI of mpcc_host.h, which the tests
 *                        check against spec/vectors/algorithms.json.
 *
 * An algorithm file, in this order:
 *
 *   #define MPCC_KERNEL_NAME mpcc_foo      kernel name with the default parameters (≤ 15 chars)
 *   #define MPCC_PARAMS(P) P(a, Q32, 1.0, 0.00390625, 65536)     (optional; see below)
 *   #define MPCC_OWN_ROUTE 1               (optional) I_r reads route r only: no subflow walk
 *   #define MPCC_LOSS_INTERVAL 1           (optional) the rule reads c->ell (OLIA's ℓ)
 *   #define MPCC_MIN_CWND_MULTIPATH 1      (optional) ssthresh floor with > 1 route (default 2)
 *   #define MPCC_MIN_CWND_SINGLE 1         (optional) ssthresh floor with 1 route (default 2)
 *   #define MPCC_PERIODIC 1                (optional) the file has a periodic update rule
 *                                          mpcc_on_update (FAST; c->base_rtt, c->w_old)
 *   #define MPCC_ADAPT 1                   (optional, with MPCC_PERIODIC) and a slow-timescale
 *                                          rule mpcc_on_adapt (FAST's Algorithm 2; c->adapted)
 *   #define MPCC_PER_ACK_MODE 1            (optional) a FLAG parameter per_ack selects the
 *                                          file's per-ACK update (OLIA; MPCC_PER_ACK(p))
 *   #include "mpcc_algo.h"
 *   MPCC_RULE __s64 mpcc_on_ack(const struct mpcc_conn *c, __u32 r, const struct mpcc_params *p)
 *   MPCC_RULE __u64 mpcc_on_loss(const struct mpcc_conn *c, __u32 r, const struct mpcc_params *p)
 *   (MPCC_PERIODIC: mpcc_on_update, mpcc_update_interval_us; MPCC_ADAPT: mpcc_on_adapt,
 *    mpcc_adapt_interval_us)
 *   #ifdef __bpf__: the struct_ops programs and the ops table, written out as in bpf_cubic.c:
 *       SEC("struct_ops") void BPF_PROG(foo_init, struct sock *sk) { mpcc_init(sk); }
 *       ... foo_cong_avoid → mpcc_cong_avoid, foo_ssthresh → mpcc_ssthresh,
 *           foo_undo_cwnd → mpcc_undo_cwnd (mpcc_kern.h) ...
 *       SEC(".struct_ops") struct tcp_congestion_ops MPCC_KERNEL_SYM = {
 *               .init = (void *)foo_init, .cong_avoid = ..., .ssthresh = ..., .undo_cwnd = ...,
 *               MPCC_COMPAT_OPS .name = MPCC_KERNEL_STR, };
 *     (MPCC_COMPAT_OPS is empty in the default build and adds the compat layer's programs in
 *     the compat build, bpf/compat/.)
 *
 * A file whose kernel side keeps state or does more than the shared callbacks (OLIA, FAST)
 * declares, before the include: MPCC_ALGO_CA, its fields of the per-subflow struct mpcc_ca (the
 * socket's congestion-control area); MPCC_INIT / MPCC_CONG_AVOID / MPCC_SSTHRESH, the names of
 * its own init / cong_avoid / ssthresh bodies (which call the shared ones), which its programs
 * and the compat layer then call; MPCC_ROUTE_SELF / MPCC_ROUTE_SIBLING, what it reads of each
 * route in the subflow walk besides window and RTT (mpcc_walk.h).
 *
 * Parameters. P(name, encoding, default, min, max), one per parameter: the rules read p->name,
 * a __u64 in the encoding
 *     Q32   value · 2^32, rounded (a real number in [min, max]);
 *     NORM  n of ‖x‖_n: 1, 2, or INF (stored as 0);
 *     FLAG  0 or 1 (a switch of the kernel side, such as per_ack; not a parameter of the rule).
 * The loader (python/mpcc/kernel/bpf.py) reads the same lines, checks a requested value
 * against [min, max], and compiles one object per parameter set with the encoded values as
 * -DMPCC_PARAM_VALUES=v1,…,0 and its kernel name as -DMPCC_KERNEL_SYM=… (bpftool cannot set
 * .rodata before registering; docs/kernel.md). Without them, the file's defaults and
 * MPCC_KERNEL_NAME are used.
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
MPCC_RULE __u64 mpcc_on_update(const struct mpcc_conn *c, __u32 r, const struct mpcc_params *p);
MPCC_RULE __u64 mpcc_update_interval_us(const struct mpcc_params *p);
#endif
#if MPCC_ADAPT
MPCC_RULE __u64 mpcc_on_adapt(const struct mpcc_adapt_in *a, const struct mpcc_params *p);
MPCC_RULE __u64 mpcc_adapt_interval_us(const struct mpcc_params *p);
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
