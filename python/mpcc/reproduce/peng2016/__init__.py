"""``mpcc reproduce peng2016``: Peng et al. Tables III–V and Fig. 3, paper | fluid | sim | kernel.

The package: :mod:`.paper` (published values and the table/quantity labels), one runner per
engine — :mod:`.fluid`, :mod:`.sim`, :mod:`.testbed` — each built on the engine's public API,
and this coordinator. Each engine fills one column of a :class:`~mpcc.reproduce.table.Reproduction`;
the file is saved after each column so an engine that fails (e.g. the kernel testbed without root)
loses nothing the others computed.
"""

from __future__ import annotations

from pathlib import Path

from ..common import FAILED_NOTE, run_columns
from ..table import Cell, Reproduction
from .budget import BUDGETS, FULL, QUICK, Budget, setups  # noqa: F401
from .fluid import fluid_column
from .paper import (F3, PENG_COLUMNS, PENG_TABLE3, PENG_TABLE4, PENG_TABLE5, Q_F3, Q_T3_MP, Q_T3_SP, Q_T4,  # noqa: F401
                    Q_T5_CONV, Q_T5_SP, T3, T4, T5)


def paper_column(rep: Reproduction, algos) -> None:
    for a in algos:
        if a in PENG_TABLE3["mp"]:
            rep.put("paper", T3, Q_T3_MP, a, Cell(*PENG_TABLE3["mp"][a]))
            rep.put("paper", T3, Q_T3_SP, a, Cell(*PENG_TABLE3["sp"][a]))
            rep.put("paper", T4, Q_T4, a, Cell(*PENG_TABLE4[a]))
            rep.put("paper", T5, Q_T5_CONV, a, Cell(PENG_TABLE5["convergence_s"][a], note="longest of 20"))
            rep.put("paper", T5, Q_T5_SP, a, Cell(PENG_TABLE5["sp_mbps"][a]))
    rep.columns["paper"] = {"notes": "Linux 3.11 + MPTCP v0.88, Dummynet, 20 runs (95 % CI margins)"}


def sim_column(rep: Reproduction, algos, budget: Budget, seed: int, out: Path | None, progress: bool) -> None:
    from . import sim as simp

    summary = simp.reproduce(algorithms=tuple(algos), runs=budget.sim_runs, fig3_runs=budget.fig3_sim_runs,
                             seed=seed, out=(out / "sim") if out else None, progress=progress)
    engine_column(rep, "sim", summary, budget)


def testbed_column(rep: Reproduction, algos, budget: Budget, seed: int, out: Path | None, progress: bool) -> None:
    from . import testbed as tbp

    summary = tbp.reproduce(algorithms=tuple(algos), budget=budget, seed=seed,
                            out=(out / "testbed") if out else None, progress=progress)
    engine_column(rep, "testbed", summary, budget)


def _failed(rep: Reproduction, source: str, cells: tuple, a: str, vals: dict, failures: list[str]) -> bool:
    """Put a failed cell (its run failed after one retry) into every row it feeds; True if so."""
    if "failed" not in vals:
        return False
    for table, quantity in cells:
        rep.put(source, table, quantity, a, Cell(None, note=FAILED_NOTE))
    failures.append(f"{cells[0][0]} {a}: {vals['failed']}")
    return True


def engine_column(rep: Reproduction, source: str, summary: dict, budget: Budget) -> None:
    failures: list[str] = []
    for a, vals in summary["table3"].items():
        if _failed(rep, source, ((T3, Q_T3_MP), (T3, Q_T3_SP)), a, vals, failures):
            continue
        rep.put(source, T3, Q_T3_MP, a, Cell(*vals["mp"]))
        rep.put(source, T3, Q_T3_SP, a, Cell(*vals["sp"]))
    for a, vals in summary["table4"].items():
        if _failed(rep, source, ((T4, Q_T4),), a, vals, failures):
            continue
        rep.put(source, T4, Q_T4, a, Cell(*vals["mp"]))
    for a, vals in summary["table5"].items():
        if _failed(rep, source, ((T5, Q_T5_CONV), (T5, Q_T5_SP)), a, vals, failures):
            continue
        conv = vals["convergence_s"]
        tail = budget.table5.tail_s if source == "testbed" else 120.0
        rep.put(source, T5, Q_T5_CONV, a, Cell(*conv) if conv[0] is not None
                else Cell(None, note=f"not reached in {tail:g} s"))
        rep.put(source, T5, Q_T5_SP, a, Cell(*vals["sp_mbps"]))
    for a, vals in summary.get("fig3", {}).items():
        if _failed(rep, source, ((F3, Q_F3),), a, vals, failures):
            continue
        rep.put(source, F3, Q_F3, a, Cell(*vals["oscillation"]))
    setup = {t: v[source] for t, v in setups(budget).items()}
    rep.columns[source] = {"runs": summary.get("runs"), "notes": summary.get("notes", ""), "budget": budget.name,
                           "setup": {t: v["text"] for t, v in setup.items()},
                           "shortened": [t for t, v in setup.items() if v["shortened"]],
                           "failed_cells": failures}
    if "health" in summary:     # kernel cells: {table title: {algorithm: health record}}
        titles = {"table3": T3, "table4": T4, "table5": T5, "fig3": F3}
        rep.columns[source]["health"] = {titles[k]: v for k, v in summary["health"].items() if k in titles}
    rep.traces[source] = summary.get("traces", {})


def reproduce(engines, algos=PENG_COLUMNS, budget: Budget = QUICK, seed=1, out: Path | None = None,
              progress=True, figures: bool = True) -> tuple[Reproduction, list[str]]:
    """Run the requested engines with the run lengths of ``budget`` (:mod:`.budget`); returns the
    reproduction and the list of engine errors. With ``out``: results.json/.md after every
    column, and at the end the figures and REPORT.md (:mod:`.report`)."""
    rep = Reproduction("Peng et al. 2016 (Balia)")
    paper_column(rep, algos)
    steps = {"fluid": lambda: fluid_column(rep, algos, out),
             "sim": lambda: sim_column(rep, algos, budget, seed, out, progress),
             "testbed": lambda: testbed_column(rep, algos, budget, seed, out, progress)}
    errors = run_columns(rep, steps, engines, out)
    if out and figures:
        from .report import write_report

        write_report(rep, out, budget)
    return rep, errors
