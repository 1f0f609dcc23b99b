"""Tables (markdown) and a figure of the kernel's Jiang et al. runs recorded by ``cells.py``:
Fig. 9 (U versus n at one buffer, several runs per cell) and flappiness (one row per run), with
the median, the range and the mean's 95 % interval (Student t) per cell, the closed forms
(6)/(10)/(12) with κ = 1 + B/W0 beside the utilisation, and how often each ordering holds run by run.

    .venv/bin/python bench/kernel/mtcp/summary.py --util results/jiang/fig9.jsonl \\
        --flap results/jiang/flap.jsonl --png fig9_kernel.png
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from mpcc.mtc import utilization as ut
from mpcc.reproduce.jiang2011.columns import U_TIE
from mpcc.results import ci95

ALGOS = ("coupled-increase", "coupled-decrease", "fully-coupled", "mstcp")
W0 = 5e6 * 0.1 / (8 * 1500)  # §5.1 paths: 5 Mb/s × 100 ms in 1500-byte packets


def rows(paths: list[Path], what: str) -> list[dict]:
    return [r for p in paths for r in map(json.loads, p.read_text().splitlines()) if r["what"] == what]


def stat(x) -> str:
    """median (min–max; mean ± 95 % CI) over the runs with a finite value (a run without a
    dominance episode has no dwell time)."""
    x = np.asarray(x, float)
    left = x.size - np.isfinite(x).sum()
    x = x[np.isfinite(x)]
    if left:
        return stat(x) + f" [{left} run{'s' if left > 1 else ''} without]" if x.size else "—"
    if x.size == 1:
        return f"{x[0]:.3f} (1 run)"
    return f"{np.median(x):.3f} ({x.min():.3f}–{x.max():.3f}; {x.mean():.3f} ± {ci95(x):.3f})"


def util_table(path: list[Path], buffer: int) -> tuple[str, dict]:
    runs: dict[tuple[str, int], list[float]] = defaultdict(list)
    for r in rows(path, "util"):
        a, n, b = r["key"]
        if b == buffer:
            runs[(a, n)] += r["per_run"]
    ns = sorted({n for _, n in runs})
    out = [f"| algorithm (B = {buffer}) | " + " | ".join(f"n = {n}" for n in ns) + " |", "|---|" + "---|" * len(ns)]
    for a in ALGOS:
        out.append(f"| {a} | " + " | ".join(stat(runs[(a, n)]) if runs.get((a, n)) else "" for n in ns) + " |")
        out.append(f"| closed form | " + " | ".join(
            f"{min(1.0, ut.utilization(a, n, 1, W0, buffer / W0).utilization):.3f}" for n in ns) + " |")
    # run-by-run orderings: CI at or above the others (same n, same run index; as the reproduction's
    # ordering row, within U_TIE is a tie); U(n_min) > U(n_max) per pair of runs
    above = [runs[("coupled-increase", n)][k] >= runs[(a, n)][k] - U_TIE for n in ns for a in ALGOS[1:]
             for k in range(min(len(runs[("coupled-increase", n)]), len(runs[(a, n)])))]
    falls = [lo > hi for a in ALGOS[1:] for lo, hi in itertools.product(runs[(a, ns[0])], runs[(a, ns[-1])])]
    out.append(f"\nCI at or above CD/FC/MSTCP (ties within {U_TIE}), run by run at the same n: {sum(above)}/{len(above)}"
               + (f"; U(n = {ns[0]}) > U(n = {ns[-1]}) for CD/FC/MSTCP, all run pairs: {sum(falls)}/{len(falls)}"
                  if len(ns) > 1 else ""))
    return "\n".join(out), {k: v for k, v in runs.items() if v}


def flap_table(path: list[Path]) -> str:
    vals: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for r in rows(path, "flap"):
        a, n = r["key"]
        for m in ("dominance", "concentration", "mean_dwell_s"):
            vals[a][m].append(r[m])
    out = ["| algorithm | runs | dominance | concentration | mean dwell (s) |", "|---|---|---|---|---|"]
    for a in ALGOS:
        if vals[a]["dominance"]:
            out.append(f"| {a} | {len(vals[a]['dominance'])} | " + " | ".join(
                stat(vals[a][m]) for m in ("dominance", "concentration", "mean_dwell_s")) + " |")
    fc = vals["fully-coupled"]["dominance"]
    pairs = [f > o for a in ("coupled-increase", "coupled-decrease") for f, o in itertools.product(fc, vals[a]["dominance"])]
    out.append(f"\ndominance FC > CI and FC > CD over all run pairs: {sum(pairs)}/{len(pairs)}; "
               f"smallest FC {min(fc, default=float('nan')):.2f}, largest CI/CD "
               f"{max(vals['coupled-increase']['dominance'] + vals['coupled-decrease']['dominance'], default=float('nan')):.2f}")
    return "\n".join(out)


def plot(runs: dict, buffer: int, png: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for i, a in enumerate(ALGOS):
        ns = sorted(n for b, n in runs if b == a)
        if not ns:
            continue
        med = [np.median(runs[(a, n)]) for n in ns]
        lo = [med[k] - min(runs[(a, n)]) for k, n in enumerate(ns)]
        hi = [max(runs[(a, n)]) - med[k] for k, n in enumerate(ns)]
        line = ax.errorbar(ns, med, yerr=[lo, hi], marker="o", capsize=3, label=f"{a} (kernel)")
        ax.plot(ns, [min(1.0, ut.utilization(a, n, 1, W0, buffer / W0).utilization) for n in ns], "--",
                color=line[0].get_color(), alpha=0.6)
    ax.set(xlabel="subflows n", ylabel="overall utilisation U", ylim=(0, 1.05), xticks=sorted({n for _, n in runs}),
           title=f"Fig. 9 on the kernel, B = {buffer} pkts: median and range (dashed: closed forms)")
    ax.title.set_fontsize(9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=120)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--util", type=Path, nargs="+", help="cells.py util JSON lines (runs pooled per cell)")
    ap.add_argument("--buffer", type=int, default=20)
    ap.add_argument("--flap", type=Path, nargs="+", help="cells.py flap JSON lines (one row per run)")
    ap.add_argument("--png", type=Path)
    a = ap.parse_args()
    if a.util:
        text, runs = util_table(a.util, a.buffer)
        print(text + "\n")
        if a.png:
            plot(runs, a.buffer, a.png)
    if a.flap:
        print(flap_table(a.flap))
    return 0


if __name__ == "__main__":
    sys.exit(main())
