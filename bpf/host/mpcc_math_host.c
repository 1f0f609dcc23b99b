/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/* Host build of bpf/include/mpcc_math.h for the tests (tests/kernel/test_bpf_math.py loads it
 * with ctypes): the same integer code the BPF programs run, behind a flat C ABI. */
#include <string.h>
#include "../include/mpcc_math.h"

static void fill(struct mpcc_conn *c, struct mpcc_params *p, uint32_t n, const uint64_t *cwnd,
		 const uint64_t *rtt, const uint64_t *ell, uint64_t a_q32, uint64_t beta_q32,
		 uint64_t eta_q32, uint32_t norm_n)
{
	memset(c, 0, sizeof(*c));
	c->n = n > MPCC_MAX_ROUTES ? MPCC_MAX_ROUTES : n;
	memcpy(c->cwnd, cwnd, c->n * sizeof(uint64_t));
	memcpy(c->rtt, rtt, c->n * sizeof(uint64_t));
	memcpy(c->ell, ell, c->n * sizeof(uint64_t));
	p->a_q32 = a_q32;
	p->beta_q32 = beta_q32;
	p->eta_q32 = eta_q32;
	p->n = norm_n;
}

int64_t mpcc_host_on_ack(int algo, uint32_t n, const uint64_t *cwnd, const uint64_t *rtt,
			 const uint64_t *ell, uint32_t r, uint64_t a_q32, uint64_t beta_q32,
			 uint64_t eta_q32, uint32_t norm_n)
{
	struct mpcc_conn c;
	struct mpcc_params p;

	fill(&c, &p, n, cwnd, rtt, ell, a_q32, beta_q32, eta_q32, norm_n);
	return mpcc_on_ack((enum mpcc_algo)algo, &c, r, &p);
}

uint64_t mpcc_host_on_loss(int algo, uint32_t n, const uint64_t *cwnd, const uint64_t *rtt,
			   const uint64_t *ell, uint32_t r, uint64_t a_q32, uint64_t beta_q32,
			   uint64_t eta_q32, uint32_t norm_n)
{
	struct mpcc_conn c;
	struct mpcc_params p;

	fill(&c, &p, n, cwnd, rtt, ell, a_q32, beta_q32, eta_q32, norm_n);
	return mpcc_on_loss((enum mpcc_algo)algo, &c, r, &p);
}

uint64_t mpcc_host_cwnd_after_loss(int algo, uint32_t n, uint64_t cwnd, uint64_t dec)
{
	return mpcc_cwnd_after_loss(cwnd, dec, mpcc_min_cwnd((enum mpcc_algo)algo, n));
}

uint32_t mpcc_host_min_cwnd(int algo, uint32_t n)
{
	return mpcc_min_cwnd((enum mpcc_algo)algo, n);
}
