"""Multipath controllers of Jiang, Cai, Towsley (UM-CS-2011-005), eqs. (1)–(2).

MSTCP (1), multiplicative increase / multiplicative decrease of the total window W = Σ_i w_i:

    I_i = a,          D_i = min(b·W, w_i − 1)

MTCP(α, β) (2), AIMD with coupling α in the increase and β in the decrease phase:

    I_i = a / ((1−α) w_i + α W),      D_i = min(b[(1−β) w_i + β W], w_i − 1)

Coupled Decrease is (α, β) = (0, 1), Coupled Increase (1, 0), Fully Coupled (1, 1). The window
never drops below 1 packet; a window already below 1 is not decreased."""

from __future__ import annotations

from dataclasses import dataclass

# numpy is imported inside the functions, so `mpcc check` validates scenarios without loading it

from .base import Algorithm, as_arrays

#: Named points of the MTCP(α, β) square (Jiang et al. §2).
MTCP_VARIANTS = {
    "coupled-decrease": (0.0, 1.0),
    "coupled-increase": (1.0, 0.0),
    "fully-coupled": (1.0, 1.0),
}


def _capped(w: np.ndarray, cut: np.ndarray) -> np.ndarray:
    import numpy as np
    return np.clip(np.minimum(cut, w - 1.0), 0.0, None)


@dataclass(frozen=True)
class Mstcp(Algorithm):
    name = "mstcp"

    def on_ack(self, cwnd, rtt, **state):
        import numpy as np
        w, _ = as_arrays(cwnd, rtt)
        return np.full_like(w, float(self.params.get("a", 0.03)))

    def on_loss(self, cwnd, rtt, **state):
        import numpy as np
        w, _ = as_arrays(cwnd, rtt)
        b = float(self.params.get("b", 0.5))
        return _capped(w, b * np.sum(w, axis=-1, keepdims=True))

    def min_cwnd(self, n_routes: int) -> float:
        return 1.0


@dataclass(frozen=True)
class Mtcp(Algorithm):
    name = "mtcp"

    def _ab(self):
        return (float(self.params.get("alpha", 0.0)), float(self.params.get("beta", 0.0)),
                float(self.params.get("a", 1.0)), float(self.params.get("b", 0.5)))

    def on_ack(self, cwnd, rtt, **state):
        import numpy as np
        w, _ = as_arrays(cwnd, rtt)
        alpha, _, a, _ = self._ab()
        total = np.sum(w, axis=-1, keepdims=True)
        return a / ((1.0 - alpha) * w + alpha * total)

    def on_loss(self, cwnd, rtt, **state):
        import numpy as np
        w, _ = as_arrays(cwnd, rtt)
        _, beta, _, b = self._ab()
        total = np.sum(w, axis=-1, keepdims=True)
        return _capped(w, b * ((1.0 - beta) * w + beta * total))

    def min_cwnd(self, n_routes: int) -> float:
        return 1.0
