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
 *   #define MPCC_LOSS_INTERVAL 1           (optional) fill c->ell with OLIA's loss intervals
 *   #define MPCC_MIN_CWND_MULTIPATH 1      (optional) ssthresh floor with > 1 route (default 2)
 *   #define MPCC_MIN_CWND_SINGLE 1         (optional) ssthresh floor with 1 route (default 2)
 *   #define MPCC_PERIODIC 1                (optional) a periodic window update (below)
 *   #define MPCC_PER_ACK_MODE 1            (optional) the file has a FLAG parameter per_ack that
 *                                          selects the per-ACK window update (below)
 *   #define MPCC_ADAPT 1                   (optional, with MPCC_PERIODIC) a slow-timescale
 *                                          adaptation of one parameter (below)
 *   #define MPCC_WINDOW_HISTORY 1          (optional, with MPCC_PERIODIC) c->w_old for the
 *                                          periodic update (below)
 *   #include "mpcc_algo.h"
 *   MPCC_RULE __s64 mpcc_on_ack(const struct mpcc_conn *c, __u32 r, const struct mpcc_params *p)
 *   MPCC_RULE __u64 mpcc_on_loss(const struct mpcc_conn *c, __u32 r, const struct mpcc_params *p)
 *   MPCC_RULE __u64 mpcc_on_update(...)  and  MPCC_RULE __u64 mpcc_update_interval_us(...)
 *                                          (only with MPCC_PERIODIC)
 *   MPCC_RULE __u64 mpcc_on_adapt(const struct mpcc_adapt_in *a, const struct mpcc_params *p)
 *   and  MPCC_RULE __u64 mpcc_adapt_interval_us(...)  (only with MPCC_ADAPT)
 *   MPCC_STRUCT_OPS(foo);
 *
 * Periodic update (MPCC_PERIODIC 1; delay-based controls such as FAST TCP). Every
 * mpcc_update_interval_us(p) microseconds of the subflow's clock (checked on each ACK), the
 * window of route r becomes mpcc_on_update(c, r, p), packets · 2^MPCC_CWND_SHIFT, rounded to the
 * nearest packet; c->base_rtt[] holds each route's minimum RTT (kernel: tcp_min_rtt(), in the unit
 * of c->rtt). The update then owns the window outside loss recovery: there is no slow start (the
 * rule bounds its own growth), I_r is still added per ACK, an increase is applied only while the
 * subflow is cwnd-limited, and a decrease always. With MPCC_OWN_ROUTE the update (and I_r) also
 * run on a plain TCP socket; a loss still uses D_r.
 *
 * Per-ACK window update (MPCC_PER_ACK_MODE 1 and the parameter per_ack = 1; OLIA). The default
 * update adds I_r per acknowledged packet to a fractional accumulator that keeps its remainder
 * (Linux ≥ 4.0 counts acknowledged packets) and caches I_r between window changes. per_ack = 1
 * instead runs the update of the out-of-tree mptcp_olia.c (MPTCP v0.88, Linux 3.11; what Peng et
 * al. measured, and the simulator's WindowUpdate::FixedPoint): once per ACK whatever it
 * acknowledges, slow start (one packet per ACK) while w ≤ ssthresh, otherwise I_r computed afresh
 * on every ACK goes through the 2^-10-packet counter of mpcc_counter_step (mpcc_math.h), and a
 * sibling in fast recovery counts with its ssthresh (mptcp_get_crt_cwnd). The rule (I_r, D_r) is
 * the same in both modes.
 *
 * Slow-timescale adaptation (MPCC_ADAPT 1; Tang et al.'s Algorithm 2 for FAST). At each periodic
 * update the subflow adds one queueing-delay sample, srtt − baseRTT (≥ 0), to its interval; every
 * mpcc_adapt_interval_us(p) microseconds (0 = never: the option is off) it calls
 * mpcc_on_adapt with the interval's samples and its own counters (struct mpcc_adapt_in: packets
 * lost + CE-marked, tp->lost + tp->delivered_ce; packets sent, tp->data_segs_out) and keeps the
 * result as c->adapted, which every later mpcc_on_update reads. The state lives in the subflow's
 * congestion-control area (struct mpcc_ca), so it goes with the socket; per subflow, i.e. per
 * connection for a single-path flow. The BPF build of the file defines mpcc_adapt(sk, p, now),
 * which the periodic update calls (FAST's in bpf/fast.bpf.c).
 *
 * Window history (MPCC_WINDOW_HISTORY 1; FAST's w_old). Before each periodic update the glue sets
 * c->w_old = mpcc_history_w_old(sk, p) and c->base_rtt[self] = mpcc_history_base_rtt(sk, base)
 * (the route's baseRTT over its life, from the one of the current tcp_min_rtt), and after it calls
 * mpcc_history_push(sk, p, snd_cwnd) with the window the update left in force; mpcc_init calls
 * mpcc_history_init(sk). The BPF build of the file defines the four (FAST keeps the ring and the
 * least min RTT in a BPF socket-storage map).
 *
 * Parameters. P(name, encoding, default, min, max), one per parameter: the rules read p->name,
 * a __u64 in the encoding
 *     Q32   value · 2^32, rounded (a real number in [min, max]);
 *     NORM  n of ‖x‖_n: 1, 2, or INF (stored as 0);
 *     FLAG  0 or 1 (a switch of the kernel glue, such as per_ack; not a parameter of the rule).
 * The loader (python/mpcc/testbed/bpf.py) reads the same lines, checks a requested value
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
#ifndef MPCC_WINDOW_HISTORY
#define MPCC_WINDOW_HISTORY 0
#endif
#if MPCC_WINDOW_HISTORY && !MPCC_PERIODIC
#error "MPCC_WINDOW_HISTORY needs MPCC_PERIODIC (the history is of the periodic updates' windows)"
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
