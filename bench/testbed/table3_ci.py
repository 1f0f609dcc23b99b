"""Kernel Table III as ``make reproduce`` runs it (one Testbed session, the budget's runs ×
duration per algorithm): per-run MP/SP rates and the 95 % CIs over runs, and whether EWTCP's and
Coupled's MP CIs separate. Root, under the lock::

    flock /tmp/mpcc-bench.lock .venv/bin/python bench/testbed/table3_ci.py [--runs 3 --duration 10 --warmup 4]
        [--algorithms ewtcp,coupled] [--json out.json]

Default lengths: the quick budget's (:data:`mpcc.reproduce.peng2016.budget.QUICK`).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from mpcc.reproduce.peng2016 import testbed as tbp
from mpcc.reproduce.peng2016.budget import QUICK
from mpcc.reproduce.peng2016.paper import PENG_COLUMNS
from mpcc.testbed import engine


def window_rate(sm, group: str, count: int, a: float, b: float, dt: float) -> float:
    """Mean per-flow rate (Mb/s) of ``group`` over [a, b] s of the run, from the sampled subflow
    rates (each sample: the rate over the ``dt`` before it)."""
    s = sm.subflows
    t = np.asarray(s["time_s"], dtype=float)
    m = (np.asarray(s["group"]) == group) & (t > a) & (t <= b)
    return float(np.asarray(s["rate_mbps"], dtype=float)[m].sum() * dt / (b - a) / count)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--algorithms", default=",".join(PENG_COLUMNS))
    ap.add_argument("--runs", type=int, default=QUICK.table3.runs)
    ap.add_argument("--duration", type=float, default=QUICK.table3.duration_s)
    ap.add_argument("--warmup", type=float, default=QUICK.table3.warmup_s)
    ap.add_argument("--windows", default="", help="also the MP rate per run over these windows, e.g. 3-8,4-10")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    t = time.monotonic()
    utc = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    windows = [tuple(float(x) for x in w.split("-")) for w in a.windows.split(",") if w]
    sub: dict[str, dict[str, list[float]]] = {}
    real = engine.run_detailed

    def run_detailed(s, st, *args, **kw):     # the same runs; also the MP rate over shorter windows
        r, sms = real(s, st, *args, **kw)
        sub[st.algorithm] = {f"{w0:g}-{w1:g}": [window_rate(sm, "mp", s.groups[0].count, w0, w1, st.sample_ms / 1e3)
                                               for sm in sms] for w0, w1 in windows}
        return r, sms

    engine.run_detailed = run_detailed
    res = tbp.table3(a.algorithms.split(","), runs=a.runs, duration_s=a.duration, warmup_s=a.warmup, progress=False)
    engine.run_detailed = real
    wall = time.monotonic() - t
    for k, v in res.items():
        if k in sub:
            v["mp_per_run_windows"] = sub[k]
    cells = {k: v for k, v in res.items() if k != "setup"}
    for k, v in cells.items():
        if tbp.failed(v):
            print(f"{k:12s} FAILED {tbp.failed(v)}")
            continue
        (m, c), (sm, sc) = v["mp"], v["sp"]
        print(f"{k:12s} mp {m:.3f} ± {c or float('nan'):.3f}  sp {sm:.3f} ± {sc or float('nan'):.3f}  "
              f"per run mp {[round(x, 3) for x in v['mp_per_run']]}")
    sep = None
    if all(k in cells and not tbp.failed(cells[k]) for k in ("ewtcp", "coupled")):
        (e, ec), (c, cc) = cells["ewtcp"]["mp"], cells["coupled"]["mp"]
        sep = (e - ec) - (c + cc)
        print(f"EWTCP − Coupled MP: gap between the CIs {sep:+.3f} Mb/s ({'separate' if sep > 0 else 'OVERLAP'})")
    print(f"wall {wall:.0f} s for {len(cells)} cells × {a.runs} runs × {a.duration:g} s")
    if a.json:
        a.json.write_text(json.dumps({"utc": utc, "runs": a.runs, "duration_s": a.duration, "warmup_s": a.warmup,
                                      "wall_s": wall, "ci_gap_ewtcp_coupled": sep, "cells": cells}, indent=1, default=str))


if __name__ == "__main__":
    main()
