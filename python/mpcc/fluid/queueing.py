"""Queueing delay of the fluid model's ``rtt = "propagation+queue"``: the mean backlog of each
link at the equilibrium price p_l.

**RED links.** The price p_l of the fluid model is the probability that a packet is lost or
marked (Peng et al. §II-A; what Reno's w = √(2/p) answers to). RED (Floyd & Jacobson 1993, as
``crates/mpcc-queue`` implements it) turns its average queue ``avg`` into a per-packet
probability p_b (linear from 0 at min_th to max_p at max_th; with ``gentle`` from max_p to 1 at
2·max_th; every packet dropped above), and then *uniformises* the drops: the n-th packet after
the last drop is dropped with p_a = p_b/(1 − n·p_b) (forced once 1 − n·p_b ≤ p_b). The gap
between drops is then uniform on {1, …, 1/p_b − 1} instead of geometric, and the fraction of
packets dropped is 1/E[gap] ≈ 2·p_b, not p_b (:func:`red_drop_fraction`, exact). So at
equilibrium RED's average queue is the inverse of p_l = F(p_b(avg)) (:func:`red_backlog`); the
tail drop at ``buffer_pkts`` caps it.

**Drop-tail links.** No such curve exists (the queue swings between empty and full around
losses); a priced drop-tail link holds half its buffer (docs/fluid.md).

A link with p_l = 0 that is full (y_l = c_l) can hold any queue up to RED's min_th (the delay
alone then limits the flows, p_l stays 0); :func:`target_backlog` moves such a queue the way the
queue itself moves (it grows while y_l > c_l and drains while y_l < c_l). The engine iterates
backlog → RTT → equilibrium → backlog to a fixed point (:mod:`.engine`).
"""

from __future__ import annotations

import math

import numpy as np

from ..scenario import Scenario


def red_drop_fraction(pb: float) -> float:
    """Long-run fraction of packets RED drops/marks at a constant per-packet probability p_b,
    with FJ93's count-based uniformisation: the gap G between drops has P(G > n) =
    (1 − (n + 1)p_b)/(1 − p_b) for n < n_f = ⌈1/p_b − 1⌉ (the forced drop), so
    E[G] = (n_f − p_b n_f (n_f + 1)/2)/(1 − p_b) and the fraction is 1/E[G] (= 2 p_b when 1/p_b
    is an integer; 1 for p_b ≥ 1/2)."""
    if pb <= 0.0:
        return 0.0
    if pb >= 0.5:
        return 1.0
    nf = math.ceil(1.0 / pb - 1.0 - 1e-12)
    gap = (nf - pb * nf * (nf + 1) / 2.0) / (1.0 - pb)
    return 1.0 / gap


def _pb_for_fraction(p: float) -> float:
    """Inverse of :func:`red_drop_fraction` on (0, 1/2] (continuous and increasing): bisection."""
    if p <= 0.0:
        return 0.0
    if p >= 1.0:
        return 0.5
    lo, hi = 0.0, 0.5
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        if red_drop_fraction(mid) < p:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def red_backlog(red, buffer_pkts: float, p: float) -> float:
    """RED's average queue (packets) at which the fraction of packets dropped/marked is p > 0:
    p_b = F⁻¹(p) (:func:`red_drop_fraction`), then the inverse of RED's curve
    avg = min_th + (p_b/max_p)(max_th − min_th) for p_b ≤ max_p; above, with gentle,
    avg = max_th + max_th (p_b − max_p)/(1 − max_p), without gentle avg = max_th (every packet
    above it is dropped, so the average cannot stay above); at most ``buffer_pkts``."""
    pb = _pb_for_fraction(p)
    if pb <= red.max_p:
        avg = red.min_th + (pb / red.max_p) * (red.max_th - red.min_th)
    elif red.gentle and red.max_p < 1.0:
        avg = red.max_th + red.max_th * min(1.0, (pb - red.max_p) / (1.0 - red.max_p))
    else:
        avg = red.max_th
    return min(avg, float(buffer_pkts))


def backlog_at_price(scenario: Scenario, p: np.ndarray) -> np.ndarray:
    """Mean backlog (packets) of every link at prices p: RED's inverse (:func:`red_backlog`) or
    half the drop-tail buffer where p_l > 0; 0 where p_l = 0."""
    out = np.zeros(len(scenario.links))
    for i, l in enumerate(scenario.links):
        if p[i] > 0:
            out[i] = red_backlog(l.red, l.buffer_pkts, float(p[i])) if l.red is not None else l.buffer_pkts / 2.0
    return out


def free_backlog(scenario: Scenario) -> np.ndarray:
    """Largest backlog (packets) a full link holds at price 0: RED's min_th (below it nothing is
    dropped), 0 for drop-tail (its price starts with the first loss at a full buffer, which the
    half-buffer rule already stands for)."""
    return np.array([min(l.red.min_th, l.buffer_pkts) if l.red is not None else 0.0 for l in scenario.links])


def target_backlog(scenario: Scenario, b: np.ndarray, p: np.ndarray, y: np.ndarray, c: np.ndarray,
                   mean_tau: np.ndarray) -> np.ndarray:
    """Where the backlog goes given the equilibrium (p, y) solved with backlog b: the RED/drop-tail
    backlog at p_l where p_l > 0; where p_l = 0, the queue a full link at price 0 needs: changed by
    the delay that scales the RTT of its flows (``mean_tau``, s) by y_l/c_l (rates ≈ w/τ with the
    windows held), kept in [0, :func:`free_backlog`]."""
    at_price = backlog_at_price(scenario, p)
    free = free_backlog(scenario)
    drift = c * mean_tau * (y / c - 1.0)                 # packets: Δdelay · c_l
    at_zero = np.clip(b + drift, 0.0, free)
    return np.where(p > 0, at_price, at_zero)
