/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mpcc_walk.h — the walk over the MPTCP connection's subflows (mpcc_gather) that fills struct
 * mpcc_conn for the rule. Included by mpcc_kern.h after the socket accessors and struct mpcc_ca.
 *
 * A subflow's icsk_ulp_data is its struct mptcp_subflow_context, whose ->conn is the
 * mptcp_sock; its conn_list links all subflows' contexts. bpf_skc_to_mptcp_sock is not available
 * to struct_ops programs, so the list is walked with CO-RE probe reads, at most MPCC_MAX_ROUTES
 * steps, without the MPTCP socket lock (as the out-of-tree kernel read its siblings): probe
 * reads cannot fault and a stale value only perturbs one increment.
 *
 * A route counts when its subflow can send (mpcc_subflow_active), has an RTT sample and is not
 * silent (mpcc_route_silent). The subflow running the callback always counts.
 */
#ifndef MPCC_WALK_H
#define MPCC_WALK_H

/* What an algorithm reads of each route besides its window and RTT (OLIA's ℓ) it fills itself:
 * MPCC_ROUTE_SELF(c, k, sk) for the subflow running the callback, MPCC_ROUTE_SIBLING(c, k, sk,
 * ssk) for another (ssk: read with CO-RE probe reads only), defined by the algorithm file. */
#ifdef MPCC_ROUTE_SELF
static __always_inline void MPCC_ROUTE_SELF(struct mpcc_conn *c, __u32 k, struct sock *sk);
static __always_inline void MPCC_ROUTE_SIBLING(struct mpcc_conn *c, __u32 k, struct sock *sk, struct sock *ssk);
#else
#define MPCC_ROUTE_SELF(c, k, sk) do { } while (0)
#define MPCC_ROUTE_SIBLING(c, k, sk, ssk) do { } while (0)
#endif

/* c->base_rtt[k] from the kernel's windowed minimum RTT (MPCC_PERIODIC: mpcc_periodic.h defines it). The
 * walk fills it only when a periodic update reads the walk (not with MPCC_OWN_ROUTE); the branch
 * per route costs 6.1's verifier ~15x the states. */
#ifndef MPCC_SET_BASE_RTT
#define MPCC_SET_BASE_RTT(c, k, min_rtt_us, srtt) do { } while (0)
#endif
#define MPCC_WALK_BASE_RTT (MPCC_PERIODIC && !MPCC_OWN_ROUTE)

/* A sibling can send as in upstream's __mptcp_subflow_active(): ESTABLISHED or CLOSE_WAIT, not
 * a join with its handshake pending (mpcc_gather; mpcc_conn.h's walk). */
static __always_inline int mpcc_subflow_active(struct mptcp_subflow_context *ctx, struct sock *ssk)
{
	return ((1 << BPF_CORE_READ(ssk, __sk_common.skc_state)) & MPCC_TCPF_CAN_SEND) &&
	       !(BPF_CORE_READ_BITFIELD_PROBED(ctx, request_join) &&
		 !BPF_CORE_READ_BITFIELD_PROBED(ctx, fully_established));
}

/* Route r = 0 of c is sk's own subflow only (MPCC_OWN_ROUTE, and plain TCP sockets). */
static __always_inline void mpcc_fill_own(struct sock *sk, struct mpcc_conn *c)
{
	struct tcp_sock *tp = tcp_sk(sk);

	c->n = 1;
	c->cwnd[0] = (__u64)tp->snd_cwnd << MPCC_CWND_SHIFT;
	c->rtt[0] = tp->srtt_us ? tp->srtt_us : 1;
	if (MPCC_PERIODIC)
		MPCC_SET_BASE_RTT(c, 0, tp->rtt_min.s[0].v, c->rtt[0]);
}

/* A silent route (not counted; docs/kernel.md "Which subflows count"): packets in flight, and the
 * newest packet it delivered (rack.mstamp, its send time, µs) was sent more than max(2·srtt, 200 ms)
 * (the tail-loss-probe timeout, TCP_RTO_MIN) before now (tcp_mstamp). A route with nothing in
 * flight, or that has delivered nothing yet (a new join), is never silent. */
static __always_inline int mpcc_route_silent(__u64 now_us, __u64 last_delivered_us, __u32 packets_out,
					     __u32 srtt)
{
	__u64 lim = 2 * (__u64)(srtt >> 3);

	if (lim < 200000)
		lim = 200000;
	return packets_out && last_delivered_us && now_us > last_delivered_us + lim;
}

/* Fill c with the routes of sk's MPTCP connection; *self = index of sk. Returns 0, or -1 when
 * sk is not an MPTCP subflow (the caller falls back to Reno). crt: a sibling in fast recovery
 * counts with its ssthresh, not its PRR-inflated window (mptcp_get_crt_cwnd; the per-ACK update).
 * Not inlined: its locals get a frame beside the caller's, not under the rule's math
 * subprograms, whose stack sum the verifier caps at 512 bytes (bench/kernel/bpf_stack.py). */
static __noinline int mpcc_gather(struct sock *sk, struct mpcc_conn *c, __u32 *self, int crt)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct mptcp_subflow_context *sf, *ctx;
	struct mptcp_sock *msk;
	struct list_head *head, *pos;
	__u32 i, found = 0;

	c->n = 0;
	*self = 0;
	if (!tp->is_mptcp)
		return -1;
	sf = (struct mptcp_subflow_context *)BPF_CORE_READ(inet_csk(sk), icsk_ulp_data);
	if (!sf)
		return -1;
	msk = (struct mptcp_sock *)BPF_CORE_READ(sf, conn);
	if (!msk)
		return -1;
	MPCC_WALK_BEGIN(msk);
	head = (struct list_head *)__builtin_preserve_access_index(&msk->conn_list);
	pos = BPF_CORE_READ(msk, conn_list.next);

	for (i = 0; i < MPCC_MAX_ROUTES; i++) {
		struct sock *ssk;
		struct tcp_sock *stp;
		__u32 k = c->n, srtt;

		if (!pos || pos == head)
			break;
		ctx = (struct mptcp_subflow_context *)((void *)pos -
			bpf_core_field_offset(struct mptcp_subflow_context, node));
		ssk = BPF_CORE_READ(ctx, tcp_sock);
		pos = BPF_CORE_READ(pos, next);
		if (k >= MPCC_MAX_ROUTES)
			break;
		MPCC_WALK_PORT(k, BPF_CORE_READ(ssk, __sk_common.skc_num));
		if (ssk == sk) {
			*self = k;
			found = 1;
			c->cwnd[k] = (__u64)tp->snd_cwnd << MPCC_CWND_SHIFT;
			c->rtt[k] = tp->srtt_us ? tp->srtt_us : 1;
			MPCC_ROUTE_SELF(c, k, sk);
			if (MPCC_WALK_BASE_RTT)
				MPCC_SET_BASE_RTT(c, k, tp->rtt_min.s[0].v, c->rtt[k]);
			c->n = k + 1;
			continue;
		}
		if (!ssk)
			continue;
		if (!mpcc_subflow_active(ctx, ssk))
			continue;
		stp = (struct tcp_sock *)ssk;
		srtt = BPF_CORE_READ(stp, srtt_us);
		if (!srtt)
			continue;
		if (mpcc_route_silent(tp->tcp_mstamp, BPF_CORE_READ(stp, rack.mstamp),
				      BPF_CORE_READ(stp, packets_out), srtt)) {
			MPCC_WALK_SILENT(i, BPF_CORE_READ(ssk, __sk_common.skc_num));
			continue;
		}
		c->cwnd[k] = (__u64)BPF_CORE_READ(stp, snd_cwnd) << MPCC_CWND_SHIFT;
		if (crt && BPF_CORE_READ_BITFIELD_PROBED((struct inet_connection_sock *)ssk, icsk_ca_state) ==
			   TCP_CA_Recovery)
			c->cwnd[k] = (__u64)BPF_CORE_READ(stp, snd_ssthresh) << MPCC_CWND_SHIFT;
		c->rtt[k] = srtt;
		if (MPCC_WALK_BASE_RTT)
			MPCC_SET_BASE_RTT(c, k, BPF_CORE_READ(stp, rtt_min.s[0].v), srtt);
		MPCC_ROUTE_SIBLING(c, k, sk, ssk);
		c->n = k + 1;
	}
	if (!found) {   /* not (yet) on the list: count it anyway */
		__u32 k = c->n;

		if (k >= MPCC_MAX_ROUTES)
			k = MPCC_MAX_ROUTES - 1;
		*self = k;
		MPCC_WALK_PORT(k, sk->__sk_common.skc_num);
		c->cwnd[k] = (__u64)tp->snd_cwnd << MPCC_CWND_SHIFT;
		c->rtt[k] = tp->srtt_us ? tp->srtt_us : 1;
		MPCC_ROUTE_SELF(c, k, sk);
		if (MPCC_WALK_BASE_RTT)
			MPCC_SET_BASE_RTT(c, k, tp->rtt_min.s[0].v, c->rtt[k]);
		c->n = k + 1;
	}
	MPCC_WALK_END(c, *self, msk);
	return 0;
}

#endif /* MPCC_WALK_H */
