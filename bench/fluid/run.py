"""Benchmark: fluid equilibrium (8)–(9) of a random network with 1,000 links and 10,000
two- or three-path sources (every route through 3–5 random links), target < 1 s.

    .venv/bin/python bench/fluid/run.py [--runs 3] [--algorithms lia,ewtcp,semicoupled,generalized]

Writes bench/fluid/RESULTS.md (machine, date, load average, median time, residuals)."""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import time
from pathlib import Path

from mpcc.fluid import network, solve


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--links", type=int, default=1000)
    ap.add_argument("--sources", type=int, default=10000)
    ap.add_argument("--algorithms", default="lia,ewtcp,semicoupled,generalized,balia")
    ap.add_argument("--out", default=str(Path(__file__).with_name("RESULTS.md")))
    a = ap.parse_args()
    algos = tuple(a.algorithms.split(","))
    rows = []
    configs = [("mixed (" + ", ".join(algos) + ")", algos)]
    if "balia" in algos and len(algos) > 1:   # also without Balia: its continuation fallback costs extra
        rest = tuple(x for x in algos if x != "balia")
        configs.insert(0, ("mixed (" + ", ".join(rest) + ")", rest))
    for label, algs_ in configs:
        times, res, steps, err = [], [], [], None
        for seed in range(a.runs):
            net = network.random_network(a.links, a.sources, seed=seed, algorithms_=algs_)
            t0 = time.perf_counter()
            try:
                eq = solve(net, ranges=False)
            except Exception as e:  # record the failure, keep going
                err = f"seed {seed}: {e}"
                continue
            times.append(time.perf_counter() - t0)
            res.append(eq.residual)
            steps.append(eq.iterations)
            print(f"{label} seed {seed}: {times[-1]:.2f} s, {eq.iterations} Newton steps, residual {eq.residual:.1e}")
        rows.append((label, times, res, steps, err))
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load = os.getloadavg()
    lines = [
        "# Fluid equilibrium benchmark",
        "",
        f"`bench/fluid/run.py`: random network, {a.links} links, {a.sources} sources with 2–3 routes of "
        "3–5 random links each (capacities log-uniform 800–80,000 packets/s, one-way delays 1–50 ms), "
        "equilibrium (8)–(9) to machine precision (`mpcc.fluid.solve`, LP ranges off). One network per seed.",
        "",
        f"- date: {now}",
        f"- machine: {os.cpu_count()} CPUs (`nproc`), {cpu_model()}",
        f"- load average during the run: {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} "
        "(includes this benchmark's own two BLAS threads)",
        "- target: < 1 s",
        "",
        "| algorithms | runs | median time (s) | min (s) | Newton steps (median) | max residual of (8)–(9) |",
        "|---|---|---|---|---|---|",
    ]
    for label, times, res, steps, err in rows:
        if times:
            lines.append(f"| {label} | {len(times)} | {statistics.median(times):.2f} | {min(times):.2f} | "
                         f"{statistics.median(steps):.0f} | {max(res):.1e} |")
        if err:
            lines.append(f"| {label} | failed | {err} | | | |")
    lines += [
        "",
        "Where the time goes (cProfile, same machine): each Newton step factorises the dense",
        "|L|×|L| link Schur complement (LU, ≈ 13 ms alone, ≈ 30 ms with the batched per-source",
        "blocks and assembly) and the barrier path needs ≈ 30 steps, so the **1 s target is not met**",
        "(2.5–3 s without Balia). With Balia sources the barrier path stalls (its φ is non-monotone for",
        "1 < α < 1.5) and the solver falls back to continuation from the generalized (0.2, 0.5, ∞)",
        "rule (see docs/fluid.md), which costs the second row. Ideas not yet done: sparse or",
        "low-rank updates of the Schur complement, fewer barrier stages from a warm start.",
    ]
    Path(a.out).write_text("\n".join(lines) + "\n")
    print(Path(a.out).read_text())


if __name__ == "__main__":
    main()
