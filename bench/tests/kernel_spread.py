"""Run-to-run spread of the statistical kernel tests' statistics, on one testbed session
(engine.Testbed: one network and loaded programs for all runs), to derive their false-failure
rates (bench/tests/RESULTS.md). Root; run it under the bench lock:

    flock /tmp/mpcc-bench.lock .venv/bin/python bench/tests/kernel_spread.py red --algorithm ewtcp --runs 6
    flock /tmp/mpcc-bench.lock .venv/bin/python bench/tests/kernel_spread.py mtcp --algorithm fully-coupled --runs 8

``red``: tests/kernel/test_testbed_runs.py's RED shared bottleneck, ratio multipath ÷ Reno goodput
per run (RED_DURATION_S, RED_WARMUP_S of that test). ``mtcp``: tests/kernel/test_mtcp_kernel.py's
utilisation U of one MTC flow on two 5 Mb/s paths, per run (its run length). ``fast``:
test_fast_kernel's rate ratio of two FAST flows (α = 30 ÷ α = 10) per 20 s run. ``vssim``:
test_testbed_vs_sim's per-group relative error to the simulator, per 24 s run. Prints JSON.
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


def red(algo: str, runs: int) -> list[float]:
    from mpcc import scenario
    from mpcc.testbed import engine
    from test_testbed_runs import RED, RED_DURATION_S, RED_WARMUP_S, SHARED
    s = scenario.loads(SHARED.format(algo=algo, aqm=RED))
    res = engine.run_scenario(s, engine.settings_from(s, runs=runs, duration_s=RED_DURATION_S,
                                                      warmup_s=RED_WARMUP_S), None, progress=False)
    mp, sp = res.groups["mp"].extra["rate_per_run_mbps"], res.groups["sp"].extra["rate_per_run_mbps"]
    return [m / r for m, r in zip(mp, sp)]


def mtcp(algo: str, runs: int) -> list[float]:
    from mpcc.reproduce.jiang2011 import testbed as tb
    from mpcc.reproduce.peng2016.budget import KernelRun
    from test_mtcp_kernel import DURATION_S, WARMUP_S
    res = tb.utilisation([algo], [(2, 20)], KernelRun(runs, DURATION_S, WARMUP_S), progress=False)
    return list(res[(algo, 2, 20)]["per_run"])


def fast(_algo: str, runs: int) -> list[float]:
    """Two FAST flows (α = 10, 30): r30 ÷ r10 per run, test_fast_kernel's second test's run."""
    from mpcc import scenario
    from mpcc.testbed import engine
    from test_fast_kernel import GROUP, LINK
    s = scenario.loads(LINK.format(name="10-30", duration=20.0) + GROUP.format(alpha=10) + GROUP.format(alpha=30))
    res = engine.run_scenario(s, engine.settings_from(s, runs=runs, warmup_s=8.0), None, progress=False)
    return [b / a for a, b in zip(res.groups["fast10"].extra["rate_per_run_mbps"],
                                  res.groups["fast30"].extra["rate_per_run_mbps"])]


def vssim(algo: str, runs: int) -> dict:
    """test_testbed_vs_sim's scenario: each group's relative error (testbed − sim) / sim per run."""
    from mpcc import scenario
    from mpcc.sim import engine as sim
    from mpcc.testbed import engine
    from test_testbed_vs_sim import NET, PAYLOAD
    s = scenario.loads(NET.replace("{algo}", algo), "red-three-links.toml")
    warm = 4.0
    sims = [sim.run(s, seed=k, sample_interval_s=0, measure=(warm, s.duration_s)).result for k in range(3)]
    tb = engine.run_scenario(s, engine.settings_from(s, runs=runs, warmup_s=warm), None, progress=False)
    out = {}
    for g in s.groups:
        sv = sum(r.groups[g.name].rate_mbps for r in sims) / len(sims)
        out[g.name] = [round(x * s.packet_bytes / PAYLOAD / sv - 1, 4) for x in tb.groups[g.name].extra["rate_per_run_mbps"]]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["red", "mtcp", "fast", "vssim"])
    ap.add_argument("--algorithm", default="")
    ap.add_argument("--runs", type=int, default=6)
    a = ap.parse_args()
    t0 = time.time()
    if a.what == "vssim":
        print(json.dumps({"what": a.what, "algorithm": a.algorithm, "runs": a.runs, "rel_error": vssim(a.algorithm, a.runs),
                          "wall_s": round(time.time() - t0, 1), "utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime(t0))}))
        return
    xs = {"red": red, "mtcp": mtcp, "fast": fast}[a.what](a.algorithm, a.runs)
    print(json.dumps({"what": a.what, "algorithm": a.algorithm, "runs": a.runs, "values": [round(x, 4) for x in xs],
                      "mean": statistics.mean(xs), "sd": statistics.stdev(xs), "wall_s": round(time.time() - t0, 1),
                      "utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime(t0))}))


if __name__ == "__main__":
    main()
