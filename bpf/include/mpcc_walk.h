/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mpcc_walk.h — the routes the coupled rule sees: the walk over the MPTCP connection's subflows
 * (mpcc_gather) that fills struct mpcc_conn (windows, RTTs, OLIA's ℓ, baseRTT) for the rule.
 * Included by mpcc_kern.h once the socket accessors and struct mpcc_ca are defined.
 *
 * The connection's routes. A subflow's tcp_sock has is_mptcp set and icsk_ulp_data pointing to
 * its struct mptcp_subflow_context, whose ->conn is the struct mptcp_sock; that socket's
 * conn_list links the contexts of all subflows. bpf_skc_to_mptcp_sock is not available to
 * struct_ops programs, so the list is walked with CO-RE probe reads (bpf_probe_read_kernel):
 * a bounded loop of at most MPCC_MAX_ROUTES steps that stops at the list head. The walk is done
 * without the MPTCP socket lock (as the out-of-tree kernel read its sibling subflows): probe reads
 * cannot fault, the bound guarantees termination, and a stale value only perturbs one increment.
 * We walk the list rather than mirror the subflows into a BPF map because the list is the
 * kernel's own, always-current view: a map would need insert/delete on every subflow
 * creation/close (and leaks on crashes), and would still be read without a lock.
 *
 * A route counts when its subflow can send (as mptcp_sk_can_send() did out of tree, and as
 * upstream's __mptcp_subflow_active()): state ESTABLISHED or CLOSE_WAIT, and not a join whose
 * handshake is still pending (request_join && !fully_established), with an RTT sample, and is
 * not silent (mpcc_route_silent below). The subflow running the callback always counts.
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

/* baseRTT in the unit of srtt_us (1/8 µs) from the kernel's windowed minimum RTT (µs,
 * tcp_min_rtt(); net.ipv4.tcp_min_rtt_wlen, 300 s by default); srtt when there is no sample. */
static __always_inline __u64 mpcc_base_rtt(__u32 min_rtt_us, __u64 srtt)
{
	__u64 b = (__u64)min_rtt_us << 3;

	return (min_rtt_us != ~0U && b) ? b : srtt;
}

/* c->base_rtt exists only for the algorithms that read it (mpcc_math.h). */
static __always_inline void mpcc_set_base_rtt(struct mpcc_conn *c, __u32 k, __u64 base)
{
#if MPCC_PERIODIC
	c->base_rtt[k & (MPCC_MAX_ROUTES - 1)] = base;
#endif
}

/* Route r = 0 of c is sk's own subflow only (MPCC_OWN_ROUTE, and plain TCP sockets). */
static __always_inline void mpcc_fill_own(struct sock *sk, struct mpcc_conn *c)
{
	struct tcp_sock *tp = tcp_sk(sk);

	c->n = 1;
	c->cwnd[0] = (__u64)tp->snd_cwnd << MPCC_CWND_SHIFT;
	c->rtt[0] = tp->srtt_us ? tp->srtt_us : 1;
	if (MPCC_PERIODIC)
		mpcc_set_base_rtt(c, 0, mpcc_base_rtt(tp->rtt_min.s[0].v, c->rtt[0]));
}

/* A silent route: packets in flight, and the newest packet it delivered (tp->rack.mstamp: that
 * packet's send time, µs) was sent more than max(2·srtt, 200 ms) before now (tcp_mstamp, the same
 * clock): its ACKs have stopped (a link down) and its rate x_r is 0, though its window stays whole
 * until the retransmission timer fires; it is not counted (docs/kernel.md "Which subflows count").
 * 2·srtt is TCP's tail-loss-probe timeout (RFC 8985), 200 ms TCP_RTO_MIN. A route with nothing in
 * flight, or that has delivered nothing yet (a new join), is never silent. */
static __always_inline int mpcc_route_silent(__u64 now_us, __u64 last_delivered_us, __u32 packets_out,
					     __u32 srtt)
{
	__u64 lim = 2 * (__u64)(srtt >> 3);

	if (lim < 200000)
		lim = 200000;
	return packets_out && last_delivered_us && now_us > last_delivered_us + lim;
}

/* The walk fills each route's baseRTT only when a periodic update reads the walk (not with
 * MPCC_OWN_ROUTE: mpcc_fill_own); the branch per route costs 6.1's verifier ~15x the states. */
#define MPCC_WALK_BASE_RTT (MPCC_PERIODIC && !MPCC_OWN_ROUTE)

/* Fill c with the routes of sk's MPTCP connection; *self = index of sk. Returns 0, or -1 when
 * sk is not an MPTCP subflow (the caller falls back to Reno). crt: a sibling in fast recovery
 * counts with its ssthresh instead of its (PRR-inflated) window, as mptcp_get_crt_cwnd did
 * (the per-ACK update). A subprogram, not inlined: its locals (the trace record, a sibling's loss
 * marks) then live in a frame of their own beside the caller's, not in the frame that stays on the
 * stack under the rule's math subprograms, whose sum the verifier caps at 512 bytes (on
 * Linux 6.1 with every frame rounded up to 32 bytes; bench/kernel/bpf_stack.py). */
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
		__u8 state;

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
				mpcc_set_base_rtt(c, k, mpcc_base_rtt(tp->rtt_min.s[0].v, c->rtt[k]));
			c->n = k + 1;
			continue;
		}
		if (!ssk)
			continue;
		state = BPF_CORE_READ(ssk, __sk_common.skc_state);
		if (!((1 << state) & MPCC_TCPF_CAN_SEND))
			continue;
		if (BPF_CORE_READ_BITFIELD_PROBED(ctx, request_join) &&
		    !BPF_CORE_READ_BITFIELD_PROBED(ctx, fully_established))
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
			mpcc_set_base_rtt(c, k, mpcc_base_rtt(BPF_CORE_READ(stp, rtt_min.s[0].v), srtt));
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
			mpcc_set_base_rtt(c, k, mpcc_base_rtt(tp->rtt_min.s[0].v, c->rtt[k]));
		c->n = k + 1;
	}
	MPCC_WALK_END(c, *self, msk);
	return 0;
}

#endif /* MPCC_WALK_H */
