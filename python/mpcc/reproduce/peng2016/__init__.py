"""``mpcc reproduce peng2016``: Peng et al. Tables III–V and Fig. 3, paper | fluid | sim | kernel.

The package: :mod:`.paper` (published values and the table/quantity labels), one runner per
engine — :mod:`.fluid`, :mod:`.sim`, :mod:`.testbed` — each built on the engine's public API,
and this coordinator. Each engine fills one column of a :class:`~mpcc.reproduce.table.Reproduction`;
the file is saved after each column so an engine that fails (e.g. the kernel testbed without root)
loses nothing the others computed.
"""

from __future__ import annotations

from pathlib import Path

from ...errors import MpccError
from ..table import Cell, Reproduction
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


def sim_column(rep: Reproduction, algos, runs: int, seed: int, out: Path | None, progress: bool) -> None:
    from . import sim as simp

    _engine_column(rep, "sim", simp, algos, runs, seed, out, progress)


def testbed_column(rep: Reproduction, algos, runs: int, seed: int, out: Path | None, progress: bool) -> None:
    from . import testbed as tbp

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
