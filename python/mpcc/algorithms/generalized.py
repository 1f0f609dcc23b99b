"""The generalized (β, η, n) family of Peng et al. eq. (16) (§IV-B):

    k_r = ½ x_r (x_r + η(‖x‖_∞ − x_r)),     φ_r = 2((1−β) x_r + β‖x‖_n) / (τ_r² x_r ‖x‖_1²)

Inverting eq. (7) (D_r = τ_r k_r / x_r, I_r = φ_r D_r) gives the packet rules, with
α_r = ‖x‖_∞ / x_r:

    D_r = w_r/2 · (1 + η(α_r − 1))
    I_r = ((1−β) x_r + β‖x‖_n) (1 + η(α_r − 1)) / (τ_r ‖x‖_1²)

(β, η, n) = (1, 0, ∞) is Max, (0, 0, ·) Coupled, (1, 0, 1) Semicoupled when RTTs are equal;
(0.2, 0.5, ∞) is Balia's increase (1). ``n`` is a positive integer or ``inf``."""

from __future__ import annotations

import math
from dataclasses import dataclass

# numpy is imported inside the functions, so `mpcc check` validates scenarios without loading it

from .base import Algorithm, as_arrays, parameter, total_rate


def lnorm(x: np.ndarray, n: float) -> np.ndarray:
    """‖x‖_n along the route axis (keepdims); n = inf gives the max."""
    import numpy as np
    if math.isinf(n):
        return np.max(x, axis=-1, keepdims=True)
    return np.sum(x**n, axis=-1, keepdims=True) ** (1.0 / n)


@dataclass(frozen=True)
class Generalized(Algorithm):
    name = "generalized"

    beta = parameter("beta", 0.2)
    eta = parameter("eta", 0.5)
    n = parameter("n", math.inf)

    def _gain(self, w, t):
        import numpy as np
        x = w / t
        return 1.0 + self.eta * (np.max(x, axis=-1, keepdims=True) / x - 1.0)

    def on_ack(self, cwnd, rtt, **state):
        w, t = as_arrays(cwnd, rtt)
        x = w / t
        num = (1.0 - self.beta) * x + self.beta * lnorm(x, self.n)
        return num * self._gain(w, t) / (t * total_rate(w, t) ** 2)

    def on_loss(self, cwnd, rtt, **state):
        w, t = as_arrays(cwnd, rtt)
        return w / 2.0 * self._gain(w, t)
