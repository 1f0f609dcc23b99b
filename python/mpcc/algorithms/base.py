"""The one interface every congestion-control algorithm implements.

An algorithm is two functions over the windows and RTTs of one connection (all its routes):

* ``on_ack(cwnd, rtt, **state)`` → ``I``: the window increase (packets) of every route r when
  route r receives one ACK, :math:`I_r(\\mathbf w_s)` in Peng et al. §II-B;
* ``on_loss(cwnd, rtt, **state)`` → ``D``: the window decrease (packets) of every route r when
  route r detects one loss, :math:`D_r(\\mathbf w_s)`.

``cwnd`` and ``rtt`` are arrays whose last axis indexes the routes of one connection; leading
axes are a batch of independent connections (so the fluid engine evaluates 10,000 sources in one
call). The same names (``on_ack``/``on_loss``) are used by the Rust simulator
(``crates/mpcc-core/src/cc/``) and the BPF programs (``bpf/``); all three are checked against
``spec/vectors/algorithms.json``.

The fluid parameters of eq. (7) are *derived* here from ``I`` and ``D``, never written twice:

.. math::  k_r = \\frac{x_r}{\\tau_r} D_r(\\mathbf w_s), \\qquad
           \\phi_r = \\frac{I_r(\\mathbf w_s)}{D_r(\\mathbf w_s)}, \\qquad w_r = x_r \\tau_r.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

# numpy is imported inside the functions, so `mpcc check` validates scenarios without loading it


def as_arrays(cwnd, rtt):
    import numpy as np
    w = np.asarray(cwnd, dtype=float)
    t = np.broadcast_to(np.asarray(rtt, dtype=float), w.shape)
    return w, t


def parameter(name: str, default: float) -> property:
    """A parameter of the algorithm as a float: ``params[name]``, or ``default`` when unset."""
    return property(lambda self: float(self.params.get(name, default)))


@dataclass(frozen=True)
class Algorithm:
    """Base class: subclasses set ``name`` and implement :meth:`on_ack` and :meth:`on_loss`."""

    name: ClassVar[str] = "abstract"
    #: True when the fluid model (3) of Peng et al. describes the algorithm (OLIA and FAST: no).
    fluid_model: ClassVar[bool] = True
    #: False when φ_r of eq. (7) can grow with the route's own rate (condition C2 of Peng et al.
    #: fails): the fluid equilibrium need not be unique and the solver may need a continuation
    #: (mpcc.fluid.continuation) from a rule with a unique equilibrium.
    monotone_phi: ClassVar[bool] = True
    #: Per-route state (beyond cwnd and rtt) the algorithm reads, e.g. OLIA's loss intervals.
    state_keys: ClassVar[tuple[str, ...]] = ()
    params: dict[str, Any] = field(default_factory=dict, compare=False)

    # --- the two rules -------------------------------------------------------------------
    def on_ack(self, cwnd, rtt, **state) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def on_loss(self, cwnd, rtt, **state) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def min_cwnd(self, n_routes: int) -> float:
        """Smallest window after a loss (Linux: ssthresh ≥ 2; Peng et al. §V use 1 for Coupled
        and Balia when the connection has more than one route)."""
        return 2.0

    def cwnd_after_loss(self, cwnd, rtt, **state) -> np.ndarray:
        """Window of every route after a loss on that route: max(w_r − D_r, min_cwnd)."""
        import numpy as np
        w, t = as_arrays(cwnd, rtt)
        return np.maximum(w - self.on_loss(w, t, **state), self.min_cwnd(w.shape[-1]))

    # --- fluid model, eq. (7) ---------------------------------------------------------------
    def fluid_phi(self, x, tau) -> np.ndarray:
        """φ_r(x_s) = I_r / D_r at windows w = x·τ (eq. 7). x in packets/s, τ in seconds."""
        x, tau = as_arrays(x, tau)
        w = x * tau
        return self.on_ack(w, tau) / self.on_loss(w, tau)

    def fluid_k(self, x, tau) -> np.ndarray:
        """k_r(x_s) = x_r D_r / τ_r at windows w = x·τ (eq. 7)."""
        x, tau = as_arrays(x, tau)
        w = x * tau
        return x * self.on_loss(w, tau) / tau

    def describe(self) -> str:
        if not self.params:
            return self.name
        inner = ", ".join(f"{k}={v}" for k, v in sorted(self.params.items()))
        return f"{self.name}({inner})"


# Small helpers over the route axis, shared by several algorithms.
def total_rate(cwnd: np.ndarray, rtt: np.ndarray) -> np.ndarray:
    """Σ_k w_k/τ_k over the routes of a connection (keepdims for broadcasting)."""
    import numpy as np
    return np.sum(cwnd / rtt, axis=-1, keepdims=True)


def halve(cwnd, rtt, **_state) -> np.ndarray:
    """D_r = w_r/2: the NewReno decrease used by Reno, EWTCP, Coupled, Semicoupled, LIA, OLIA."""
    w, _ = as_arrays(cwnd, rtt)
    return w / 2.0
