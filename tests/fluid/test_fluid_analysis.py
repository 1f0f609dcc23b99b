"""§III analyses: C0–C5, Theorem IV.1, the linearisation (12) / Theorem III.5, D_s (13), dynamics."""

import math

import numpy as np
import pytest

from mpcc import algorithms, fluid
from mpcc.fluid import analysis, design

from fluid_helpers import path_rates


@pytest.mark.parametrize("n_routes", [2, 3, 5, 8])
def test_theorem_IV1_C2_region(n_routes):
    # 0 < β ≤ 1, any η ≥ 0 and n, |s| ≤ 8, equal RTTs ⇒ C2 (and C3) at every sampled point
    x = analysis.sample_region(n_routes, 300, seed=n_routes, decades=2.0)
    for beta in (0.05, 0.2, 0.5, 1.0):
        for eta in (0.0, 0.5, 2.0):
            for n in (1, 2, 5, "inf"):
                algo = algorithms.get({"name": "generalized", "beta": beta, "eta": eta, "n": n})
                cond = analysis.conditions(algo, x, 0.05)
                assert cond.c2.all(), (beta, eta, n, cond.max_eig_sym.max())
                assert cond.c3.all() and cond.c5.all()


def test_coupled_fails_C2_but_is_symmetric():
    x = analysis.sample_region(3, 200, seed=1)
    cond = analysis.conditions("coupled", x, 0.05)
    assert not cond.c2.any()     # [∂Φ/∂x]^+ = −4/(τ²X³)·11ᵀ: only semidefinite
    assert cond.c0.all()         # Table I: C0 yes
    assert not cond.c3.any()     # φ_r(x_r → 0) stays finite


def test_table_I_C0():
    x = analysis.sample_region(2, 200, seed=2)
    assert analysis.conditions("ewtcp", x, 0.05).c0.all()
    assert not analysis.conditions("semicoupled", x, 0.05).c0.any()
    assert not analysis.conditions("lia", x, 0.05).c0.any()
    ew = analysis.conditions("ewtcp", x, 0.05)
    assert ew.c1.all() and ew.c2.all() and ew.c4.all()


def test_jacobian_closed_form():
    # Semicoupled: φ_r = 2/(τ² x_r X) ⇒ ∂φ_r/∂x_k = −2/(τ² x_r X²) − δ_rk 2/(τ² x_r² X)
    x = np.array([30.0, 70.0, 15.0]); tau = 0.04; X = x.sum()
    want = -2 / (tau**2 * x[:, None] * X**2) - np.diag(2 / (tau**2 * x**2 * X))
    assert analysis.jacobian("semicoupled", x, tau) == pytest.approx(want, rel=1e-7)


@pytest.mark.parametrize("algo", ["ewtcp", "semicoupled", "lia", "balia", "generalized"])
def test_linearization_theorem_III5(load, algo):
    sc = load("table5.toml")
    eq = fluid.equilibrium(sc, algorithm=algorithms.get(algo))
    lin = analysis.linearization(eq, fluid.default_gamma(sc, algorithms.get(algo)))
    assert lin.max_real < 0                      # stable (Re λ < 0)
    assert lin.rayleigh_error < 1e-8             # Re λ = xᴴ[∂Φ/∂x]^+x / (xᴴΛk⁻¹x + pᴴΛγ⁻¹p)
    assert lin.bound_holds                       # λ_min(pencil) ≤ Re λ ≤ 0
    assert np.all(lin.eigenvalues.real >= lin.pencil_min * (1 + 1e-9))


def test_linearization_reno_closed_form():
    # one Reno flow on one link: J* = [[−x p, −x²/2], [γ, 0]] at x = c, p = 2/(τc)²
    from mpcc.fluid import network
    c, tau, g = 200.0, 0.05, 0.01
    net = network.build([c], [(algorithms.get("reno"), [[0]], [tau], 1)])
    eq = fluid.solve(net)
    lin = analysis.linearization(eq, g)
    p = 2 / (tau * c) ** 2
    want = np.roots([1.0, c * p, g * c**2 / 2])
    assert sorted(lin.eigenvalues, key=lambda z: z.imag) == pytest.approx(sorted(want, key=lambda z: z.imag), rel=1e-6)


def test_oscillation_reno_half_and_multipath_less(load):
    sc = load("table3.toml")
    for algo in ("ewtcp", "semicoupled", "lia", "balia"):
        eq = fluid.equilibrium(sc, algorithm=algorithms.get(algo))
        D = dict(zip([g.name for g in eq.groups], analysis.oscillation(eq)))
        assert D["sp"] == pytest.approx(0.5, rel=1e-12)       # Reno: D_s = 1/2
        if algo != "balia":
            assert D["mp"] < 0.5                               # k_r = x_r²/2 < x_r‖x‖₁/2
    # closed form for EWTCP (k_r = x_r²/2): D = Σ τ q_r x_r²/2 / (‖x‖₁ Σ τ q_r x_r)
    eq = fluid.equilibrium(sc, algorithm=algorithms.get("ewtcp"))
    r = path_rates(eq)["mp"]
    q = eq.q[eq.network.source_of_route == [g.name for g in eq.groups].index("mp")]
    want = (q @ (r**2 / 2)) / (r.sum() * (q @ r))
    assert dict(zip([g.name for g in eq.groups], analysis.oscillation(eq)))["mp"] == pytest.approx(want, rel=1e-12)


def test_dynamics_converge_to_equilibrium(load):
    sc = load("table3.toml")
    for algo in ("balia", "semicoupled"):
        a = algorithms.get(algo)
        tr = fluid.dynamics(sc, t_end=20.0, algorithm=a)
        eq = fluid.equilibrium(sc, algorithm=a)
        assert tr.x[-1] == pytest.approx(eq.x, rel=1e-4)
        assert tr.p[-1] == pytest.approx(eq.p, rel=1e-4)
        assert (tr.x >= 0).all() and (tr.p >= 0).all()


def test_dynamics_start_stop(load):
    sc = load("table5.toml")   # 5 Reno flows on link 2 from 40 s to 80 s
    tr = fluid.dynamics(sc, t_end=120.0, algorithm=algorithms.get("lia"), n_points=241)
    sp = tr.network.source_of_route == [g.name for g in tr.groups].index("sp")
    assert np.all(tr.x[tr.t < 40][:, sp] == 0) and np.all(tr.x[tr.t >= 80][:, sp] == 0)
    assert np.all(tr.x[(tr.t > 41) & (tr.t < 80)][:, sp] > 0)
    # while the Reno flows are present, the state approaches the equilibrium at t = 60 s
    eq = fluid.equilibrium(sc, algorithm=algorithms.get("lia"), at_s=60.0)
    i = np.argmin(np.abs(tr.t - 79.5))
    assert tr.x[i] == pytest.approx(eq.x, rel=1e-3)


def test_sweep_table_II_trends(load):
    pts = design.sweep(load("table3.toml"), betas=(0.1, 0.5, 1.0), etas=(0.0, 1.0), ns=(1.0, math.inf))
    by = {(p.beta, p.eta, p.n): p for p in pts}
    # friendliness: β ↓ ⇒ friendlier (smaller multipath share); n ↑ ⇒ friendlier
    assert by[(0.1, 0.0, math.inf)].mp_share < by[(1.0, 0.0, math.inf)].mp_share
    assert by[(1.0, 0.0, math.inf)].mp_share < by[(1.0, 0.0, 1.0)].mp_share
    # oscillation: η ↑ ⇒ larger D_s
    assert by[(0.5, 1.0, math.inf)].oscillation > by[(0.5, 0.0, math.inf)].oscillation


def _independent_jstar(net, eq, gamma):
    """J* of (12) built here from H, fluid_k, and ∂Φ/∂x by central differences of fluid_phi
    (not the engine's linearization), over used routes and priced links, and its pencil
    ([∂Φ/∂x]^+, Λk⁻¹) weighted by the flows per route (y = H·diag(m)·x)."""
    import scipy.linalg as sla

    R = net.n_routes
    D = np.zeros((R, R))
    k = np.zeros(R)
    for c in net.classes:
        B, n = c.shape
        xs = eq.x[c.routes].reshape(B, n)
        k[c.routes] = c.algorithm.fluid_k(xs, c.tau).ravel()
        for j in range(n):
            h = 1e-6 * xs[:, j]
            up, dn = xs.copy(), xs.copy()
            up[:, j] += h
            dn[:, j] -= h
            col = (c.algorithm.fluid_phi(up, c.tau) - c.algorithm.fluid_phi(dn, c.tau)) / (2 * h[:, None])
            for b in range(B):
                r0 = c.route0 + b * n
                D[r0:r0 + n, r0 + j] = col[b]
    r, l = np.flatnonzero(eq.x > 0), np.flatnonzero(eq.p > 0)
    H = net.H.toarray()[np.ix_(l, r)]
    m = net.multiplicity[r]
    Dr, kr, g = D[np.ix_(r, r)], k[r], np.asarray(gamma)[l]
    J = np.block([[kr[:, None] * Dr, -kr[:, None] * H.T], [g[:, None] * H * m[None, :], np.zeros((l.size, l.size))]])
    pen = sla.eigh(m[:, None] * 0.5 * (Dr + Dr.T), np.diag(m / kr), eigvals_only=True)
    return np.linalg.eigvals(J), pen


@pytest.mark.parametrize("algos,seed", [(("ewtcp",), 0), (("ewtcp",), 5), (("reno",), 2), (("ewtcp",), 7)])
def test_theorem_III5_lambda_bar_random(algos, seed):
    """Theorem III.5 on random equilibria where its hypotheses hold (EWTCP/Reno: ∂Φ/∂x diagonal,
    so C0 and C2): every non-real eigenvalue of J* has Re λ ≤ λ̄ = ½ λ_max([∂Φ/∂x]^+, Λk⁻¹) < 0,
    every eigenvalue λ_min ≤ Re λ < 0 — eigenvalues from an independently built J*."""
    from mpcc.fluid import network

    net = network.random_network(15, 30, seed=seed, algorithms_=algos, single_path_fraction=0.3)
    eq = fluid.solve(net)
    gamma = np.random.default_rng(seed).uniform(1e-6, 1e-3, net.n_links) / np.maximum(eq.p, 1e-3)
    bound = analysis.responsiveness_bound(analysis.linearization(eq, gamma))
    lam, pen = _independent_jstar(net, eq, gamma)
    assert bound.applies and bound.holds
    assert bound.lam_bar == pytest.approx(0.5 * pen.max(), rel=1e-6) and bound.lam_bar < 0
    cplx = np.abs(lam.imag) > 1e-9 * np.abs(lam).max()
    assert cplx.any()                                       # the bound is exercised
    assert np.all(lam.real[cplx] <= bound.lam_bar * (1 - 1e-7))
    assert np.all(lam.real < 0) and np.all(lam.real >= pen.min() * (1 + 1e-7))


def test_theorem_III5_lambda_bar_tight_reno():
    # one Reno flow on one link, complex pair (γ large): Re λ = −c p/2 = ½ k φ'(x) = λ̄ exactly
    from mpcc.fluid import network
    c, tau, g = 200.0, 0.05, 10.0
    net = network.build([c], [(algorithms.get("reno"), [[0]], [tau], 1)])
    eq = fluid.solve(net)
    bound = analysis.responsiveness_bound(analysis.linearization(eq, g))
    p = 2 / (tau * c) ** 2
    assert bound.lam_bar == pytest.approx(-c * p / 2, rel=1e-7)
    assert bound.max_real_complex == pytest.approx(-c * p / 2, rel=1e-7) and bound.holds
