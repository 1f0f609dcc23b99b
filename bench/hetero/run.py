"""Time the 1000 random trials of Tang et al. Example 4 (asynchronous Algorithm 1, update
probabilities 0.6 and 0.3) and record the result with machine and date.

    .venv/bin/python bench/hetero/run.py [--trials 1000] [--workers 2]

Target: under a minute for 1000 trials on the 2-core project machine.
"""

import argparse
import datetime
import json
import os
import platform
import time
from pathlib import Path

from mpcc.reproduce.tang2010.example4 import example4

ap = argparse.ArgumentParser()
ap.add_argument("--trials", type=int, default=1000)
ap.add_argument("--workers", type=int, default=os.cpu_count())
args = ap.parse_args()
t0 = time.perf_counter()
res = example4(args.trials, args.workers, progress=True)
elapsed = time.perf_counter() - t0
rec = {
    "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    "machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} cores, {platform.platform()}",
    "trials": args.trials, "workers": args.workers, "seconds": round(elapsed, 2), "target_seconds": 60,
    "by_prob": {p: {k: v[k] for k in ("converged_to_optimum", "trials", "max_rate_error",
                                      "median_iterations", "max_iterations")} for p, v in res["by_prob"].items()},
}
print(json.dumps(rec, indent=2))
out = Path(__file__).with_name("results.jsonl")
with out.open("a") as f:
    f.write(json.dumps(rec) + "\n")
