"""EWTCP (Honda et al.; Peng et al. §II-B): each route runs Reno with increase a/w_r.

    I_r = a / w_r,     D_r = w_r / 2        →  k_r = x_r²/2,  φ_r = 2a / (τ_r² x_r²)

Peng et al.'s experiments use a = 1 (footnote 1: with a < 1 the multipath flow can get less
than a single-path TCP flow)."""

from __future__ import annotations

from dataclasses import dataclass

from .base import Algorithm, as_arrays, halve, parameter


@dataclass(frozen=True)
class Ewtcp(Algorithm):
    name = "ewtcp"

    a = parameter("a", 1.0)

    def on_ack(self, cwnd, rtt, **state):
        w, _ = as_arrays(cwnd, rtt)
        return self.a / w

    on_loss = staticmethod(halve)
