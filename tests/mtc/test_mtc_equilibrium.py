"""§4.1 of Jiang, Cai, Towsley: closed forms of Cases 1–4 against the ODE (15) solver, plus values
computed by hand from (16)."""

import math

import numpy as np
import pytest

from mpcc.mtc import equilibrium as eq

GRID = np.linspace(0.0, 1.0, 6)
LOSS_VECTORS = [
    (0.01, 0.02, 0.03, 0.05),  # Fig. 8
    (0.05, 0.01, 0.02),  # unsorted
    (0.01, 0.01, 0.02),  # tied best paths
    (0.1, 0.2),
    (0.02,),  # one path
    (0.001, 0.002, 0.0015, 0.003, 0.01),
]


def _agree(c, o):
    if c.equilibrium_set:  # the simplex: only N and the total window are determined
        return c.paths_used == o.paths_used and o.total_window == pytest.approx(c.total_window, rel=1e-5)
    return (c.paths_used == o.paths_used and c.used == o.used
            and np.allclose(c.windows, o.windows, rtol=1e-4, atol=1e-5 * c.total_window))


@pytest.mark.parametrize("loss", LOSS_VECTORS)
def test_closed_forms_agree_with_ode_on_grid(loss):
    bad = []
    for alpha in GRID:
        for beta in GRID:
            c = eq.closed_form(alpha, beta, loss)
            o = eq.ode_equilibrium(alpha, beta, loss)
            if not _agree(c, o):
                bad.append((alpha, beta, c.windows, o.windows))
    assert not bad


def test_closed_forms_agree_with_ode_on_random_loss_vectors():
    rng = np.random.default_rng(20111)
    for _ in range(8):
        n = int(rng.integers(2, 6))
        loss = 10 ** rng.uniform(-3.5, -0.7, n)
        for alpha, beta in rng.uniform(0, 1, (6, 2)):
            assert _agree(eq.closed_form(alpha, beta, loss), eq.ode_equilibrium(alpha, beta, loss))


def test_uncoupled_paths_are_independent_reno():
    # α = β = 0: (16) reads w_i² = (a/b)(1 − p_i)/p_i on every path
    p = np.array([0.01, 0.04, 0.09])
    e = eq.closed_form(0.0, 0.0, p)
    assert e.paths_used == 3
    assert np.allclose(e.windows, np.sqrt(2 * (1 - p) / p))


def test_fully_coupled_uses_only_the_best_path():
    # Fig. 7(a): the stable equilibrium is (sqrt(2(1 − p1)/p1), 0)
    e = eq.closed_form(1.0, 1.0, [0.02, 0.01])
    assert e.paths_used == 1 and not e.equilibrium_set
    assert e.windows == pytest.approx((0.0, math.sqrt(2 * 0.99 / 0.01)))


def test_fully_coupled_tie_is_a_set_not_a_crash():
    # Fig. 7(b): p1 = p2, every point of w1 + w2 = sqrt(2(1 − p)/p) is an equilibrium
    e = eq.closed_form(1.0, 1.0, [0.01, 0.01, 0.03])
    assert e.equilibrium_set and e.paths_used == 2
    assert e.total_window == pytest.approx(math.sqrt(2 * 0.99 / 0.01))
    # the ODE limit depends on the start but always lies on that simplex, with path 3 unused
    for start in ([1.0, 5.0, 1.0], [7.0, 0.5, 2.0]):
        o = eq.ode_equilibrium(1.0, 1.0, [0.01, 0.01, 0.03], w_init=start)
        assert o.windows[2] == 0.0 and sum(o.windows) == pytest.approx(e.total_window, rel=1e-6)
        assert o.windows[0] / o.windows[1] == pytest.approx(start[0] / start[1], rel=1e-3)


def test_case1_threshold_for_single_path():
    # Case 1: with p2 > p1, only path 1 is used iff α ≥ p1(1 − p2)/(p2(1 − p1))
    p1, p2 = 0.01, 0.03
    thr = p1 * (1 - p2) / (p2 * (1 - p1))
    assert eq.closed_form(thr + 1e-6, 1.0, [p1, p2]).paths_used == 1
    assert eq.closed_form(thr - 1e-3, 1.0, [p1, p2]).paths_used == 2
    assert eq.ode_equilibrium(thr + 1e-2, 1.0, [p1, p2]).paths_used == 1
    assert eq.ode_equilibrium(thr - 1e-2, 1.0, [p1, p2]).paths_used == 2


def test_case1_windows_satisfy_equilibrium_16():
    p = np.array([0.01, 0.02, 0.03, 0.05])
    e = eq.closed_form(0.3, 1.0, p)
    w = np.array(e.windows)
    used = w > 0
    lhs = ((1 - 0.3) * w + 0.3 * w.sum()) * w.sum()
    assert np.allclose(lhs[used], (2 * (1 - p) / p)[used])


def test_alpha_beta_symmetry():
    # (16) and (19) are symmetric in α and β (Case 2 = Case 1 with α, β exchanged)
    p = (0.01, 0.02, 0.03, 0.05)
    for alpha, beta in ((0.3, 1.0), (0.2, 0.7), (0.9, 0.4)):
        assert np.allclose(eq.closed_form(alpha, beta, p).windows, eq.closed_form(beta, alpha, p).windows)


def test_fig8_corners_and_monotonicity():
    p = (0.01, 0.02, 0.03, 0.05)
    assert eq.closed_form(1.0, 1.0, p).paths_used == 1
    assert eq.closed_form(0.0, 1.0, p).paths_used == 4
    assert eq.closed_form(1.0, 0.0, p).paths_used == 4
    # stronger coupling never uses more paths (§4.1: "as the coupling gets weaker ... more paths")
    grid = np.linspace(0, 1, 21)
    used = np.array([[eq.closed_form(a, b, p).paths_used for a in grid] for b in grid])
    assert np.all(np.diff(used, axis=0) <= 0) and np.all(np.diff(used, axis=1) <= 0)


def test_better_paths_carry_more_traffic():
    e = eq.closed_form(0.4, 0.6, [0.03, 0.01, 0.02, 0.01])
    w = e.windows
    assert w[1] == pytest.approx(w[3]) and w[1] > w[2] > w[0]


@pytest.mark.parametrize("loss", [[0.01, 1.0], [0.0, 0.1], [], [-0.1]])
def test_bad_loss_rejected(loss):
    with pytest.raises(ValueError):
        eq.closed_form(0.5, 0.5, loss)
