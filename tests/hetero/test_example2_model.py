"""Example 2 (Fig. 4) of Tang, Wei, Low, Chiang (ToN 2010) in the analytic model:
scenarios/tang2010/example2-model.toml.

Expected values are computed here from the paper's formulas (eq. (2) RED marking, FAST x = α/delay,
Reno x = sqrt(2/p)/T) and from scipy on the primal problem — not taken from the code under test."""

from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import brentq, minimize

from mpcc.hetero import model
from mpcc.reproduce.tang2010.example2_model import (EXAMPLE2_ALPHA0, EXAMPLE2_W_MS, example2_model_alg2, example2_model_equilibria,
                                  example2_model_network, example2_model_optimum)

ROOT = Path(__file__).resolve().parents[2]
FILE = ROOT / "scenarios" / "tang2010" / "example2-model.toml"
CAP = {"l12": 9.1, "l23": 13.8, "l34": 9.1}
RED = {"l12": (300.0, 1500.0, 1e-4), "l23": (0.0, 1500.0, 0.1), "l34": (300.0, 1500.0, 1e-4)}  # paper §II-B
T_MS = 180.0
LINKS = ("l12", "l23", "l34")


def red(b, link):
    lo, hi, mx = RED[link]
    return mx * min(max((b - lo) / (hi - lo), 0.0), 1.0)


def rates_by_hand(queues, alpha):
    """Per-flow rates from the paper's response functions at queues b (packets)."""
    p_reno = sum(red(queues[l], l) for l in LINKS)
    x_reno = np.sqrt(2.0 / p_reno) / T_MS if p_reno > 0 else np.inf
    d123 = queues["l12"] / CAP["l12"] + queues["l23"] / CAP["l23"]
    d234 = queues["l23"] / CAP["l23"] + queues["l34"] / CAP["l34"]
    return x_reno, alpha / d123, alpha / d234


def loads_by_hand(queues, alpha):
    xr, f1, f2 = rates_by_hand(queues, alpha)
    return {"l12": 8 * xr + 2 * f1, "l23": 8 * xr + 2 * f1 + 2 * f2, "l34": 8 * xr + 2 * f2}


@pytest.fixture(scope="module")
def net():
    return model.load(FILE)


@pytest.fixture(scope="module")
def eqs50(net):
    return example2_model_equilibria(net, 50.0)


def test_file_matches_the_paper(net):
    assert [l.name for l in net.links] == list(LINKS)
    assert [l.capacity for l in net.links] == [CAP[l] for l in LINKS]
    for l in LINKS:
        m = net.mapping("reno", l)
        assert m.kind == "red" and (m.min_th, m.max_th, m.max_p) == pytest.approx(RED[l])
        f = net.mapping("fast", l)
        assert f.kind == "power" and f.exponent == 1.0 and f.scale == pytest.approx(1.0 / CAP[l])
    reno = [s for s in net.sources if s.protocol == "reno"]
    fast = [s for s in net.sources if s.protocol == "fast"]
    assert len(reno) == 8 and all(s.links == LINKS for s in reno)
    assert sorted(s.links for s in fast) == [("l12", "l23")] * 2 + [("l23", "l34")] * 2
    assert all(s.utility_alpha == 2.0 and s.utility_weight == pytest.approx(2.0 / T_MS ** 2) for s in reno)
    assert all(s.utility_alpha == 1.0 and s.utility_weight == EXAMPLE2_ALPHA0 for s in fast)
    assert all(s.fairness_weight == EXAMPLE2_W_MS for s in fast) and all(s.fairness_weight == 1 for s in reno)


def test_alpha50_equilibria_are_the_papers_two_states_and_a_saddle(eqs50):
    by = {e["state"]: e for e in eqs50}
    assert sorted(by) == ["fast", "mixed", "reno"]
    assert by["fast"]["bottlenecks"] == ["l23"] and by["reno"]["bottlenecks"] == ["l12", "l34"]
    assert by["fast"]["stable"] and by["reno"]["stable"] and not by["mixed"]["stable"]
    assert sum(e["index"] for e in eqs50) == 1
    # the FAST state starves Reno (2a FAST first), the Reno state holds the l12/l34 queues
    assert by["fast"]["reno"] < 0.1 < 3 < by["fast"]["fast"]
    assert by["reno"]["reno"] > by["reno"]["fast"] and by["reno"]["queues"]["l12"] > 300


@pytest.mark.parametrize("state", ["fast", "mixed", "reno"])
def test_alpha50_equilibria_satisfy_7_by_hand(eqs50, state):
    e = next(e for e in eqs50 if e["state"] == state)
    y = loads_by_hand(e["queues"], 50.0)
    for l in LINKS:
        if e["queues"][l] > 0:
            assert y[l] == pytest.approx(CAP[l], rel=1e-8)
        else:
            assert y[l] <= CAP[l] * (1 + 1e-9)
    xr, f1, f2 = rates_by_hand(e["queues"], 50.0)
    assert e["reno"] == pytest.approx(xr, rel=1e-9)
    assert e["fast"] == pytest.approx((f1 + f2) / 2, rel=1e-9)


def test_fast_state_ends_where_l12_saturates(net):
    """FAST state: only l23 is a bottleneck; it ends when l12 fills, i.e. at 8 x_R + 2 x_F = 9.1 with
    8 x_R + 4 x_F = 13.8 (x_F = 2.35, x_R = 0.55): b23 from Reno's response, α = x_F · b23/c23."""
    b23 = brentq(lambda b: np.sqrt(2.0 / red(b, "l23")) / T_MS - 0.55, 1e-6, 1500)
    a_end = 2.35 * b23 / 13.8
    assert 0.3 < a_end < 1.0
    assert "fast" not in {e["state"] for e in example2_model_equilibria(net, 0.95 * a_end)}
    assert "fast" in {e["state"] for e in example2_model_equilibria(net, 1.05 * a_end)}
    assert "reno" in {e["state"] for e in example2_model_equilibria(net, 0.95 * a_end)}


def primal_optimum_by_scipy():
    """max Σ_Reno U_R + Σ_FAST (α₀/w) log x s.t. Rx ≤ c, symmetric (one Reno rate, one FAST rate)."""
    beta = 2.0 / T_MS ** 2
    wf = EXAMPLE2_ALPHA0 / EXAMPLE2_W_MS

    def neg(v):
        xr, xf = np.exp(v)
        return -(8 * (-beta / xr) + 4 * wf * np.log(xf))

    cons = [{"type": "ineq", "fun": lambda v: 9.1 - 8 * np.exp(v[0]) - 2 * np.exp(v[1])},
            {"type": "ineq", "fun": lambda v: 13.8 - 8 * np.exp(v[0]) - 4 * np.exp(v[1])}]
    r = minimize(neg, np.log([0.5, 0.5]), constraints=cons, method="SLSQP", options={"ftol": 1e-14, "maxiter": 500})
    return np.exp(r.x)


def test_algorithm2_in_the_model_reaches_the_theorem11_optimum(net):
    xr, xf = primal_optimum_by_scipy()
    opt = example2_model_optimum(net)
    assert opt["reno"] == pytest.approx(xr, rel=1e-4) and opt["fast"] == pytest.approx(xf, rel=1e-4)
    r = example2_model_alg2(net, "reno")
    assert r["converged"] and r["state"] == "reno"
    assert r["reno"] == pytest.approx(xr, rel=0.01) and r["fast"] == pytest.approx(xf, rel=0.01)
    # at the fixed point α = α* = α₀ q/(l w) with q, l recomputed by hand from the queues
    q = r["queues"]
    qd = q["l12"] / 9.1 + q["l23"] / 13.8
    loss = red(q["l12"], "l12") + red(q["l23"], "l23")
    assert r["alpha"] == pytest.approx(EXAMPLE2_ALPHA0 * qd / (loss * EXAMPLE2_W_MS), rel=1e-3)
    assert r["alpha"] == pytest.approx(opt["alpha"], rel=0.01)


def test_capacity_scale_and_reno_beta_variants(net):
    n2 = example2_model_network(FILE, capacity_scale=0.9, reno_beta=1.0 / T_MS ** 2)
    assert [l.capacity for l in n2.links] == pytest.approx([0.9 * CAP[l] for l in LINKS])
    assert n2.mapping("fast", "l23").scale == pytest.approx(1 / (0.9 * 13.8))
    assert all(s.utility_weight == pytest.approx(1 / T_MS ** 2) for s in n2.sources if s.protocol == "reno")


@pytest.mark.parametrize("dt", [10.0, 200.0, 5000.0])
def test_dynamics_leave_the_saddle_at_any_step(net, eqs50, dt):
    """The dual dynamics (5) started next to the unstable (mixed) equilibrium end in one of the two
    stable states, whatever the step: a linearly implicit step with λ·Δt > 2 would damp the unstable
    mode and settle on the saddle, so the integrator caps Δt near unstable points."""
    from mpcc.hetero.dynamics import integrate
    from mpcc.reproduce.tang2010.example2_model import fast_mu as _fast_mu
    saddle = next(e for e in eqs50 if not e["stable"])
    stable = [e for e in eqs50 if e["stable"]]
    a, mu = net.arrays(), _fast_mu(net, 50.0)
    from mpcc.hetero.equilibria import find_equilibria
    eq = {tuple(net.link_names[l] for l in e.bottlenecks): e.prices for e in find_equilibria(net, mu=mu).equilibria}
    p_saddle = eq[tuple(saddle["bottlenecks"])]
    for sign in (+1.0, -1.0):
        p0 = p_saddle * (1.0 + sign * 1e-3 * np.array([1.0, -1.0, 1.0]))
        p, _, _ = integrate(a, p0, 400_000.0, mu=mu, dt=dt)
        dist = {tuple(e["bottlenecks"]): np.linalg.norm(p - eq[tuple(e["bottlenecks"])]) / np.linalg.norm(eq[tuple(e["bottlenecks"])])
                for e in stable}
        assert min(dist.values()) < 1e-3, (sign, p, p_saddle, dist)
        assert np.linalg.norm(p - p_saddle) / np.linalg.norm(p_saddle) > 0.1
