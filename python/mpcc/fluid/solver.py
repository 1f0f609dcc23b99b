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
   (one small n×n block per source, inverted in batch), so each step needs one |L|×|L| solve.
   That matrix is dense but cheap to apply; it is solved by GMRES preconditioned with the LU
   factors of an earlier step's matrix, refactorised only when GMRES needs > 20 iterations
   (``solve(fast=False)``: assemble and factorise at every step, the reference path).
   ∂φ/∂x is taken by finite differences of ``algo.fluid_phi`` (eq. 7 from on_ack/on_loss).
3. Polish: with the active sets read off the barrier solution (zero-rate routes Z, priced
   links A), Newton on {φ_r = q_r, r ∉ Z; y_l = c_l, l ∈ A} with x_Z = 0 and p_{L∖A} = 0,
   which gives (8)–(9) to machine precision. The residuals of (8)–(9) are reported.
4. Non-uniqueness: a source whose Jacobian restricted to its tied routes (x_r > 0, or x_r = 0
   with φ_r = q_r) is singular (Coupled) can move its rates along the null space without changing
   φ; the equilibrium set (prices fixed) is then a polytope and per-route [min, max] rates over it
   come from linear programs (scipy.optimize.linprog).
5. Published Balia, whose φ is non-monotone with kinks (C2 fails, equilibria need not be unique):
   when the barrier path stalls, a homotopy from the generalized (0.2, 0.5, ∞) rule followed by
   pseudo-arc-length continuation, which passes folds (``_balia_continuation``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from ..algorithms.balia import Balia
from ..algorithms.balia import _alpha as _balia_alpha
from ..algorithms.base import _arrays, total_rate
from .network import Network, SourceClass

_FD_STEP = 1e-6      # relative central-difference step for ∂φ/∂x
_FD_FORWARD = 1e-8   # relative forward-difference step (Newton steps of the fast path)
_DEBUG = bool(__import__("os").environ.get("MPCC_FLUID_DEBUG"))
_ZERO = 1e-20        # a "zero" route is evaluated at x_r = _ZERO·x⁰_r (φ has a limit there)


class SolverFailure(RuntimeError):
    pass


# --- Balia: continuation from the generalized family ------------------------------------------------
@dataclass(frozen=True)
class _BaliaHomotopy(Balia):
    """Balia with the decrease factor blended between the generalized family's (1+α)/2
    (λ = 0: (β, η, n) = (0.2, 0.5, ∞), which satisfies C2 and which the barrier path solves) and
    the published min(α, 1.5) of eq. (2) (λ = 1), the minimum smoothed with width μ:
    min_μ(a, b) = (a + b − √((a − b)² + μ²))/2 (μ = 0: the published kink at α = 1.5), and the
    max in α_r = max_k x_k/x_r smoothed the same way. A numerical device, not an algorithm:
    with μ > 0 the branch followed by the continuation is smooth (no corners at α = 1.5 or at
    ties between a source's fastest routes)."""

    lam: float = 0.0
    mu: float = 0.0

    def _alpha(self, w, t):
        if self.mu == 0:
            return _balia_alpha(w, t)
        # α_r = max_k x_k / x_r with the max smoothed pairwise, width μ relative to the rates
        x = w / t
        xm = x[..., 0]
        for k in range(1, x.shape[-1]):
            xk = x[..., k]
            xm = 0.5 * (xm + xk + np.sqrt((xm - xk) ** 2 + (0.5 * self.mu * (xm + xk)) ** 2))
        return xm[..., None] / x

    def on_ack(self, cwnd, rtt, **state):
        w, t = _arrays(cwnd, rtt)
        a = self._alpha(w, t)
        return w / t / (t * total_rate(w, t) ** 2) * ((1.0 + a) / 2.0) * ((4.0 + a) / 5.0)

    def on_loss(self, cwnd, rtt, **state):
        w, t = _arrays(cwnd, rtt)
        a = self._alpha(w, t)
        cap = np.minimum(a, 1.5) if self.mu == 0 else 0.5 * (a + 1.5 - np.sqrt((a - 1.5) ** 2 + self.mu ** 2))
        return w / 2.0 * ((1.0 - self.lam) * (1.0 + a) / 2.0 + self.lam * cap)


def _with_lambda(net: Network, lam: float, mu: float = 0.0) -> Network:
    from dataclasses import replace

    classes = tuple(replace(c, algorithm=_BaliaHomotopy(params=c.algorithm.params, lam=lam, mu=mu))
                    if isinstance(c.algorithm, Balia) else c for c in net.classes)
    return replace(net, classes=classes)


# homotopies tried in turn by the Balia continuation: (smoothing width μ₀, largest arc-length step)
_BALIA_ATTEMPTS = [(1.0, 0.25), (0.5, 0.25), (2.0, 0.1), (0.5, 0.04)]


class _ArcLength:
    """Pseudo-arc-length continuation (Keller) of the barrier system F(z, s) = (G, F) = 0 of
    ``_System`` in z = (log x, log p) along a scalar homotopy parameter s from 0 to 1.
    ``params(s)`` returns the barrier weight t and puts the network of parameter s into
    ``sysm``. Each step predicts along the unit tangent T (F_z ż + F_s ṡ = 0, oriented like the
    previous one) and corrects by Newton on {F(z, s) = 0, ⟨T, (z, s) − predicted⟩ = 0}, solved by
    bordering: two solves with F_z (one Schur solve each). Unlike natural-parameter continuation
    (Newton at fixed s), this passes folds of the branch, where s turns back and F_z is
    singular. Inner product: ⟨a, b⟩ = a_z·b_z/N + a_s b_s."""

    def __init__(self, sysm, params, m, nl):
        self.sysm, self.params, self.m, self.nl = sysm, params, m, nl
        self.R = sysm.net.n_routes
        self.steps = 0

    def _xp(self, z):
        return np.exp(z[:self.R]), np.exp(z[self.R:])

    def res(self, z, s):
        G, F = self.sysm.residual(*self._xp(z), self.params(s), self.m, self.nl)
        return np.concatenate([G, F])

    def res_s(self, z, s, d=1e-7):
        return (self.res(z, s + d) - self.res(z, s - d)) / (2.0 * d)

    def lin(self, z, s):
        """Residual and sol(r) = −F_z⁻¹ r at (z, s)."""
        self.steps += 1
        G, F, solve = self.sysm.linearize(*self._xp(z), self.params(s), self.m, self.nl)

        def sol(r):
            du, dv = solve(r[:self.R], r[self.R:])
            return np.concatenate([du, dv])
        return np.concatenate([G, F]), sol

    def dot(self, a, b):
        return a[:-1] @ b[:-1] / (a.size - 1) + a[-1] * b[-1]

    def tangent(self, z, s, prev, sol=None):
        if sol is None:
            _, sol = self.lin(z, s)
        T = np.append(sol(self.res_s(z, s)), 1.0)        # (−F_z⁻¹F_s, 1)
        T /= math.sqrt(self.dot(T, T))
        if (prev is None and T[-1] < 0) or (prev is not None and self.dot(T, prev) < 0):
            T = -T
        return T

    def correct(self, w_pred, T, tol):
        w, last = w_pred.copy(), np.inf
        for it in range(10):
            r, sol = self.lin(w[:-1], w[-1])
            nr = np.abs(r).max(initial=0.0)
            if not np.isfinite(nr) or (it >= 2 and nr > 0.5 * last):
                return None
            if nr < tol:
                return w, it, sol
            last = nr
            d1 = sol(r)                                       # −F_z⁻¹ F
            d2 = -sol(self.res_s(w[:-1], w[-1]))              # F_z⁻¹ F_s
            if not (np.all(np.isfinite(d1)) and np.all(np.isfinite(d2))):
                return None
            # Δz = d1 − Δs d2 with ⟨T, (Δz, Δs)⟩ = −⟨T, w − w_pred⟩
            Tz, n = T[:-1], T.size - 1
            ds = (-self.dot(T, w - w_pred) - Tz @ d1 / n) / (T[-1] - Tz @ d2 / n)
            dz = d1 - ds * d2
            if np.abs(dz).max(initial=0.0) > 3.0:
                return None
            w = w + np.append(dz, ds)
        return None

    def newton_at(self, z, s, tol, steps=20):
        """Natural-parameter Newton at fixed s (the end point s = 1)."""
        for _ in range(steps):
            r, sol = self.lin(z, s)
            nr = np.abs(r).max(initial=0.0)
            if not np.isfinite(nr):
                return None
            if nr < tol:
                return z
            d = sol(r)
            z = z + d * min(1.0, 2.0 / max(np.abs(d).max(initial=0.0), 1e-300))
        return None

    def run(self, z, *, h=0.05, h_max=0.25, h_min=1e-8, max_steps=2000, tol=1e-9, tol_end=1e-10):
        """Follow the branch from (z, 0) to s = 1 (points on the way to ``tol``, the end point to
        ``tol_end``, max-norm of the log residuals); returns z at s = 1. Raises SolverFailure."""
        s, T = 0.0, self.tangent(z, 0.0, None)
        while self.steps < max_steps:
            hh = h
            if T[-1] > 0 and s + hh * T[-1] > 1.0:
                hh = (1.0 - s) / T[-1]                        # land on s = 1
            w = np.append(z, s) + hh * T
            out = self.correct(w, T, tol)
            if out is None:
                h /= 2.0
                if h < h_min:
                    raise SolverFailure(f"arc-length continuation stopped at s = {s:.4f} (step below {h_min})")
                continue
            (w, its, sol) = out
            if w[-1] >= 1.0 - 1e-12:
                end = self.newton_at(w[:-1], 1.0, tol_end)
                if end is not None:
                    return end
            T_new = self.tangent(w[:-1], w[-1], T, sol)      # F_z from the corrector's last point
            if self.dot(T_new, T) < 0.9 and h > 1e3 * h_min:
                h /= 2.0        # the branch turns by more than ~25° over the step: a shorter step
                continue        # keeps the corrector from jumping to a neighbouring branch
            z, s, T = w[:-1], w[-1], T_new
            if s < -0.25:
                raise SolverFailure("arc-length continuation turned back past its start")
            h = min(h_max, 1.5 * h) if its <= 3 else h
        raise SolverFailure(f"arc-length continuation did not reach the end in {max_steps} steps (s = {s:.4f})")


def _balia_continuation(net: Network, failure: SolverFailure, t1: float = 1e-6, t_min: float = 1e-13,
                        mu0: float | None = None):
    """Published Balia's decrease (2) caps its factor at 1.5, so for 1 < α_r < 1.5 a route's φ_r
    grows with its own rate (C2 fails locally), the equilibrium need not be unique and the barrier
    path can stall. Homotopy from the generalized (0.2, 0.5, ∞) rule (λ = 0, inside Theorem IV.1:
    unique equilibrium) to the published rule (λ = 1), decrease factor
    (1 − λ)(1 + α)/2 + λ min(α, 1.5), on the barrier system at a fixed small t = t1 (smooth: no
    active sets), by pseudo-arc-length continuation in λ; then the barrier path t1 → 0 at λ = 1
    (again by arc-length in log t if it stalls) and the exact polish. Returns (x, p, steps)."""
    sysm = _System(_with_lambda(net, 0.0))
    x0, p0, phi0 = _initial(sysm.net)
    m, nl = x0 * phi0, net.capacity * p0
    # 1. the λ = 0 barrier path down to t1 (no polish: the branch starts on the smooth system)
    x, p, _, _ = _solve_path(sysm, x0, p0, m, nl, lambda *a, **k: None, t_min=t1)

    def lam_params(s):
        # λ = s(2 − s) and the smoothing μ = 4μ₀s(1 − s) (of min(α, 1.5) and of the max in α),
        # both smooth in s (a kink in the parameter map is a corner of the branch): s = 0 is the
        # generalized rule exactly, s = 1 the published Balia
        sc = min(max(s, 0.0), 1.0)
        sysm.net = _with_lambda(net, sc * (2.0 - sc), mu * 4.0 * sc * (1.0 - sc))
        return t1

    # 2. λ: 0 → 1 at t = t1. λ = 0 has a unique equilibrium, so a branch that comes back to s = 0
    # has jumped between neighbouring branches near a fold; then retry along other homotopies
    # (smoothing width μ₀) and with shorter steps
    attempts = [(mu0, 0.25)] if mu0 is not None else _BALIA_ATTEMPTS
    for i, (mu, h_max) in enumerate(attempts):
        try:
            z = _ArcLength(sysm, lam_params, m, nl).run(np.concatenate([np.log(x), np.log(p)]), h_max=h_max)
            break
        except SolverFailure as e:
            if i == len(attempts) - 1:
                raise SolverFailure(f"{failure}; continuation from the generalized (0.2, 0.5, inf) rule to "
                                    f"Balia's published decrease min(alpha, 1.5): {e}") from None
    sysm.net = net
    x, p = np.exp(z[:net.n_routes]), np.exp(z[net.n_routes:])

    def polish(xx, pp, hint=None, quick=False):
        pol = _polish(sysm, xx, pp, x0, p0, hint=hint)
        if pol is not None and max(kkt_residuals(net, *pol).values()) < 1e-10:
            return pol
        return None

    # 3. t: t1 → 0 at λ = 1 on the barrier path, by arc-length in log t if it stalls
    try:
        x, p, _, ok = _solve_path(sysm, x, p, m, nl, polish, t0=t1, t_min=t_min, early=True)
        if ok:
            return x, p, sysm.steps
    except SolverFailure:
        pass
    sysm.net = net

    def t_params(s):
        return math.exp((1.0 - s) * math.log(t1) + s * math.log(t_min))

    try:
        z = _ArcLength(sysm, t_params, m, nl).run(z)
    except SolverFailure as e:
        raise SolverFailure(f"{failure}; after the continuation to Balia's published decrease min(alpha, 1.5), "
                            f"the barrier path t -> 0: {e}") from None
    x, p = np.exp(z[:net.n_routes]), np.exp(z[net.n_routes:])
    for hint in (None,):
        pol = polish(x, p, hint)
        if pol is not None:
            return pol[0], pol[1], sysm.steps
    raise SolverFailure(f"{failure}; arc-length continuation from the generalized (0.2, 0.5, inf) rule to "
                        f"Balia's published decrease min(alpha, 1.5) ended without an exact equilibrium")


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
    iterations: int = 0       # Newton linearisations (barrier path, polish, continuation)
    tau: np.ndarray | None = None
    groups: list | None = None        # scenario groups in source order (when built from a scenario)

    @property
    def residual(self) -> float:
        return max(self.residuals.values())

    def source_routes(self, s: int) -> np.ndarray:
        return np.flatnonzero(self.network.source_of_route == s)


# --- φ and its Jacobian, batched per class -------------------------------------------------------
def phi_jac(cls: SourceClass, x: np.ndarray, jac: bool = True, central: bool = True):
    """φ (B, n) and ∂φ/∂x (B, n, n) at x (B, n) > 0, J[b, r, k] = ∂φ_r/∂x_k; central
    differences (error ~1e-10 relative), or forward ones (~1e-8, n + 1 evaluations of φ instead
    of 2n + 1: enough for Newton steps, whose accuracy only sets the convergence rate)."""
    B, n = x.shape
    algo = cls.algorithm
    with np.errstate(all="ignore"):
        if not jac:
            return algo.fluid_phi(x, cls.tau), None
        if not central:
            X = np.repeat(x[None], n + 1, axis=0)
            for k in range(n):
                X[1 + k, :, k] *= 1.0 + _FD_FORWARD
            T = np.broadcast_to(cls.tau, X.shape)
            out = algo.fluid_phi(X.reshape(-1, n), T.reshape(-1, n)).reshape(n + 1, B, n)
            J = np.empty((B, n, n))
            for k in range(n):
                J[:, :, k] = (out[1 + k] - out[0]) / (X[1 + k, :, k, None] - x[:, k, None])
            return out[0], J
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


def phi_all(net: Network, x: np.ndarray, jac: bool = True, central: bool = True):
    phi = np.empty(net.n_routes)
    Js = []
    for c in net.classes:
        f, J = phi_jac(c, x[c.routes].reshape(c.shape), jac, central)
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


_GMRES_RTOL = 1e-12  # relative residual of the Schur solve in the exact (polish) Newton steps
_GMRES_STAGE_RTOL = 1e-3   # at most, inside a barrier stage (inexact Newton; stage tolerance 1e-3)
_GMRES_MAX = 20      # beyond this many iterations the preconditioner is stale: refactorise


def _gmres(A, M, b, rtol, maxiter):
    """Right-preconditioned GMRES (no restart) for A M y = b, x = M y, modified Gram–Schmidt.
    Returns (x, iterations); x is None when the true residual ‖b − A x‖ > 10·rtol‖b‖ after
    ``maxiter`` iterations."""
    beta = np.linalg.norm(b)
    if beta == 0 or not np.isfinite(beta):
        return (np.zeros_like(b) if beta == 0 else None), 0
    V = np.empty((maxiter + 1, b.size))
    Z = np.empty((maxiter, b.size))
    Hh = np.zeros((maxiter + 1, maxiter))
    V[0] = b / beta
    for j in range(maxiter):
        Z[j] = M(V[j])
        w = A(Z[j])
        if not np.all(np.isfinite(w)):
            return None, j + 1
        for i in range(j + 1):
            Hh[i, j] = w @ V[i]
            w = w - Hh[i, j] * V[i]
        Hh[j + 1, j] = np.linalg.norm(w)
        e = np.zeros(j + 2)
        e[0] = beta
        y, *_ = np.linalg.lstsq(Hh[:j + 2, :j + 1], e, rcond=None)
        res = np.linalg.norm(Hh[:j + 2, :j + 1] @ y - e)
        if res <= rtol * beta or Hh[j + 1, j] <= 1e-300 * beta:
            x = y @ Z[:j + 1]
            if np.linalg.norm(A(x) - b) <= 10 * rtol * beta:
                return x, j + 1
            return None, j + 1
        V[j + 1] = w / Hh[j + 1, j]
    return None, maxiter


def _inv_small(A: np.ndarray) -> np.ndarray:
    """Inverse of a batch (B, n, n) of small matrices: closed forms (adjugate/determinant) for
    n ≤ 3, ``np.linalg.inv`` otherwise. Raises LinAlgError on a singular block."""
    n = A.shape[-1]
    if n > 3:
        return np.linalg.inv(A)
    with np.errstate(all="ignore"):
        if n == 1:
            det = A[:, 0, 0]
            inv = 1.0 / A
        elif n == 2:
            a, b, c, d = A[:, 0, 0], A[:, 0, 1], A[:, 1, 0], A[:, 1, 1]
            det = a * d - b * c
            inv = np.stack([np.stack([d, -b], -1), np.stack([-c, a], -1)], -2) / det[:, None, None]
        else:
            C = np.empty_like(A)   # cofactors, C[i, j] = (−1)^{i+j} minor(i, j); A⁻¹ = Cᵀ/det
            for i in range(3):
                i1, i2 = (i + 1) % 3, (i + 2) % 3
                for j in range(3):
                    j1, j2 = (j + 1) % 3, (j + 2) % 3
                    C[:, i, j] = A[:, i1, j1] * A[:, i2, j2] - A[:, i1, j2] * A[:, i2, j1]
            det = np.einsum("bj,bj->b", A[:, 0, :], C[:, 0, :])
            inv = np.swapaxes(C, 1, 2) / det[:, None, None]
    if not np.all(np.isfinite(inv)) or np.any(det == 0):
        raise np.linalg.LinAlgError("singular route block")
    return inv


# --- the Newton machinery ---------------------------------------------------------------------------
class _System:
    def __init__(self, net: Network, direct: bool = False):
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
        # CSR row pointer of the block-diagonal route matrix (each route's row holds its source's n)
        self._indptr = np.concatenate([[0], np.cumsum(np.concatenate(
            [np.full(c.tau.size, c.shape[1]) for c in net.classes] or [np.zeros(0, int)]))]).astype(np.int64)
        self.direct = direct          # True: assemble and LU-factorise S at every step (no GMRES)
        self._lu = None               # LU factors of the last assembled S (GMRES preconditioner)
        self.rtol = None              # GMRES tolerance override (looser inside barrier stages)
        self.factorizations = 0
        self.krylov_iterations = 0
        self.steps = 0                # Newton steps (barrier path, polish, continuation)

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

    # --- the |L|×|L| Schur system S dv = rhs ------------------------------------------------------
    #   S = diag(1/y) K diag(p) + diag(d),   K = Hm diag(x) A⁻¹ diag(1/q) Hᵀ
    # (A the block-diagonal route matrix). K is dense (a source couples all links of all its
    # routes), but applying S costs two sparse products and the batched n×n blocks. S changes
    # slowly from one Newton step to the next, so S is solved by GMRES preconditioned with the LU
    # factors of an earlier S; when GMRES needs more than ``_GMRES_MAX`` iterations S is
    # assembled and factorised afresh (``direct``: at every step, the reference path).
    def _apply(self, Ainv_all, x, p, q, yt, d, free_l, v):
        vv = v if free_l is None else np.where(free_l, v, 0.0)
        out = (self.Hm @ (x * (Ainv_all @ ((self.HT @ (p * vv)) / q)))) / yt + d * vv
        return out if free_l is None else np.where(free_l, out, v)

    def _assemble(self, blocks, p, yt, d, free_l):
        data = np.concatenate([(xs[:, :, None] * Ai / qs[:, None, :]).ravel() for Ai, xs, qs, _ in blocks])
        L = self.net.n_links
        K = np.bincount(self._lin, weights=(data * self._mrow)[self._pair], minlength=L * L).reshape(L, L)
        S = (K / yt[:, None]) * p[None, :]
        S[np.diag_indices_from(S)] += d
        if free_l is not None:
            S[~free_l, :] = 0.0
            S[:, ~free_l] = 0.0
            S[~free_l, ~free_l] = 1.0
        return S

    def _link_solve(self, blocks, Ainv_all, x, p, q, yt, d, rhs, free_l):
        if free_l is not None:
            rhs = np.where(free_l, rhs, 0.0)
        dv = None
        if not self.direct and self._lu is not None:
            dv, its = _gmres(lambda v: self._apply(Ainv_all, x, p, q, yt, d, free_l, v),
                             lambda v: sla.lu_solve(self._lu, v, check_finite=False), rhs,
                             rtol=_GMRES_RTOL if self.rtol is None else self.rtol, maxiter=_GMRES_MAX)
            self.krylov_iterations += its
        if dv is None:
            S = self._assemble(blocks, p, yt, d, free_l)
            self._lu = sla.lu_factor(S, overwrite_a=True, check_finite=False)
            self.factorizations += 1
            dv = sla.lu_solve(self._lu, rhs, check_finite=False)
        return dv

    def step(self, x, p, t, m, nl, free_r=None, free_l=None, lam=0.0):
        """Newton step (Δu, Δv) and the residual (G, F) at (x, p). ``lam`` > 0 regularises the
        step (proximal term −λ on the diagonal of both blocks, the sign of a monotone descent
        direction) when the plain Newton step fails the line search."""
        G, F, solve = self.linearize(x, p, t, m, nl, free_r, free_l, lam)
        du, dv = solve(G, F)
        return du, dv, G, F

    def linearize(self, x, p, t, m, nl, free_r=None, free_l=None, lam=0.0):
        """Residual (G, F) at (x, p) and ``solve(g, f)`` → (Δu, Δv) = −J⁻¹(g, f), J the Jacobian
        of (G, F) in (u, v) = (log x, log p) (one Schur solve per call)."""
        net = self.net
        self.steps += 1
        phi, Js = phi_all(net, x, central=self.direct)
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
            Ainv = _inv_small(A)
            blocks.append((Ainv, xs, q[sl].reshape(B, n), sl))
        # A⁻¹ as one sparse block-diagonal matrix (rows in route order, n entries per row)
        Ainv_all = sp.csr_matrix((np.concatenate([b[0].ravel() for b in blocks]), self.cols, self._indptr),
                                 shape=(net.n_routes, net.n_routes))

        def solve(g, f):
            if free_r is not None:
                g, f = np.where(free_r, g, 0.0), np.where(free_l, f, 0.0)
            rhs = -f + (self.Hm @ (x * (Ainv_all @ g))) / yt
            dv = self._link_solve(blocks, Ainv_all, x, p, q, yt, Dd - lam, rhs, free_l)
            w = (self.HT @ (p * dv)) / q
            return Ainv_all @ (-g + w), dv

        return G, F, solve


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
            sysm.rtol = min(_GMRES_STAGE_RTOL, 0.1 * res)   # inexact Newton forcing term
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


def _solve_path(sysm: _System, x0, p0, m, nl, polish, *, t0=1.0, t_min=1e-13, max_iter=600, early=None):
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
                                    np.where(active_l, np.maximum(ps, 1e-300), 0.0), ~zero_r, active_l,
                                    over=lambda xx: bool(np.any(~active_l & (
                                        sysm.Hm @ np.where(zero_r, 0.0, xx) > net.capacity * (1 + 1e-4)))))
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
        # a route or link joining its set restarts from the barrier point (the margin: x_r or
        # p_l is small there, which x⁰/p⁰-based guesses are not); the others keep this round's
        xs = np.where(wake, np.maximum(x, 1e-300), xs)
        ps = np.where(over, np.maximum(p, 1e-300), ps)
    return None


def _polish_newton(sysm, x, p, free_r, free_l, steps: int = 30, over=None):
    m0, n0 = np.zeros_like(x), np.zeros_like(p)
    u = np.log(x)
    v = np.log(np.where(free_l, p, 1.0))
    u_floor = np.log(np.maximum(x, 1e-300)) - 25.0
    v_floor = np.log(np.where(free_l, np.maximum(p, 1e-300), 1.0)) - 25.0
    best = None
    res = 1.0
    for _ in range(steps):
        xx, pp = np.exp(u), np.where(free_l, np.exp(v), 0.0)
        try:
            # inexact Newton: Schur solve to 1e-2·‖residual‖ (still quadratic convergence)
            sysm.rtol = min(1e-3, max(_GMRES_RTOL, 1e-2 * res))
            du, dv, G, F = sysm.step(xx, pp, 0.0, m0, n0, free_r, free_l)
            sysm.rtol = None
        except (np.linalg.LinAlgError, SolverFailure, ValueError) as e:
            sysm.rtol = None
            if _DEBUG:
                print("polish step failed:", e)
            break
        res = max(np.abs(G).max(initial=0), np.abs(F).max(initial=0))
        if _DEBUG:
            print(f"    polish step res={res:.2e} min dv={np.where(free_l, dv, 0).min():.2e} "
                  f"min du={np.where(free_r, du, 0).min():.2e} max|du|={np.abs(du).max():.2e}")
        if best is None or res < best[0]:
            best = (res, xx, pp)
        if res < 1e-14 or not (np.all(np.isfinite(du)) and np.all(np.isfinite(dv))):
            break
        if over is not None and res < 1e-5 and over(xx):
            # an unpriced link is clearly over capacity: this active set is wrong, stop here
            # (the caller prices it and starts the next round; it never returns this point)
            return True, xx, pp
        # a price (rate) whose Newton step divides it by e⁸ heads to 0: the link (route) is in
        # the wrong set; return at once with it zeroed so that the caller moves it
        gone_l, gone_r = free_l & (dv < -8.0), free_r & (du < -8.0)
        if gone_l.any() or gone_r.any():
            return False, np.where(gone_r, 0.0, xx), np.where(gone_l, 0.0, pp)
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


def solve(net: Network, *, ranges: bool = True, fast: bool = True) -> Equilibrium:
    """Equilibrium (8)–(9) of ``net``. ``fast=False`` selects the reference linear algebra (every
    Newton step assembles and LU-factorises the dense link Schur complement), kept for the
    benchmark's before/after comparison; both reach (8)–(9) to machine precision."""
    sysm = _System(net, direct=not fast)
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
        # with published Balia sources the barrier path may stall (non-monotone φ): give it a
        # shorter budget before the continuation takes over
        has_balia = any(isinstance(c.algorithm, Balia) for c in net.classes)
        x, p, it, _ = _solve_path(sysm, x0, p0, m, nl, polish, early=True if fast else None,
                                  max_iter=150 if has_balia and fast else 600)
        it = sysm.steps          # every Newton linearisation: barrier path and polish
    except SolverFailure as failure:
        if not any(isinstance(c.algorithm, Balia) for c in net.classes):
            raise
        x, p, it = _balia_continuation(net, failure)
        it += sysm.steps         # plus the steps of the failed barrier attempt
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
