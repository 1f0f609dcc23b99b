"""Step 1 of the equilibrium solver (:mod:`mpcc.fluid.solver`): the barrier path in log
variables, t driven from 1 to ~1e-12 by damped Newton stages with a predictor, from the starting
point :func:`initial_point`."""

from __future__ import annotations

import math

import numpy as np

from .network import Network
from .newton import DEBUG, GMRES_STAGE_RTOL, NewtonSystem, SolverFailure, phi_all

def initial_point(net: Network):
    """x⁰_r = min over the route's links of the equal share c_l / (flows on l); p⁰ from φ(x⁰)."""
    flows = net.Hm @ np.ones(net.n_routes)
    share = net.capacity / np.maximum(flows, 1e-300)
    HT = net.H.T.tocsr()
    x0 = np.minimum.reduceat(share[HT.indices], HT.indptr[:-1])
    phi0, _ = phi_all(net, x0, jac=False)
    if not np.all(np.isfinite(phi0) & (phi0 > 0)):
        # e.g. a window below one packet for MTCP/MSTCP: start from larger rates
        x0 = np.maximum(x0, 2.0 / net.tau)
        phi0, _ = phi_all(net, x0, jac=False)
    hops = np.asarray(net.H.sum(axis=0)).ravel()
    # p⁰_l: mean of φ_r(x⁰)/|r| over the routes through l
    num = net.H @ (phi0 / hops)
    den = net.H @ np.ones(net.n_routes)
    p0 = np.where(den > 0, num / np.maximum(den, 1), np.median(phi0))
    p0 = np.where(p0 > 0, p0, np.median(phi0))
    return x0, p0, phi0


def _newton_stage(sysm, u, v, t, m, nl, tol, max_steps):
    """Damped Newton at a fixed barrier weight t. Returns (u, v, converged, steps)."""

    def merit(G, F):
        return 0.5 * (G @ G + F @ F)

    G, F = sysm.residual(np.exp(u), np.exp(v), t, m, nl)
    lam, fails = 0.0, 0
    for k in range(max_steps + 1):
        res = max(np.abs(G).max(initial=0), np.abs(F).max(initial=0))
        if DEBUG:
            print(f"  t={t:.1e} step {k} res={res:.2e} lam={lam:.1e}")
        if res < tol:
            return u, v, True, k
        if k == max_steps or fails >= 6:
            break
        try:
            sysm.rtol = min(GMRES_STAGE_RTOL, 0.1 * res)   # inexact Newton forcing term
            try:
                du, dv, G, F = sysm.step(np.exp(u), np.exp(v), t, m, nl, lam=lam)
            finally:
                sysm.rtol = None
        except (np.linalg.LinAlgError, SolverFailure):
            lam, fails = max(4.0 * lam, 1e-2), fails + 1
            continue
        f0 = merit(G, F)
        big = max(np.abs(du).max(initial=0), np.abs(dv).max(initial=0))
        alpha = min(1.0, 3.0 / big) if big > 0 else 1.0
        while True:
            un, vn = u + alpha * du, v + alpha * dv
            Gn, Fn = sysm.residual(np.exp(un), np.exp(vn), t, m, nl)
            fn = merit(Gn, Fn) if np.all(np.isfinite(Gn)) and np.all(np.isfinite(Fn)) else np.inf
            if fn <= (1 - 1e-4 * alpha) * f0 or alpha < 1e-6:
                break
            alpha *= 0.5
        if alpha < 0.1:
            lam = max(4.0 * lam, 1e-2)      # poor Newton direction: regularise the next step
            fails += 1
        else:
            lam = lam / 10.0 if lam > 1e-6 else 0.0
            fails = 0
        if np.isfinite(fn) and fn < f0:
            u, v, G, F = un, vn, Gn, Fn
    return u, v, False, k


def _predict(u, v, ratio, good, prev):
    """Move along the central path when t shrinks by ``ratio``: on unpriced links
    p_l(c_l − y_l) = t n_l makes p_l ∝ t, and x_r ∝ t on unused routes. Those are recognised
    by having shrunk with t over the previous stage (by more than the square root of its ratio)."""
    if prev is None:
        return u, v
    half = 0.5 * np.log(good[2] / prev[2])
    idle_r = good[0] - prev[0] < half
    idle_l = good[1] - prev[1] < half
    return u + np.where(idle_r, np.log(ratio), 0.0), v + np.where(idle_l, np.log(ratio), 0.0)


def solve_path(sysm: NewtonSystem, x0, p0, m, nl, polish, *, t0=1.0, t_min=1e-13, max_iter=600, early=None):
    """Follow the barrier path t → 0 from (x0, p0) at t0. ``polish(x, p, hint)`` returns an exact
    solution or None; it is tried once t ≤ 1e-5 and the zero-route/priced-link classification
    (from how x and p moved with t) has settled over two stages — with ``early`` (fast path) already
    at the first classification. A stage that fails is retried from the last point on the path
    with half the step in log t. Returns (x, p, barrier Newton steps, exact?)."""
    u, v = np.log(x0), np.log(p0)
    t, sigma, total = t0, 0.1, 0
    good = None          # last point on the path: (u, v, t)
    last_hint = None
    prev = None          # the point before it, to classify: along the path p_l ∝ t on unpriced
                         # links and x_r ∝ t on unused routes, while the others stay put
    while total < max_iter:
        tol = 1e-12 if t <= t_min else 1e-3
        un, vn, ok, k = _newton_stage(sysm, u, v, t, m, nl, tol, 40)
        total += k
        if ok:
            u, v = un, vn
            if good is not None and good[2] > t:
                prev = good
            good = (u, v, t)
            if prev is not None and t <= 1e-5:
                half = 0.5 * np.log(t / prev[2])        # log of sqrt(t/t_prev) < 0
                hint = (u - prev[0] < half, v - prev[1] > half)
                # polish once the classification has settled (same as at the previous stage);
                # with ``early``, already at the first classification
                if (early is not None and last_hint is None) or (
                        last_hint is not None and np.array_equal(hint[0], last_hint[0])
                        and np.array_equal(hint[1], last_hint[1])):
                    exact = polish(np.exp(u), np.exp(v), hint)
                    if exact is not None:
                        return exact[0], exact[1], total, True
                last_hint = hint
            if t <= t_min:
                for h in ((last_hint,) if last_hint is not None else ()) + (None,):
                    exact = polish(np.exp(u), np.exp(v), h)
                    if exact is not None:
                        return exact[0], exact[1], total, True
                return np.exp(u), np.exp(v), total, False
            sigma = 0.001 if k <= 6 else 0.05
            t_new = max(t * sigma, t_min)
            u, v = _predict(u, v, t_new / t, good, prev)
            t = t_new
        else:
            if good is None:
                raise SolverFailure(f"no convergence at the start of the barrier path ({total} Newton steps)")
            # stalled: go back to the last point on the path and halve the step in log t
            u, v, t_good = good
            sigma = math.sqrt(t / t_good)
            if sigma > 0.97:
                raise SolverFailure(f"barrier path stalled at t = {t:.1e} after {total} Newton steps")
            t = max(t_good * sigma, t_min)
    raise SolverFailure(f"no convergence in {max_iter} Newton steps (t = {t:.1e})")
