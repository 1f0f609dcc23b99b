"""The ε-family of coupled increases (Wischik, Raiciu, Greenhalgh, Handley, "Design,
implementation and evaluation of congestion control for multipath TCP", NSDI 2011; htsim's
``COUPLED_EPSILON``, ``MultipathTcpSrc::inflate_window`` / ``compute_alfa`` in mtcp.cpp).
ε ∈ [0, 2] moves between full coupling (ε = 0) and uncoupled Reno on every route (ε = 2).

htsim, per ACK on route r (windows in packets, W = Σ_k w_k):

    I_r = min( a · (a w_r)^(1−ε) / W^(2−ε),  1/w_r ),        D_r = w_r / 2
    a   = W · (max_k w_k^(ε/2)/τ_k)^(1/(1−ε/2)) / (Σ_k w_k/τ_k)^(1/(1−ε/2))   for 0 < ε < 2,
    a   = 1                                                                  for ε ∈ {0, 2}.

Since a^(2−ε) = W^(2−ε) · (max_k w_k^(ε/2)/τ_k)² / (Σ_k w_k/τ_k)² ((2−ε)/(1−ε/2) = 2), for
0 < ε < 2 this is

    I_r = min( w_r^(1−ε) · (max_k w_k^(ε/2)/τ_k)² / (Σ_k w_k/τ_k)²,  1/w_r ),

and at the ends I_r = min(w_r/W², 1/w_r) (ε = 0) and I_r = 1/w_r (ε = 2). ε = 1 is LIA
(RFC 6356) exactly. The cap at 1/w_r is htsim's ``tmp > tcp_inc`` (never more than Reno on
that route); the decrease is htsim's ``deflate_window`` (halve, floor 2 here as for LIA).
The fluid k_r, φ_r follow by eq. (7) (``Algorithm.fluid_k``, ``fluid_phi``).
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import Algorithm, as_arrays, halve, parameter, total_rate


@dataclass(frozen=True)
class Epsilon(Algorithm):
    name = "epsilon"
    epsilon = parameter("epsilon", 1.0)

    def on_ack(self, cwnd, rtt, **state):
        import numpy as np
        w, t = as_arrays(cwnd, rtt)
        e = self.epsilon
        if e <= 0.0:        # htsim keeps a = 1 at the ends
            inc = w / np.sum(w, axis=-1, keepdims=True) ** 2
        elif e >= 2.0:
            inc = 1.0 / w
        else:
            best = np.max(w ** (e / 2.0) / t, axis=-1, keepdims=True)
            inc = w ** (1.0 - e) * best ** 2 / total_rate(w, t) ** 2
        return np.minimum(inc, 1.0 / w)

    on_loss = staticmethod(halve)
