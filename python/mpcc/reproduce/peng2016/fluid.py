"""Peng et al. on the fluid model (:mod:`mpcc.fluid`): the equilibrium of (8)–(9) for Tables
III, IV, V and Fig. 3's D_s, and Table V's convergence time from the dynamics (3)–(4)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .. import common
from ..table import Cell, Reproduction
from .paper import F3, Q_F3, Q_T3_MP, Q_T3_SP, Q_T4, Q_T5_CONV, Q_T5_SP, T3, T4, T5


def fluid_column(rep: Reproduction, algos, out: Path | None = None) -> None:
    from ... import algorithms, fluid

    t3, t4, t5 = (common.scenario("peng2016", n) for n in ("table3", "table4", "table5"))
    for a in algos:
        if not algorithms.get(a).fluid_model:
            for tab, q in ((T3, Q_T3_MP), (T3, Q_T3_SP), (T4, Q_T4), (T5, Q_T5_CONV), (T5, Q_T5_SP), (F3, Q_F3)):
                rep.put("fluid", tab, q, a, Cell(None, note="no fluid model"))
            continue
        r3 = fluid.to_result(s := common.with_algorithm(t3, a), fluid.equilibrium(s))
        rep.put("fluid", T3, Q_T3_MP, a, Cell(r3.groups["mp"].rate_mbps))
        rep.put("fluid", T3, Q_T3_SP, a, Cell(r3.groups["sp"].rate_mbps))
        r4 = fluid.to_result(s := common.with_algorithm(t4, a), fluid.equilibrium(s))
        rep.put("fluid", T4, Q_T4, a, Cell(r4.groups["mp"].rate_mbps))
        s5 = common.with_algorithm(t5, a)
        r5 = fluid.to_result(s5, fluid.equilibrium(s5))  # equilibrium with the SP flows present
        rep.put("fluid", T5, Q_T5_SP, a, Cell(r5.groups["sp"].rate_mbps * r5.groups["sp"].count))
        conv = fluid_convergence(s5)
        rep.put("fluid", T5, Q_T5_CONV, a, Cell(conv, note="not reached" if conv is None else ""))
        f3 = common.with_algorithm(common.scenario("peng2016", "fig3-multipath"), a)
        r3f = fluid.to_result(f3, fluid.equilibrium(f3))
        rep.put("fluid", F3, Q_F3, a, Cell(r3f.groups["mp"].extra["oscillation_D"]))
    reno = common.scenario("peng2016", "fig3-reno")
    rr = fluid.to_result(reno, fluid.equilibrium(reno))
    rep.put("fluid", F3, Q_F3, "reno (single path)", Cell(rr.groups["sp"].extra["oscillation_D"]))
    rep.columns["fluid"] = {"notes": "equilibrium of (8)–(9) with τ = propagation RTT (rates are per flow); "
                                     "Table V convergence from integrating (3)–(4) with the default price gain: "
                                     "first time after the SP flows leave that route 2 is within 5 % of its "
                                     "equilibrium rate; Fig. 3: D_s of eq. (13) at equilibrium"}


def _routes(net, groups, name: str):
    s = next(i for i, g in enumerate(groups) if g.name == name)
    return np.flatnonzero(net.source_of_route == s)


def fluid_convergence(s5) -> float | None:
    """Seconds after the SP flows leave until the MP flow's route on link 2 is within 5 % of
    its post-departure equilibrium rate, from the fluid dynamics (3)–(4)."""
    from ... import fluid

    sp = next(g for g in s5.groups if g.name == "sp")
    traj = fluid.dynamics(s5)
    alone = s5.with_changes(groups=tuple(g for g in s5.groups if g.name != "sp"))
    eq = fluid.equilibrium(alone)
    x_target = eq.x[_routes(eq.network, eq.groups, "mp")][1]
    x2 = traj.x[:, _routes(traj.network, traj.groups, "mp")[1]]
    ok = (traj.t >= sp.stop_s) & (x2 >= 0.95 * x_target)
    if not ok.any():
        return None
    return float(traj.t[ok][0] - sp.stop_s)
