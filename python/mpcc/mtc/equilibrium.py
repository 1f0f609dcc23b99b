"""Long-term traffic distribution of MTCP(α, β) — Jiang, Cai, Towsley §4.1.

Fluid model (15) of one MTCP flow over n paths with loss probabilities p_i and RTTs tau_i::

    dw_i/dt = (w_i/tau_i) · ( a(1 − p_i) / ((1−α)w_i + αw)  −  b[(1−β)w_i + βw] p_i ),  w = Σ w_i

Equilibria (16): w_i* = 0 or [(1−α)w_i* + αw*][(1−β)w_i* + βw*] = (a/b)(1 − p_i)/p_i.
A stable equilibrium uses exactly the N best paths (19). Closed forms (paths sorted by p):

* Case 1, α ≠ 1, β = 1: N = max{k : H_k > α}, H_k = (p_k/(1−p_k) Σ_{i≤k} (1−p_i)/p_i − k + 1)^{-1},
  w* = sqrt( (a/b) Σ_{i≤N} (1−p_i)/p_i / ((1−α) + αN) ), w_i* from (20).
* Case 2, α = 1, β ≠ 1: Case 1 with α and β exchanged ((16) and (19) are symmetric in α, β).
* Case 3, α = β = 1: w* = sqrt((a/b)(1−p_1)/p_1), only the K best paths (p_i = p_1). K = 1: a
  unique stable equilibrium; K > 1: every point of the simplex Σ_{i≤K} w_i = w* is an
  equilibrium (a stable *set*; none of its points is stable). Reported as paths_used = K, the
  symmetric point w*/K on each best path, and ``equilibrium_set = True``.
* Case 4, α ≠ 1, β ≠ 1: N = max{k : G_k > 0} with G_k of §4.1, w* the unique positive root of
  Σ_{i≤N} sqrt((α−β)² + c_i/w*²) = 2(1−α)(1−β) + N(α+β−2αβ), c_i = 4(a/b)(1−α)(1−β)(1−p_i)/p_i,
  and w_i*/w* = (sqrt((α−β)² + c_i/w*²) − (α+β−2αβ)) / (2(1−α)(1−β)).

:func:`ode_equilibrium` integrates (15) to its limit independently of these formulas.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.integrate import solve_ivp
from scipy.optimize import brentq


@dataclass(frozen=True)
class Equilibrium:
    """A (stable) equilibrium of (15); windows in the caller's path order (packets)."""

    paths_used: int
    windows: tuple[float, ...]
    total_window: float
    case: int  # 1–4 of §4.1 (0 for the ODE solver)
    equilibrium_set: bool = False  # α = β = 1 with tied best paths: a simplex of equilibria
    used: tuple[bool, ...] = ()
    extra: dict = field(default_factory=dict, compare=False)

    def to_dict(self) -> dict:
        d = {"paths_used": self.paths_used, "windows": list(self.windows),
             "total_window": self.total_window, "case": self.case,
             "equilibrium_set": self.equilibrium_set, "used": list(self.used)}
        d.update(self.extra)
        return d


def check_inputs(alpha: float, beta: float, loss) -> np.ndarray:
    p = np.asarray(loss, dtype=float).ravel()
    if p.size == 0:
        raise ValueError("at least one path loss probability is needed")
    if not (np.all(p > 0.0) and np.all(p < 1.0)):
        raise ValueError("loss probabilities must be in (0, 1)")
    for name, v in (("alpha", alpha), ("beta", beta)):
        if not 0.0 <= v <= 1.0:
            raise ValueError(f"{name} must be in [0, 1]")
    return p


def _h(p: np.ndarray, k: int) -> float:
    """H_k of Case 1 (k is 1-based, p sorted ascending)."""
    q = (1.0 - p[:k]) / p[:k]
    return 1.0 / (p[k - 1] / (1.0 - p[k - 1]) * q.sum() - k + 1.0)


def _g(alpha: float, beta: float, p: np.ndarray, k: int) -> float:
    """G_k of Case 4 divided by 2(1−α)(1−β) > 0 (same sign; k is 1-based, p sorted ascending).

    With A = α−β, B = α+β−2αβ, y_i = 4αβ(1−α)(1−β)ρ_i, ρ_i = p_k(1−p_i)/((1−p_k)p_i) and
    B² − A² = 4αβ(1−α)(1−β): sqrt(A² + y_i) − B = 4αβ(1−α)(1−β)(ρ_i − 1)/(sqrt(A² + y_i) + B), so
    G_k / (2(1−α)(1−β)) = 1 − Σ_i 2αβ(ρ_i − 1)/(sqrt(A² + y_i) + B) — free of the cancellation of
    the printed form when α or β is close to 1."""
    if alpha * beta == 0.0:
        return 1.0  # an uncoupled phase: (18) can never hold, every path is used
    a_, b_ = alpha - beta, alpha + beta - 2.0 * alpha * beta
    rho = p[k - 1] / (1.0 - p[k - 1]) * (1.0 - p[:k]) / p[:k]
    y = 4.0 * alpha * beta * (1.0 - alpha) * (1.0 - beta) * rho
    return 1.0 - np.sum(2.0 * alpha * beta * (rho - 1.0) / (np.sqrt(a_ ** 2 + y) + b_))


def closed_form(alpha: float, beta: float, loss, a: float = 1.0, b: float = 0.5) -> Equilibrium:
    """The stable equilibrium of (15) from the closed forms of Cases 1–4 (§4.1)."""
    p_in = check_inputs(alpha, beta, loss)
    order = np.argsort(p_in, kind="stable")
    p = p_in[order]
    n = p.size
    r = a / b
    q = (1.0 - p) / p  # (1 − p_i)/p_i
    w = np.zeros(n)
    is_set = False
    if alpha == 1.0 and beta == 1.0:  # Case 3
        case = 3
        k_best = int(np.sum(p == p[0]))
        n_used = k_best
        wstar = math.sqrt(r * q[0])
        w[:k_best] = wstar / k_best
        is_set = k_best > 1
    elif beta == 1.0 or alpha == 1.0:  # Cases 1 and 2
        case = 1 if beta == 1.0 else 2
        c = alpha if case == 1 else beta  # the coupling strength that is not 1
        n_used = max(k for k in range(1, n + 1) if _h(p, k) > c)
        wstar = math.sqrt(r * q[:n_used].sum() / ((1.0 - c) + c * n_used))
        w[:n_used] = (r * q[:n_used] / (wstar * (1.0 - c)) - c * wstar / (1.0 - c))  # (20)
        if n_used == 1:
            w[0] = wstar  # the same value, without (20)'s cancellation when c → 1
    else:  # Case 4
        case = 4
        n_used = max(k for k in range(1, n + 1) if _g(alpha, beta, p, k) > 0.0)
        s_ab = alpha + beta - 2.0 * alpha * beta
        ci = 4.0 * r * (1.0 - alpha) * (1.0 - beta) * q[:n_used]

        def share(ws):
            # w_i/w* = (sqrt((α−β)² + c_i/w*²) − B) / (2(1−α)(1−β)), rationalized with
            # B² − (α−β)² = 4αβ(1−α)(1−β) to  2((a/b)q_i/w*² − αβ) / (sqrt(...) + B)
            return 2.0 * (r * q[:n_used] / ws ** 2 - alpha * beta) / (
                np.sqrt((alpha - beta) ** 2 + ci / ws ** 2) + s_ab)

        def excess(ws):  # Σ_i w_i/w* − 1: the summed equation of Case 4 over 2(1−α)(1−β)
            return share(ws).sum() - 1.0

        # excess decreases from +∞ (ws → 0) to a negative limit (ws → ∞): bracket by doubling
        lo, hi = 1e-9, 1.0
        while excess(hi) > 0.0:
            hi *= 2.0
        wstar = brentq(excess, lo, hi, xtol=1e-14, rtol=1e-14)
        w[:n_used] = wstar * share(wstar)
    out = np.zeros(n)
    out[order] = w
    used = np.zeros(n, bool)
    used[order[:n_used]] = True
    return Equilibrium(n_used, tuple(float(v) for v in out), float(out.sum()), case, is_set,
                       tuple(bool(u) for u in used))


def rhs15(w: np.ndarray, p: np.ndarray, tau: np.ndarray, alpha: float, beta: float,
          a: float = 1.0, b: float = 0.5) -> np.ndarray:
    """Right-hand side of (15), written with w_i multiplied in so that w_i = 0 is allowed."""
    total = w.sum(axis=-1, keepdims=True)
    inc_den = (1.0 - alpha) * w + alpha * total
    inc = np.where(inc_den > 0.0, a * (1.0 - p) * w / np.where(inc_den > 0.0, inc_den, 1.0), 0.0)
    if alpha == 0.0:
        inc = np.broadcast_to(a * (1.0 - p), w.shape)  # w_i · a/w_i
    dec = b * ((1.0 - beta) * w + beta * total) * p * w
    return (inc - dec) / tau


def ode_equilibrium(alpha: float, beta: float, loss, a: float = 1.0, b: float = 0.5, rtt=None,
                    w_init=None, t_end_rtts: float = 1e9, used_tol: float = 1e-6,
                    rate_tol: float = 1e-9) -> Equilibrium:
    """Integrate (15) from an interior starting point to its limit (independent of Cases 1–4).

    Integration is in u_i = log w_i (du_i/dt = (15)/w_i) so that windows decaying to 0 remain
    resolvable; a path counts as used if its per-capita growth rate at the end is 0 (≥ −rate_tol per
    RTT: it sits at an equilibrium) rather than negative (still decaying), or if its window
    exceeds ``used_tol``·w. The start is equal windows (or ``w_init``); for α = β = 1 with tied
    best paths the limit depends on it."""
    p = check_inputs(alpha, beta, loss)
    n = p.size
    tau = np.full(n, 0.1) if rtt is None else np.broadcast_to(np.asarray(rtt, float), (n,)).copy()
    w0 = np.full(n, 1.0) if w_init is None else np.asarray(w_init, float)

    def du(_t, u):
        w = np.exp(u)
        total = w.sum()
        return (a * (1.0 - p) / ((1.0 - alpha) * w + alpha * total)
                - b * ((1.0 - beta) * w + beta * total) * p) / tau

    def jac(_t, u):
        w = np.exp(u)
        total = w.sum()
        den = (1.0 - alpha) * w + alpha * total
        # ∂/∂u_j of each term: d(den_i)/du_j = ((1−α)δ_ij + α) w_j, likewise for the decrease
        dden = (alpha * np.ones((n, n)) + (1.0 - alpha) * np.eye(n)) * w[None, :]
        ddec = (beta * np.ones((n, n)) + (1.0 - beta) * np.eye(n)) * w[None, :]
        j = -(a * (1.0 - p) / den ** 2)[:, None] * dden - (b * p)[:, None] * ddec
        return j / tau[:, None]

    t_end = t_end_rtts * tau.max()
    sol = solve_ivp(du, (0.0, t_end), np.log(w0), method="LSODA", jac=jac, rtol=1e-10, atol=1e-10)
    if not sol.success:
        raise RuntimeError(f"ODE integration failed: {sol.message}")
    w = np.exp(sol.y[:, -1])
    # A used path sits at its equilibrium (per-capita growth rate 0); an unused one keeps decaying
    # at the (negative) invasion rate of (18). Classify by that rate per RTT, which stays
    # meaningful when a used window is tiny (e.g. α = 0 with a very lossy path); a window still
    # above used_tol·w counts as used too (only possible right at a region boundary).
    growth = du(0.0, sol.y[:, -1]) * tau
    used = (growth > -rate_tol) | (w > used_tol * w.sum())
    w_out = np.where(used, w, 0.0)
    p_min_used = p[used]
    is_set = bool(alpha == 1.0 and beta == 1.0 and used.sum() > 1 and np.all(p_min_used == p_min_used[0]))
    return Equilibrium(int(used.sum()), tuple(float(v) for v in w_out), float(w.sum()), 0, is_set,
                       tuple(bool(u) for u in used),
                       extra={"residual": float(np.max(np.abs(du(0, sol.y[:, -1])[used]) * tau[used]))})
