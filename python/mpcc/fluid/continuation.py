"""Step 5 of the equilibrium solver (:mod:`mpcc.fluid.solver`): published Balia, whose φ is
non-monotone with kinks. A homotopy from the generalized (0.2, 0.5, ∞) rule to Balia's decrease,
followed by pseudo-arc-length continuation (passes folds); Balia's own rules come from
:mod:`mpcc.algorithms.balia`."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..algorithms import balia
from ..algorithms.base import as_arrays
from .barrier import initial_point, solve_path
from .network import Network
from .newton import NewtonSystem, SolverFailure
from .polish import kkt_residuals, polish_exact

# --- Balia: continuation from the generalized family ------------------------------------------------
@dataclass(frozen=True)
class _BaliaHomotopy(balia.Balia):
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
            return balia.rate_ratio(w, t)
        # α_r = max_k x_k / x_r with the max smoothed pairwise, width μ relative to the rates
        x = w / t
        xm = x[..., 0]
        for k in range(1, x.shape[-1]):
            xk = x[..., k]
            xm = 0.5 * (xm + xk + np.sqrt((xm - xk) ** 2 + (0.5 * self.mu * (xm + xk)) ** 2))
        return xm[..., None] / x

    def on_ack(self, cwnd, rtt, **state):
        w, t = as_arrays(cwnd, rtt)
        return balia.increase(w, t, self._alpha(w, t))

    def on_loss(self, cwnd, rtt, **state):
        w, t = as_arrays(cwnd, rtt)
        a = self._alpha(w, t)
        cap = balia.decrease_factor(a) if self.mu == 0 else 0.5 * (a + 1.5 - np.sqrt((a - 1.5) ** 2 + self.mu ** 2))
        return w / 2.0 * ((1.0 - self.lam) * (1.0 + a) / 2.0 + self.lam * cap)


def _with_lambda(net: Network, lam: float, mu: float = 0.0) -> Network:
    from dataclasses import replace

    classes = tuple(c if c.algorithm.monotone_phi else
                    replace(c, algorithm=HOMOTOPIES[c.algorithm.name](params=c.algorithm.params, lam=lam, mu=mu))
                    for c in net.classes)
    return replace(net, classes=classes)


# homotopies tried in turn by the Balia continuation: (smoothing width μ₀, largest arc-length step)
_BALIA_ATTEMPTS = [(1.0, 0.25), (0.5, 0.25), (2.0, 0.1), (0.5, 0.04)]


class _ArcLength:
    """Pseudo-arc-length continuation (Keller) of the barrier system F(z, s) = (G, F) = 0 of
    ``NewtonSystem`` in z = (log x, log p) along a scalar homotopy parameter s from 0 to 1.
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


#: the rules with a non-monotone φ (``Algorithm.monotone_phi`` False) by name → the homotopy
#: from a rule with a unique equilibrium (λ = 0) to theirs (λ = 1), smoothed by μ
HOMOTOPIES = {"balia": _BaliaHomotopy}


def continuation(net: Network, failure: SolverFailure, **kw):
    """The equilibrium of a network with non-monotone-φ sources after the barrier path stalled
    (``failure``): the continuation of their homotopy (:data:`HOMOTOPIES`); ``failure`` re-raised,
    naming the rule, for one that has none."""
    missing = sorted({c.algorithm.name for c in net.classes
                      if not c.algorithm.monotone_phi and c.algorithm.name not in HOMOTOPIES})
    if missing:
        raise SolverFailure(f"{failure}; no continuation for {', '.join(missing)} (its phi is not monotone)")
    return balia_continuation(net, failure, **kw)


def balia_continuation(net: Network, failure: SolverFailure, t1: float = 1e-6, t_min: float = 1e-13,
                        mu0: float | None = None):
    """Published Balia's decrease (2) caps its factor at 1.5, so for 1 < α_r < 1.5 a route's φ_r
    grows with its own rate (C2 fails locally), the equilibrium need not be unique and the barrier
    path can stall. Homotopy from the generalized (0.2, 0.5, ∞) rule (λ = 0, inside Theorem IV.1:
    unique equilibrium) to the published rule (λ = 1), decrease factor
    (1 − λ)(1 + α)/2 + λ min(α, 1.5), on the barrier system at a fixed small t = t1 (smooth: no
    active sets), by pseudo-arc-length continuation in λ; then the barrier path t1 → 0 at λ = 1
    (again by arc-length in log t if it stalls) and the exact polish. Returns (x, p, steps)."""
    sysm = NewtonSystem(_with_lambda(net, 0.0))
    x0, p0, phi0 = initial_point(sysm.net)
    m, nl = x0 * phi0, net.capacity * p0
    # 1. the λ = 0 barrier path down to t1 (no polish: the branch starts on the smooth system)
    x, p, _, _ = solve_path(sysm, x0, p0, m, nl, lambda *a, **k: None, t_min=t1)

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
        pol = polish_exact(sysm, xx, pp, x0, p0, hint=hint)
        if pol is not None and max(kkt_residuals(net, *pol).values()) < 1e-10:
            return pol
        return None

    # 3. t: t1 → 0 at λ = 1 on the barrier path, by arc-length in log t if it stalls
    try:
        x, p, _, ok = solve_path(sysm, x, p, m, nl, polish, t0=t1, t_min=t_min, early=True)
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
