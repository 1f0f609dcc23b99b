"""Balia — balanced linked adaptation (Peng et al. eqs. (1)–(2), §I).

With x_r = w_r/τ_r and α_r = max_k x_k / x_r:

    I_r = x_r / (τ_r (Σ_k x_k)²) · (1+α_r)/2 · (4+α_r)/5          (1)
    D_r = w_r/2 · min(α_r, 1.5)                                     (2)

The minimum window after a loss is 1 when the connection has more than one route (§V).
Within the generalized family (16) Balia is (β, η, n) = (0.2, 0.5, ∞) for the increase; the
decrease (2) caps the factor at 1.5 instead of (1+α_r)/2, so the fluid k_r and φ_r derived here
by eq. (7) are those of the published rules."""

from __future__ import annotations

from dataclasses import dataclass

# numpy is imported inside the functions, so `mpcc check` validates scenarios without loading it

from .base import Algorithm, as_arrays, total_rate


def rate_ratio(w: np.ndarray, t: np.ndarray) -> np.ndarray:
    """α_r = max_k x_k / x_r with x = w/τ."""
    import numpy as np
    x = w / t
    return np.max(x, axis=-1, keepdims=True) / x


def increase(w: np.ndarray, t: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """I_r of eq. (1) given α_r."""
    return w / t / (t * total_rate(w, t) ** 2) * ((1.0 + alpha) / 2.0) * ((4.0 + alpha) / 5.0)


def decrease_factor(alpha: np.ndarray) -> np.ndarray:
    """The factor min(α_r, 1.5) of eq. (2): D_r = w_r/2 · factor."""
    import numpy as np
    return np.minimum(alpha, 1.5)


@dataclass(frozen=True)
class Balia(Algorithm):
    name = "balia"
    monotone_phi = False     # the decrease factor's cap min(α, 1.5): φ_r grows for 1 < α_r < 1.5

    def on_ack(self, cwnd, rtt, **state):
        w, t = as_arrays(cwnd, rtt)
        return increase(w, t, rate_ratio(w, t))

    def on_loss(self, cwnd, rtt, **state):
        w, t = as_arrays(cwnd, rtt)
        return w / 2.0 * decrease_factor(rate_ratio(w, t))

    def min_cwnd(self, n_routes: int) -> float:
        return 1.0 if n_routes > 1 else 2.0
