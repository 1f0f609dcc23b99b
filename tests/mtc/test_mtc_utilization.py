"""Closed forms of Jiang, Cai, Towsley §3 / Appendices A–D against the paper's printed values and
against independent numerics (ODE integration of the window dynamics, a shooting solver for the
Assumption-2 orbit, the deterministic-drop hybrid simulation)."""

import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from mpcc.mtc import cycles
from mpcc.mtc import utilization as ut

ALGS = ut.ALGORITHMS


# --- printed values of the report -------------------------------------------------------------
def test_paper_special_values():
    # §3.1: "For b = 1/2, it takes only n = 3 to bring f down to 0.125."
    assert ut.f_mstcp(3, 0.5, 42.0) == pytest.approx(0.125, abs=1e-15)
    # §3.2.2: Coupled Increase with equal windows behaves as one TCP: (10) with f = 1 − b,
    # "approximately 75% with a small buffer".
    assert ut.cycle_utilization_aimd(0.5, 1.0) == pytest.approx(0.75, abs=1e-15)
    # §3.2.1: n0 = 2/b − 1 = 3 for b = 1/2, and f = 1/W0 from n0 on.
    for n in (3, 4, 7):
        assert ut.f_coupled_decrease(n, 0.5, 42.0) == pytest.approx(1 / 42)
    assert ut.f_coupled_decrease(2, 0.5, 42.0) == pytest.approx((2 - 1.5) / (2 + 0.5))
    # §3.2.3 large-n limit of Fully Coupled: (W0 − 1)/(W0 log W0)
    assert ut.utilization("fully-coupled", 400, 1, 42.0).utilization == pytest.approx(
        41 / (42 * math.log(42)), rel=2e-3)


def test_limit_13_and_first_order_taylor():
    # (13): lim n→∞ of (12) with f = 1 − b is kappa·b/(−log(1 − b))
    for b in (0.2, 0.5, 0.8):
        big = ut.utilization_coupled_increase(1 - b, 100000, 1.0)
        assert big == pytest.approx(b / -math.log(1 - b), rel=1e-6)
    # "(13) can be approximated by its first order Taylor polynomial kappa(1 − b/2)" for small b
    assert ut.utilization_coupled_increase_limit(0.05) == pytest.approx(1 - 0.025, abs=3e-4)


# --- per-cycle utilization (6), (10) against direct integration of (5), (9) -------------------------
def _cycle_numeric(kind, f, gamma, w0=50.0, d=0.1, a=1.0):
    """Integrate the window from f·W_max to W_max with dw/dt of (5) or (9) and average the rate
    r = min(w/D, C) (4) over the cycle, by quadrature of the ODE solution."""
    c = w0 / d
    w_max = (1 + gamma) * w0

    def rhs(_t, y):
        w = y[0]
        tau = max(w / c, d)
        dw = a * w / tau if kind == "mimd" else a / tau
        return [dw, min(w / d, c)]

    hit = lambda _t, y: y[0] - w_max  # noqa: E731
    hit.terminal = True
    sol = solve_ivp(rhs, (0, 1e6), [f * w_max, 0.0], events=hit, rtol=1e-11, atol=1e-12)
    t1 = sol.t_events[0][0]
    return sol.y_events[0][0][1] / (c * t1)


@pytest.mark.parametrize("gamma", [0.0, 0.3, 1.0])
@pytest.mark.parametrize("f", [0.01, 0.125, 0.4, 0.7])
def test_cycle_utilization_matches_integration(f, gamma):
    assert ut.cycle_utilization_mimd(f, 1 + gamma) == pytest.approx(_cycle_numeric("mimd", f, gamma), rel=1e-7)
    assert ut.cycle_utilization_aimd(f, 1 + gamma) == pytest.approx(_cycle_numeric("aimd", f, gamma), rel=1e-7)


def test_cycle_utilization_bounds_of_fig3():
    # Fig. 3(a): (6) → 0 as f → 0; Fig. 3(b): (10) is bounded below by 1/2.
    assert ut.cycle_utilization_mimd(1e-12) < 0.04
    assert min(ut.cycle_utilization_aimd(f, k) for f in np.linspace(0, 1, 50) for k in (1, 1.5, 3)) >= 0.5


# --- single flow (8), (11), (12): numerically found Assumption-2 orbit ------------------------------
@pytest.mark.parametrize("alg", ALGS)
@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_single_flow_closed_forms_match_orbit(alg, n):
    orbit = cycles.periodic_orbit(alg, n, 42.0, 0.0)
    cf = ut.utilization(alg, n, 1, 42.0, 0.0, 0.5)
    assert orbit.f == pytest.approx(cf.f, rel=1e-6)
    assert orbit.utilization == pytest.approx(cf.utilization, rel=1e-6)


@pytest.mark.parametrize("alg,kind", [("mstcp", "mimd"), ("coupled-decrease", "aimd")])
@pytest.mark.parametrize("gamma", [0.2, 1.0])
def test_orbit_with_buffer_obeys_per_cycle_formula(alg, kind, gamma):
    """With gamma > 0 every cycle of the orbit is the same, so U must equal (6)/(10) at its f."""
    orbit = cycles.periodic_orbit(alg, 2, 30.0, gamma)
    per = ut.cycle_utilization_mimd if kind == "mimd" else ut.cycle_utilization_aimd
    assert orbit.utilization == pytest.approx(per(orbit.f, 1 + gamma), rel=1e-6)


# --- m flows, Table 1 (Appendix D): sample the single-flow orbit at jL/m --------------------------------
@pytest.mark.parametrize("alg", ALGS)
@pytest.mark.parametrize("n,w_eff", [(2, 300.0), (5, 30.0)])
@pytest.mark.parametrize("m", [2, 3, 7])
def test_table1_matches_sampled_orbit(alg, n, w_eff, m):
    """Assumption 4: m shifted copies of the single-flow orbit whose peak is W_eff share a path
    whose W0 is the sum of the m copies at the loss instant, Σ_j w_1(jL/m) (eqs. 32, 35, 36).
    Table 1 evaluated at that W0 must give back the orbit's f and U = m·W_eff/W0·U_single (31).
    (n = 5, W_eff = 30 puts MSTCP / Fully Coupled on the floor branch, i.e. the roots f*, f**.)"""
    orbit = cycles.periodic_orbit(alg, n, w_eff, 0.0)
    w0 = float(orbit.w1_at(np.arange(1, m + 1) * orbit.period / m).sum())
    f = ut.table1_f(alg, n, m, w0, 0.5)
    assert f == pytest.approx(orbit.f, rel=1e-6)
    assert ut.table1_utilization(alg, f, n, m) == pytest.approx(m * w_eff / w0 * orbit.utilization, rel=1e-6)


def test_roots_solve_their_equations():
    for m, w0 in ((2, 100.0), (5, 42.0), (20, 100.0)):
        x = ut.f_star(m, w0)
        assert 0 < x < 1 and x ** (1 + 1 / m) - (1 + 1 / w0) * x + 1 / w0 == pytest.approx(0, abs=1e-12)
        for n in (1, 3, 8):
            y = ut.f_double_star(n, m, w0)
            assert 0 < y < 1 and ut.g(y, n, m) == pytest.approx(y * w0, rel=1e-10)


@pytest.mark.parametrize("alg", ALGS)
@pytest.mark.parametrize("n", [1, 2, 4])
def test_table1_with_one_flow_is_the_single_flow_result(alg, n):
    # m = 1: g = 1, f* = f** = 1/W0, and Table 1 must reduce to (6)+(8), (10)+(11), (12).
    single = ut.utilization(alg, n, 1, 100.0, 0.0)
    f = ut.table1_f(alg, n, 1, 100.0, 0.5)
    assert f == pytest.approx(single.f)
    assert ut.table1_utilization(alg, f, n, 1) == pytest.approx(single.utilization)


def test_fig6_trends():
    # "As m increases, we get better statistical multiplexing and hence larger link utilization";
    # Coupled Increase barely depends on n, the others drop with n at small m.
    for alg in ALGS:
        for n in (1, 2, 4, 8):
            us = [ut.utilization(alg, n, m, 100.0).utilization for m in range(1, 21)]
            assert all(x2 >= x1 - 1e-12 for x1, x2 in zip(us, us[1:]))
    ci = [ut.utilization("coupled-increase", n, 1, 100.0).utilization for n in (1, 2, 4, 8)]
    assert max(ci) - min(ci) < 0.05
    for alg in ("mstcp", "coupled-decrease", "fully-coupled"):
        assert ut.utilization(alg, 8, 1, 100.0).utilization < ut.utilization(alg, 1, 1, 100.0).utilization - 0.2


# --- Figs. 9–10 method: dashed (per-cycle formula at measured f) vs solid (simulation) ----------------
@pytest.mark.parametrize("alg,kind", [("mstcp", "mimd"), ("coupled-decrease", "aimd")])
@pytest.mark.parametrize("n,gamma", [(2, 0.05), (3, 1.0)])
def test_fig9_dashed_equals_solid_in_fluid_simulation(alg, kind, n, gamma):
    run = cycles.simulate(alg, n, 1, 42.0, gamma, cycles=15, warmup_cycles=5)
    assert run.complete_cycle_utilization() == pytest.approx(run.cycle_weighted_utilization(kind, 1 + gamma),
                                                             rel=1e-5)


def test_fig9c_coupled_increase_close_to_single_path_tcp():
    # §3.2.2: "We expect the link utilization to be similar to that of single path TCP even when
    # Assumptions 2 and 3 are violated" — the report's dashed curve in Fig. 9(c).
    tcp = ut.cycle_utilization_aimd(0.5, 1.05)
    for n in (2, 4):
        run = cycles.simulate("coupled-increase", n, 1, 42.0, 0.05, cycles=15, warmup_cycles=5)
        assert abs(run.complete_cycle_utilization() - tcp) / tcp < 0.05


def test_bad_arguments():
    with pytest.raises(ValueError):
        ut.utilization("reno", 2)
    with pytest.raises(ValueError):
        ut.utilization("mstcp", 0)
    with pytest.raises(ValueError):
        ut.utilization("mstcp", 2, 1, 42.0, -0.1)


def test_cycles_from_sawtooth_trace():
    # synthetic TCP sawtooth sampled every 10 ms: grows 1 packet per 100 ms from 20 to 40, halves
    t = np.arange(0.0, 60.0, 0.01)
    phase = np.mod(t, 2.0)  # 20 → 40 takes 2 s
    w = 20.0 + 10.0 * phase
    starts, f = cycles.cycles_from_trace(t, w)
    assert len(starts) == 29
    assert np.allclose(np.diff(starts), 2.0)
    assert np.allclose(f, 20.0 / 39.9, rtol=1e-9)  # the last sample before the fall is 39.9
    u = cycles.trace_cycle_utilization([starts], [f], "aimd", 1.0)
    assert u == pytest.approx(ut.cycle_utilization_aimd(20.0 / 39.9, 1.0))
