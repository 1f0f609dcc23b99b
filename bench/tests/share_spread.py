"""Run-to-run spread of the drop-tail shared-bottleneck share (tests/kernel/test_testbed_runs.py::
test_shared_bottleneck_coupled_flow_takes_about_one_share): one multipath connection (two subflows)
next to one Reno flow through one 20 Mb/s, 10 ms, 50-packet drop-tail link, the test's own scenario
and run length; prints each run's ratio (multipath goodput ÷ Reno goodput), their mean and standard
deviation, as JSON. Root; run it under the bench lock:

    flock /tmp/mpcc-bench.lock .venv/bin/python bench/tests/share_spread.py --runs 8 [--algorithm balia]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "kernel"))

from mpcc import scenario  # noqa: E402
from mpcc.testbed import engine  # noqa: E402
from test_testbed_runs import SHARE_DURATION_S, SHARE_WARMUP_S, SHARED  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--algorithm", default="balia")
    a = ap.parse_args()
    s = scenario.loads(SHARED.format(algo=a.algorithm, aqm=""))
    t0 = time.time()
    res = engine.run_scenario(s, engine.settings_from(s, runs=a.runs, duration_s=SHARE_DURATION_S,
                                                      warmup_s=SHARE_WARMUP_S), None, progress=False)
    mp, sp = res.groups["mp"].extra["rate_per_run_mbps"], res.groups["sp"].extra["rate_per_run_mbps"]
    ratios = [m / r for m, r in zip(mp, sp)]
    print(json.dumps({"algorithm": a.algorithm, "runs": a.runs, "duration_s": SHARE_DURATION_S,
                      "warmup_s": SHARE_WARMUP_S, "ratios": [round(x, 4) for x in ratios],
                      "mean": statistics.mean(ratios), "sd": statistics.stdev(ratios),
                      "wall_s": round(time.time() - t0, 1),
                      "utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime(t0))}))


if __name__ == "__main__":
    main()
