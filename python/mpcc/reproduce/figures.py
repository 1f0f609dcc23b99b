"""Figures shared by the reproductions: the paper | fluid | sim | kernel columns of a table as
grouped bars with 95 % confidence intervals, and window traces of two engines side by side.

Every figure is written with :func:`mpcc.plotting.save_figure` (PNG + SVG); matplotlib is
imported only here, when a figure is drawn.
"""

from __future__ import annotations

import math
from pathlib import Path

from .table import Reproduction

#: Bar colour and label per source (the same in every figure).
STYLE = {"paper": ("#444444", "paper"), "model": ("#9467bd", "model"), "fluid": ("#1f77b4", "fluid model"),
         "sim": ("#ff7f0e", "simulator"), "testbed": ("#2ca02c", "kernel")}


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _finite(v) -> bool:
    return v is not None and not (isinstance(v, float) and (math.isnan(v) or math.isinf(v)))


def _missing(cell) -> str:
    """Short label of a cell without a value: "> 10 s" (not reached within 10 s), "no model", "n/a"."""
    note = cell.note if cell is not None else ""
    if note.startswith("not reached in "):
        return "> " + note[len("not reached in "):]
    return {"no fluid model": "no model", "not reached": "not reached"}.get(note, "n/a")


def table_bars(rep: Reproduction, table: str, out_dir: Path, stem: str) -> list[Path]:
    """One panel per quantity of ``table``: a group of bars per algorithm, one bar per source,
    whiskers = 95 % CI; a hatched bar is a shortened run (†), a missing value is marked "n/a"."""
    plt = _plt()
    quantities = list(dict.fromkeys(r.quantity for r in rep.rows if r.table == table))
    # sources with a value in this table, or whose engine failed (shown as n/a)
    srcs = [s for s in rep.sources() if rep.columns.get(s, {}).get("error")
            or any(s in r.cells for r in rep.rows if r.table == table)]
    fig, axes = plt.subplots(len(quantities), 1, figsize=(9, 3.4 * len(quantities)), squeeze=False)
    for ax, q in zip(axes[:, 0], quantities):
        rows = [r for r in rep.rows if (r.table, r.quantity) == (table, q)]
        width = 0.8 / max(len(srcs), 1)
        top = max([r.cells[s].value + (r.cells[s].ci95 or 0) for r in rows for s in srcs
                   if s in r.cells and _finite(r.cells[s].value)] or [1.0])
        for j, s in enumerate(srcs):
            color, label = STYLE.get(s, ("#999999", s))
            short = rep.shortened(s, table)
            xs = [i + (j - (len(srcs) - 1) / 2) * width for i in range(len(rows))]
            for x, r in zip(xs, rows):
                c = r.cells.get(s)
                if c is None or not _finite(c.value):
                    ax.text(x, 0.02 * top, _missing(c), rotation=90, ha="center", va="bottom", fontsize=7, color=color)
                    continue
                err = c.ci95 if _finite(c.ci95) else None
                ax.bar(x, c.value, width, color=color, hatch="//" if short else None, edgecolor="white",
                       yerr=err, capsize=2, error_kw={"lw": 0.8})
            ax.bar(0, 0, 0, color=color, hatch="//" if short else None, edgecolor="white",
                   label=label + (" † (shortened)" if short else ""))
        ax.set_xticks(range(len(rows)), [r.algorithm for r in rows], fontsize=8)
        ax.set_ylabel(q, fontsize=8)
        ax.set_ylim(0, top * 1.25)
        ax.set_title(f"{table}: {q}", fontsize=9)
        ax.legend(fontsize=7, ncol=len(srcs), loc="upper left")
        ax.grid(axis="y", lw=0.3)
    fig.tight_layout()
    from ..plotting import save_figure

    return save_figure(fig, out_dir, stem)


def traces_side_by_side(traces: dict[str, dict], out_dir: Path, stem: str, title: str, *, total: bool,
                        span_s: float | None = None, shade: dict[str, tuple[float, float]] | None = None,
                        reference: dict[str, tuple[float, float]] | None = None,
                        ylabel: str = "cwnd (pkts)") -> list[Path] | None:
    """``traces``: ``{source: {algorithm: {"time_s": [...], "cwnd": [[route 1], [route 2], …]}}}``.
    A row per algorithm, a column per source; the routes' windows and (``total``) their sum in
    red, as in Peng et al. Figs. 3–4. ``span_s`` keeps the first seconds of each trace; ``shade``
    ``{source: (t0, t1)}`` marks an interval (e.g. when the single-path flows run); ``reference``
    ``{source: (t0, t1)}`` draws the first route's mean window over that interval, dashed."""
    srcs = [s for s in STYLE if traces.get(s)]
    if not srcs:
        return None
    algos = list(dict.fromkeys(a for s in srcs for a in traces[s]))
    plt = _plt()
    fig, axes = plt.subplots(len(algos), len(srcs), figsize=(max(5.2 * len(srcs), 8.0), 1.5 * len(algos) + 1.0),
                             squeeze=False, sharex="col")
    for j, s in enumerate(srcs):
        axes[0, j].set_title(STYLE[s][1], fontsize=10, loc="left")
        for i, a in enumerate(algos):
            ax = axes[i, j]
            tr = traces[s].get(a)
            if not tr or not tr["time_s"]:
                ax.text(0.5, 0.5, "no trace", ha="center", va="center", transform=ax.transAxes, fontsize=8)
                continue
            import numpy as np

            t = np.asarray(tr["time_s"], dtype=float)
            keep = t <= t[0] + span_s if span_s else np.ones(len(t), bool)
            ws = [np.asarray(w, dtype=float)[keep] for w in tr["cwnd"]]
            for k, w in enumerate(ws):
                ax.plot(t[keep], w, lw=0.7, label=f"route {k + 1}" if len(ws) > 1 else "window")
            if total and len(ws) > 1:
                ax.plot(t[keep], np.sum(ws, axis=0), lw=0.8, color="red", label="total")
            if shade and s in shade:
                ax.axvspan(*shade[s], color="0.85", lw=0, label="SP flows present")
            if reference and s in reference:
                m = (t >= reference[s][0]) & (t < reference[s][1])
                if m.any():
                    ax.axhline(float(np.mean(np.asarray(tr["cwnd"][0], dtype=float)[m])), color="black", ls="--",
                               lw=0.7, label="reference (mean before)")
            ax.set_ylabel(f"{a}\n{ylabel}", fontsize=7)
            ax.tick_params(labelsize=7)
            ax.set_ylim(bottom=0)
            if i == 0:  # above the first panel, beside the column title: never over the data
                ax.legend(fontsize=6, loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=4, frameon=False)
        axes[-1, j].set_xlabel("time (s)", fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    from ..plotting import save_figure

    return save_figure(fig, out_dir, stem)
