"""Equilibrium (8)–(9) of the fluid model (3)–(4) of Peng et al. as a complementarity problem.

    x_r ≥ 0,  φ_r(x_s) ≤ q_r,  equality if x_r > 0           (8)
    p_l ≥ 0,  y_l ≤ c_l,       equality if p_l > 0           (9)

Method (interior-point path following, then an exact active-set Newton "polish"):

1. Barrier path. For t > 0 solve, in log variables u_r = log x_r, v_l = log p_l,

       G_r = log(φ_r(x) + t m_r/x_r) − log q_r = 0          (route r)
       F_l = log(y_l + t n_l/p_l)   − log c_l = 0          (link l)

   i.e. the complementarity products x_r(q_r − φ_r) = t m_r and p_l(c_l − y_l) = t n_l, with
   fixed scales m_r = x⁰_r φ_r(x⁰), n_l = c_l p⁰_l from the starting point. Every iterate has
   x, p > 0, so every route sees q_r > 0. The route barrier also makes the per-source Jacobian
   ∂Φ_s/∂x_s − diag(t m_r/x_r²) nonsingular for algorithms that violate C2 (Coupled), so the
   path is unique even when the equilibrium set is not. t is driven to ~1e-12.
2. Newton steps use the Schur complement on the links: the route block is block-diagonal
   (one small n×n block per source, inverted in batch), so each step costs one |L|×|L| solve.
   ∂φ/∂x is taken by central differences of ``algo.fluid_phi`` (eq. 7 from on_ack/on_loss).
3. Polish: with the active sets read off the barrier solution (zero-rate routes Z, priced
   links A), Newton on {φ_r = q_r, r ∉ Z; y_l = c_l, l ∈ A} with x_Z = 0 and p_{L∖A} = 0,
   which gives (8)–(9) to machine precision. The residuals of (8)–(9) are reported.
4. Non-uniqueness: a source whose Jacobian restricted to its tied routes (x_r > 0, or x_r = 0
   with φ_r = q_r) is singular (Coupled) can move its rates along the null space without changing
   φ; the equilibrium set (prices fixed) is then a polytope and per-route [min, max] rates over it
   come from linear programs (scipy.optimize.linprog).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from ..algorithms.balia import Balia
from ..algorithms.balia import _alpha as _balia_alpha
from ..algorithms.base import _arrays
from .network import Network, SourceClass

_FD_STEP = 1e-6      # relative central-difference step for ∂φ/∂x
_DEBUG = bool(__import__("os").environ.get("MPCC_FLUID_DEBUG"))
_ZERO = 1e-20        # a "zero" route is evaluated at x_r = _ZERO·x⁰_r (φ has a limit there)


class SolverFailure(RuntimeError):
    pass


# --- Balia: continuation from the generalized family ------------------------------------------------
@dataclass(frozen=True)
class _BaliaHomotopy(Balia):
    """Balia with the decrease factor blended between the generalized family's (1+α)/2
    (λ = 0: (β, η, n) = (0.2, 0.5, ∞), which satisfies C2 and which the barrier path solves) and
    the published min(α, 1.5) of eq. (2) (λ = 1). A numerical device, not an algorithm."""

    lam: float = 0.0

    def on_loss(self, cwnd, rtt, **state):
        w, t = _arrays(cwnd, rtt)
        a = _balia_alpha(w, t)
        return w / 2.0 * ((1.0 - self.lam) * (1.0 + a) / 2.0 + self.lam * np.minimum(a, 1.5))


def _with_lambda(net: Network, lam: float) -> Network:
    from dataclasses import replace

    classes = tuple(replace(c, algorithm=_BaliaHomotopy(params=c.algorithm.params, lam=lam))
                    if isinstance(c.algorithm, Balia) else c for c in net.classes)
    return replace(net, classes=classes)


def _balia_continuation(net: Network, failure: SolverFailure, h_min: float = 1e-6):
    """Published Balia's decrease (2) caps its factor at 1.5, so for 1 < α_r < 1.5 a route's φ_r
    grows with its own rate (C2 fails locally) and the barrier path can stall. Solve the λ = 0
    problem instead and follow the equilibrium to λ = 1 with Newton steps on the fixed active
    set, adapting the λ step. Raises SolverFailure at a fold of the branch."""
    eq0 = solve(_with_lambda(net, 0.0), ranges=False)
    x, p, lam, h, steps = eq0.x, eq0.p, 0.0, 0.05, eq0.iterations
    x0, p0, _ = _initial(net)
    while lam < 1.0:
        nxt = min(1.0, lam + h)
        sysm = _System(_with_lambda(net, nxt))
        # Newton on the current active sets; links whose price heads to 0 (or unpriced links
        # that overflow) move between the sets, as in the polish of the barrier solution
        pol = _polish(sysm, np.maximum(x, 1e-300), p, x0, p0, hint=(x <= 0, p > 0))
        steps += 1
        if pol is not None and max(kkt_residuals(sysm.net, *pol).values()) < 1e-10:
            x, p, lam, h = pol[0], pol[1], nxt, min(0.2, 1.5 * h)
            continue
        h /= 4.0
        if h < h_min:
            raise SolverFailure(f"{failure}; continuation from the generalized (0.2, 0.5, inf) rule to Balia's "
                                f"published decrease min(alpha, 1.5) reached a fold of the equilibrium branch at "
                                f"lambda = {lam:.3f} (Balia's phi is non-monotone for 1 < alpha < 1.5)")
    sysm = _System(net)
    pol = _polish(sysm, x, p, np.maximum(x, 1e-300), np.maximum(p, 1e-300))
    if pol is None:
        raise SolverFailure(f"{failure}; Balia continuation ended without an exact equilibrium")
    return pol[0], pol[1], steps


@dataclass
class Equilibrium:
    """Solution of (8)–(9). ``x`` per route (per flow, packets/s), ``p`` per link."""

    network: Network
    x: np.ndarray
    p: np.ndarray
    q: np.ndarray
    y: np.ndarray
    phi: np.ndarray
    residuals: dict
    unique: bool
    x_min: np.ndarray
    x_max: np.ndarray
    degenerate_sources: list = field(default_factory=list)
    iterations: int = 0
    tau: np.ndarray | None = None
    groups: list | None = None        # scenario groups in source order (when built from a scenario)

    @property
    def residual(self) -> float:
        return max(self.residuals.values())

    def source_routes(self, s: int) -> np.ndarray:
        return np.flatnonzero(self.network.source_of_route == s)


# --- φ and its Jacobian, batched per class -------------------------------------------------------
def phi_jac(cls: SourceClass, x: np.ndarray, jac: bool = True):
    """φ (B, n) and ∂φ/∂x (B, n, n) at x (B, n) > 0, J[b, r, k] = ∂φ_r/∂x_k."""
    B, n = x.shape
    algo = cls.algorithm
    with np.errstate(all="ignore"):
        if not jac:
            return algo.fluid_phi(x, cls.tau), None
        X = np.repeat(x[None], 2 * n + 1, axis=0)
        for k in range(n):
            X[1 + 2 * k, :, k] *= 1.0 + _FD_STEP
            X[2 + 2 * k, :, k] *= 1.0 - _FD_STEP
        T = np.broadcast_to(cls.tau, X.shape)
        out = algo.fluid_phi(X.reshape(-1, n), T.reshape(-1, n)).reshape(2 * n + 1, B, n)
        J = np.empty((B, n, n))
        for k in range(n):
            J[:, :, k] = (out[1 + 2 * k] - out[2 + 2 * k]) / (2.0 * _FD_STEP * x[:, k, None])
        return out[0], J


def phi_all(net: Network, x: np.ndarray, jac: bool = True):
    phi = np.empty(net.n_routes)
    Js = []
    for c in net.classes:
        f, J = phi_jac(c, x[c.routes].reshape(c.shape), jac)
        phi[c.routes] = f.ravel()
        Js.append(J)
    return phi, Js


def _block_index(net: Network):
    rows, cols = [], []
    for c in net.classes:
        B, n = c.shape
        base = c.route0 + np.arange(B)[:, None, None] * n
        rows.append(np.broadcast_to(base + np.arange(n)[None, :, None], (B, n, n)).ravel())
        cols.append(np.broadcast_to(base + np.arange(n)[None, None, :], (B, n, n)).ravel())
    return np.concatenate(rows), np.concatenate(cols)


# --- the Newton machinery ---------------------------------------------------------------------------
class _System:
    def __init__(self, net: Network):
        self.net = net
        self.H = net.H.tocsr()
        self.HT = net.H.T.tocsr()
        self.Hm = net.Hm
        self.c = net.capacity
        self.rows, self.cols = _block_index(net)
        # K = Hm M Hᵀ summed entry by entry: for every pair (r, k) of routes of one source and
        # every l ∈ r, l' ∈ k, K[l, l'] += m_r M[r, k]. Precompute the (entry, l·L + l') lists.
        HT = self.HT
        deg = np.diff(HT.indptr)
        pair = np.arange(self.rows.size)
        nr, nk = deg[self.rows], deg[self.cols]
        cnt = nr * nk
        self._pair = np.repeat(pair, cnt)
        within = np.arange(cnt.sum()) - np.repeat(np.cumsum(cnt) - cnt, cnt)
        nk_rep = np.repeat(nk, cnt)
        li = HT.indices[np.repeat(HT.indptr[self.rows], cnt) + within // nk_rep]
        lk = HT.indices[np.repeat(HT.indptr[self.cols], cnt) + within % nk_rep]
        L = net.n_links
        self._lin = li * L + lk
        self._mrow = net.multiplicity[self.rows]

    def residual(self, x, p, t, m, nl, free_r=None, free_l=None):
        net = self.net
        phi, Js = phi_all(net, x, jac=False)
        q = self.HT @ p
        y = self.Hm @ x
        with np.errstate(all="ignore"):
            phit = phi + t * m / x
            G = np.log(phit) - np.log(q)
            pt = np.where(p > 0, p, 1.0)
            yt = y + (t * nl / pt if t > 0 else 0.0)
            F = np.log(yt) - np.log(self.c)
        if free_r is not None:
            G = np.where(free_r, G, 0.0)
            F = np.where(free_l, F, 0.0)
        return G, F

    def step(self, x, p, t, m, nl, free_r=None, free_l=None, lam=0.0):
        """Newton step (Δu, Δv) and the residual (G, F) at (x, p). ``lam`` > 0 regularises the
        step (proximal term −λ on the diagonal of both blocks, the sign of a monotone descent
        direction) when the plain Newton step fails the line search."""
        net = self.net
        phi, Js = phi_all(net, x)
        q = self.HT @ p
        y = self.Hm @ x
        with np.errstate(all="ignore"):
            bar = t * m / x
            phit = phi + bar
            G = np.log(phit) - np.log(q)
            pt = np.where(p > 0, p, 1.0)
            lbar = t * nl / pt if t > 0 else np.zeros_like(p)
            yt = y + lbar
            F = np.log(yt) - np.log(self.c)
            Dd = -lbar / yt
        if free_r is not None:
            G = np.where(free_r, G, 0.0)
            F = np.where(free_l, F, 0.0)
        if not (np.all(np.isfinite(G)) and np.all(np.isfinite(F))):
            raise SolverFailure("non-finite residual")
        blocks, AinvG = [], np.empty(net.n_routes)
        for c, J in zip(net.classes, Js):
            B, n = c.shape
            sl = c.routes
            xs = x[sl].reshape(B, n)
            A = J * xs[:, None, :]
            A[:, np.arange(n), np.arange(n)] -= bar[sl].reshape(B, n)
            A /= phit[sl].reshape(B, n)[:, :, None]
            if lam:
                A[:, np.arange(n), np.arange(n)] -= lam
            if free_r is not None:  # fixed routes: Δu_r = 0
                fr = free_r[sl].reshape(B, n)
                A = np.where(fr[:, :, None], A, 0.0)
                idx = np.arange(n)
                A[:, idx, idx] = np.where(fr, A[:, idx, idx], 1.0)
            Ainv = np.linalg.inv(A)
            AinvG[sl] = np.einsum("bij,bj->bi", Ainv, G[sl].reshape(B, n)).ravel()
            blocks.append((Ainv, xs, q[sl].reshape(B, n), sl))
        data = np.concatenate([(xs[:, :, None] * Ai / qs[:, None, :]).ravel() for Ai, xs, qs, _ in blocks])
        L = net.n_links
        K = np.bincount(self._lin, weights=(data * self._mrow)[self._pair], minlength=L * L).reshape(L, L)
        S = (K / yt[:, None]) * p[None, :]
        S[np.diag_indices_from(S)] += Dd - lam
        rhs = -F + (self.Hm @ (x * AinvG)) / yt
        if free_l is not None:
            S[~free_l, :] = 0.0
            S[:, ~free_l] = 0.0
            S[~free_l, ~free_l] = 1.0
            rhs = np.where(free_l, rhs, 0.0)
        dv = sla.lu_solve(sla.lu_factor(S, overwrite_a=True, check_finite=False), rhs, check_finite=False)
        w = (self.HT @ (p * dv)) / q
        du = np.empty(net.n_routes)
        for Ainv, xs, qs, sl in blocks:
            B, n = xs.shape
            du[sl] = np.einsum("bij,bj->bi", Ainv, (-G[sl] + w[sl]).reshape(B, n)).ravel()
        return du, dv, G, F


def _initial(net: Network):
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
        if _DEBUG:
            print(f"  t={t:.1e} step {k} res={res:.2e} lam={lam:.1e}")
        if res < tol:
            return u, v, True, k
        if k == max_steps or fails >= 6:
            break
        try:
            du, dv, G, F = sysm.step(np.exp(u), np.exp(v), t, m, nl, lam=lam)
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


def _solve_path(sysm: _System, x0, p0, m, nl, polish, *, t0=1.0, t_min=1e-13, max_iter=600):
    """Follow the barrier path t → 0. ``polish(x, p)`` is tried once t ≤ 1e-4 and returns an
    exact solution or None."""
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
                # polish once the classification has settled (same as at the previous stage)
                if last_hint is not None and np.array_equal(hint[0], last_hint[0]) \
                        and np.array_equal(hint[1], last_hint[1]):
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
            # stalled: go back to the last point on the path and take a shorter step in t
            u, v, t_good = good
            sigma = 0.001 if k <= 6 else 0.05
            if sigma > 0.97:
                raise SolverFailure(f"barrier path stalled at t = {t:.1e} after {total} Newton steps")
            t = max(t_good * sigma, t_min)
    raise SolverFailure(f"no convergence in {max_iter} Newton steps (t = {t:.1e})")


def kkt_residuals(net: Network, x, p, phi=None) -> dict:
    """Relative violations of (8)–(9)."""
    if phi is None:
        xe = np.where(x > 0, x, _ZERO * np.maximum(net.capacity.max(), 1.0))
        phi, _ = phi_all(net, xe, jac=False)
    q = net.H.T @ p
    y = net.Hm @ x
    c = net.capacity
    pos = x > 0
    with np.errstate(all="ignore"):
        rel = (phi - q) / q
    return {
        "route_equality": float(np.abs(rel[pos]).max(initial=0.0)),        # φ_r = q_r if x_r > 0
        "route_inequality": float(np.maximum(rel, 0).max(initial=0.0)),    # φ_r ≤ q_r
        "link_capacity": float(np.maximum((y - c) / c, 0).max(initial=0.0)),  # y_l ≤ c_l
        "link_equality": float(np.abs((y - c) / c)[p > 0].max(initial=0.0)),  # y_l = c_l if p_l > 0
        "nonnegativity": float(max(np.maximum(-x, 0).max(initial=0), np.maximum(-p, 0).max(initial=0))),
    }


def _polish(sysm: _System, x, p, x0, p0, rounds: int = 6, hint=None):
    """Exact active-set Newton from a barrier solution: zero-rate routes Z (x_r = 0) and priced
    links A (p_l > 0) are read off the complementarity pairs; after each solve, violated
    inequalities (y_l > c_l off A, φ_r > q_r on Z, p_l < 0 on A) move between the sets."""
    net = sysm.net
    phi, _ = phi_all(net, x, jac=False)
    q = sysm.HT @ p
    y = sysm.Hm @ x
    if hint is None:
        zero_r = (x / x0) < np.maximum((q - phi) / q, 0.0)
        active_l = (p / p0) >= np.maximum((net.capacity - y) / net.capacity, 0.0)
    else:
        zero_r, active_l = hint[0].copy(), hint[1].copy()
    xs, ps = np.where(zero_r, _ZERO * x0, x), p.copy()
    for _ in range(rounds):
        # every used route needs a priced link: price its most congested one
        q_act = sysm.HT @ active_l.astype(float)
        for r in np.flatnonzero(~zero_r & (q_act == 0)):
            links = net.H.indices[net.H.indptr[0]:0] if False else sysm.HT.indices[sysm.HT.indptr[r]:sysm.HT.indptr[r + 1]]
            active_l[links[np.argmax(p[links] / p0[links])]] = True
        ok, xs, ps = _polish_newton(sysm, np.where(zero_r, _ZERO * x0, xs),
                                    np.where(active_l, np.maximum(ps, 1e-300), 0.0), ~zero_r, active_l)
        if not ok:
            # Newton drives a wrongly priced link's p_l (or a wrongly used route's x_r) to 0
            # in log space: move those between the sets and retry
            drop_l = active_l & (ps < 1e-9 * np.maximum(p, p0 * 1e-3))
            drop_r = ~zero_r & (xs < 1e-9 * np.maximum(x, x0 * 1e-3))
            if _DEBUG:
                print(f"  polish retry: unprice {drop_l.sum()} links, zero {drop_r.sum()} routes")
            if not drop_l.any() and not drop_r.any():
                return None
            active_l &= ~drop_l
            zero_r |= drop_r
            continue
        xe = np.where(zero_r, _ZERO * x0, xs)
        phi, _ = phi_all(net, xe, jac=False)
        q = sysm.HT @ ps
        y = sysm.Hm @ np.where(zero_r, 0.0, xs)
        over = (~active_l) & (y > net.capacity * (1 + 1e-11))
        wake = zero_r & (phi > q * (1 + 1e-11))
        if _DEBUG:
            print(f"  polish round: |Z|={zero_r.sum()} |A|={active_l.sum()} over={over.sum()} wake={wake.sum()} "
                  f"negative p={(ps[active_l] <= 0).sum()}")
        if not over.any() and not wake.any():
            return np.where(zero_r, 0.0, xs), ps
        active_l |= over
        zero_r &= ~wake
        xs = np.where(wake, x0 * 1e-3, xs)
        ps = np.where(over, p0 * 1e-3, ps)
    return None


def _polish_newton(sysm, x, p, free_r, free_l, steps: int = 30):
    m0, n0 = np.zeros_like(x), np.zeros_like(p)
    u = np.log(x)
    v = np.log(np.where(free_l, p, 1.0))
    u_floor = np.log(np.maximum(x, 1e-300)) - 25.0
    v_floor = np.log(np.where(free_l, np.maximum(p, 1e-300), 1.0)) - 25.0
    best = None
    for _ in range(steps):
        xx, pp = np.exp(u), np.where(free_l, np.exp(v), 0.0)
        try:
            du, dv, G, F = sysm.step(xx, pp, 0.0, m0, n0, free_r, free_l)
        except (np.linalg.LinAlgError, SolverFailure, ValueError) as e:
            if _DEBUG:
                print("polish step failed:", e)
            break
        res = max(np.abs(G).max(initial=0), np.abs(F).max(initial=0))
        if best is None or res < best[0]:
            best = (res, xx, pp)
        if res < 1e-14 or not (np.all(np.isfinite(du)) and np.all(np.isfinite(dv))):
            break
        big = max(np.abs(du).max(initial=0), np.abs(dv).max(initial=0))
        a = min(1.0, 1.0 / big) if big > 0 else 1.0
        u = u + a * np.where(free_r, du, 0.0)
        v = v + a * np.where(free_l, dv, 0.0)
        if np.any(free_l & (v < v_floor)) or np.any(free_r & (u < u_floor)):
            break   # a price or rate heads to 0: wrong active set, let the caller fix it
    if best is None:
        return False, x, p
    if best[0] > 1e-10:
        if _DEBUG:
            print("  polish newton: no convergence", best[0])
        return False, np.exp(u), np.where(free_l, np.exp(v), 0.0)
    return True, best[1], best[2]


# --- non-uniqueness ------------------------------------------------------------------------------
def _degenerate_sources(net: Network, x, p, tol=1e-7):
    """Sources whose Jacobian over the tied routes is singular: (s, tied route indices, row-space
    basis R_s with φ locally a function of R_s x_s only)."""
    q = net.H.T @ p
    xe = np.where(x > 0, x, _ZERO * np.maximum(net.capacity.max(), 1.0))
    out = []
    for c in net.classes:
        B, n = c.shape
        if n < 2:
            continue
        xs = xe[c.routes].reshape(B, n)
        phi, J = phi_jac(c, xs)
        qs = q[c.routes].reshape(B, n)
        tied = (x[c.routes].reshape(B, n) > 0) | (np.abs(phi - qs) <= 1e-6 * qs)
        full = tied.all(axis=1)
        cand = []
        if full.any():                        # all routes tied: one batched SVD
            idx = np.flatnonzero(full)
            sv = np.linalg.svd(J[idx], compute_uv=False)
            cand.extend(idx[sv[:, -1] <= tol * sv[:, 0]].tolist())
        cand.extend(np.flatnonzero(~full & (tied.sum(axis=1) >= 2)).tolist())
        for b in cand:
            T = np.flatnonzero(tied[b])
            Jt = J[b][np.ix_(T, T)]
            _, s_, Vt = np.linalg.svd(Jt)
            if s_[-1] <= tol * s_[0]:
                out.append((c.source0 + b, c.route0 + b * n + T, Vt[s_ > tol * s_[0]]))
    return out


def equilibrium_ranges(net: Network, x, p, degenerate, max_vars=400):
    """Per-route [min, max] over the equilibrium set with prices fixed (LP)."""
    from scipy.optimize import linprog

    lo, hi = x.copy(), x.copy()
    if not degenerate:
        return lo, hi
    var = np.concatenate([r for _, r, _ in degenerate])
    if var.size > max_vars:
        lo[var], hi[var] = np.nan, np.nan
        return lo, hi
    nv = var.size
    fixed = x.copy()
    fixed[var] = 0.0
    Hm = net.Hm.tocsc()
    Hv = Hm[:, var].toarray()
    base = Hm @ fixed
    eq_rows, eq_rhs, ub_rows, ub_rhs = [], [], [], []
    col = 0
    for _, r, Rb in degenerate:
        for row in Rb:
            a = np.zeros(nv)
            a[col:col + r.size] = row
            eq_rows.append(a)
            eq_rhs.append(row @ x[r])
        col += r.size
    touched = np.flatnonzero(np.abs(Hv).sum(axis=1) > 0)
    for l in touched:
        if p[l] > 0:
            eq_rows.append(Hv[l]); eq_rhs.append(net.capacity[l] - base[l])
        else:
            ub_rows.append(Hv[l]); ub_rhs.append(net.capacity[l] - base[l])
    kw = dict(A_eq=np.array(eq_rows) if eq_rows else None, b_eq=np.array(eq_rhs) if eq_rhs else None,
              A_ub=np.array(ub_rows) if ub_rows else None, b_ub=np.array(ub_rhs) if ub_rhs else None,
              bounds=[(0, None)] * nv, method="highs")
    for j in range(nv):
        cvec = np.zeros(nv)
        cvec[j] = 1.0
        r1 = linprog(cvec, **kw)
        r2 = linprog(-cvec, **kw)
        if r1.status == 0 and r2.status == 0:
            lo[var[j]], hi[var[j]] = max(r1.fun, 0.0), -r2.fun
    return lo, hi


def solve(net: Network, *, ranges: bool = True) -> Equilibrium:
    """Equilibrium (8)–(9) of ``net``."""
    sysm = _System(net)
    x0, p0, phi0 = _initial(net)
    m = x0 * phi0
    nl = net.capacity * p0

    def polish(x, p, hint=None):
        pol = _polish(sysm, x, p, x0, p0, hint=hint)
        if _DEBUG:
            print("polish", pol is not None and kkt_residuals(net, *pol))
        if pol is not None and max(kkt_residuals(net, *pol).values()) < 1e-10:
            return pol
        return None

    try:
        x, p, it, _ = _solve_path(sysm, x0, p0, m, nl, polish)
    except SolverFailure as failure:
        if not any(isinstance(c.algorithm, Balia) for c in net.classes):
            raise
        x, p, it = _balia_continuation(net, failure)
    res = kkt_residuals(net, x, p)
    xe = np.where(x > 0, x, _ZERO * np.maximum(net.capacity.max(), 1.0))
    phi, _ = phi_all(net, xe, jac=False)
    deg = _degenerate_sources(net, x, p)
    if ranges:
        lo, hi = equilibrium_ranges(net, x, p, deg)
    else:
        lo, hi = x.copy(), x.copy()
    scale = np.maximum(np.abs(x), net.capacity.max() * 1e-12)
    unique = bool(np.all(np.isfinite(lo)) and np.all((hi - lo) <= 1e-7 * np.maximum(scale, hi)))
    return Equilibrium(net, x, p, net.H.T @ p, net.Hm @ x, phi, res, unique, lo, hi,
                       [s for s, _, _ in deg], it, net.tau)
