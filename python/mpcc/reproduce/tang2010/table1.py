"""Table I of Tang et al. side by side, paper | sim | kernel, as a
:class:`~mpcc.reproduce.table.Reproduction` (the format of ``mpcc reproduce peng2016``): the
Reno/FAST rate ratio and both rates for each configuration. The sim column comes from the
packet-level :func:`~.example1.example1` result (the paper's w rows), the kernel column from
:mod:`.kernel` (a budget: :data:`~.kernel.QUICK` or :data:`~.kernel.FULL`). A kernel cell whose
run failed is marked in its rows; a kernel column that cannot run at all (no root, no BPF) is
"unavailable" with the reason, and everything else is kept.
"""

from __future__ import annotations

from pathlib import Path

from ...errors import MpccError
from ..common import failed
from ..table import Cell, Reproduction
from .paper import PAPER_TABLE1

TABLE = "Table I"
Q_RATIO, Q_RENO, Q_FAST = "Reno/FAST rate ratio", "Reno rate (packets/ms)", "FAST rate (packets/ms)"
LABELS = {"example1a-b400": "1a (no Alg. 2), B = 400", "example1a-b80": "1a (no Alg. 2), B = 80",
          "example1b-b400": "1b (Alg. 2), B = 400", "example1b-b80": "1b (Alg. 2), B = 80"}
PAPER_RUNS = "20 ns-2 runs × 5400 s (from 1800 s)"


def paper_column(rep: Reproduction) -> None:
    for name, (reno, fast) in PAPER_TABLE1.items():
        rep.put("paper", TABLE, Q_RATIO, LABELS[name], Cell(round(reno / fast, 2)))
        rep.put("paper", TABLE, Q_RENO, LABELS[name], Cell(reno))
        rep.put("paper", TABLE, Q_FAST, LABELS[name], Cell(fast))
    rep.columns["paper"] = {"notes": f"ns-2, {PAPER_RUNS}, 100 Mb/s, 50 ms, heavy-tail noise 10 %"}


def sim_column(rep: Reproduction, sim: dict) -> None:
    """From :func:`~.example1.example1`'s result (its rows at the paper's w)."""
    for name in PAPER_TABLE1:
        r = sim["rows"].get(name)
        if r is None:
            continue
        rep.put("sim", TABLE, Q_RATIO, LABELS[name], Cell(r["ratio"]))
        rep.put("sim", TABLE, Q_RENO, LABELS[name], Cell(r["reno"]))
        rep.put("sim", TABLE, Q_FAST, LABELS[name], Cell(r["fast"]))
    m = sim.get("measure_s", [None, None])
    text = f"{sim.get('runs')} runs × 5400 s (from {m[0]:g} s)" if m[0] is not None else f"{sim.get('runs')} runs"
    rep.columns["sim"] = {"runs": sim.get("runs"), "setup": {TABLE: text}, "shortened": [],
                          "notes": "packet-level simulator, the paper's network, 10 on-off UDP noise sources"}


def kernel_column(rep: Reproduction, res: dict) -> list[str]:
    """From :func:`.kernel.table1`'s result; returns the failed cells (one line each)."""
    failures = []
    for name in PAPER_TABLE1:
        c = res.get(name)
        if c is None:
            continue
        if failed(c):
            for q in (Q_RATIO, Q_RENO, Q_FAST):
                rep.put("testbed", TABLE, q, LABELS[name], Cell(None, note="run failed (retried once)"))
            failures.append(f"{TABLE} {name}: {failed(c)}")
            continue
        rep.put("testbed", TABLE, Q_RATIO, LABELS[name], Cell(c["ratio"]))
        rep.put("testbed", TABLE, Q_RENO, LABELS[name], Cell(c["reno"]))
        rep.put("testbed", TABLE, Q_FAST, LABELS[name], Cell(c["fast"]))
    setup = res["setup"]
    rep.columns["testbed"] = {
        "runs": setup["runs"], "budget": setup["budget"], "setup": {TABLE: setup["text"]},
        "shortened": [TABLE] if setup["duration_s"] * setup["scale"] < 5400.0 or setup["runs"] < 20 else [],
        "failed_cells": failures,
        "notes": (f"Linux {__import__('os').uname().release}: kernel reno vs BPF fast (Algorithm 2 in 1b), linkem, "
                  f"the paper's network with every rate ÷ {setup['scale']} and time ÷ {setup['scale']} "
                  f"(mpcc.reproduce.tang2010.kernel), rates ×{setup['scale']}; {setup['budget']} budget"),
        # every configuration shares one run: one health line (Reproduction.health_lines)
        "health": {TABLE: {"every configuration (one run)": res.get("health")}}}
    return failures


def reproduce(sim: dict | None, kernel_budget=None, out: Path | None = None,
              progress: bool = False, kernel_lock: Path | None = None) -> tuple[Reproduction, list[str]]:
    """Table I: the paper, ``sim`` (an :func:`~.example1.example1` result, or None to leave the
    column out) and, with a ``kernel_budget``, the kernel. Returns the reproduction and the errors
    (a kernel column that could not run, failed cells). With ``out``: results.json/.md there,
    saved after each column. ``kernel_lock``: a file the kernel runs hold an flock on."""
    from . import kernel

    rep = Reproduction("Tang, Wei, Low, Chiang 2010 (Example 1)")
    paper_column(rep)
    errors: list[str] = []
    if sim is not None:
        sim_column(rep, sim)
        if out:
            rep.save(out)
    if kernel_budget is not None:
        try:
            errors += kernel_column(rep, kernel.table1(kernel_budget, out=(out / "kernel") if out else None,
                                                       progress=progress, lock=kernel_lock))
        except MpccError as e:
            rep.columns["testbed"] = {"error": str(e)}
            errors.append(f"kernel: {e}")
        if out:
            rep.save(out)
    return rep, errors
