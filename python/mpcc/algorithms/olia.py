"""OLIA — opportunistic linked increases (Khalili et al., ToN 2013; draft-khalili-mptcp-
congestion-control; the out-of-tree Linux ``mptcp_olia.c``).

    I_r = (w_r/τ_r²) / (Σ_p w_p/τ_p)² + ε_r / w_r,     D_r = w_r/2

ℓ_r is the larger of the packets acknowledged since the last loss on r and between the last
two losses on r (state key ``loss_interval``; mptcp_olia.c's snd_una markers). The best paths B maximise ℓ_r/τ_r², the max-window paths M
maximise w_r, and with n routes:

    ε_r = 1/(n·|B∖M|)   if r ∈ B∖M
    ε_r = −1/(n·|M|)    if r ∈ M and B∖M ≠ ∅
    ε_r = 0             otherwise

OLIA has no fluid model of the form (3) (Peng et al. §II-B).

These are the per-ACK and per-loss rules. With ``per_ack = 0`` (the default) every engine applies
I_r per acknowledged packet, as for the other algorithms (the simulator's host update, the BPF
program's shared update). With ``per_ack = 1`` they apply it as mptcp_olia.c did, with integer
arithmetic (whole-packet windows, ⌊2^10·I_r⌋ per ACK into a counter reset at ±1023, one step per
ACK whatever it acknowledges, slow start while w ≤ ssthresh): the simulator in its window update
(docs/sim.md), the BPF program (docs/algorithms.md). :func:`per_ack_counter` is that counter's
reference for the shared vectors."""

from __future__ import annotations

import math
from dataclasses import dataclass

# numpy is imported inside the functions, so `mpcc check` validates scenarios without loading it

from .base import Algorithm, as_arrays, halve, parameter, total_rate


@dataclass(frozen=True)
class Olia(Algorithm):
    name = "olia"
    fluid_model = False
    state_keys = ("loss_interval",)

    per_ack = parameter("per_ack", 0.0)

    @staticmethod
    def epsilon(cwnd, rtt, loss_interval) -> np.ndarray:
        import numpy as np
        w, t = as_arrays(cwnd, rtt)
        ell = np.broadcast_to(np.asarray(loss_interval, dtype=float), w.shape)
        n = w.shape[-1]
        quality = ell / t**2
        best = quality == np.max(quality, axis=-1, keepdims=True)
        in_m = w == np.max(w, axis=-1, keepdims=True)
        collected = best & ~in_m
        n_collected = np.sum(collected, axis=-1, keepdims=True)
        n_m = np.sum(in_m, axis=-1, keepdims=True)
        safe_nc = np.maximum(n_collected, 1)
        eps = np.where(collected, 1.0 / (n * safe_nc), 0.0)
        eps = np.where(in_m & (n_collected > 0), -1.0 / (n * n_m), eps)
        return eps

    def on_ack(self, cwnd, rtt, loss_interval=None, **state):
        import numpy as np
        w, t = as_arrays(cwnd, rtt)
        if loss_interval is None:
            loss_interval = np.zeros_like(w)
        coupled = (w / t**2) / total_rate(w, t) ** 2
        return coupled + self.epsilon(w, t, loss_interval) / w

    on_loss = staticmethod(halve)


#: mptcp_olia.c's ``scale``: its window counter counts 2^-10 packets.
COUNTER_BITS = 10


def per_ack_counter(increase: float, bits: int = COUNTER_BITS) -> tuple[int, int]:
    """mptcp_olia.c's per-ACK update of one route whose increase is I = ``increase`` packets per
    ACK: (d, acks). Every ACK adds d = I·2^bits rounded toward zero to a counter that starts at 0;
    when the counter reaches ±(2^bits − 1) the window moves one packet up (down) and the counter
    is reset to 0. acks = the number of ACKs until that first step, ⌈(2^bits − 1)/|d|⌉, or 0 when
    d = 0 (the window never moves: I below 2^-bits packet is lost entirely)."""
    d = int(math.trunc(increase * 2**bits))
    return d, (-(-(2**bits - 1) // abs(d)) if d else 0)
