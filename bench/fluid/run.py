"""Benchmark: fluid equilibrium (8)–(9) of a random network with 1,000 links and 10,000
two- or three-path sources (every route through 3–5 random links), target < 1 s.

    flock /tmp/mpcc-bench.lock .venv/bin/python bench/fluid/run.py [--runs 5]

Each network (one per seed) is solved by the default path (`solve(net)`: GMRES on the link Schur
complement, preconditioned by an earlier LU) and, for comparison in the same run, by the reference
path (`solve(net, fast=False)`: assemble and LU-factorise the dense Schur complement at every
Newton step) — both to machine precision. A third row adds published Balia sources (solved by the
arc-length continuation when the barrier path stalls). Writes bench/fluid/RESULTS.md (machine,
date, load average, median time, Newton steps, residuals)."""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import time
import warnings
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


def run(label, algos, fast, runs, links, sources):
    times, cpus, res, steps, err = [], [], [], [], None
    for seed in range(runs):
        net = network.random_network(links, sources, seed=seed, algorithms_=algos)
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                eq = solve(net, ranges=False, fast=fast)
        except Exception as e:  # record the failure, keep going
            err = f"seed {seed}: {e}"
            print(f"{label} seed {seed}: FAILED {e}")
            continue
        times.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
        res.append(eq.residual)
        steps.append(eq.iterations)
        print(f"{label} seed {seed}: {times[-1]:.2f} s (CPU {cpus[-1]:.2f} s), {eq.iterations} Newton steps, "
              f"residual {eq.residual:.1e}", flush=True)
    return label, times, cpus, res, steps, err


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--links", type=int, default=1000)
    ap.add_argument("--sources", type=int, default=10000)
    ap.add_argument("--algorithms", default="lia,ewtcp,semicoupled,generalized")
    ap.add_argument("--no-balia", action="store_true", help="skip the row with published Balia sources")
    ap.add_argument("--out", default=str(Path(__file__).with_name("RESULTS.md")))
    a = ap.parse_args()
    algos = tuple(a.algorithms.split(","))
    mix = ", ".join(algos)
    load0 = os.getloadavg()
    rows = [run(f"{mix} — default (GMRES + LU preconditioner)", algos, True, a.runs, a.links, a.sources),
            run(f"{mix} — reference (LU every step)", algos, False, a.runs, a.links, a.sources)]
    if not a.no_balia:
        rows.append(run(f"{mix}, balia — default", algos + ("balia",), True, a.runs, a.links, a.sources))
    load1 = os.getloadavg()
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    threads = os.environ.get("OPENBLAS_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS") or "default (2)"
    lines = [
        "# Fluid equilibrium benchmark",
        "",
        f"`bench/fluid/run.py`: random network, {a.links} links, {a.sources} sources with 2–3 routes of "
        "3–5 random links each (capacities log-uniform 800–80,000 packets/s, one-way delays 1–50 ms), "
        "equilibrium (8)–(9) to machine precision (`mpcc.fluid.solve`, LP ranges off). One network per seed "
        f"(seeds 0–{a.runs - 1}); algorithms cycled over the sources. Run under `flock /tmp/mpcc-bench.lock`.",
        "",
        f"- date: {now}",
        f"- machine: {os.cpu_count()} CPUs (`nproc`), {cpu_model()}; BLAS threads: {threads}",
        f"- load average (1/5/15 min) before: {load0[0]:.2f} / {load0[1]:.2f} / {load0[2]:.2f}, "
        f"after: {load1[0]:.2f} / {load1[1]:.2f} / {load1[2]:.2f} (other helpers were working on the machine)",
        "- target: < 1 s",
        "",
        "| algorithms — path | runs | median wall time (s) | min (s) | max (s) | median CPU time (s) "
        "| Newton steps (median) | max residual of (8)–(9) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for label, times, cpus, res, steps, err in rows:
        if times:
            lines.append(f"| {label} | {len(times)} | {statistics.median(times):.2f} | {min(times):.2f} | "
                         f"{max(times):.2f} | {statistics.median(cpus):.2f} | {statistics.median(steps):.0f} | "
                         f"{max(res):.1e} |")
        if err:
            lines.append(f"| {label} | failed | {err} | | | | | |")
    lines += ["", "CPU time = `time.process_time()` of the process (all its threads); with one BLAS "
              "thread (`OPENBLAS_NUM_THREADS=1`) it is the compute the solve needs on an idle core."]
    Path(a.out).write_text("\n".join(lines) + "\n")
    print(Path(a.out).read_text())


if __name__ == "__main__":
    main()
