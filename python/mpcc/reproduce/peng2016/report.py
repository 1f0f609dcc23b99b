"""``REPORT.md`` of ``mpcc reproduce peng2016 --out DIR``: the file to open first.

It holds, per table, the grouped-bar figure (paper | fluid | sim | kernel, 95 % CIs) above the
Markdown table, then the Fig. 3 and Table V window traces of the simulator and the kernel side by
side, how long each engine ran, and the setup of every column. Figures go to ``DIR/figures``
(PNG + SVG); the traces are kept in ``DIR/traces.json`` so the report can be redrawn.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..figures import table_bars, traces_side_by_side
from ..table import Reproduction
from .budget import Budget
from .paper import F3, T3, T4, T5

_STEMS = {T3: "table3", T4: "table4", T5: "table5", F3: "fig3-oscillation"}


def write_report(rep: Reproduction, out: Path, budget: Budget) -> Path:
    out = Path(out)
    figs = out / "figures"
    (out / "traces.json").write_text(json.dumps(rep.traces))
    lines = [f"# {rep.paper}: reproduction report", "",
             f"Budget **{budget.name}** ("
             + ("the default: every engine in about ten minutes; `make reproduce FULL=1` runs the paper's lengths"
                if budget.name == "quick" else "the paper's run lengths") + "). "
             "Cells marked † ran fewer or shorter experiments than the paper; each table says how many.", "",
             "| engine | wall time | what it ran |", "|---|---|---|"]
    for s, meta in rep.columns.items():
        if s == "paper":
            continue
        status = f"unavailable — {meta['error']}" if meta.get("error") else meta.get("notes", "")
        wall = f"{meta['wall_s']:.0f} s" if "wall_s" in meta else "—"
        lines.append(f"| {'kernel' if s == 'testbed' else s} | {wall} | {status} |")
    total = sum(m.get("wall_s", 0.0) for m in rep.columns.values())
    lines += ["", f"Total: {total:.0f} s ({total / 60:.1f} min) for the engines, figures not included. "
              f"Paper: {rep.columns.get('paper', {}).get('notes', '')}.", ""]
    tables = list(dict.fromkeys(r.table for r in rep.rows))
    for t in tables:
        stem = _STEMS.get(t, t.lower().replace(" ", "").replace(".", ""))
        table_bars(rep, t, figs, stem)
        lines += [f"## {t}", "", f"![{t}: paper, fluid, sim, kernel](figures/{stem}.png)", ""]
        lines += _table_markdown(rep, t)
        lines += rep.health_lines(t)
    sim_shade = (40.0, 80.0)
    kern_shade = tuple(budget.table5.sp_s)
    traces = {s: rep.traces.get(s, {}).get("fig3", {}) for s in ("sim", "testbed")}
    if any(traces.values()):
        traces_side_by_side(traces, figs, "fig3-traces", "Fig. 3: congestion windows on one 10 Mb/s link\n"
                            "(two routes of one multipath flow; Reno: one flow)", total=True, span_s=8.0)
        lines += ["## Fig. 3 window traces (simulator | kernel)", "",
                  "![Fig. 3 traces](figures/fig3-traces.png)", "",
                  "The first 8 s of each trace after warm-up: the routes' windows and their total (red). "
                  "The kernel samples every 10 ms (tcp_info), the simulator every 10 ms.", ""]
    traces = {s: rep.traces.get(s, {}).get("table5", {}) for s in ("sim", "testbed")}
    if any(traces.values()):
        traces_side_by_side(traces, figs, "table5-traces", "Table V: window of the multipath flow's route 2\n"
                            "(grey: 5 Reno flows share link 2)", total=False,
                            shade={"sim": sim_shade, "testbed": kern_shade},
                            reference={"sim": (10.0, 40.0), "testbed": tuple(budget.table5.reference_s)})
        lines += ["## Table V window traces (simulator | kernel)", "",
                  "![Table V traces](figures/table5-traces.png)", "",
                  f"Simulator: the paper's timing (Reno flows 40–80 s); kernel: Reno flows "
                  f"{kern_shade[0]:g}–{kern_shade[1]:g} s ({budget.name} budget). "
                  "Convergence time = first time after the Reno flows leave that this window "
                  "reaches its mean before they came (dashed; paper footnote 2).", ""]
    lines += ["## Files", "", "- `results.md`, `results.json`: the tables",
              "- `figures/`: every figure as PNG and SVG", "- `sim/`, `testbed/`: per-engine details and time series",
              "- `traces.json`: the traces drawn above", ""]
    path = out / "REPORT.md"
    path.write_text("\n".join(lines))
    return path


def redraw(out: Path) -> Path:
    """Rewrite ``out/REPORT.md`` and its figures from the saved results.json and traces.json."""
    from .budget import BUDGETS, QUICK

    out = Path(out)
    rep = Reproduction.from_dict(json.loads((out / "results.json").read_text()))
    traces = out / "traces.json"
    rep.traces = json.loads(traces.read_text()) if traces.exists() else {}
    names = {m.get("budget") for m in rep.columns.values()} - {None}
    return write_report(rep, out, BUDGETS.get(names.pop(), QUICK) if len(names) == 1 else QUICK)


def _table_markdown(rep: Reproduction, table: str) -> list[str]:
    srcs = rep.sources()
    lines = []
    for q in dict.fromkeys(r.quantity for r in rep.rows if r.table == table):
        lines += [f"**{q}**", "", "| algorithm | " + " | ".join("kernel" if s == "testbed" else s for s in srcs) + " |",
                  "|---" * (len(srcs) + 1) + "|"]
        lines += [f"| {r.algorithm} | " + " | ".join(rep.cell_text(r, s) for s in srcs) + " |"
                  for r in rep.rows if (r.table, r.quantity) == (table, q)]
        lines.append("")
    if rep.setup_line(table):
        lines += [f"Runs — {rep.setup_line(table)}. † = shorter than the paper's experiment.", ""]
    return lines
