"""§IV of Peng et al. on a scenario: friendliness on the Fig. 1 network (Theorem III.4) and the
design space of the generalized (β, η, n) algorithm (Table II): friendliness, responsiveness
(:func:`mpcc.fluid.analysis.linearization`) and oscillation (:func:`mpcc.fluid.analysis.oscillation`)."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace

import numpy as np

from .. import algorithms as algs
from .analysis import linearization, oscillation
from .engine import default_gamma
from .network import from_scenario
from .solver import solve


# --- friendliness on Fig. 1 (Theorem III.4) -------------------------------------------------------------
@dataclass(frozen=True)
class Friendliness:
    algorithm: str
    mp_mbps: float        # ‖x̂‖₁, the multipath flow's total throughput
    sp_mbps: float        # the single-path Reno flow's
    share: float          # mp / (mp + sp)
    unique: bool


def friendliness(scenario, algorithms_=("ewtcp", "semicoupled", "lia", "balia", "coupled"), *,
                 equal_rtt: bool = False) -> list[Friendliness]:
    """Throughput of the multipath group against the single-path group of the Fig. 1 network for
    each algorithm. ``equal_rtt`` sets every link delay on the multipath routes to their mean, so
    both routes have the same RTT (the setting of §IV-A's ordering)."""
    sc = scenario
    if equal_rtt:
        mp = next(g for g in sc.groups if g.multipath)
        access = {n for path in mp.paths for n in path}
        shared = set.intersection(*[set(path) for path in mp.paths])
        own = access - shared
        mean = float(np.mean([sc.link(n).delay_ms for n in own])) if own else 0.0
        links = tuple(replace(l, delay_ms=mean) if l.name in own else l for l in sc.links)
        sc = sc.with_changes(links=links)
    out = []
    for a in algorithms_:
        algo = algs.get(a)
        net, groups = from_scenario(sc, algorithm=algo)
        eq = solve(net)
        rates = {}
        for s, g in enumerate(groups):
            rates[g.name] = sc.pps_to_mbps(eq.x[net.source_of_route == s].sum())
        mpg = next(g.name for g in groups if g.multipath)
        spg = next(g.name for g in groups if not g.multipath)
        out.append(Friendliness(algo.describe() if algo.params else a, rates[mpg], rates[spg],
                                rates[mpg] / (rates[mpg] + rates[spg]), eq.unique))
    return out


# --- design space of the generalized algorithm (Table II) -----------------------------------------------
@dataclass(frozen=True)
class DesignPoint:
    beta: float
    eta: float
    n: float
    mp_share: float       # friendliness: multipath share against Reno (lower = friendlier)
    max_real: float       # responsiveness: slowest mode of J* (more negative = more responsive)
    oscillation: float    # D_s of the multipath source (lower = less oscillation)


def sweep(scenario, betas=(0.1, 0.2, 0.5, 1.0), etas=(0.0, 0.5, 1.0), ns=(1.0, 2.0, math.inf),
          gamma=None, progress=None) -> list[DesignPoint]:
    """Generalized (β, η, n) over a grid on ``scenario`` (multipath groups get the algorithm):
    friendliness = share of the multipath group(s) against the single-path group(s), responsiveness
    = max Re λ of J* (12), oscillation = D_s (13) of the first multipath source."""
    out = []
    for beta, eta, n in itertools.product(betas, etas, ns):
        algo = algs.get({"name": "generalized", "beta": beta, "eta": eta, "n": "inf" if math.isinf(n) else n})
        g = default_gamma(scenario, algo) if gamma is None else gamma
        net, groups = from_scenario(scenario, algorithm=algo)
        eq = solve(net)
        mp = [s for s, gr in enumerate(groups) if gr.multipath]
        sp = [s for s, gr in enumerate(groups) if not gr.multipath]
        tot = lambda ss: sum(eq.x[net.source_of_route == s].sum() * groups[s].count for s in ss)
        share = tot(mp) / (tot(mp) + tot(sp)) if sp else float("nan")
        lin = linearization(eq, g)
        out.append(DesignPoint(beta, eta, n, share, lin.max_real, float(oscillation(eq)[mp[0]])))
        if progress is not None:
            progress()
    return out
