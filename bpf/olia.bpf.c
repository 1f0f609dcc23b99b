// SPDX-License-Identifier: GPL-2.0
/* OLIA — opportunistic linked increases (Khalili et al., ToN 2013):
 *     I_r = (w_r/τ_r²)/(Σ_p w_p/τ_p)² + ε_r/w_r,   D_r = w_r/2,
 * with B the routes that maximise ℓ_p/τ_p² (ℓ = bytes between losses, MPCC_LOSS_INTERVAL) and
 * M those that maximise w_p:
 *     ε_r = 1/(n|B∖M|) for r ∈ B∖M;  −1/(n|M|) for r ∈ M when B∖M ≠ ∅;  0 otherwise.
 * per_ack = 1 applies I_r as the out-of-tree mptcp_olia.c did (once per ACK through a 2^-10-packet
 * counter; olia_do_cong_avoid below); per_ack = 0 (default) per acknowledged packet.
 */
#define MPCC_KERNEL_NAME mpcc_olia
#define MPCC_PARAMS(P) P(per_ack, FLAG, 0, 0, 1)
#define MPCC_PER_ACK_MODE 1
#define MPCC_LOSS_INTERVAL 1
/* the kernel side's own state and callbacks (below) */
#define MPCC_ALGO_CA							\
	__u64 loss1;    /* bytes_acked at the loss before the last one */	\
	__u64 loss2;    /* bytes_acked at the last loss (both read by siblings) */ \
	__s64 cnt;      /* per_ack = 1: mptcp_olia.c's counter, 2^-MPCC_COUNTER_BITS packets */
#define MPCC_INIT olia_do_init
#define MPCC_CONG_AVOID olia_do_cong_avoid
#define MPCC_SSTHRESH olia_do_ssthresh
#define MPCC_ROUTE_SELF olia_route_self
#define MPCC_ROUTE_SIBLING olia_route_sibling
#include "mpcc_algo.h"
#include "mpcc_counter.h"

/* ℓ_k/τ_k² (the path quality) */
MPCC_FN mn_t olia_route_quality(const struct mpcc_conn *c, __u32 k)
{
	mn_t tau = mpcc_route_tau(c, k);

	if (!c || k >= MPCC_MAX_ROUTES)
		return MN_ZERO;
	return mn_div(mn_from(c->ell[MPCC_IDX(k)], 0), mn_mul(tau, tau));
}

MPCC_RULE __s64 mpcc_on_ack(const struct mpcc_conn *c, __u32 r, const struct mpcc_params *p)
{
	struct mpcc_rates q;
	mn_t qual_max = MN_ZERO;
	__u64 wmax = 0, cnt = 0, n_m, n_collected, r_in_b, r_in_m;
	__s64 inc, eps;
	__u32 k;

	if (!mpcc_route_ok(c, r, p))
		return 0;
	mpcc_rates(c, r, &q);
	/* One pass over the routes, each quality computed once: the maxima of ℓ_k/τ_k² (B) and of w_k
	 * (M) and the sizes of the tie sets, packed in cnt (one register: the frame is at the
	 * verifier's stack limit) as |M| in bits 0–15, |B| in 16–31, |B ∩ M| in 32–47. A new maximum
	 * makes route k its set's only member, so B ∩ M is then k alone or empty. */
	for (k = 0; k < MPCC_MAX_ROUTES; k++) {
		mn_t qual;
		__u64 w, in_b, in_m;
		__s32 cq;

		if (k >= c->n)
			break;
		qual = olia_route_quality(c, k);
		w = c->cwnd[MPCC_IDX(k)];
		cq = mn_cmp(qual, qual_max);
		in_m = (k == 0) | (w >= wmax);
		in_b = (k == 0) | (cq >= 0);
		if (k == 0 || w > wmax) {
			wmax = w;
			cnt &= 0xffff0000ULL;          /* keeps |B| */
		}
		if (k == 0 || cq > 0) {
			qual_max = qual;
			cnt &= 0xffffULL;              /* keeps |M| */
		}
		cnt += in_m | (in_b << 16) | ((in_m & in_b) << 32);
	}
	n_m = cnt & 0xffff;
	n_collected = ((cnt >> 16) & 0xffff) - (cnt >> 32);     /* |B∖M| = |B| − |B ∩ M| */
	r_in_m = c->cwnd[MPCC_IDX(r)] == wmax;
	r_in_b = mn_cmp(olia_route_quality(c, r), qual_max) == 0;

	inc = mpcc_inc_fixed(mpcc_coupled_term(&q));
	eps = 0;
	if (r_in_b && !r_in_m && n_collected > 0)   /* +1/(n |B∖M| w_r) */
		eps = mpcc_inc_fixed(mn_div(mn_from(1, 0),
			mn_mul(mn_from((__u64)c->n * n_collected, 0), q.w_r)));
	else if (r_in_m && n_collected > 0 && n_m > 0)   /* −1/(n |M| w_r) */
		eps = -mpcc_inc_fixed(mn_div(mn_from(1, 0),
			mn_mul(mn_from((__u64)c->n * n_m, 0), q.w_r)));
	return inc + eps;
}

MPCC_RULE __u64 mpcc_on_loss(const struct mpcc_conn *c, __u32 r, const struct mpcc_params *p)
{
	if (!mpcc_route_ok(c, r, p))
		return 0;
	return mpcc_halve_on_loss(c, r);
}

#ifdef __bpf__
/* ℓ: the larger of the bytes acknowledged since the last loss and between the last two losses
 * (Khalili et al.; mptcp_olia.c used snd_una marks, bytes_acked does not wrap). */
static __always_inline __u64 olia_ell(__u64 bytes_acked, __u64 loss1, __u64 loss2)
{
	__u64 since = bytes_acked - loss2, between = loss2 - loss1;

	return since > between ? since : between;
}

static __always_inline void olia_route_self(struct mpcc_conn *c, __u32 k, struct sock *sk)
{
	struct mpcc_ca *ca = inet_csk_ca(sk);

	c->ell[k & (MPCC_MAX_ROUTES - 1)] = olia_ell(tcp_sk(sk)->bytes_acked, ca->loss1, ca->loss2);
}

/* A sibling's loss marks live in its CA area, if it runs this same algorithm (else ℓ counts
 * from its first byte). */
static __always_inline void olia_route_sibling(struct mpcc_conn *c, __u32 k, struct sock *sk, struct sock *ssk)
{
	struct { __u64 loss1, loss2; } oca = {};   /* two fields of struct mpcc_ca: the stack is small */
	struct inet_connection_sock *sicsk = (struct inet_connection_sock *)ssk;

	if (BPF_CORE_READ(sicsk, icsk_ca_ops) == BPF_CORE_READ(inet_csk(sk), icsk_ca_ops))
		bpf_probe_read_kernel(&oca, sizeof(oca), (void *)__builtin_preserve_access_index(&sicsk->icsk_ca_priv) +
				      __builtin_offsetof(struct mpcc_ca, loss1));
	c->ell[k & (MPCC_MAX_ROUTES - 1)] = olia_ell(BPF_CORE_READ((struct tcp_sock *)ssk, bytes_acked),
						     oca.loss1, oca.loss2);
}

static __always_inline void olia_do_init(struct sock *sk)
{
	struct mpcc_ca *ca = inet_csk_ca(sk);

	mpcc_init(sk);
	ca->loss1 = tcp_sk(sk)->bytes_acked;
	ca->loss2 = ca->loss1;
	ca->cnt = 0;
}

/* per_ack = 1, mptcp_olia.c's cong_avoid: once per ACK whatever it acknowledges, slow start by
 * one packet while w ≤ ssthresh (Linux 3.11's tcp_slow_start), else I_r afresh through the
 * 2^-10-packet counter (mpcc_counter_step); a sibling in fast recovery counts with its ssthresh
 * (mpcc_gather's crt). per_ack = 0: the shared update, I_r per acknowledged packet. */
static __always_inline void olia_do_cong_avoid(struct sock *sk, __u32 ack, __u32 acked)
{
	const struct mpcc_params p = { MPCC_PARAM_VALUES };
	struct tcp_sock *tp = tcp_sk(sk);
	struct mpcc_ca *ca = inet_csk_ca(sk);
	__s64 inc;
	__s32 step;

	if (!MPCC_PER_ACK(&p) || !tp->is_mptcp) {
		mpcc_cong_avoid(sk, ack, acked);
		return;
	}
	if (!tcp_is_cwnd_limited(sk))
		return;
	if (tp->snd_cwnd <= tp->snd_ssthresh) {
		if (tp->snd_cwnd < tp->snd_cwnd_clamp)
			tp->snd_cwnd++;
		return;
	}
	if (mpcc_compute_inc(sk, &inc) < 0) {
		tcp_cong_avoid_ai(tp, tp->snd_cwnd, 1);
		return;
	}
	step = mpcc_counter_step(&ca->cnt, mpcc_counter_increment(inc));
	if (step > 0 && tp->snd_cwnd < tp->snd_cwnd_clamp)
		tp->snd_cwnd++;
	else if (step < 0 && tp->snd_cwnd > 1)
		tp->snd_cwnd--;
}

/* A loss closes the loss interval under way (ℓ), then the shared ssthresh. */
static __always_inline __u32 olia_do_ssthresh(struct sock *sk)
{
	struct mpcc_ca *ca = inet_csk_ca(sk);
	__u64 acked = tcp_sk(sk)->bytes_acked;

	if (acked != ca->loss2) {
		ca->loss1 = ca->loss2;
		ca->loss2 = acked;
	}
	return mpcc_ssthresh(sk);
}

SEC("struct_ops")
void BPF_PROG(olia_init, struct sock *sk)
{
	olia_do_init(sk);
}

SEC("struct_ops")
void BPF_PROG(olia_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	olia_do_cong_avoid(sk, ack, acked);
}

SEC("struct_ops")
__u32 BPF_PROG(olia_ssthresh, struct sock *sk)
{
	return olia_do_ssthresh(sk);
}

SEC("struct_ops")
__u32 BPF_PROG(olia_undo_cwnd, struct sock *sk)
{
	return mpcc_undo_cwnd(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops MPCC_KERNEL_SYM = {
	.init		= (void *)olia_init,
	.cong_avoid	= (void *)olia_cong_avoid,
	.ssthresh	= (void *)olia_ssthresh,
	.undo_cwnd	= (void *)olia_undo_cwnd,
	MPCC_CONN_OPS
	MPCC_COMPAT_OPS
	.name		= MPCC_KERNEL_STR,
};
#endif
