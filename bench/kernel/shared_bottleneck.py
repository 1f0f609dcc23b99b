#!/usr/bin/env python3
"""bench/kernel/shared_bottleneck.py: one multipath connection (two subflows through the same
bottleneck) next to one single-path TCP Reno flow, on the namespace testbed (linkem bottleneck),
drop-tail vs RED. Ratio = the multipath flow's goodput ÷ the Reno flow's. (root)

Arms: each mpcc BPF algorithm and the kernel's uncoupled reno on both subflows (``reno``), plus the
control ``tcp2`` (two single-path Reno flows instead of the multipath connection). Design targets
(Peng et al. §III, TCP friendliness): uncoupled (reno, ewtcp, tcp2) ≈ 2, coupled ≤ about 1.

    sudo flock /tmp/mpcc-bench.lock .venv/bin/python bench/kernel/shared_bottleneck.py \\
        [--arms tcp2,reno,ewtcp,...] [--aqm droptail,red] [--seeds 2] [--secs 30] [--md OUT.md]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))

from mpcc import scenario  # noqa: E402
from mpcc.testbed import engine  # noqa: E402

SCENARIO = """
name = "shared-bottleneck"
duration_s = {secs}
[[links]]
name = "l"
capacity_mbps = {cap}
delay_ms = {delay}
buffer_pkts = {buf}
{aqm}
[[groups]]
name = "mp"
count = {count}
algorithm = "{algo}"
paths = {paths}
[[groups]]
name = "sp"
count = 1
algorithm = "reno"
paths = [["l"]]
"""
ARMS = ["tcp2", "reno", "ewtcp", "semicoupled", "lia", "olia", "balia", "coupled"]


def red_table(buf: int) -> str:
    return f'aqm = "red"\nred = {{min_th = {buf // 5}, max_th = {buf * 3 // 5}, max_p = 0.1}}'


def one(arm: str, aqm: str, seed: int, secs: float, cap: float, delay: float, buf: int) -> dict:
    count, algo, paths = (2, "reno", '[["l"]]') if arm == "tcp2" else (1, arm, '[["l"], ["l"]]')
    s = scenario.loads(SCENARIO.format(secs=secs, cap=cap, delay=delay, buf=buf, count=count, algo=algo,
                                       paths=paths, aqm=red_table(buf) if aqm == "red" else ""))
    res = engine.run_scenario(s, engine.settings_from(s, warmup_s=5.0, seed=seed), None, progress=False)
    mp, sp = res.groups["mp"], res.groups["sp"]
    mp_total = mp.rate_mbps * mp.count
    return {"arm": arm, "aqm": aqm, "seed": seed, "ratio": mp_total / sp.rate_mbps, "mp_mbps": mp_total,
            "sp_mbps": sp.rate_mbps, "path_mbps": mp.path_rate_mbps, "link_mbps": res.links["l"].load_mbps}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--arms", default=",".join(ARMS))
    ap.add_argument("--aqm", default="droptail,red")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--secs", type=float, default=30.0)
    ap.add_argument("--capacity", type=float, default=20.0)
    ap.add_argument("--delay", type=float, default=10.0)
    ap.add_argument("--buffer", type=int, default=50)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--md", type=Path, default=None)
    a = ap.parse_args()
    started, load0 = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), os.getloadavg()
    rows = []
    for seed, aqm, arm in itertools.product(range(a.seeds), a.aqm.split(","), a.arms.split(",")):
        r = one(arm, aqm, seed, a.secs, a.capacity, a.delay, a.buffer)
        rows.append(r)
        print(json.dumps(r), flush=True)
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1))
    lines = [f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, Linux {platform.release()}. Started {started}, "
             f"load {load0[0]:.2f}, ended load {os.getloadavg()[0]:.2f}. Link {a.capacity} Mb/s, {a.delay} ms one way, "
             f"{a.buffer} packets; RED = min_th {a.buffer // 5}, max_th {a.buffer * 3 // 5}, max_p 0.1 (gentle, "
             f"weight 0.002). {a.seeds} runs × {a.secs} s per cell (5 s warm-up). Command: "
             f"`{' '.join(sys.argv)}`", "",
             "| multipath side | " + " | ".join(f"{q}: ratio per run (mean)" for q in a.aqm.split(",")) + " |",
             "|---|" + "---|" * len(a.aqm.split(","))]
    for arm in a.arms.split(","):
        cells = []
        for q in a.aqm.split(","):
            v = [r["ratio"] for r in rows if r["arm"] == arm and r["aqm"] == q]
            cells.append(", ".join(f"{x:.2f}" for x in v) + f" (**{statistics.mean(v):.2f}**)")
        lines.append(f"| {arm} | " + " | ".join(cells) + " |")
    table = "\n".join(lines)
    print(table)
    if a.md:
        a.md.write_text(table + "\n")


if __name__ == "__main__":
    main()
