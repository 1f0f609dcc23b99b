/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The compat layer's records (included by mpcc_kern.h in the compat build, once the socket
 * accessors and struct mpcc_ca are defined):
 *   - mpcc_health (always on in the compat build, 16 counters): how often the compat layer
 *     repaired a value or found evidence of a skipped program since the load, by kind below
 *     (python/mpcc/kernel/bpf.py health_counters() reads it);
 *   - with -DMPCC_DIAG=1 (a load-time option, off by default; the loader's diag=True), the
 *     diagnostic maps: mpcc_jumps, a ring of the window jumps and repairs with the TCP state
 *     around them (bench/kernel/churn.py); mpcc_trace / mpcc_trace_on, the opt-in trace of the
 *     last computation, which tests/kernel/test_bpf_kernel.py compares with the host build bit
 *     for bit; mpcc_seen, the opt-in record of the subflows the coupled rule last summed over,
 *     which bench/kernel/churn.py compares with the MPTCP diag view.
 */
#ifndef MPCC_RECORDS_H
#define MPCC_RECORDS_H

#include "mpcc_counter.h"   /* the trace record of the per-ACK update */

/* Window-jump check (always on, records only on a violation): snd_cwnd more than doubled (+64)
 * since the last cong_avoid left it, beyond what an undo may restore (prior_cwnd), or within one
 * cong_avoid. Each violation is recorded with the TCP state around it in mpcc_jumps (a ring of
 * MPCC_JUMPS entries; bench/kernel/churn.py reads it). A slow-start step that more than doubles
 * the window is the kernel's own rule (tcp_slow_start adds every packet delivered, up to
 * ssthresh) when that many packets were delivered since our last cong_control: a DSACK of a
 * go-back-N burst after a timeout (each spurious retransmission counts as delivered), a stretch
 * ACK, or several ACKs' worth when the platform skipped runs; it is a
 * fault (kind 2) only when the count exceeds what can have been delivered (mpcc_delivered_bound),
 * i.e. our delivered count is stale, and is otherwise recorded apart (kind 7). Kind 8 records an
 * init that did not run (the area still zero at cong_control), done there (mpcc_late_init).
 * Kind 9: a delivered count above that bound, which cong_control replaced with the bound (acked:
 * the count). */
#ifndef MPCC_DIAG
#define MPCC_DIAG 0
#endif
#define MPCC_JUMPS 64
enum { MPCC_JUMP_BETWEEN = 1, MPCC_JUMP_SLOW_START = 2, MPCC_JUMP_RULE = 3, MPCC_JUMP_SSTHRESH = 4,
       MPCC_JUMP_REPAIRED = 5, MPCC_JUMP_CWND_REPAIRED = 6, MPCC_JUMP_DELIVERED = 7,
       MPCC_JUMP_LATE_INIT = 8, MPCC_JUMP_CLAMPED = 9 };
struct mpcc_jump {
	__u64 ktime_ns;
	__u32 kind, lport;
	__u32 cwnd_before, cwnd_after, ssthresh, prior_cwnd, prior_ssthresh, ca_state;
	__u32 packets_out, sacked_out, lost_out, retrans_out, prr_delivered, prr_out, acked, count;
	__u32 bound;     /* mpcc_delivered_bound() at the record (0 for MPCC_PERIODIC) */
	__u32 segs_in;   /* segments received since the last cong_control (1 = this ACK alone) */
	__u32 dsack;     /* duplicates DSACKed since then (tp->dsack_dups; in bound) */
	__u32 una_bytes; /* bytes cumulatively ACKed since then (snd_una) */
	__u32 prev_out;  /* tp->packets_out at the end of the last cong_control (in bound) */
};

/* mpcc_health: entry k (1..9) counts records of kind k; MPCC_HEALTH_UNSEEN_RUNS the runs that
 * found packets delivered by ACKs that reached no cong_control of ours, MPCC_HEALTH_UNSEEN_PKTS
 * those packets, MPCC_HEALTH_NO_RS the runs that could not read the rate sample. */
enum { MPCC_HEALTH_UNSEEN_RUNS = 10, MPCC_HEALTH_UNSEEN_PKTS = 11, MPCC_HEALTH_NO_RS = 12,
       MPCC_HEALTH_N = 16 };

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MPCC_HEALTH_N);
	__type(key, __u32);
	__type(value, __u64);
} mpcc_health SEC(".maps");

static __always_inline void mpcc_health_add(__u32 key, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&mpcc_health, &key);

	if (v)
		__sync_fetch_and_add(v, n);
}

#if MPCC_DIAG
/* struct mpcc_ca in the object's BTF, so that a reader of a socket's CA area (bpftrace in
 * tests/kernel/test_cong_control.py) finds each field's offset there; holds nothing. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mpcc_ca);
} mpcc_ca_layout SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MPCC_JUMPS + 6);     /* entries MPCC_JUMPS + 0..3: .count = records seen;
						  * of them, repairs (kinds 5, 6); deliveries since
						  * the last run (kind 7); late inits (kind 8);
						  * + 4: mpcc_unseen's counts; + 5: kind 9 */
	__type(key, __u32);
	__type(value, struct mpcc_jump);
} mpcc_jumps SEC(".maps");

/* Opt-in trace of the last computation (tests/kernel/test_bpf_kernel.py checks that the kernel's
 * I_r and D_r are bit-identical to the host build of the same algorithm file for the inputs the
 * kernel saw). Off unless mpcc_trace_on[0] != 0; entry 0 = last on_ack (multi-route, or any with
 * MPCC_OWN_ROUTE), 1 = last on_loss (multi-route), 2 = last periodic update (MPCC_PERIODIC;
 * the new window, packets · 2^32, in dec; c->adapted in adapted; c->w_old in w_old), 3 = last slow-timescale
 * adaptation (MPCC_ADAPT; the five fields of struct mpcc_adapt_in in cwnd[0..4], the result in
 * dec). In the per-ACK update (MPCC_PER_ACK), entry 0 has per_ack = 1 and dec = the counter
 * increment of inc (mpcc_counter_increment, two's complement). */
struct mpcc_trace {
	struct bpf_spin_lock lock;
	__u32 n;
	__u32 self;
	__u32 ssthresh;
	__u32 per_ack;
	__u64 cwnd[MPCC_MAX_ROUTES];
	__u64 rtt[MPCC_MAX_ROUTES];
	__u64 ell[MPCC_MAX_ROUTES];
	__u64 base_rtt[MPCC_MAX_ROUTES];
	__s64 inc;
	__u64 dec;
	__u64 samples;
	__u64 adapted;
	__u64 w_old;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} mpcc_trace_on SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, struct mpcc_trace);
} mpcc_trace SEC(".maps");

static __always_inline void mpcc_record(__u32 kind, const struct mpcc_conn *c, __u32 self,
					__s64 inc, __u64 dec, __u32 ssthresh, __u32 min_routes, __u32 per_ack)
{
	__u32 zero = 0, *on = bpf_map_lookup_elem(&mpcc_trace_on, &zero);
	struct mpcc_trace *t;
	__u32 k;

	if (!on || !*on || c->n < min_routes)
		return;
	t = bpf_map_lookup_elem(&mpcc_trace, &kind);
	if (!t)
		return;
	bpf_spin_lock(&t->lock);      /* irqs off: no torn record across CPUs or contexts */
	t->n = c->n;
	t->self = self;
	t->inc = inc;
	t->dec = dec;
	t->ssthresh = ssthresh;
	t->per_ack = per_ack;
	for (k = 0; k < MPCC_MAX_ROUTES; k++) {
		t->cwnd[k] = c->cwnd[k];
		t->rtt[k] = c->rtt[k];
#if MPCC_LOSS_INTERVAL
		t->ell[k] = c->ell[k];
#endif
#if MPCC_PERIODIC
		t->base_rtt[k] = c->base_rtt[k];
#endif
	}
#if MPCC_PERIODIC
	t->adapted = c->adapted;
	t->w_old = c->w_old;
#endif
	t->samples++;
	bpf_spin_unlock(&t->lock);
}

#if MPCC_ADAPT
static __always_inline void mpcc_record_adapt(const struct mpcc_adapt_in *a, __u64 out)
{
	__u32 zero = 0, kind = 3, *on = bpf_map_lookup_elem(&mpcc_trace_on, &zero);
	struct mpcc_trace *t;

	if (!on || !*on)
		return;
	t = bpf_map_lookup_elem(&mpcc_trace, &kind);
	if (!t)
		return;
	bpf_spin_lock(&t->lock);
	t->n = 1;
	t->cwnd[0] = a->value;
	t->cwnd[1] = a->q_sum;
	t->cwnd[2] = a->q_n;
	t->cwnd[3] = a->lost;
	t->cwnd[4] = a->sent;
	t->dec = out;
	t->samples++;
	bpf_spin_unlock(&t->lock);
}
#endif
/* Opt-in record of the set of subflows the coupled rule last summed over, per MPTCP connection
 * (key: the connection's local token, as `ss -M` and the MPTCP diag show it), when
 * mpcc_trace_on[0] != 0. bench/kernel/churn.py --trace compares it with the kernel's own view
 * (ss: the subflows in state ESTABLISHED/CLOSE_WAIT that are not a pending join) at the same instant;
 * a route the walk left out as silent (mpcc_route_silent) is listed apart, with its port.
 * An LRU map: at most MPCC_SEEN_CONNS connections are remembered, freed with the struct_ops.
 * The record is filled in per-CPU scratch during the walk; a walk interrupted on its CPU by
 * another (softirq, or preemption in process context) would mix two connections' subflows, so
 * mpcc_gather drops a record whose scratch was refilled meanwhile (seen in the soaks: 3 of ~54,000
 * records each for balia and olia held a port of another connection). */
#define MPCC_SEEN_CONNS 4096
struct mpcc_seen {
	__u64 ktime_ns;                 /* bpf_ktime_get_ns() (CLOCK_MONOTONIC) of the walk */
	__u32 n;                        /* routes counted */
	__u32 self;                     /* index of the subflow running the callback */
	__u32 lport[MPCC_MAX_ROUTES];   /* local port of each counted subflow */
	__u32 cwnd[MPCC_MAX_ROUTES];    /* its snd_cwnd (packets) as read */
	__u32 srtt[MPCC_MAX_ROUTES];    /* its srtt_us (1/8 µs) as read */
	__u32 silent[MPCC_MAX_ROUTES];  /* local port of each route the walk found silent and did not
					 * count (mpcc_walk.h), at its list position; 0 elsewhere */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, MPCC_SEEN_CONNS);
	__type(key, __u32);
	__type(value, struct mpcc_seen);
} mpcc_seen SEC(".maps");

struct {                                /* the record being filled (too big for the BPF stack) */
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mpcc_seen);
} mpcc_seen_scratch SEC(".maps");

/* Torn-record check of the mpcc_seen record: the record is per-CPU scratch; another walk on this
 * CPU (a softirq's, or after preemption in process context) may refill it meanwhile. */
static __always_inline struct mpcc_seen *mpcc_seen_begin(__u64 *walk_start)
{
	__u32 zero = 0, *trace_on = bpf_map_lookup_elem(&mpcc_trace_on, &zero);
	struct mpcc_seen *seen;

	if (!trace_on || !*trace_on)
		return NULL;
	seen = bpf_map_lookup_elem(&mpcc_seen_scratch, &zero);
	if (seen) {   /* marks the per-CPU record as this walk's */
		seen->ktime_ns = *walk_start = bpf_ktime_get_ns();
		__builtin_memset(seen->silent, 0, sizeof(seen->silent));
	}
	return seen;
}

/* The walk's record, kept unless it was torn (see above). */
static __always_inline void mpcc_seen_end(struct mpcc_seen *seen, __u64 walk_start,
					  const struct mpcc_conn *c, __u32 self, struct mptcp_sock *msk)
{
	__u32 token, i;
	__u64 now;

	if (!seen || seen->ktime_ns != walk_start)
		return;
	token = BPF_CORE_READ(msk, token);
	now = bpf_ktime_get_ns();
	seen->ktime_ns = now;
	seen->n = c->n;
	seen->self = self;
	for (i = 0; i < MPCC_MAX_ROUTES; i++) {
		seen->cwnd[i] = (__u32)(c->cwnd[i] >> MPCC_CWND_SHIFT);
		seen->srtt[i] = (__u32)c->rtt[i];
	}
	bpf_map_update_elem(&mpcc_seen, &token, seen, BPF_ANY);
	if (seen->ktime_ns != now)   /* refilled while being copied */
		bpf_map_delete_elem(&mpcc_seen, &token);
}

#define MPCC_TRACE(...) mpcc_record(__VA_ARGS__)
#define MPCC_TRACE_ADAPT(a, out) mpcc_record_adapt(a, out)
#define MPCC_WALK_BEGIN(msk) __u64 walk_start = 0; struct mpcc_seen *seen = mpcc_seen_begin(&walk_start)
#define MPCC_WALK_PORT(k, port) do { if (seen) seen->lport[(k) & (MPCC_MAX_ROUTES - 1)] = (port); } while (0)
/* at the list position: a counter of its own multiplied the states the verifier walks past its
 * 1,000,000-instruction limit (balia, 6.18) */
#define MPCC_WALK_SILENT(i, port) do { if (seen) seen->silent[(i) & (MPCC_MAX_ROUTES - 1)] = (port); } while (0)
#define MPCC_WALK_END(c, self, msk) mpcc_seen_end(seen, walk_start, c, self, msk)
#else /* !MPCC_DIAG */
#define MPCC_TRACE(...) do { } while (0)
#define MPCC_TRACE_ADAPT(a, out) do { } while (0)
#define MPCC_WALK_BEGIN(msk) do { } while (0)
#define MPCC_WALK_PORT(k, port) do { } while (0)
#define MPCC_WALK_SILENT(i, port) do { } while (0)
#define MPCC_WALK_END(c, self, msk) do { } while (0)
#endif /* MPCC_DIAG */

#if !MPCC_PERIODIC
/* The packets that can have been delivered since the last cong_control: those outstanding at its
 * end, every data segment sent since, and the duplicates DSACKed since (tcp_dsack_seen counts a
 * spuriously retransmitted segment as delivered once more, however long ago it was sent: one DSACK
 * block can add hundreds), + 1 for the SYN-ACK (tcp_rcv_state_process counts its delivery on the
 * passive side). */
static __always_inline __u32 mpcc_delivered_bound(const struct tcp_sock *tp, const struct mpcc_ca *ca)
{
	return ca->prev_packets_out + (tp->data_segs_out - ca->prev_data_segs) +
	       (tp->dsack_dups - ca->prev_dsack_dups) + 1;
}
#endif

/* A record of kind `kind`: counted in mpcc_health; with MPCC_DIAG also written to the ring. */
static __noinline void mpcc_jump(struct sock *sk, __u32 kind, __u32 before, __u32 acked)
{
	mpcc_health_add(kind & (MPCC_HEALTH_N - 1), 1);
#if MPCC_DIAG
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 key = MPCC_JUMPS, n;
	struct mpcc_jump *j = bpf_map_lookup_elem(&mpcc_jumps, &key);

	if (!j || !sk)
		return;
	n = j->count++;       /* racy across CPUs: a diagnostic ring, a lost slot is harmless */
	if (kind >= MPCC_JUMP_REPAIRED) {     /* counted apart: not a fault */
		__u32 rkey = kind == MPCC_JUMP_DELIVERED ? MPCC_JUMPS + 2 :
			     kind == MPCC_JUMP_LATE_INIT ? MPCC_JUMPS + 3 :
			     kind == MPCC_JUMP_CLAMPED ? MPCC_JUMPS + 5 : MPCC_JUMPS + 1;
		struct mpcc_jump *r = bpf_map_lookup_elem(&mpcc_jumps, &rkey);

		if (r)
			r->count++;
	}
	key = n & (MPCC_JUMPS - 1);
	j = bpf_map_lookup_elem(&mpcc_jumps, &key);
	if (!j)
		return;
	j->ktime_ns = bpf_ktime_get_ns();
	j->kind = kind;
	j->lport = sk->__sk_common.skc_num;
	j->cwnd_before = before;
	j->cwnd_after = tp->snd_cwnd;
	j->ssthresh = tp->snd_ssthresh;
	j->prior_cwnd = tp->prior_cwnd;
	j->prior_ssthresh = tp->prior_ssthresh;
	j->ca_state = BPF_CORE_READ_BITFIELD(inet_csk(sk), icsk_ca_state);
	j->packets_out = tp->packets_out;
	j->sacked_out = tp->sacked_out;
	j->lost_out = tp->lost_out;
	j->retrans_out = tp->retrans_out;
	j->prr_delivered = tp->prr_delivered;
	j->prr_out = tp->prr_out;
	j->acked = acked;
	j->count = n + 1;
	j->una_bytes = tp->snd_una - ((struct mpcc_ca *)inet_csk_ca(sk))->prev_snd_una;
#if !MPCC_PERIODIC
	j->bound = mpcc_delivered_bound(tp, inet_csk_ca(sk));
	j->segs_in = tp->segs_in - ((struct mpcc_ca *)inet_csk_ca(sk))->prev_segs_in;
	j->dsack = tp->dsack_dups - ((struct mpcc_ca *)inet_csk_ca(sk))->prev_dsack_dups;
	j->prev_out = ((struct mpcc_ca *)inet_csk_ca(sk))->prev_packets_out;
#else
	j->prev_out = 0;
	j->bound = 0;
	j->segs_in = 0;
	j->dsack = 0;
#endif
#endif /* MPCC_DIAG */
}

/* Packets delivered by ACKs that reached no cong_control of ours (tp->delivered moved by more
 * than the rate samples we were passed): an old ACK's SACKs or a DSACK with nothing in flight
 * (tcp_ack() returns before tcp_cong_control()), or a run the platform skipped.
 * Counted in mpcc_health; with MPCC_DIAG also in entry MPCC_JUMPS + 4 (.count = runs that found
 * some, .acked = the packets; both wrap); n = 0: a run that could not read the rate sample
 * (mpcc_rate_sample), counted in .bound instead. */
static __noinline void mpcc_unseen(__u32 n)
{
	if (!n)
		mpcc_health_add(MPCC_HEALTH_NO_RS, 1);
	else {
		mpcc_health_add(MPCC_HEALTH_UNSEEN_RUNS, 1);
		mpcc_health_add(MPCC_HEALTH_UNSEEN_PKTS, n);
	}
#if MPCC_DIAG
	__u32 key = MPCC_JUMPS + 4;
	struct mpcc_jump *r = bpf_map_lookup_elem(&mpcc_jumps, &key);

	if (!r)
		return;
	if (!n) {
		r->bound++;
		return;
	}
	r->count++;
	r->acked += n;
#endif
}

/* snd_cwnd more than doubled (+64): a window jump. */
static __always_inline int mpcc_jumped(__u32 before, __u32 after)
{
	return after > 2 * (__u64)before + 64;
}

/* What ssthresh() returns, noted in the CA area (ss_ret, and ss_calls counts the calls): a socket
 * left with another value at a state change did not run it (mpcc_repair_unwritten); an ssthresh
 * above the window it reduces is a window jump (kind 4). */
static __always_inline __u32 mpcc_ssthresh_ret(struct sock *sk, __u32 ss, __u32 w_seen)
{
	struct mpcc_ca *ca = inet_csk_ca(sk);

	if (w_seen && ss > tcp_sk(sk)->snd_cwnd && ss > 2)
		mpcc_jump(sk, MPCC_JUMP_SSTHRESH, tcp_sk(sk)->snd_cwnd, w_seen);
	ca->ss_ret = ss;
	ca->ss_calls++;
	return ss;
}
#define MPCC_SSTHRESH_RET(sk, ss, w_seen) mpcc_ssthresh_ret(sk, ss, w_seen)

/* The counters cong_control's next run takes its differences from (the rate sample's bound,
 * FLAG_SND_UNA_ADVANCED and the window-jump records): at init and at the end of each run. */
static __always_inline void mpcc_mark_counters(const struct tcp_sock *tp, struct mpcc_ca *ca)
{
	ca->prev_delivered = tp->delivered;
	ca->prev_lost = tp->lost;
	ca->prev_snd_una = tp->snd_una;
#if !MPCC_PERIODIC
	ca->prev_packets_out = tp->packets_out;
	ca->prev_data_segs = tp->data_segs_out;
	ca->prev_segs_in = tp->segs_in;
	ca->prev_dsack_dups = tp->dsack_dups;
#endif
}

/* The compat layer's part of init (mpcc_init). */
static __always_inline void mpcc_compat_init(struct sock *sk, struct mpcc_ca *ca)
{
	ca->cwnd_left = 0;
	ca->red = 0;
	ca->prr_delivered = 0;
	mpcc_mark_counters(tcp_sk(sk), ca);
	ca->inited = 1;
}

#endif /* MPCC_RECORDS_H */
