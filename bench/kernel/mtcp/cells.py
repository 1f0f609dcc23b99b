"""Kernel cells of Jiang et al. Figs. 9–10 (utilisation) and flappiness with
:mod:`mpcc.reproduce.jiang2011.testbed`, one JSON line per cell appended to OUT (``--runs``
repetitions of ``--duration`` s each). Root; wrap each call in the shared bench lock and keep one
call under ~10 minutes:

    flock /tmp/mpcc-bench.lock .venv/bin/python bench/kernel/mtcp/cells.py util OUT.jsonl \\
        --algos coupled-increase fully-coupled --n 2 --buffer 10 42 84 --duration 30 --warmup 7.5
    flock /tmp/mpcc-bench.lock .venv/bin/python bench/kernel/mtcp/cells.py flap OUT.jsonl --n 2 --duration 60
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from mpcc.reproduce.jiang2011 import testbed as tb
from mpcc.reproduce.peng2016.budget import KernelRun

ALGOS = ("coupled-increase", "coupled-decrease", "fully-coupled", "mstcp")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=("util", "flap"))
    ap.add_argument("out", type=Path)
    ap.add_argument("--algos", nargs="+", default=list(ALGOS), choices=ALGOS)
    ap.add_argument("--n", type=int, nargs="+", default=[2])
    ap.add_argument("--buffer", type=int, nargs="+", default=[20])
    ap.add_argument("--duration", type=float, default=30.0)
    ap.add_argument("--warmup", type=float, default=None)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--loss", type=float, default=0.002)
    ap.add_argument("--keep", type=Path, default=None, help="directory for each run's time series")
    a = ap.parse_args()
    warm = a.warmup if a.warmup is not None else a.duration / 4
    run = KernelRun(a.runs, a.duration, warm)
    stamp = {"utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "load1": float(open("/proc/loadavg").read().split()[0])}
    if a.what == "util":
        res = tb.utilisation(a.algos, [(n, b) for b in a.buffer for n in a.n], run, a.keep, progress=False)
    else:
        res = tb.flappiness(a.algos, a.n, a.loss, run, a.keep, progress=False)
    with open(a.out, "a") as f:
        for key, v in res.items():
            v = {k: x for k, x in v.items() if k != "trace"}
            row = {"what": a.what, "key": list(key), "run_s": a.duration, "warmup_s": warm, "runs": a.runs,
                   **({"loss": a.loss} if a.what == "flap" else {}), **stamp, **v}
            f.write(json.dumps(row) + "\n")
            print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
