/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mpcc_conn.h — what a congestion control can do about upstream MPTCP's connection level
 * (docs/testbed.md "The connection level"), for every multipath algorithm file. Upstream's
 * default scheduler (net/mptcp/protocol.c mptcp_subflow_get_send) queues bursts of up to 64 KB on
 * the subflow with the least linger time sk_wmem_queued / avg_pacing_rate, whatever its window;
 * data leaves the connection's send buffer (the sum of the subflows' sk_sndbuf,
 * __mptcp_sync_sndbuf) only when the connection-level ACK passes it. Three mechanisms, each a bit
 * of MPCC_CONN (a load-time variant: MPCC_BPF_CONN, python/mpcc/kernel/sources.py), 0 = none:
 *
 *   MPCC_CONN_SNDBUF    sndbuf_expand: the factor tcp_sndbuf_expand() multiplies by
 *                       max(cwnd, 10, reordering + 1) · per-MSS truesize, from the connection's
 *                       windows: 2 · MPCC_CONN_SNDBUF_MARGIN · Σ_k max(w_k, 10) / max(w_r, 10).
 *                       Upstream calls it when the subflow is established
 *                       (tcp_init_buffer_space) and from tcp_new_space() at an ACK after which
 *                       the window is not full while the writer waits (SOCK_NOSPACE on the
 *                       MPTCP socket, which is every subflow's sk_socket: mptcp_sock_graft);
 *                       the buffer never shrinks. Off: not in the ops table (the kernel's
 *                       factor 2).
 *   MPCC_CONN_PACING    the pacing rate the scheduler reads: a subflow's sk_pacing_rate scaled by
 *                       x_r / max_k x_k (x = w / srtt), so its linger time is that of the
 *                       connection's fastest route. bpf_tcp_ca lets a program write
 *                       sk_pacing_rate (Linux ≥ 6.0: 6.1, 6.12, 6.18), but without cong_control
 *                       the kernel's tcp_update_pacing_rate() overwrites it after cong_avoid on
 *                       every ACK (tcp_cong_control): it takes effect in the compat build only,
 *                       whose cong_control calls mpcc_conn_pacing after its own pacing update.
 *   MPCC_CONN_PENALISE  out-of-tree MPTCP v0.9x's penalisation (mptcp_rcv_buf_optimization): a
 *                       subflow that holds the connection back — the connection's send buffer
 *                       not writeable (sk_stream_is_writeable: queued > 2/3 of sk_sndbuf), this
 *                       subflow with data out and the longest queue in time (queued bytes ·
 *                       srtt / cwnd) of the connection, and another subflow below its window —
 *                       halves its window (ssthresh too unless in slow start), at most once per
 *                       srtt and only in TCP_CA_Open, judged in its own cong_avoid. Upstream
 *                       cannot tell which subflow carries the data at the connection-level ACK;
 *                       the longest queue in time is the subflow that frees it last. In either
 *                       build its view of the connection lives in a one-entry per-CPU array
 *                       (mpcc_conn_scratch), not on the stack: the chain cong_control →
 *                       cong_avoid → it → the walk must stay within the verifier's 512 bytes.
 *
 * No mechanism changes the rule's arithmetic (mpcc_on_ack / mpcc_on_loss, spec/vectors): they
 * act beside it. The walk here is read-only, with CO-RE probe reads as mpcc_walk.h's.
 */
#ifndef MPCC_CONN_H
#define MPCC_CONN_H

#ifndef MPCC_CONN
#define MPCC_CONN 0
#endif
#define MPCC_CONN_SNDBUF 1
#define MPCC_CONN_PACING 2
#define MPCC_CONN_PENALISE 4
#ifndef MPCC_CONN_SNDBUF_MARGIN
#define MPCC_CONN_SNDBUF_MARGIN 16
#endif
/* tcp_sndbuf_expand()'s factor without a sndbuf_expand callback */
#define MPCC_CONN_KERNEL_EXPAND 2

#if MPCC_CONN
/* The connection as the scheduler sees it: per subflow that can send, its window, srtt (1/8 µs),
 * packets out and queued bytes (sk_wmem_queued); the MPTCP socket's queued bytes and buffer. */
struct mpcc_conn_view {
	__u32 n, self;
	__u32 cwnd[MPCC_MAX_ROUTES];
	__u32 srtt[MPCC_MAX_ROUTES];
	__u32 out[MPCC_MAX_ROUTES];
	__u32 queued[MPCC_MAX_ROUTES];
	__u32 msk_queued, msk_sndbuf;
};

/* Fill v from the MPTCP connection of the subflow whose struct mptcp_subflow_context is at
 * sf_addr (the subflows mpcc_gather counts by state and join, without its RTT-sample and silence
 * tests: the scheduler sees them all); v->self is the route of that context. 0, or -1 when it is
 * not on the connection's list. A global subprogram (verified once, whatever calls it): it takes
 * the context as an address (a scalar, as a global function's argument must be) and reads
 * everything with CO-RE probe reads. Callers use mpcc_conn_view. */
__noinline int mpcc_conn_walk(__u64 sf_addr, struct mpcc_conn_view *v)
{
	struct mptcp_subflow_context *sf = (struct mptcp_subflow_context *)sf_addr, *ctx;
	struct mptcp_sock *msk;
	struct list_head *head, *pos;
	__u32 i, found = 0;

	if (!v)
		return -1;
	v->n = 0;
	v->self = 0;
	if (!sf)
		return -1;
	msk = (struct mptcp_sock *)BPF_CORE_READ(sf, conn);
	if (!msk)
		return -1;
	v->msk_queued = BPF_CORE_READ((struct sock *)msk, sk_wmem_queued);
	v->msk_sndbuf = BPF_CORE_READ((struct sock *)msk, sk_sndbuf);
	head = (struct list_head *)__builtin_preserve_access_index(&msk->conn_list);
	pos = BPF_CORE_READ(msk, conn_list.next);
	for (i = 0; i < MPCC_MAX_ROUTES; i++) {
		struct sock *ssk;
		struct tcp_sock *stp;
		__u32 k = v->n & (MPCC_MAX_ROUTES - 1);

		if (!pos || pos == head)
			break;
		ctx = (struct mptcp_subflow_context *)((void *)pos -
			bpf_core_field_offset(struct mptcp_subflow_context, node));
		ssk = BPF_CORE_READ(ctx, tcp_sock);
		pos = BPF_CORE_READ(pos, next);
		if (!ssk)
			continue;
		if (ctx != sf) {
			if (!mpcc_subflow_active(ctx, ssk))
				continue;
		} else {
			v->self = k;
			found = 1;
		}
		stp = (struct tcp_sock *)ssk;
		v->cwnd[k] = BPF_CORE_READ(stp, snd_cwnd);
		v->srtt[k] = BPF_CORE_READ(stp, srtt_us);
		v->out[k] = BPF_CORE_READ(stp, packets_out);
		v->queued[k] = BPF_CORE_READ(ssk, sk_wmem_queued);
		v->n = k + 1;
	}
	return found ? 0 : -1;
}

/* v for sk's connection (mpcc_conn_walk); -1 when sk is not an MPTCP subflow. */
static __always_inline int mpcc_conn_view(struct sock *sk, struct mpcc_conn_view *v)
{
	if (!tcp_sk(sk)->is_mptcp)
		return -1;
	return mpcc_conn_walk((__u64)BPF_CORE_READ(inet_csk(sk), icsk_ulp_data), v);
}
#endif /* MPCC_CONN */

#if MPCC_CONN & MPCC_CONN_SNDBUF
/* sndbuf_expand(sk) (tcp_sndbuf_expand): MPCC_CONN_SNDBUF's factor (at least the kernel's 2). */
static __always_inline __u32 mpcc_conn_sndbuf_expand(struct sock *sk)
{
	struct mpcc_conn_view v = {};
	__u64 sum = 0, self, f;
	__u32 i;

	if (mpcc_conn_view(sk, &v) < 0)
		return MPCC_CONN_KERNEL_EXPAND;
	for (i = 0; i < MPCC_MAX_ROUTES && i < v.n; i++)
		sum += v.cwnd[i] > 10 ? v.cwnd[i] : 10;
	self = v.cwnd[v.self & (MPCC_MAX_ROUTES - 1)];
	self = self > 10 ? self : 10;
	f = 2 * MPCC_CONN_SNDBUF_MARGIN * sum / self;
	if (f < MPCC_CONN_KERNEL_EXPAND)
		f = MPCC_CONN_KERNEL_EXPAND;
	return f > 0xffff ? 0xffff : (__u32)f;
}
#endif

#if MPCC_CONN & MPCC_CONN_PACING
/* MPCC_CONN_PACING, after the pacing update: sk_pacing_rate · x_r / max_k x_k (x = w / srtt). */
static __noinline int mpcc_conn_pacing_set(struct sock *sk)
{
	struct mpcc_conn_view v = {};
	__u64 x, x_self, x_max = 0, more;
	__u32 i, s;

	if (!sk || mpcc_conn_view(sk, &v) < 0 || v.n < 2)
		return 0;
	s = v.self & (MPCC_MAX_ROUTES - 1);
	/* x = cwnd / srtt in packets per 2^-30 · (1/8 µs), < 2^44 (BPF: x / 0 = 0); the maximum
	 * branch-free (the sign of x_max − x), so the verifier walks one path */
	x_self = ((__u64)v.cwnd[s] << 30) / v.srtt[s];
	for (i = 0; i < MPCC_MAX_ROUTES; i++) {
		x = ((__u64)v.cwnd[i] << 30) / v.srtt[i];
		more = (__u64)((__s64)(x_max - x) >> 63);   /* all ones when x > x_max */
		x_max = (x & more) | (x_max & ~more);
	}
	if (!x_self || x_self >= x_max)
		return 0;                                 /* sk is the fastest route (or has no rate) */
	/* x_self / x_max in 2^-16 (x_self · 2^16 < 2^60), at least 2^-16 */
	sk->sk_pacing_rate = (sk->sk_pacing_rate * (((x_self << 16) / x_max) | 1)) >> 16;
	return 0;
}
#endif

/* The compat build's cong_control calls it after its pacing update (mpcc_control.h). */
static __always_inline void mpcc_conn_pacing(struct sock *sk)
{
#if MPCC_CONN & MPCC_CONN_PACING
	mpcc_conn_pacing_set(sk);
#endif
}

#if MPCC_CONN & MPCC_CONN_PENALISE
/* The time of a subflow's last penalisation (tcp_mstamp, low 32 bits; 0: never), in socket
 * storage: struct mpcc_ca stays as the rules and the compat layer lay it out. */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u32);
} mpcc_conn_penal SEC(".maps");

/* penalise's view of the connection: one entry per CPU, off the stack (header comment). A BPF
 * program excludes migration, not a softirq on its CPU: busy = 1 while a program uses the entry,
 * and a program that interrupts it finds it busy and skips this ACK (interrupts nest: the
 * interrupting program has finished before the interrupted one reads the entry again). */
struct mpcc_conn_scratch {
	struct mpcc_conn_view v;
	__u32 busy;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mpcc_conn_scratch);
} mpcc_conn_scratch SEC(".maps");

/* Whether sk is the subflow to penalise, from the connection's view v (mpcc_conn_walk). */
static __always_inline int mpcc_conn_penalise_due(struct sock *sk, struct mpcc_conn_view *v)
{
	__u64 t, t_self, longer = 0, idle = 0;
	__u32 i, s;

	if (mpcc_conn_view(sk, v) < 0 || v->n < 2)
		return 0;
	/* the connection's send buffer not writeable (sk_stream_is_writeable) */
	if ((__u64)v->msk_queued * 3 <= (__u64)v->msk_sndbuf * 2)
		return 0;
	s = v->self & (MPCC_MAX_ROUTES - 1);
	if (!v->out[s])
		return 0;
	/* queued bytes · srtt (µs) / cwnd: the time to drain the queue, < 2^60 (x / 0 = 0).
	 * Counted branch-free (signs of differences): routes with a longer one, routes below their
	 * window (sk itself is not: it runs cong_avoid, cwnd-limited or about to be); the entries
	 * past v->n are zero (the caller clears v), so they count as neither. */
	t_self = (__u64)v->queued[s] * (v->srtt[s] >> 3) / v->cwnd[s];
#pragma clang loop unroll(disable)	/* unrolled, its registers spill: 120 bytes more stack */
	for (i = 0; i < MPCC_MAX_ROUTES; i++) {
		t = (__u64)v->queued[i] * (v->srtt[i] >> 3) / v->cwnd[i];
		longer += (__u64)(t_self - t) >> 63;
		idle += (__u64)((__s64)v->out[i] - (__s64)v->cwnd[i]) >> 63;
	}
	idle -= (__u64)((__s64)v->out[s] - (__s64)v->cwnd[s]) >> 63;
	return !longer && idle;
}

/* MPCC_CONN_PENALISE, at the start of cong_avoid: see the header comment. */
static __noinline int mpcc_conn_penalise_run(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct mpcc_conn_scratch *sc;
	__u32 *last, now, prior, zero = 0;
	int due;

	if (!sk || !tp->is_mptcp || BPF_CORE_READ_BITFIELD_PROBED(inet_csk(sk), icsk_ca_state) != TCP_CA_Open)
		return 0;
	last = bpf_sk_storage_get(&mpcc_conn_penal, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!last)
		return 0;
	now = (__u32)tp->tcp_mstamp;
	if (*last && now - *last < (tp->srtt_us >> 3))
		return 0;
	sc = bpf_map_lookup_elem(&mpcc_conn_scratch, &zero);
	if (!sc || sc->busy)
		return 0;
	sc->busy = 1;
	__builtin_memset(&sc->v, 0, sizeof(sc->v));
	due = mpcc_conn_penalise_due(sk, &sc->v);
	sc->busy = 0;
	if (!due)
		return 0;
	prior = tp->snd_cwnd;
	tp->snd_cwnd = prior > 2 ? prior >> 1 : 1;
	if (prior >= tp->snd_ssthresh)                         /* not in slow start */
		tp->snd_ssthresh = tp->snd_ssthresh > 4 ? tp->snd_ssthresh >> 1 : 2;
	*last = now ? now : 1;
	return 0;
}
#endif

/* mpcc_cong_avoid calls it first for an MPTCP subflow (mpcc_kern.h). */
static __always_inline void mpcc_conn_on_cong_avoid(struct sock *sk)
{
#if MPCC_CONN & MPCC_CONN_PENALISE
	mpcc_conn_penalise_run(sk);
#endif
}

#if MPCC_CONN & MPCC_CONN_SNDBUF
/* sndbuf_expand in the ops table of every algorithm file (MPCC_CONN_OPS, beside
 * MPCC_COMPAT_OPS) when MPCC_CONN_SNDBUF is on; without it the table is as before and the kernel
 * uses its own factor. */
SEC("struct_ops")
__u32 BPF_PROG(mpcc_conn_sndbuf, struct sock *sk)
{
	return mpcc_conn_sndbuf_expand(sk);
}

#define MPCC_CONN_OPS .sndbuf_expand = (void *)mpcc_conn_sndbuf,
#else
#define MPCC_CONN_OPS
#endif

#endif /* MPCC_CONN_H */
