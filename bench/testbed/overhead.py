"""Per-run overhead of the kernel testbed: wall time of a run minus its traffic time.

Two ways to run the cells of a table (Peng Table III: 30 MP + 30 Reno flows, two 60 Mb/s links):

* ``fresh``: as before :class:`mpcc.testbed.engine.Testbed` — per cell a new session (stale-state
  check, struct_ops loaded), per run a network built and torn down (``run_once`` without a bed);
* ``reuse``: one ``Testbed`` for all cells — one network, programs loaded once, per run only the
  TCP metrics flush and a linkem restart.

The two alternate (fresh, reuse, fresh, …) in one process, so both see the same machine.
Root, under the lock::

    flock /tmp/mpcc-bench.lock .venv/bin/python bench/testbed/overhead.py --rounds 2 --json out.json
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from mpcc import scenario
from mpcc.testbed import engine

TABLE3 = Path(__file__).resolve().parents[2] / "scenarios" / "peng2016" / "table3.toml"


def cells(mode: str, s, algos: list[str], runs: int, duration_s: float, work: Path) -> list[float]:
    """Seconds of overhead (wall − traffic duration) of every run, cell set-up included in its
    cell's first run."""
    st0 = engine.settings_from(s, duration_s=duration_s, warmup_s=1.0)
    sc = engine.scaled(s, duration_s)
    out = []
    shared = engine.Testbed().__enter__() if mode == "reuse" else None
    try:
        for a in algos:
            st = engine.Settings(**{**st0.__dict__, "algorithm": a})
            t = time.monotonic()
            bed = shared or engine.Testbed().__enter__()
            try:
                ccs = bed.kernel_names(engine.group_ccs(sc, st))
                for i in range(runs):
                    # a flow that never connects (issue 28) is retried as the engine does; the
                    # retry's time counts as overhead
                    engine.run_with_retry(sc, ccs, engine.Settings(**{**st.__dict__, "seed": 1 + i}),
                                          work / f"{mode}-{a}-{i}-{time.monotonic_ns()}", bed=shared)
                    out.append(time.monotonic() - t - duration_s)
                    t = time.monotonic()
            finally:
                if not shared:
                    bed.close()
    finally:
        if shared:
            shared.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--algorithms", default="ewtcp,coupled,balia")
    ap.add_argument("--runs", type=int, default=2, help="runs per cell")
    ap.add_argument("--duration", type=float, default=5.0)
    ap.add_argument("--rounds", type=int, default=2, help="fresh/reuse alternations")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    s = scenario.load(TABLE3)
    algos = a.algorithms.split(",")
    res: dict[str, list[float]] = {"fresh": [], "reuse": []}
    with tempfile.TemporaryDirectory(prefix="mpcc-overhead-") as d:
        for _ in range(a.rounds):
            for mode in ("fresh", "reuse"):
                res[mode] += cells(mode, s, algos, a.runs, a.duration, Path(d))
                print(mode, [round(x, 2) for x in res[mode]], flush=True)
    import os
    import platform
    summary = {m: {"runs": len(v), "mean_s": sum(v) / len(v), "min_s": min(v), "max_s": max(v)} for m, v in res.items()}
    doc = {"utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()), "machine": platform.node(),
           "kernel": os.uname().release, "cpus": os.cpu_count(), "algorithms": algos, "runs_per_cell": a.runs,
           "duration_s": a.duration, "per_run_overhead_s": res, "summary": summary}
    print(json.dumps(summary, indent=1))
    if a.json:
        a.json.write_text(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
