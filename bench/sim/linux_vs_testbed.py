"""The simulator's two MPTCP connection levels against the kernel testbed on the generated RED
scenarios of bench/kernel/RESULTS.md §5 (`sim_vs_testbed.generate(seed)`, 40 s, 10 s warm-up).
The testbed numbers are those recorded there (§5: one 40 s run per seed; §7 and §13 give the
spread of repeated runs: seed 1 −31.5/−42.6/−38.3/−21.7/−43.1 %, seed 2 −26.0/−20.1/−12.7/−17.9 %)
and the connection-level samples of §13 (seeds 1–2). The simulator runs here (2 seeds each).

Usage: .venv/bin/python bench/sim/linux_vs_testbed.py [--seeds 1-7] [--sim-seeds 2]
"""
from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "bench/kernel"))

#: bench/kernel/RESULTS.md §5: multipath group per-flow Mb/s on the testbed (× 1500/1448).
TESTBED_MP = {1: 3.19, 2: 4.11, 3: 5.24, 4: 9.05, 5: 7.31, 6: 5.33, 7: 3.53}
#: §13, default buffers: idle / of which no data / rwnd full; send buffer KB
TESTBED_CONN = {1: "0.27 / 0.95 / 0.00", 2: "0.12 / 0.99 / 0.00"}


def main() -> None:
    from sim_vs_testbed import generate
    from mpcc import scenario, sim

    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", default="1-7")
    ap.add_argument("--sim-seeds", type=int, default=2)
    a = ap.parse_args()
    lo, hi = (int(x) for x in a.seeds.split("-"))
    print("| seed | MP group | sim ideal | sim linux | testbed | linux vs ideal | testbed vs linux | testbed vs ideal "
          "| linux idle / no data / rwnd full, sndbuf / queued KB | testbed (§13) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for seed in range(lo, hi + 1):
        s = scenario.loads(generate(seed, 40.0), "generated.toml")
        mp = next(g for g in s.groups if g.name == "mp")
        out = {}
        for mode in ("ideal", "linux"):
            sm = dataclasses.replace(s, engine={**s.engine, "sim": {"mptcp": mode}})
            rs = [sim.run(sm, seed=k, sample_interval_s=0, measure=(10.0, 40.0)).result for k in range(a.sim_seeds)]
            out[mode] = (statistics.mean(r.groups["mp"].rate_mbps for r in rs), rs)
        cl = {k: statistics.mean(r.groups["mp"].extra["connection_limits"][k] for r in out["linux"][1])
              for k in ("idle", "idle_no_data", "idle_rwnd_full", "sndbuf_kb", "queued_kb")}
        i, lx, tb = out["ideal"][0], out["linux"][0], TESTBED_MP[seed]
        print(f"| {seed} | {mp.algorithm.describe()} ×{mp.count} | {i:.2f} | {lx:.2f} | {tb:.2f} | {100 * (lx / i - 1):+.1f} % "
              f"| {100 * (tb / lx - 1):+.1f} % | {100 * (tb / i - 1):+.1f} % "
              f"| {cl['idle']:.2f} / {cl['idle_no_data']:.2f} / {cl['idle_rwnd_full']:.2f}, {cl['sndbuf_kb']:.0f} / "
              f"{cl['queued_kb']:.0f} | {TESTBED_CONN.get(seed, '')} |", flush=True)


if __name__ == "__main__":
    main()
