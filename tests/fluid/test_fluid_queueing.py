"""rtt = "propagation+queue" on RED links: the backlog is the inverse of RED's drop curve at the
equilibrium price, solved as a fixed point with the RTTs (mpcc.fluid.queueing, engine)."""

import math
import random
from dataclasses import replace

import numpy as np
import pytest
from scipy.optimize import brentq

from mpcc import fluid, scenario, scenario_gen
from mpcc.fluid.queueing import red_backlog, red_drop_fraction


def count_rule_fraction(pb: float, n: int, seed: int) -> float:
    """Monte Carlo of FJ93's uniformised drop (crates/mpcc-queue: count += 1; p_a = p_b/(1 − count·p_b),
    1 when the denominator ≤ p_b; count = 0 after a drop) at a constant p_b."""
    rng = random.Random(seed)
    count = drops = 0
    for _ in range(n):
        count += 1
        denom = 1.0 - count * pb
        pa = 1.0 if denom <= pb else pb / denom
        if rng.random() < pa:
            drops += 1
            count = 0
    return drops / n


@pytest.mark.parametrize("pb", [0.002, 0.013, 0.05, 0.1, 0.17, 0.33, 0.6])
def test_red_drop_fraction_is_the_count_rule(pb):
    n = 200_000
    mc = count_rule_fraction(pb, n, seed=int(pb * 1e4))
    # the gaps are bounded by 1/p_b, so the count of drops has variance below n·f(1−f)
    sd = math.sqrt(mc * (1 - mc) / n)
    assert red_drop_fraction(pb) == pytest.approx(mc, abs=4 * sd + 1e-12)


RED = scenario.Red(min_th=10.0, max_th=40.0, max_p=0.1)


@pytest.mark.parametrize("avg", [10.5, 17.0, 39.0, 45.0, 52.0])
def test_red_backlog_inverts_reds_curve(avg):
    # RED's curve written out (FJ93 with gentle, as crates/mpcc-queue/src/lib.rs documents it)
    if avg < RED.max_th:
        pb = RED.max_p * (avg - RED.min_th) / (RED.max_th - RED.min_th)
    else:
        pb = RED.max_p + (1 - RED.max_p) * (avg - RED.max_th) / RED.max_th
    p = count_rule_fraction(pb, 400_000, seed=int(avg))
    # p measured by Monte Carlo: avg back within the Monte Carlo error, mapped through the curve
    b = red_backlog(RED, 500, p)
    assert b == pytest.approx(avg, abs=0.03 * (RED.max_th - RED.min_th))


def test_red_backlog_caps():
    assert red_backlog(RED, 25, 0.15) == 25.0      # avg 32.5 without the tail drop at the buffer
    assert red_backlog(replace(RED, gentle=False), 500, 0.5) == RED.max_th   # forced above max_th
    # p_b ≥ 1/2 drops every packet (p_a = p_b/(1 − p_b) ≥ 1 at the first arrival): the average cannot
    # stay above p_b = 1/2, i.e. avg = max_th + max_th (1/2 − max_p)/(1 − max_p)
    assert red_backlog(RED, 500, 3.0) == pytest.approx(40 + 40 * 0.4 / 0.9)


TWO_LINKS = """
name = "q"
duration_s = 30.0
[[links]]
name = "a"
capacity_mbps = {cap_a}
delay_ms = 10.0
buffer_pkts = 400
aqm = "red"
red = {{ min_th = 100, max_th = 300, max_p = 0.1 }}
[[links]]
name = "b"
capacity_mbps = 12.0
delay_ms = 10.0
buffer_pkts = 60
aqm = "red"
red = {{ min_th = 10, max_th = 30, max_p = 0.1 }}
[[groups]]
name = "long"
count = 5
algorithm = "reno"
paths = [["a", "b"]]
[[groups]]
name = "short"
count = 5
algorithm = "reno"
paths = [["b"]]
[fluid]
rtt = "propagation+queue"
"""


def _backlog_b(p):
    pb = brentq(lambda v: red_drop_fraction(v) - p, 1e-12, 0.5)
    return 10 + pb / 0.1 * 20


def test_single_bottleneck_fixed_point_matches_closed_form():
    """Link a fast (not a bottleneck): 10 Reno flows share RED link b (1000 packets/s). Independently:
    find b's average queue B with 5√(2/p)/τ_long + 5√(2/p)/τ_short = c, τ = propagation + B/c and
    p = the drop fraction at B (Reno's equilibrium window √(2/q), φ = 2/w², eq. (7))."""
    sc = scenario.loads(TWO_LINKS.format(cap_a=1000.0))
    c = sc.capacity_pps(sc.links[1])

    def excess(B):
        pb = 0.1 * (B - 10) / 20
        p = red_drop_fraction(pb)
        return 5 * math.sqrt(2 / p) * (1 / (0.04 + B / c) + 1 / (0.02 + B / c)) - c

    B = brentq(excess, 10 + 1e-9, 30)
    p = red_drop_fraction(0.1 * (B - 10) / 20)
    eq = fluid.equilibrium(sc)
    assert eq.p[0] == 0 and eq.queue_pkts[0] == 0
    assert eq.queue_pkts[1] == pytest.approx(B, abs=5e-3)
    assert eq.p[1] == pytest.approx(p, rel=1e-3)
    long_, short = (eq.network.tau[eq.network.source_of_route == s][0] for s in range(2))
    names = [g.name for g in eq.groups]
    tau = dict(zip(names, (long_, short)))
    assert tau["long"] == pytest.approx(0.04 + eq.queue_pkts[1] / c, rel=1e-12)
    assert tau["short"] == pytest.approx(0.02 + eq.queue_pkts[1] / c, rel=1e-12)


def test_full_link_at_price_zero_holds_a_queue_below_min_th():
    """Link a (300 packets/s) carries only the long flows, which link b prices. At a's queue 0 they
    would send more than a's capacity, at its min_th (100 packets = 0.33 s) much less: so a is full
    with price 0 and a queue B_a in (0, min_th) — the delay alone limits the flows. Independently:
    solve 5√(2/p)/τ_long = c_a and 5√(2/p)(1/τ_long + 1/τ_short) = c_b for (p, B_a)."""
    sc = scenario.loads(TWO_LINKS.format(cap_a=3.6))
    ca, cb = sc.capacity_pps(sc.links[0]), sc.capacity_pps(sc.links[1])

    def solve_p(p):  # given p on b: B_a from y_a = c_a, then the excess on b
        Bb = _backlog_b(p)
        tau_long = 5 * math.sqrt(2 / p) / ca
        return 5 * math.sqrt(2 / p) * (1 / tau_long + 1 / (0.02 + Bb / cb)) - cb

    p = brentq(solve_p, 1e-5, 0.19)
    Bb = _backlog_b(p)
    Ba = (5 * math.sqrt(2 / p) / ca - 0.04 - Bb / cb) * ca
    assert 0 < Ba < 100
    eq = fluid.equilibrium(sc)
    assert eq.p[0] == 0
    assert eq.y[0] == pytest.approx(ca, rel=2e-3)
    assert eq.queue_pkts[0] == pytest.approx(Ba, rel=2e-2)
    assert eq.queue_pkts[1] == pytest.approx(Bb, rel=1e-3)
    assert eq.p[1] == pytest.approx(p, rel=5e-3)


def test_generated_red_backlog_is_reds_inverse_at_the_solved_price():
    """On generated RED networks (seeds 1–3, BDP-scaled thresholds): every priced link's backlog
    is RED's inverse at its price (the fixed point, to its tolerance) and every route's RTT is its
    propagation delay plus Σ backlog/capacity."""
    for seed in (1, 2, 3):
        s = scenario_gen.generate(seed, aqm="red", algorithms_=scenario_gen.FLUID_ALGORITHMS,
                                  ranges=replace(scenario_gen.Ranges(), red_min_th_bdp=(0.2, 0.5)))
        eq = fluid.equilibrium(s)
        for i, l in enumerate(s.links):
            if eq.p[i] > 0:
                b = red_backlog(l.red, l.buffer_pkts, float(eq.p[i]))
                assert eq.queue_pkts[i] == pytest.approx(b, abs=2e-3 * (1 + b))
                assert eq.queue_pkts[i] >= l.red.min_th - 2e-3 * (1 + b)
            else:
                assert eq.queue_pkts[i] <= l.red.min_th
        net = eq.network
        for si, g in enumerate(eq.groups):
            for k, r in enumerate(np.flatnonzero(net.source_of_route == si)):
                want = s.path_delay_s(g.paths[k]) + sum(eq.queue_pkts[s.link_index[n]] / s.capacity_pps(s.link(n))
                                                         for n in g.paths[k])
                assert net.tau[r] == pytest.approx(want, rel=1e-12)
