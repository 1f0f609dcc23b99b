"""LIA — the "Max" algorithm of Peng et al. (Wischik et al. NSDI'11, RFC 6356 §3).

    I_r = min( max_k(w_k/τ_k²) / (Σ_k w_k/τ_k)²,  1/w_r ),   D_r = w_r/2

RFC 6356 writes the increase per ACK as min(α/cwnd_total, 1/cwnd_r) with
α = cwnd_total · max_k(cwnd_k/rtt_k²) / (Σ_k cwnd_k/rtt_k)², which is the expression above.
The min with 1/w_r (never take more than a Reno flow on that route) is kept here; Peng et al.'s
fluid φ_r drops it, and it never binds when all RTTs are equal."""

from __future__ import annotations

from dataclasses import dataclass

# numpy is imported inside the functions, so `mpcc check` validates scenarios without loading it

from .base import Algorithm, as_arrays, halve, total_rate


@dataclass(frozen=True)
class Lia(Algorithm):
    name = "lia"

    def on_ack(self, cwnd, rtt, **state):
        import numpy as np
        w, t = as_arrays(cwnd, rtt)
        coupled = np.max(w / t**2, axis=-1, keepdims=True) / total_rate(w, t) ** 2
        return np.minimum(coupled, 1.0 / w)

    on_loss = staticmethod(halve)
