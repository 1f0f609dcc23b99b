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
   pseudo-arc-length continuation, which passes folds (``balia_continuation``).

Modules: :mod:`.newton` (φ, Jacobians, linear algebra), :mod:`.barrier` (1–2),
:mod:`.polish` (3), :mod:`.ranges` (4), :mod:`.continuation` (5); this one puts them together.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .barrier import initial_point, solve_path
from .continuation import balia_continuation, continuation
from .network import Network
from .newton import DEBUG, ZERO, NewtonSystem, SolverFailure, phi_all, phi_jac
from .polish import kkt_residuals, polish_exact
from .ranges import degenerate_sources, equilibrium_ranges

__all__ = ["Equilibrium", "SolverFailure", "solve", "kkt_residuals", "phi_all", "phi_jac", "equilibrium_ranges",
           "balia_continuation", "continuation"]


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
    queue_pkts: np.ndarray | None = None  # per link mean backlog (rtt = "propagation+queue")
    queue_iterations: int = 0         # fixed-point iterations backlog ↔ equilibrium

    @property
    def residual(self) -> float:
        return max(self.residuals.values())

    def source_routes(self, s: int) -> np.ndarray:
        return np.flatnonzero(self.network.source_of_route == s)


def solve(net: Network, *, ranges: bool = True, fast: bool = True) -> Equilibrium:
    """Equilibrium (8)–(9) of ``net``. ``fast=False`` selects the reference linear algebra (every
    Newton step assembles and LU-factorises the dense link Schur complement), kept for the
    benchmark's before/after comparison; both reach (8)–(9) to machine precision."""
    sysm = NewtonSystem(net, direct=not fast)
    x0, p0, phi0 = initial_point(net)
    m = x0 * phi0
    nl = net.capacity * p0

    def polish(x, p, hint=None):
        pol = polish_exact(sysm, x, p, x0, p0, hint=hint)
        if DEBUG:
            print("polish", pol is not None and kkt_residuals(net, *pol))
        if pol is not None and max(kkt_residuals(net, *pol).values()) < 1e-10:
            return pol
        return None

    try:
        # with sources whose φ is not monotone (published Balia) the barrier path may stall: give
        # it a shorter budget before the continuation takes over
        monotone = all(c.algorithm.monotone_phi for c in net.classes)
        x, p, it, _ = solve_path(sysm, x0, p0, m, nl, polish, early=True if fast else None,
                                  max_iter=600 if monotone or not fast else 150)
        it = sysm.steps          # every Newton linearisation: barrier path and polish
    except SolverFailure as failure:
        if monotone:
            raise
        x, p, it = continuation(net, failure)
        it += sysm.steps         # plus the steps of the failed barrier attempt
    res = kkt_residuals(net, x, p)
    xe = np.where(x > 0, x, ZERO * np.maximum(net.capacity.max(), 1.0))
    phi, _ = phi_all(net, xe, jac=False)
    deg = degenerate_sources(net, x, p)
    if ranges:
        lo, hi = equilibrium_ranges(net, x, p, deg)
    else:
        lo, hi = x.copy(), x.copy()
    scale = np.maximum(np.abs(x), net.capacity.max() * 1e-12)
    unique = bool(np.all(np.isfinite(lo)) and np.all((hi - lo) <= 1e-7 * np.maximum(scale, hi)))
    return Equilibrium(net, x, p, net.route_price(p), net.Hm @ x, phi, res, unique, lo, hi,
                       [s for s, _, _ in deg], it, net.tau)
