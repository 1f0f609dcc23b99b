"""Scalable TCP (Kelly, "Scalable TCP: improving performance in highspeed wide area networks",
CCR 33(2), 2003), run uncoupled on every route — the worked example of "Adding an algorithm"
(docs/algorithms.md): one file per engine (this one, ``crates/mpcc-core/src/cc/scalable.rs``,
``bpf/scalable.bpf.c``), a registry line each, and its vectors.

    I_r = a,     D_r = b · w_r          (Kelly's a = 0.01, b = 0.125; Linux tcp_scalable.c)

By eq. (7): k_r = b·x_r², φ_r = a / (b·w_r) = a / (b·x_r·τ_r): a route's equilibrium window
a/(b·p) is inversely proportional to its loss probability (Reno's is 1/√p).
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import Algorithm, as_arrays


@dataclass(frozen=True)
class Scalable(Algorithm):
    name = "scalable"

    def on_ack(self, cwnd, rtt, **state):
        import numpy as np
        w, _ = as_arrays(cwnd, rtt)
        return np.full_like(w, float(self.params.get("a", 0.01)))

    def on_loss(self, cwnd, rtt, **state):
        w, _ = as_arrays(cwnd, rtt)
        return float(self.params.get("b", 0.125)) * w
