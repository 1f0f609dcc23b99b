// SPDX-License-Identifier: GPL-2.0
/* ssbug_reno — a minimal BPF tcp_congestion_ops (Reno, like net/ipv4/tcp_cong.c), nothing from
 * mpcc, to show the kernel storing a struct_ops return value that no program produced
 * (bench/kernel/notes/KERNEL_BUG.md).
 *
 * ssthresh() returns max(cwnd / 2, 2) and counts its runs. No value it can return is above
 * 0x7fffffff (TCP_INFINITE_SSTHRESH), so an snd_ssthresh above it that in_ack_event() or
 * cong_avoid() finds was not written by it: the kernel stored the return value of a skipped call.
 * in_ack_event() counts it (bad_seen), keeps the value (bad_value) and the window it found, and
 * repairs it to max(prior_cwnd / 2, 2) so that the run stays sane (-DSSBUG_REPAIR=0: keep it).
 * Every callback also counts in whose task context it ran (ctx_tgid), to compare with the
 * trampoline's skip condition on this kernel (current->tgid == 1).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char _license[] SEC("license") = "GPL";

extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;

#define TCP_INFINITE_SSTHRESH 0x7fffffffU
#ifndef SSBUG_REPAIR
#define SSBUG_REPAIR 1
#endif

/* read by run.sh from the object's .bss map */
__u64 ss_calls;      /* runs of ssthresh() */
__u64 undo_calls;    /* runs of undo_cwnd() */
__u64 cb_runs;       /* runs of any callback */
__u64 bad_seen;      /* snd_ssthresh above TCP_INFINITE_SSTHRESH found (not ours) */
__u64 bad_used;      /* ... with snd_cwnd already above 10^6 (PRR multiplied it in) */
__u32 bad_value;     /* the last such snd_ssthresh */
__u32 bad_cwnd_max;  /* the largest snd_cwnd found with one */
__u32 bad_state;     /* icsk_ca_state when the last one was found */

/* how many callback runs had each tgid as current (0: a softirq on an idle CPU) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} ctx_tgid SEC(".maps");

static __always_inline struct tcp_sock *tcp_sk(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

/* A tgid's first run inserts 0 and then adds like every other: two CPUs that both miss the
 * lookup both insert (one EEXISTs) and both add, so no run is lost and Σ ctx_tgid = cb_runs. */
static __always_inline void count_ctx(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u64 zero = 0, *n;

	__sync_fetch_and_add(&cb_runs, 1);
	n = bpf_map_lookup_elem(&ctx_tgid, &tgid);
	if (!n) {
		bpf_map_update_elem(&ctx_tgid, &tgid, &zero, BPF_NOEXIST);
		n = bpf_map_lookup_elem(&ctx_tgid, &tgid);
	}
	if (n)
		__sync_fetch_and_add(n, 1);
}

static __always_inline void check(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 ss = tp->snd_ssthresh, cwnd = tp->snd_cwnd, prior = tp->prior_cwnd;

	if (ss <= TCP_INFINITE_SSTHRESH)
		return;
	__sync_fetch_and_add(&bad_seen, 1);
	if (cwnd > 1000000)
		__sync_fetch_and_add(&bad_used, 1);
	bad_value = ss;
	bad_state = ((struct inet_connection_sock *)sk)->icsk_ca_state;
	if (cwnd > bad_cwnd_max)
		bad_cwnd_max = cwnd;
	if (SSBUG_REPAIR) {
		tp->snd_ssthresh = prior / 2 > 2 ? prior / 2 : 2;
		if (prior && cwnd > prior)
			tp->snd_cwnd = prior;
	}
}

SEC("struct_ops")
void BPF_PROG(ssbug_init, struct sock *sk)
{
	count_ctx();
}

SEC("struct_ops")
__u32 BPF_PROG(ssbug_ssthresh, struct sock *sk)
{
	__u32 half = tcp_sk(sk)->snd_cwnd >> 1;

	count_ctx();
	__sync_fetch_and_add(&ss_calls, 1);
	return half > 2 ? half : 2;
}

SEC("struct_ops")
void BPF_PROG(ssbug_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	count_ctx();
	check(sk);
	tcp_reno_cong_avoid(sk, ack, acked);
}

SEC("struct_ops")
__u32 BPF_PROG(ssbug_undo_cwnd, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);

	count_ctx();
	__sync_fetch_and_add(&undo_calls, 1);
	return tp->snd_cwnd > tp->prior_cwnd ? tp->snd_cwnd : tp->prior_cwnd;
}

SEC("struct_ops")
void BPF_PROG(ssbug_in_ack_event, struct sock *sk, __u32 flags)
{
	count_ctx();
	check(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops ssbug_reno = {
	.init		= (void *)ssbug_init,
	.ssthresh	= (void *)ssbug_ssthresh,
	.cong_avoid	= (void *)ssbug_cong_avoid,
	.undo_cwnd	= (void *)ssbug_undo_cwnd,
	.in_ack_event	= (void *)ssbug_in_ack_event,
	.name		= "ssbug_reno",
};
