"""TCP NewReno (Peng et al. §II-B): I_r = 1/w_r, D_r = w_r/2. On a multipath connection each
route runs Reno independently (that is EWTCP with a = 1)."""

from __future__ import annotations

from dataclasses import dataclass

from .base import Algorithm, as_arrays, halve


@dataclass(frozen=True)
class Reno(Algorithm):
    name = "reno"

    def on_ack(self, cwnd, rtt, **state):
        w, _ = as_arrays(cwnd, rtt)
        return 1.0 / w

    on_loss = staticmethod(halve)
