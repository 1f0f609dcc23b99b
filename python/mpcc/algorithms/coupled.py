"""Coupled MPTCP (Kelly–Voice; Han et al.; Peng et al. §II-B).

    I_r = (w_r/τ_r²) / (Σ_k w_k/τ_k)²,   D_r = w_r/2   →  φ_r = 2 / (τ_r² (Σ_k x_k)²)

Minimum window after a loss is 1 (not 2) when the connection has more than one route, as in
Peng et al. §V."""

from __future__ import annotations

from dataclasses import dataclass

from .base import Algorithm, as_arrays, halve, total_rate


@dataclass(frozen=True)
class Coupled(Algorithm):
    name = "coupled"

    def on_ack(self, cwnd, rtt, **state):
        w, t = as_arrays(cwnd, rtt)
        return (w / t**2) / total_rate(w, t) ** 2

    on_loss = staticmethod(halve)

    def min_cwnd(self, n_routes: int) -> float:
        return 1.0 if n_routes > 1 else 2.0
