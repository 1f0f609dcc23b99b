"""Datacenter-scale benchmark of the simulator → bench/sim/FATTREE.md (machine, date, load).

k-ary fat trees (``mpcc topo fattree``) with permutation traffic, as in Raiciu et al.,
"Improving datacenter performance and robustness with Multipath TCP" (SIGCOMM 2011):

1. Per-host throughput (mean, 10th percentile, as % of the 1 Gb/s line rate) and core-link
   utilisation of MPTCP with 8 subflows (LIA, OLIA, Balia) against single-path TCP (Reno, one
   ECMP path) on k = 8 (128 hosts).
2. Cost against size, k = 4, 8, 16: wall time, data packets simulated per second and peak RSS,
   each cell in a fresh process, one core, no time series.
3. Optionally (``--dask``) a k = 16 seed sweep on a local Dask cluster (``mpcc sim --scheduler``).

Usage: .venv/bin/python bench/sim/fattree.py [--quick] [--dask]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

#: simulated seconds per k (the RTT is ~0.1 ms, so windows settle within milliseconds; the
#: measurement window is the last 80 %)
DURATION = {4: 1.0, 8: 0.5, 16: 0.1}
MPTCP = ("lia", "olia", "balia")


def cell(k: int, algorithm: str, subflows: int, seed: int, duration: float) -> dict:
    """One simulation in this process; returns its numbers (run as a child for RSS)."""
    import numpy as np

    from mpcc import sim, topo
    from mpcc.topo import FatTree

    doc = topo.fattree(k, subflows=subflows, algorithm=algorithm, seed=seed, duration_s=duration)
    s = topo.scenario(doc)
    t = time.perf_counter()
    r = sim.run(s, seed=seed, sample_interval_s=0)
    wall = time.perf_counter() - t
    rates = np.array([g.rate_mbps for g in r.result.groups.values()])
    cap = doc["links"][0]["capacity_mbps"]
    core = [l.load_mbps / cap for n, l in r.result.links.items() if FatTree.is_core(n)]
    return {"k": k, "algorithm": algorithm, "subflows": subflows, "seed": seed, "duration_s": duration,
            "hosts": len(rates), "wall_s": wall, "data_packets": r.stats["data_packets"], "events": r.stats["events"],
            "pkts_per_s": r.stats["data_packets"] / wall, "host_mean_pct": 100 * rates.mean() / cap,
            "host_p10_pct": 100 * np.percentile(rates, 10) / cap, "host_min_pct": 100 * rates.min() / cap,
            "core_util_pct": 100 * float(np.mean(core)), "timeouts": sum(g.extra["timeouts"] for g in r.result.groups.values()),
            "peak_rss_mb": vm_hwm_mb()}


def vm_hwm_mb() -> float:
    """This process's peak resident memory (VmHWM: per address space, so unlike ru_maxrss it does
    not inherit the parent's peak across fork + exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def child(k: int, algorithm: str, subflows: int, seed: int, duration: float) -> dict:
    p = subprocess.run([sys.executable, __file__, "--cell", json.dumps([k, algorithm, subflows, seed, duration])],
                       capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(p.stdout.strip().splitlines()[-1])


def baseline_rss() -> float:
    p = subprocess.run([sys.executable, "-c", "import re; print(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read())[1])"],
                       capture_output=True, text=True, check=True)
    return int(p.stdout) / 1024


def dask_sweep(k: int, seeds: int) -> dict:
    from distributed import Client, LocalCluster

    from mpcc import sim, topo
    s = topo.scenario(topo.fattree(k, subflows=8, algorithm="lia", seed=0, duration_s=DURATION[k]))
    with LocalCluster(n_workers=os.cpu_count() or 1, threads_per_worker=1, processes=True) as cluster, Client(cluster) as client:
        t = time.perf_counter()
        runs = sim.run_many(s, seeds, seed=0, scheduler=client, progress=False, sample_interval_s=0)
        wall = time.perf_counter() - t
    res = runs.result
    mean = sum(g.rate_mbps for g in res.groups.values()) / len(res.groups)
    return {"k": k, "seeds": seeds, "workers": os.cpu_count(), "wall_s": wall, "host_mean_mbps": mean}


def main(quick: bool, with_dask: bool) -> None:
    from run import machine  # bench/sim/run.py

    ks = (4, 8) if quick else (4, 8, 16)
    rows = []
    for k in ks:
        for algo, sf in [("reno", 1), *((a, 8) for a in MPTCP)]:
            r = child(k, algo, sf, 1, DURATION[k])
            rows.append(r)
            print(json.dumps(r), flush=True)
    sweep = dask_sweep(16 if not quick else 8, 4) if with_dask else None
    base = baseline_rss()
    load = os.getloadavg()
    lines = [
        "# Fat-tree benchmark (bench/sim/fattree.py)", "",
        f"{datetime.date.today()} · {machine()} · load average before/after: {load[0]:.2f} · "
        f"`python -c pass` peak RSS {base:.0f} MB (the Python baseline every cell includes).", "",
        "Permutation traffic, 1 Gb/s links, 100-packet buffers, 5 µs per hop; MPTCP = 8 ECMP subflows per "
        "connection, TCP = Reno on one ECMP path; one core, one fresh process per cell, no time series. "
        "Throughput is per host in % of line rate over the last 80 % of the run (the optimum is 100 %: "
        "the fat tree has full bisection bandwidth).", "",
        "| k | hosts | algorithm | subflows | sim s | host mean % | host p10 % | host min % | core util % | RTOs | "
        "wall s | data pkts | M pkts/s | peak RSS MB |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['k']} | {r['hosts']} | {r['algorithm']} | {r['subflows']} | {r['duration_s']:g} | "
                     f"{r['host_mean_pct']:.1f} | {r['host_p10_pct']:.1f} | {r['host_min_pct']:.1f} | "
                     f"{r['core_util_pct']:.1f} | {r['timeouts']:.0f} | {r['wall_s']:.2f} | {r['data_packets']:,} | "
                     f"{r['pkts_per_s'] / 1e6:.2f} | {r['peak_rss_mb']:.0f} |")
    if sweep:
        lines += ["", f"Dask sweep: k = {sweep['k']}, LIA, {sweep['seeds']} seeds on a LocalCluster of "
                      f"{sweep['workers']} single-threaded worker processes: {sweep['wall_s']:.1f} s wall, "
                      f"host mean {sweep['host_mean_mbps']:.0f} Mb/s."]
    out = Path(__file__).with_name("FATTREE.md")
    out.write_text("\n".join(lines) + "\n")
    (out.with_suffix(".json")).write_text(json.dumps({"rows": rows, "dask": sweep}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--dask", action="store_true")
    ap.add_argument("--cell", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.cell:
        print(json.dumps(cell(*json.loads(a.cell))))
    else:
        main(a.quick, a.dask)
