"""FAST TCP (Tang et al. eq. (1); Wei, Jin, Low, Hegde ToN 2006).

Delay-based: every update interval (20 ms by default) each route sets

    w ← min(2w, (1−γ) w + γ (baseRTT/RTT · w_old + α))                       (1)

with γ ∈ (0, 1] (γ = 1 is eq. (1) of Tang et al. verbatim). RTT is the mean RTT sample of the
interval and w_old the window those packets were sent under, one RTT earlier (as ns-2's FAST
module does; with several updates per RTT the current window there makes the window oscillate). There is no per-ACK increase
(``on_ack`` is 0) and a loss halves the window as in Reno. α is in packets; Algorithm 2 of Tang
et al. adapts it on a slow timescale (see :mod:`mpcc.hetero`). FAST has no loss-based fluid
model of the form (3) of Peng et al."""

from __future__ import annotations

from dataclasses import dataclass

# numpy is imported inside the functions, so `mpcc check` validates scenarios without loading it

from .base import Algorithm, as_arrays, halve


@dataclass(frozen=True)
class Fast(Algorithm):
    name = "fast"
    fluid_model = False
    state_keys = ("base_rtt",)

    @property
    def alpha(self) -> float:
        return float(self.params.get("alpha", 50.0))

    @property
    def gamma(self) -> float:
        return float(self.params.get("gamma", 0.5))

    def on_ack(self, cwnd, rtt, **state):
        import numpy as np
        w, _ = as_arrays(cwnd, rtt)
        return np.zeros_like(w)

    on_loss = staticmethod(halve)

    def on_update(self, cwnd, rtt, base_rtt, old_cwnd=None) -> np.ndarray:
        """New window after one periodic update (1); ``old_cwnd`` (default: ``cwnd``) is the window
        the RTT samples' packets were sent under."""
        import numpy as np
        w, t = as_arrays(cwnd, rtt)
        base = np.broadcast_to(np.asarray(base_rtt, dtype=float), w.shape)
        w_old = w if old_cwnd is None else np.broadcast_to(np.asarray(old_cwnd, dtype=float), w.shape)
        target = (1.0 - self.gamma) * w + self.gamma * (base / t * w_old + self.alpha)
        return np.minimum(2.0 * w, target)
