"""``mpcc reproduce jiang2011``'s engine table: paper | model | sim | kernel for the report's
measured experiments — utilisation of one MTC flow versus the number of subflows and the buffer
(Figs. 9–10) and flappiness (§4.2, §5.3, Fig. 13) — in a :class:`~mpcc.reproduce.table.Reproduction`,
as ``mpcc reproduce peng2016`` prints its tables.

Columns: *paper* — the report's statements (its figures give curves, not tabulated numbers);
*model* — the closed forms (6)/(10)/(12) with κ = 1 + γ for utilisation, the per-RTT window model
(:func:`mpcc.mtc.flappiness.window_trace`) for flappiness; *sim* — the packet simulator on the
same scenarios; *kernel* — :mod:`.testbed` (BPF MTCP/MSTCP on upstream MPTCP, linkem). Each
column is filled separately; an engine that fails leaves "unavailable" and keeps the others, a
kernel cell whose run failed twice says so.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...mtc import flappiness as fl, utilization as ut
from ..common import FAILED_NOTE, failed, run_columns
from ..table import Cell, Reproduction
from .budget import PAPER_FLAP_S, PAPER_UTIL_S, QUICK, Budget
from .plots import ALG_LABEL

T_UTIL, T_FLAP, T_ORDER = "Figs. 9–10 utilisation", "Flappiness", "Orderings"
W0 = 5e6 * 0.1 / (8 * 1500)  # §5.1: 5 Mb/s × 100 ms in 1500-byte packets
ORDER_UTIL = ("coupled-increase", "coupled-decrease", "fully-coupled", "mstcp")
PAPER_FLAP = {"fully-coupled": "flappy (Fig. 13)", "coupled-increase": "less flappy than FC",
              "coupled-decrease": "less flappy than FC", "mstcp": "shorter dominance than FC"}
SHORT = {"coupled-increase": "CI", "coupled-decrease": "CD", "fully-coupled": "FC", "mstcp": "MSTCP"}
#: The simulator's run lengths per level of :data:`..LEVELS` (utilisation s, flappiness s, flappiness seeds).
SIM_LENGTHS = {"full": (1200.0, 2000.0, 4), "quick": (300.0, 400.0, 2), "smoke": (40.0, 40.0, 1)}


def q_util(n: int, b: int) -> str:
    return f"U, n = {n}, B = {b} pkts (γ = {b / W0:.2g})"


def q_flap(metric: str, n: int) -> str:
    return f"{metric}, n = {n}"


def _cells_util(b: Budget):
    return sorted(b.util_cells, key=lambda c: (c[1], c[0]))


def setups(b: Budget, sim_util_s: float, sim_flap_s: float, sim_runs: int) -> dict[str, dict[str, dict]]:
    """``{table: {source: {"text": …, "shortened": bool}}}`` for the sim and kernel columns of the
    two measured tables; shortened = shorter than the report's ns-2 run."""
    def one(runs: int, secs: float, paper_s: float) -> dict:
        text = f"{runs} run{'s' if runs != 1 else ''} × {secs:g} s"
        return {"text": text + (f"; report: 1 × {paper_s:g} s" if secs < paper_s else ""), "shortened": secs < paper_s}

    return {T_UTIL: {"sim": one(1, sim_util_s, PAPER_UTIL_S), "testbed": one(b.util.runs, b.util.duration_s, PAPER_UTIL_S)},
            T_FLAP: {"sim": one(sim_runs, sim_flap_s, PAPER_FLAP_S),
                     "testbed": one(b.flap.runs, b.flap.duration_s, PAPER_FLAP_S)}}


def paper_column(rep: Reproduction, algos, b: Budget) -> None:
    for n, buf in _cells_util(b):
        for a in algos:
            rep.put("paper", T_UTIL, q_util(n, buf), ALG_LABEL[a], Cell(None, note="Fig. 9/10 curve"))
    for n in b.flap_n:
        for a in algos:
            rep.put("paper", T_FLAP, q_flap("dominance", n), ALG_LABEL[a], Cell(None, note=PAPER_FLAP[a]))
    rep.columns["paper"] = {"notes": "ns-2, 1200 s runs (Figs. 9–10), 2000 s (Fig. 13); statements of §3–§5"}


def model_column(rep: Reproduction, algos, b: Budget, rounds: int, replicas: int) -> None:
    for n, buf in _cells_util(b):
        for a in algos:
            u = ut.utilization(a, n, 1, W0, buf / W0).utilization
            rep.put("model", T_UTIL, q_util(n, buf), ALG_LABEL[a], Cell(min(u, 1.0)))
    traces = {}
    for n in b.flap_n:
        for a in algos:
            t, tr = fl.window_trace(a, [b.flap_loss] * n, 0.1, rounds, replicas, seed=1 + 7919 * n)
            _put_flap(rep, "model", a, n, fl.flappiness_of_replicas(t, tr, smooth_s=2.0))
            traces[ALG_LABEL[a]] = _trace(t, fl.moving_average(t, tr[0], 2.0))
    rep.columns["model"] = {"notes": f"closed forms (6)/(10)/(12), W0 = {W0:.1f}, κ = 1 + B/W0, capped at 1; "
                                     f"window model, {rounds} RTTs × {replicas} replicas, p = {b.flap_loss:g}"}
    rep.traces["model"] = {"flappiness": traces}


def sim_column(rep: Reproduction, algos, b: Budget, level: str, seed: int = 1) -> None:
    from .sim import packet_run
    from .scenarios import fig9_scenario

    util_s, flap_s, flap_runs = SIM_LENGTHS[level]
    warm = util_s / 6
    for n, buf in _cells_util(b):
        for a in algos:
            r = packet_run(fig9_scenario(a, n, buf, util_s, warm), seed, 0.0)
            rep.put("sim", T_UTIL, q_util(n, buf), ALG_LABEL[a],
                    Cell(sum(r.result.groups["mtc"].path_rate_mbps) / (5.0 * n)))
    traces = {}
    for n in b.flap_n:
        for a in algos:
            runs = [fl.packet_trace(a, n, b.flap_loss, flap_s, 0.1, seed + 7919 * n + k) for k in range(flap_runs)]
            size = min(x[0].size for x in runs)
            t, tr = runs[0][0][:size], np.stack([x[1][:size] for x in runs])
            _put_flap(rep, "sim", a, n, fl.flappiness_of_replicas(t, tr, smooth_s=2.0))
            traces[ALG_LABEL[a]] = _trace(t, fl.moving_average(t, tr[0], 2.0))
    rep.columns["sim"] = {"notes": f"mpcc.sim, level {level}", "setup": {t: v["sim"]["text"] for t, v in
                                                                          setups(b, util_s, flap_s, flap_runs).items()},
                          "shortened": [t for t, v in setups(b, util_s, flap_s, flap_runs).items() if v["sim"]["shortened"]]}
    rep.traces["sim"] = {"flappiness": traces}


def testbed_column(rep: Reproduction, algos, b: Budget, out: Path | None, progress: bool,
                   lock: Path | None = None) -> None:
    from . import testbed as tb

    failures: list[str] = []
    util = tb.utilisation(algos, _cells_util(b), b.util, _sub(out, "testbed"), progress, lock=lock)
    for (a, n, buf), v in util.items():
        if failed(v):
            failures.append(f"{q_util(n, buf)} {a}: {failed(v)}")
            rep.put("testbed", T_UTIL, q_util(n, buf), ALG_LABEL[a], Cell(None, note=FAILED_NOTE))
        else:
            rep.put("testbed", T_UTIL, q_util(n, buf), ALG_LABEL[a], Cell(*v["U"]))
    flap = tb.flappiness(algos, b.flap_n, b.flap_loss, b.flap, _sub(out, "testbed"), progress, lock=lock)
    traces = {}
    for (a, n), v in flap.items():
        if failed(v):
            failures.append(f"flappiness n = {n} {a}: {failed(v)}")
            for m in ("dominance", "concentration"):
                rep.put("testbed", T_FLAP, q_flap(m, n), ALG_LABEL[a], Cell(None, note=FAILED_NOTE))
            continue
        _put_flap(rep, "testbed", a, n, v)
        if n == min(b.flap_n):
            traces[ALG_LABEL[a]] = v["trace"]
    st = setups(b, *SIM_LENGTHS["quick"])
    rep.columns["testbed"] = {
        "budget": b.name, "failed_cells": failures, "setup": {t: v["testbed"]["text"] for t, v in st.items()},
        "shortened": [t for t, v in st.items() if v["testbed"]["shortened"]],
        "notes": (f"Linux {__import__('os').uname().release} MPTCP + BPF struct_ops, linkem ({b.name} budget): "
                  f"utilisation {b.util.runs} × {b.util.duration_s:g} s ({b.util.warmup_s:g} s warm-up), "
                  f"flappiness {b.flap.runs} × {b.flap.duration_s:g} s, cwnd from tcp_info every 100 ms"),
        "detail": {"utilisation": {f"{a}/n{n}/b{buf}": v for (a, n, buf), v in util.items()},
                   "flappiness": {f"{a}/n{n}": {k: x for k, x in v.items() if k != "trace"} for (a, n), v in flap.items()}}}
    # each kernel cell's health (mpcc.testbed.health.aggregate; a failed cell, {"failed": …}, has
    # none), one REPORT line per cell under its table (Reproduction.health_lines)
    rep.columns["testbed"]["health"] = {
        T_UTIL: {f"{ALG_LABEL[a]}, {q_util(n, buf)}": v.get("health") for (a, n, buf), v in util.items()},
        T_FLAP: {f"{ALG_LABEL[a]}, n = {n}": v.get("health") for (a, n), v in flap.items()}}
    rep.traces["testbed"] = {"flappiness": traces}


def _put_flap(rep: Reproduction, source: str, a: str, n: int, row: dict) -> None:
    for m in ("dominance", "concentration"):
        se = row.get(m + "_se")
        rep.put(source, T_FLAP, q_flap(m, n), ALG_LABEL[a],
                Cell(row[m], 1.96 * se if se is not None and np.isfinite(se) else None))


def _trace(t, w) -> dict:
    k = max(1, int(round(1.0 / float(np.median(np.diff(t))))))  # one point per second
    return {"time_s": np.asarray(t)[::k].round(2).tolist(), "cwnd": np.asarray(w)[::k].T.round(2).tolist()}


#: U within this of Coupled Increase's counts as a tie, not as higher: two saturated links measure
#: 0.99997 and 1.00002 (the kernel's B = 84 cell, 2026-11-24).
U_TIE = 0.01
#: The checked statements: (row, the report's words).
ORDER_ROWS = (("CI highest U at every cell (ties within 0.01)", "CI ≈ TCP, the others lower (§3.2, Fig. 9)"),
              ("U falls from the smallest to the largest n (CD, FC, MSTCP)", "falls with n (Fig. 9)"),
              ("dominance FC > CI, CD at every n", "FC flappier (§4.2, §5.3)"))


def orderings(rep: Reproduction, algos) -> None:
    """The orderings issue 14 asks for, per engine, as "holds"/"differs" rows: Coupled Increase
    has the highest U at every utilisation cell (a variant within :data:`U_TIE` of it ties: both
    at the link rate); the other variants' U falls from the smallest to
    the largest n at each buffer; Fully Coupled's dominance is above Coupled Increase's and
    Coupled Decrease's at every n. Rows without the values they need are left out."""
    labels = {ALG_LABEL[a]: a for a in algos}

    def values(table, prefix, s):
        out: dict[str, dict[str, float]] = {}
        for r in rep.rows:
            c = r.cells.get(s)
            if r.table == table and r.quantity.startswith(prefix) and c is not None and c.value is not None:
                out.setdefault(r.quantity, {})[labels[r.algorithm]] = c.value
        return out

    for q, words in ORDER_ROWS:
        rep.put("paper", T_ORDER, q, "all", Cell(None, note=words))
    for s in ("model", "sim", "testbed"):
        util = values(T_UTIL, "U", s)
        checks: list[list[bool]] = [[], [], []]
        for vals in util.values():
            if "coupled-increase" in vals and len(vals) > 1:
                checks[0].append(all(vals["coupled-increase"] >= v - U_TIE for v in vals.values()))
        by_buf: dict[int, list[tuple[int, dict]]] = {}
        for q, vals in util.items():
            n, buf = int(q.split("n = ")[1].split(",")[0]), int(q.split("B = ")[1].split(" ")[0])
            by_buf.setdefault(buf, []).append((n, vals))
        for cells in by_buf.values():
            if len(cells) > 1:
                (_, lo), (_, hi) = min(cells, key=lambda c: c[0]), max(cells, key=lambda c: c[0])
                checks[1] += [hi[a] < lo[a] for a in ("coupled-decrease", "fully-coupled", "mstcp") if a in lo and a in hi]
        for vals in values(T_FLAP, "dominance", s).values():
            others = [vals[a] for a in ("coupled-increase", "coupled-decrease") if a in vals]
            if "fully-coupled" in vals and others:
                checks[2].append(vals["fully-coupled"] > max(others))
        for (q, _), ok in zip(ORDER_ROWS, checks):
            if ok:
                rep.put(s, T_ORDER, q, "all", Cell(None, note="holds" if all(ok) else "differs"))


def reproduce(engines=("model", "sim", "testbed"), algos=ORDER_UTIL, budget: Budget = QUICK, level: str = "quick",
              out: Path | None = None, progress: bool = True, figures: bool = True,
              kernel_lock: Path | None = None) -> tuple[Reproduction, list[str]]:
    """Fill the requested columns (``budget``: the kernel's run lengths, ``level``: the model's
    and the simulator's, as :data:`..LEVELS`; ``kernel_lock``: a file each kernel cell holds an
    flock on while it runs); with ``out``, results.json/.md after every column and at the end the
    figures. Returns the reproduction and the engines' errors."""
    z = {"full": (20000, 4), "quick": (4000, 2), "smoke": (300, 1)}[level]
    rep = Reproduction("Jiang, Cai, Towsley 2011 (MTCP)")
    paper_column(rep, algos, budget)
    steps = {"model": lambda: model_column(rep, algos, budget, *z),
             "sim": lambda: sim_column(rep, algos, budget, level),
             "testbed": lambda: testbed_column(rep, algos, budget, out, progress, kernel_lock)}
    errors = run_columns(rep, steps, engines, out, labels={"testbed": "kernel"},
                         after=lambda: orderings(rep, algos))
    if out and figures:
        write_figures(rep, Path(out))
    return rep, errors


def write_figures(rep: Reproduction, out: Path) -> list[Path]:
    """The engine table as grouped bars (:func:`..figures.table_bars`) and the smoothed
    flappiness windows of model | sim | kernel side by side, into ``out``."""
    from ..figures import table_bars, traces_side_by_side

    files = []
    for t, stem in ((T_UTIL, "engines_fig9_10"), (T_FLAP, "engines_flappiness")):
        if any(r.table == t for r in rep.rows):
            files += table_bars(rep, t, out, stem) or []
    tr = {s: v.get("flappiness", {}) for s, v in rep.traces.items()}
    if any(tr.values()):
        files += traces_side_by_side(tr, out, "engines_flappiness_traces",
                                     "Flappiness: subflow windows smoothed over 2 s (20 RTTs), random loss on 2 paths",
                                     total=False, span_s=60.0) or []
    return files


def _sub(out: Path | None, name: str) -> Path | None:
    return Path(out) / name if out else None
