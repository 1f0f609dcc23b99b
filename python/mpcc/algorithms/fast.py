"""FAST TCP (Tang et al. eq. (1); Wei, Jin, Low, Hegde ToN 2006).

Delay-based: every update interval (20 ms by default) each route sets

    w ← min(2w, (1−γ) w + γ (baseRTT/RTT · w_old + α))                       (1)

with γ ∈ (0, 1] (γ = 1 is eq. (1) of Tang et al. verbatim). RTT is the mean RTT sample of the
interval and w_old the window those packets were sent under, one RTT earlier (as ns-2's FAST
module does; with several updates per RTT the current window there makes the window oscillate). There is no per-ACK increase
(``on_ack`` is 0) and a loss halves the window as in Reno. α is in packets.

Algorithm 2 of Tang et al. (``adapt_interval_s`` > 0; 0 = off) adapts α on a slow timescale:
every ``adapt_interval_s``

    α* = q/(l·w)·α₀,   α ← min((1+δ)α, α*) if α < α*,  max((1−δ)α, α*) if α > α*      (Alg. 2)

with q the mean queueing delay (s) and l the loss rate (congestion signals per packet sent) over
the interval, α₀ = ``alpha``, w = ``adapt_w`` (s, the unit of q/l), δ = ``adapt_delta``
(:meth:`Fast.adapt`; run by the simulator and the BPF program, see :mod:`mpcc.hetero`). FAST has
no loss-based fluid model of the form (3) of Peng et al."""

from __future__ import annotations

from dataclasses import dataclass

# numpy is imported inside the functions, so `mpcc check` validates scenarios without loading it

from .base import Algorithm, as_arrays, halve, parameter


@dataclass(frozen=True)
class Fast(Algorithm):
    name = "fast"
    fluid_model = False
    state_keys = ("base_rtt",)

    alpha = parameter("alpha", 50.0)
    gamma = parameter("gamma", 0.5)
    adapt_w = parameter("adapt_w", 125.0)
    adapt_delta = parameter("adapt_delta", 0.1)
    adapt_interval_s = parameter("adapt_interval_s", 0.0)

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

    def adapt(self, alpha: float, q: float, l: float) -> float:
        """One step of Algorithm 2: the new α from the current one, the mean queueing delay ``q``
        (s) and the loss rate ``l`` over the interval. No loss and a queue: α* = ∞ (up by δ); no
        loss and no queue: α unchanged."""
        if l > 0:
            target = q / (l * self.adapt_w) * self.alpha
        elif q > 0:
            target = float("inf")
        else:
            return alpha
        if alpha < target:
            return min((1.0 + self.adapt_delta) * alpha, target)
        if alpha > target:
            return max((1.0 - self.adapt_delta) * alpha, target)
        return alpha
