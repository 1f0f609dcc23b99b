"""``mpcc reproduce peng2016``: Peng et al. Tables III–V and Fig. 3, paper | fluid | sim | kernel.

Each engine fills one column of a :class:`~mpcc.reproduce.table.Reproduction`; the file is
saved after each column so an engine that fails (e.g. the kernel testbed without root) loses
nothing the others computed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import MpccError
from . import common
from .paper_values import PENG_COLUMNS, PENG_TABLE3, PENG_TABLE4, PENG_TABLE5
from .table import Cell, Reproduction

T3, T4, T5, F3 = "Table III", "Table IV", "Table V", "Fig. 3"
Q_T3_MP, Q_T3_SP = "MP-TCP per-flow throughput (Mb/s)", "SP-TCP per-flow throughput (Mb/s)"
Q_T4 = "MP-TCP throughput over WiFi + 3G (Mb/s)"
Q_T5_CONV, Q_T5_SP = "convergence time of route 2 (s)", "total SP-TCP throughput 40–80 s (Mb/s)"
Q_F3 = "window oscillation D_s (eq. 13; Reno = 0.5)"


def paper_column(rep: Reproduction, algos) -> None:
    for a in algos:
        if a in PENG_TABLE3["mp"]:
            rep.put("paper", T3, Q_T3_MP, a, Cell(*PENG_TABLE3["mp"][a]))
            rep.put("paper", T3, Q_T3_SP, a, Cell(*PENG_TABLE3["sp"][a]))
            rep.put("paper", T4, Q_T4, a, Cell(*PENG_TABLE4[a]))
            rep.put("paper", T5, Q_T5_CONV, a, Cell(PENG_TABLE5["convergence_s"][a], note="longest of 20"))
            rep.put("paper", T5, Q_T5_SP, a, Cell(PENG_TABLE5["sp_mbps"][a]))
    rep.columns["paper"] = {"notes": "Linux 3.11 + MPTCP v0.88, Dummynet, 20 runs (95 % CI margins)"}


def fluid_column(rep: Reproduction, algos, out: Path | None = None) -> None:
    from .. import algorithms, fluid

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
    from .. import fluid

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


def sim_column(rep: Reproduction, algos, runs: int, seed: int, out: Path | None, progress: bool) -> None:
    from ..sim import peng2016 as simp

    _engine_column(rep, "sim", simp, algos, runs, seed, out, progress)


def testbed_column(rep: Reproduction, algos, runs: int, seed: int, out: Path | None, progress: bool) -> None:
    from ..testbed import peng2016 as tbp

    _engine_column(rep, "testbed", tbp, algos, runs, seed, out, progress)


def _engine_column(rep, source, mod, algos, runs, seed, out, progress) -> None:
    summary = mod.reproduce(algorithms=tuple(algos), runs=runs, seed=seed,
                            out=(out / source) if out else None, progress=progress)
    for a, vals in summary["table3"].items():
        rep.put(source, T3, Q_T3_MP, a, Cell(*vals["mp"]))
        rep.put(source, T3, Q_T3_SP, a, Cell(*vals["sp"]))
    for a, vals in summary["table4"].items():
        rep.put(source, T4, Q_T4, a, Cell(*vals["mp"]))
    for a, vals in summary["table5"].items():
        conv = vals["convergence_s"]
        rep.put(source, T5, Q_T5_CONV, a, Cell(*conv) if conv[0] is not None else Cell(None, note="not reached"))
        rep.put(source, T5, Q_T5_SP, a, Cell(*vals["sp_mbps"]))
    for a, vals in summary.get("fig3", {}).items():
        rep.put(source, F3, Q_F3, a, Cell(*vals["oscillation"]))
    rep.columns[source] = {"runs": summary.get("runs", runs), "notes": summary.get("notes", "")}


def reproduce(engines, algos=PENG_COLUMNS, runs=20, kernel_runs=3, seed=1, out: Path | None = None,
              progress=True, console=None) -> tuple[Reproduction, list[str]]:
    """Run the requested engines; returns the reproduction and the list of engine errors."""
    rep = Reproduction("Peng et al. 2016 (Balia)")
    paper_column(rep, algos)
    errors = []
    steps = {"fluid": lambda: fluid_column(rep, algos, out),
             "sim": lambda: sim_column(rep, algos, runs, seed, out, progress),
             "testbed": lambda: testbed_column(rep, algos, kernel_runs, seed, out, progress)}
    for engine in engines:
        try:
            steps[engine]()
        except MpccError as e:
            rep.columns[engine] = {"error": str(e)}
            errors.append(f"{engine}: {e}")
        if out:
            rep.save(out)
    return rep, errors
