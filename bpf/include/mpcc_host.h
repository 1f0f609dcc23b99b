/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * mpcc_host.h — the host build of an algorithm file (cc -shared -fPIC -I bpf/include
 * bpf/<algorithm>.bpf.c): the same mpcc_on_ack / mpcc_on_loss the BPF object runs, behind a
 * flat C ABI that python/mpcc/kernel/bpf.py (HostMath) loads with ctypes. Included by
 * mpcc_algo.h when not compiling for BPF.
 */
#ifndef MPCC_HOST_H
#define MPCC_HOST_H

#include <string.h>
#include "mpcc_counter.h"

/* The parameters from the flat array (every field is a __u64; end_ is not one of them). */
static void mpcc_host_params(struct mpcc_params *p, const uint64_t *params)
{
	memset(p, 0, sizeof(*p));
	memcpy(p, params, sizeof(*p) - sizeof(p->end_));
}

static void mpcc_host_fill(struct mpcc_conn *c, struct mpcc_params *p, uint32_t n, const uint64_t *cwnd,
			   const uint64_t *rtt, const uint64_t *ell, const uint64_t *params)
{
	memset(c, 0, sizeof(*c));
	c->n = n > MPCC_MAX_ROUTES ? MPCC_MAX_ROUTES : n;
	memcpy(c->cwnd, cwnd, c->n * sizeof(uint64_t));
	memcpy(c->rtt, rtt, c->n * sizeof(uint64_t));
#if MPCC_LOSS_INTERVAL
	memcpy(c->ell, ell, c->n * sizeof(uint64_t));
#else
	(void)ell;
#endif
	mpcc_host_params(p, params);
}

/* Number of parameters (the length of the params array the functions below read). */
uint32_t mpcc_host_param_count(void)
{
	return (uint32_t)(sizeof(struct mpcc_params) / sizeof(uint64_t) - 1);
}

/* The file's default parameter values, encoded (as the BPF build without -D uses them). */
void mpcc_host_param_defaults(uint64_t *out)
{
	const struct mpcc_params d = { MPCC_PARAM_VALUES };

	memcpy(out, &d, sizeof(d) - sizeof(d.end_));
}

int64_t mpcc_host_on_ack(uint32_t n, const uint64_t *cwnd, const uint64_t *rtt, const uint64_t *ell,
			 uint32_t r, const uint64_t *params)
{
	struct mpcc_conn c;
	struct mpcc_params p;

	mpcc_host_fill(&c, &p, n, cwnd, rtt, ell, params);
	return mpcc_on_ack(&c, r, &p);
}

uint64_t mpcc_host_on_loss(uint32_t n, const uint64_t *cwnd, const uint64_t *rtt, const uint64_t *ell,
			   uint32_t r, const uint64_t *params)
{
	struct mpcc_conn c;
	struct mpcc_params p;

	mpcc_host_fill(&c, &p, n, cwnd, rtt, ell, params);
	return mpcc_on_loss(&c, r, &p);
}

#if MPCC_PERIODIC
/* The periodic update: route r's new window (packets · 2^32) given every route's minimum RTT,
 * the adapted parameter (c->adapted; 0 = as loaded) and route r's window round(RTT/interval)
 * updates ago (c->w_old, packets · 2^32; 0 = the current one). */
uint64_t mpcc_host_on_update(uint32_t n, const uint64_t *cwnd, const uint64_t *rtt, const uint64_t *base_rtt,
			     uint32_t r, const uint64_t *params, uint64_t adapted, uint64_t w_old)
{
	struct mpcc_conn c;
	struct mpcc_params p;

	mpcc_host_fill(&c, &p, n, cwnd, rtt, NULL, params);
	memcpy(c.base_rtt, base_rtt, c.n * sizeof(uint64_t));
	c.adapted = adapted;
	c.w_old = w_old;
	return mpcc_on_update(&c, r, &p);
}

uint64_t mpcc_host_update_interval_us(const uint64_t *params)
{
	struct mpcc_params p;

	mpcc_host_params(&p, params);
	return mpcc_update_interval_us(&p);
}
#endif

/* One ACK of the per-ACK update's counter: *cnt += the increment of inc (I_r, packets · 2^40);
 * returns the window step (+1, −1, 0). */
int32_t mpcc_host_counter_step(int64_t *cnt, int64_t inc)
{
	return mpcc_counter_step(cnt, mpcc_counter_increment(inc));
}

/* The counter increment of inc: I_r·2^10 rounded toward zero. */
int64_t mpcc_host_counter_increment(int64_t inc)
{
	return mpcc_counter_increment(inc);
}

#if MPCC_ADAPT
/* The slow-timescale adaptation: in[] = value, q_sum, q_n, lost, sent (struct mpcc_adapt_in). */
uint64_t mpcc_host_on_adapt(const uint64_t *in, const uint64_t *params)
{
	struct mpcc_adapt_in a = { in[0], in[1], in[2], in[3], in[4] };
	struct mpcc_params p;

	mpcc_host_params(&p, params);
	return mpcc_on_adapt(&a, &p);
}

uint64_t mpcc_host_adapt_interval_us(const uint64_t *params)
{
	struct mpcc_params p;

	mpcc_host_params(&p, params);
	return mpcc_adapt_interval_us(&p);
}
#endif

uint64_t mpcc_host_cwnd_after_loss(uint32_t n, uint64_t cwnd, uint64_t dec)
{
	return mpcc_cwnd_after_loss(cwnd, dec, mpcc_min_cwnd(n));
}

uint32_t mpcc_host_min_cwnd(uint32_t n)
{
	return mpcc_min_cwnd(n);
}

#define MPCC_STR_(x) #x
#define MPCC_STR(x) MPCC_STR_(x)
/* The kernel name the BPF build's ops table registers (its .name, MPCC_KERNEL_STR). */
const char mpcc_host_kernel_name[] = MPCC_STR(MPCC_KERNEL_SYM);

#endif /* MPCC_HOST_H */
