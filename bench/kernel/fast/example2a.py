"""Tang et al. Example 2a (Fig. 4 network, RED with ECN marks, α = 50 fixed) on the kernel, Reno
first and FAST first side by side (two copies of the network), scaled down by k (issue 14):

    flock /tmp/mpcc-bench.lock .venv/bin/python bench/kernel/fast/example2a.py OUTDIR [K [DURATION]]
    .venv/bin/python bench/kernel/fast/example2a.py --cpu [K]     (what the testbed would need; no run)
    nice .venv/bin/python bench/kernel/fast/example2a.py --sim [K [DURATION [SEEDS]]]   (the simulator on the same networks)

Scaling by k (Table I's, mpcc.reproduce.tang2010.kernel, plus RED): capacities, buffers, RED's
thresholds, the noise and FAST's α ÷ k, RTTs kept, so every window is k times smaller; Reno's
equilibrium window is ∝ 1/√p, so RED's max_p × k² keeps Reno's windows at 1/k of the paper's at
the same (scaled) queue — which needs max_p·k² ≤ 1: k ≤ √10 for l23's max_p = 0.1. RED's EWMA
weight × k keeps its time constant 1/(w·c) in seconds (c is k times smaller). Time ÷ k (Reno's
sawtooth period is k times shorter): FAST's second set starts at 100/k s. FAST in the kernel
halves its window on an ECN echo (tcp_enter_cwr calls ssthresh) like ns-2's FAST module, which
the paper ran (docs/hetero.md, "ns-2 vs ours"); the simulator's FAST ignores marks.

Regime read off the mean queues over the second half of the run, as the simulator's
(reproduce/tang2010/example2.py): "reno" = l12 and l34 both ≥ 100/k packets, "fast" = l23 ≥ 10/k.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

NAMES = ("example2a-reno-first", "example2a-fast-first")


def scaled(name: str, k: float, duration: float | None):
    from mpcc import algorithms
    from mpcc import scenario as scen
    from mpcc.reproduce.common import SCENARIO_DIR

    s = scen.load(SCENARIO_DIR / "tang2010" / f"{name}.toml")
    links = []
    for l in s.links:
        r = l.red
        if r.max_p * k * k > 1.0:
            raise SystemExit(f"k = {k:g}: {l.name}'s max_p·k² = {r.max_p * k * k:g} > 1; use k ≤ {(1 / r.max_p) ** 0.5:.3g}")
        red = replace(r, min_th=max(1.0, r.min_th / k), max_th=r.max_th / k, max_p=r.max_p * k * k,
                      weight=min(1.0, r.weight * k))
        links.append(replace(l, name=f"{name}.{l.name}", capacity_mbps=l.capacity_mbps / k,
                             buffer_pkts=max(1, round(l.buffer_pkts / k)), red=red))
    end = duration or s.duration_s / k
    groups = []
    for g in s.groups:
        algo, spec = g.algorithm, g.algorithm_spec
        if algo.name == "fast":
            p = dict(algo.params)
            p["alpha"] = float(p.get("alpha", 50.0)) / k
            algo = algorithms.get({"name": "fast", **p})
            spec = {"name": "fast", **algo.params}
        groups.append(replace(g, name=f"{name}.{g.name}", algorithm=algo, algorithm_spec=spec, start_s=g.start_s / k,
                              paths=tuple(tuple(f"{name}.{x}" for x in p) for p in g.paths), stop_s=end))
    bgs = tuple(replace(b, name=f"{name}.{b.name}", rate_mbps=b.rate_mbps / k, path=tuple(f"{name}.{x}" for x in b.path),
                        start_s=b.start_s / k, stop_s=end) for b in s.background)
    return s.with_changes(name=f"{name}-kernel-div{k:g}", duration_s=end,
                          links=tuple(links), groups=tuple(groups), background=bgs)


def both(k: float, duration: float | None):
    a, b = (scaled(n, k, duration) for n in NAMES)
    return a.with_changes(name=f"tang2010-example2a-kernel-div{k:g}", links=a.links + b.links,
                          groups=a.groups + b.groups, background=a.background + b.background)


def summary(r, s, k: float) -> dict:
    out = {}
    for n in NAMES:
        row = {"rates_mbps": {g.split(".", 1)[1]: v.rate_mbps for g, v in r.groups.items() if g.startswith(n + ".")},
               # per flow, ×k in the paper's packets/ms (1500-byte packets), as Fig. 5/6
               "rates_paper_pkts_per_ms": {g.split(".", 1)[1]: v.rate_mbps * k / 12.0
                                           for g, v in r.groups.items() if g.startswith(n + ".")},
               "links": {l.split(".", 1)[1]: {"queue_mean_pkts": v.extra.get("queue_mean_pkts"),
                                               "utilisation": v.extra.get("utilisation"), "marks": v.extra.get("marks"),
                                               "drops": v.extra.get("drops")}
                         for l, v in r.links.items() if l.startswith(n + ".")}}
        out[n] = row
    return out


def main(out: Path, k: float, duration: float | None) -> None:
    from mpcc.testbed import engine

    s = both(k, duration)
    t0, load0 = time.time(), os.getloadavg()[0]
    st = engine.settings_from(s, runs=1, duration_s=s.duration_s, warmup_s=s.duration_s / 2)
    r = engine.run_scenario(s, st, out / "runs")
    res = summary(r, s, k)
    for n in NAMES:
        q = {l: v["queue_mean_pkts"] for l, v in res[n]["links"].items()}
        res[n]["regime"] = ("reno" if min(q["l12"], q["l34"]) >= 100 / k else
                            "fast" if q["l23"] >= 10 / k else "none")
    res["setup"] = {"k": k, "duration_s": s.duration_s, "measured_from_s": s.duration_s / 2,
                    "started_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t0)),
                    "wall_s": round(time.time() - t0, 1), "load_start": round(load0, 2),
                    "load_end": round(os.getloadavg()[0], 2)}
    out.mkdir(parents=True, exist_ok=True)
    (out / "example2a.json").write_text(json.dumps(res, indent=1) + "\n")
    print(json.dumps(res, indent=1))


def sim(k: float, duration: float | None, seeds: int) -> None:
    """The simulator on each scaled network alone (its FAST ignores ECN marks; the kernel's halves)."""
    from mpcc.hetero import packet

    for n in NAMES:
        s = scaled(n, k, duration)
        for seed in range(1, seeds + 1):
            fr = packet.run(s, seed=seed, measure=(s.duration_s / 2, s.duration_s), sample_interval_s=1.0)
            q = packet.mean_queues(fr, s.duration_s / 2, s.duration_s)
            rates = {g.split(".", 1)[1]: round(v.rate_mbps * k / 12.0, 3) for g, v in fr.result.groups.items()}
            print(n, "seed", seed, "per-flow rates (paper packets/ms)", rates,
                  "mean queues", {l.split(".", 1)[1]: round(v, 1) for l, v in q.items()})


if __name__ == "__main__":
    a = sys.argv[1:]
    if a and a[0] == "--sim":
        sim(float(a[1]) if len(a) > 1 else 3.0, float(a[2]) if len(a) > 2 else None, int(a[3]) if len(a) > 3 else 2)
        sys.exit(0)
    if a and a[0] == "--cpu":
        from mpcc.testbed import topology
        k = float(a[1]) if len(a) > 1 else 3.0
        s = both(k, None)
        print(f"k = {k:g}: {topology.estimate_cpus(s):.2f} CPUs needed, {len(s.links)} links, "
              f"{sum(g.count for g in s.groups)} flows, {len(s.background)} noise sources, {s.duration_s:g} s")
        topology.check_supported(s)
        sys.exit(0)
    main(Path(a[0]), float(a[1]) if len(a) > 1 else 3.0, float(a[2]) if len(a) > 2 else None)
