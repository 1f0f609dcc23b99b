"""Link utilization of multipath transmission control — closed forms of Jiang, Cai, Towsley
(UM-CS-2011-005, §3 and Appendices A–D).

Notation of the report: ``n`` subflows on ``n`` disjoint homogeneous paths, ``m`` identical
flows (Assumption 4), capacity-delay product ``W0 = C·D`` (packets), buffer ratio
``gamma = B/W0``, ``kappa = 1 + gamma`` (so ``W_max = kappa·W0``), multiplicative-decrease
factor ``b``, and ``f`` = window just after a loss / window just before it.

* per-cycle utilization, MIMD (MSTCP) trajectory, eq. (6)::

      U_cycle = kappa(1 − f) / (kappa − 1 − log(kappa f))      if kappa f ≤ 1, else 1

* per-cycle utilization, AIMD trajectory, eq. (10)::

      U_cycle = kappa²(1 − f²) / (kappa² + 1 − 2 kappa f)       if kappa f ≤ 1, else 1

* single flow under Assumptions 2 (evenly spaced subflows) and 3 (gamma ≈ 0):
  MSTCP f = max{(1−b)^n, 1/W_max} (8); Coupled Decrease f = max{(2−b(n+1))/(2+b(n−1)),
  1/W_max} (11); Coupled Increase U = kappa(1−f)(1+f^{1/n}) / (2n(1−f^{1/n})) (12) with
  f = max{1−b, 1/W_max}; Fully Coupled: (12) with f of (8). (The report writes the floor as
  1/W0, the same thing under Assumption 3; the exact floor of eq. (26) is w_1(0+) ≥ 1, i.e.
  f ≥ 1/W_max.)
* m flows (Table 1, Appendix D), all under Assumption 3 (kappa = 1).

Every function works on scalars; ``utilization(...)`` is the one the CLI calls.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq

#: The algorithm names of the CLI, in the order of the report's Table 1.
ALGORITHMS = ("mstcp", "coupled-decrease", "coupled-increase", "fully-coupled")


# --- per-cycle utilization ---------------------------------------------------------------
def cycle_utilization_mimd(f: float, kappa: float = 1.0) -> float:
    """Eq. (6): utilization of one MSTCP cycle that starts at f·W_max and ends at W_max."""
    if not 0.0 < f <= 1.0:
        raise ValueError("f must be in (0, 1]")
    if kappa * f >= 1.0:
        return 1.0
    return kappa * (1.0 - f) / (kappa - 1.0 - math.log(kappa * f))


def cycle_utilization_aimd(f: float, kappa: float = 1.0) -> float:
    """Eq. (10): utilization of one (coupled-decrease) TCP-like cycle from f·W_max to W_max."""
    if not 0.0 <= f <= 1.0:
        raise ValueError("f must be in [0, 1]")
    if kappa * f >= 1.0:
        return 1.0
    return kappa ** 2 * (1.0 - f * f) / (kappa ** 2 + 1.0 - 2.0 * kappa * f)


# --- single flow: f of (8), (11), (12) and the utilization (12), (13) ---------------------------
def f_mstcp(n: int, b: float, w_max: float) -> float:
    """Eq. (8): f = max{(1 − b)^n, 1/W_max} (MSTCP and Fully Coupled MTCP)."""
    return max((1.0 - b) ** n, 1.0 / w_max)


def f_coupled_decrease(n: int, b: float, w_max: float) -> float:
    """Eq. (11): f = max{(2 − b(n+1)) / (2 + b(n−1)), 1/W_max}."""
    return max((2.0 - b * (n + 1)) / (2.0 + b * (n - 1)), 1.0 / w_max)


def f_coupled_increase(n: int, b: float, w_max: float) -> float:
    """Appendix C: f = max{1 − b, 1/W_max} (the decrease of Coupled Increase is uncoupled)."""
    return max(1.0 - b, 1.0 / w_max)


def utilization_coupled_increase(f: float, n: int, kappa: float = 1.0) -> float:
    """Eq. (12): U = kappa(1 − f)(1 + f^{1/n}) / (2n(1 − f^{1/n})) — the aggregate window
    grows linearly (30) between losses that alternate over the n subflows (Assumption 2)."""
    if f >= 1.0:
        return kappa
    r = f ** (1.0 / n)
    return kappa * (1.0 - f) * (1.0 + r) / (2.0 * n * (1.0 - r))


def utilization_coupled_increase_limit(b: float, kappa: float = 1.0) -> float:
    """Eq. (13): lim_{n→∞} of (12) with f = 1 − b, U = kappa·b / (−log(1 − b))."""
    return kappa * b / -math.log(1.0 - b)


def utilization_fully_coupled_limit(w0: float) -> float:
    """§3.2.3: lim_{n→∞} of (12) with f = 1/W0, U = (W0 − 1) / (W0 log W0)."""
    return (w0 - 1.0) / (w0 * math.log(w0))


# --- m flows: Table 1 ---------------------------------------------------------------------------
def g(f: float, n: int, m: int) -> float:
    """Table 1 / eq. (38): g(f, n, m) = Σ_{j=1}^m f^{1 − ⌈jn/m⌉/n} [1 − (⌈jn/m⌉ − jn/m)(1 − f^{1/n})].

    W0 = g·W_eff: the m windows on one path, sampled from the broken line inscribed in the
    exponential W_eff·f^{1−t/L} (Appendix D.3)."""
    r = f ** (1.0 / n)
    total = 0.0
    for j in range(1, m + 1):
        c = -(-j * n // m)  # ⌈jn/m⌉ in exact integer arithmetic
        total += f ** (1.0 - c / n) * (1.0 - (c - j * n / m) * (1.0 - r))
    return total


def f_star(m: int, w0: float) -> float:
    """Table 1: f* ∈ (0, 1), the root of x^{1+1/m} − (1 + 1/W0)x + 1/W0 = 0 (eq. 34).

    x = 1 is always a root; the polynomial is convex on (0, 1] with value 1/W0 > 0 at 0, so the
    other root lies left of its minimum x_min = ((1 + 1/W0)/(1 + 1/m))^m. When W0 ≤ m there is no
    root in (0, 1) (each flow's share of a path is ≤ 1 packet) and f* = 1 is returned."""
    if m == 1:
        return 1.0 / w0
    h = lambda x: x ** (1.0 + 1.0 / m) - (1.0 + 1.0 / w0) * x + 1.0 / w0  # noqa: E731
    x_min = ((1.0 + 1.0 / w0) / (1.0 + 1.0 / m)) ** m
    if x_min >= 1.0 or h(x_min) >= 0.0:
        return 1.0
    return brentq(h, 0.0, x_min, xtol=1e-15, rtol=1e-14)


def f_double_star(n: int, m: int, w0: float) -> float:
    """Table 1: f** ∈ (0, 1), the root of g(f, n, m) − f·W0 = 0 (eq. 40).

    g(0+) ≥ 1 > 0 and g(1) − W0 = m − W0 < 0 when W0 > m, so a root exists; f** = 1 when W0 ≤ m."""
    if m == 1:
        return 1.0 / w0
    if w0 <= m:
        return 1.0
    return brentq(lambda f: g(f, n, m) - f * w0, 1e-300, 1.0, xtol=1e-15, rtol=1e-14)


def table1_f(algorithm: str, n: int, m: int, w0: float, b: float) -> float:
    """Table 1, column f (Assumptions 3 and 4)."""
    if algorithm == "mstcp":
        return max((1.0 - b) ** n, f_star(m, w0))
    if algorithm == "coupled-decrease":
        return max((2.0 - b * (n + 1)) / (2.0 + b * (n - 1)), (m + 1.0) / (2.0 * w0 - m + 1.0))
    if algorithm == "coupled-increase":
        return max(1.0 - b, f_double_star(n, m, w0))
    if algorithm == "fully-coupled":
        return max((1.0 - b) ** n, f_double_star(n, m, w0))
    raise ValueError(f"unknown algorithm {algorithm!r}")


def table1_utilization(algorithm: str, f: float, n: int, m: int) -> float:
    """Table 1, column U (Assumptions 3 and 4), at a given f."""
    if f >= 1.0:
        return 1.0
    if algorithm == "mstcp":
        return m * (1.0 - f ** (1.0 / m)) / -math.log(f)
    if algorithm == "coupled-decrease":
        return m * (1.0 + f) / (m + 1.0 + (m - 1.0) * f)
    if algorithm in ("coupled-increase", "fully-coupled"):
        r = f ** (1.0 / n)
        return m * (1.0 - f) * (1.0 + r) / (2.0 * n * (1.0 - r) * g(f, n, m))
    raise ValueError(f"unknown algorithm {algorithm!r}")


# --- the one entry point ------------------------------------------------------------------------
@dataclass(frozen=True)
class Utilization:
    """Result of :func:`utilization`: the overall link utilization U and the decrease ratio f."""

    utilization: float
    f: float
    formula: str
    note: str = ""

    def to_dict(self) -> dict:
        d = {"utilization": self.utilization, "f": self.f, "formula": self.formula}
        if self.note:
            d["note"] = self.note
        return d


def utilization(algorithm: str, n: int, m: int = 1, w0: float = 42.0, gamma: float = 0.0,
                b: float = 0.5) -> Utilization:
    """Overall link utilization of ``m`` identical flows of ``n`` subflows (report §3).

    m = 1 uses the single-flow results with kappa = 1 + gamma: (6)+(8) for MSTCP, (10)+(11) for
    Coupled Decrease, (12) for Coupled Increase / Fully Coupled (with f = 1 − b / f of (8)).
    For n = 1 all three MTCP variants are TCP Reno and (10) is used. m > 1 uses Table 1, which
    the report derives under Assumption 3 (gamma ≈ 0): gamma is then ignored (noted).
    """
    if algorithm not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {algorithm!r}; use one of {', '.join(ALGORITHMS)}")
    if n < 1 or m < 1:
        raise ValueError("n and m must be ≥ 1")
    if not w0 > 1.0:
        raise ValueError("W0 must be > 1 packet")
    if gamma < 0.0:
        raise ValueError("gamma must be ≥ 0")
    if not 0.0 < b <= 1.0:
        raise ValueError("b must be in (0, 1]")
    kappa = 1.0 + gamma
    w_max = kappa * w0
    if m > 1:
        f = table1_f(algorithm, n, m, w0, b)
        note = "Table 1 assumes gamma ≈ 0 (Assumption 3); gamma ignored" if gamma > 0 else ""
        return Utilization(table1_utilization(algorithm, f, n, m), f, "table1", note)
    if algorithm == "mstcp":
        f = f_mstcp(n, b, w_max)
        return Utilization(cycle_utilization_mimd(f, kappa), f, "(6)+(8)")
    if algorithm == "coupled-decrease" or n == 1:
        f = f_coupled_decrease(n, b, w_max) if algorithm == "coupled-decrease" else max(1.0 - b, 1.0 / w_max)
        return Utilization(cycle_utilization_aimd(f, kappa), f, "(10)+(11)" if n > 1 else "(10)")
    f = f_coupled_increase(n, b, w_max) if algorithm == "coupled-increase" else f_mstcp(n, b, w_max)
    u = utilization_coupled_increase(f, n, kappa)
    note = ""
    if u > 1.0:
        note = "(12) assumes gamma ≈ 0 (Assumption 3) and exceeds 1 here; capped at 1"
        u = 1.0
    return Utilization(u, f, "(12)+(8)" if algorithm == "fully-coupled" else "(12)", note)


def utilization_curve(algorithm: str, ns, m: int = 1, w0: float = 42.0, gamma: float = 0.0,
                      b: float = 0.5) -> np.ndarray:
    """U for each n in ``ns`` (Fig. 4 / Fig. 6 helper)."""
    return np.array([utilization(algorithm, int(n), m, w0, gamma, b).utilization for n in ns])
