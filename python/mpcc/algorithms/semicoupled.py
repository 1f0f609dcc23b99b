"""Semicoupled MPTCP (Wischik et al.; Peng et al. §II-B).

    I_r = 1 / (τ_r Σ_k w_k/τ_k),   D_r = w_r/2   →  φ_r = 2 / (τ_r² x_r Σ_k x_k)

(The paper prints φ_r with a single τ_r; deriving it from I_r and D_r by eq. (7) gives τ_r²,
which is what makes it reduce to Reno's 2/(τ² x²) on one route.)"""

from __future__ import annotations

from dataclasses import dataclass

from .base import Algorithm, as_arrays, halve, total_rate


@dataclass(frozen=True)
class Semicoupled(Algorithm):
    name = "semicoupled"

    def on_ack(self, cwnd, rtt, **state):
        w, t = as_arrays(cwnd, rtt)
        return 1.0 / (t * total_rate(w, t))

    on_loss = staticmethod(halve)
