#!/usr/bin/env python3
"""bench/kernel/receiver_acks.py: the receivers' ACKs per data segment on the testbed against the
simulator's linux mode with each receiver (``[sim] receiver = "simple"`` or ``"linux"``), per
group and route, and what the receiver does to the predicted rates (bench/kernel/RESULTS.md §20).

The testbed rows are conn_mechanisms.py's (``acks``: the receiving sockets' ``segs_out`` and
``data_segs_in`` from ``ss``, one second before the end); the simulator runs each network with
2 seeds per receiver and counts the same (``path_acks``, ``path_segs_in``, since the start).

    .venv/bin/python bench/kernel/receiver_acks.py bench/kernel/conn_mechanisms_tb_20.json
"""
from __future__ import annotations

import dataclasses
import json
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "python"))
sys.path.insert(0, str(HERE))

RECEIVERS = ("simple", "linux")


def simulate(seed: int, algorithm: str, secs: float, warmup: float) -> tuple:
    from conn_mechanisms import scenario_text
    from mpcc import scenario, sim
    s = scenario.loads(scenario_text(seed, secs, algorithm), "generated.toml")
    out = {}
    for rx in RECEIVERS:
        sm = dataclasses.replace(s, engine={**s.engine, "sim": {"mptcp": "linux", "receiver": rx}})
        rs = [sim.run(sm, seed=k, sample_interval_s=0, measure=(warmup, secs)).result for k in range(2)]
        out[rx] = {}
        for gi, g in enumerate(s.groups):
            gr = [r.groups[g.name] for r in rs]
            n = len(g.paths)
            out[rx][gi] = {"rate": statistics.mean(x.rate_mbps for x in gr),
                           "paths": [statistics.mean(x.path_rate_mbps[i] for x in gr) for i in range(n)],
                           "ratio": [statistics.mean(x.extra["path_acks"][i] / max(x.extra["path_segs_in"][i], 1)
                                                     for x in gr) for i in range(n)]}
    return s, out


def main() -> None:
    from conn_mechanisms import _rel
    rows = [r for f in sys.argv[1:] for r in json.loads(Path(f).read_text()) if r.get("acks")]
    lines = []
    for r in rows:
        s, sim = simulate(r["seed"], r["algorithm"], 30.0, 10.0)
        for gi, g in enumerate(s.groups):
            for ri in range(len(g.paths)):
                a = r["acks"].get(f"{gi}/{ri}")
                if not a:
                    continue
                mp = g.name == "mp"
                line = {"run": f'{r["seed"]}/{r["algorithm"]}', "group": g.name, "route": ri, "mp": mp,
                        "tb_ratio": a["segs_out"] / max(a["data_segs_in"], 1),
                        "tb_rate": r["testbed"] if mp else r["others"][g.name], "tb_path": r["paths"][ri] if mp else None}
                for rx in RECEIVERS:
                    line[f"{rx}_ratio"] = sim[rx][gi]["ratio"][ri]
                    line[f"{rx}_rate"] = sim[rx][gi]["rate"]
                    line[f"{rx}_path"] = sim[rx][gi]["paths"][ri]
                lines.append(line)
    print("run            group  route  ACKs/segment: testbed  simple  linux")
    for x in lines:
        print(f'{x["run"]:<14} {x["group"]:<6} {x["route"]:>5}  {x["tb_ratio"]:>21.3f}  {x["simple_ratio"]:.3f}  '
              f'{x["linux_ratio"]:.3f}')
    for kind, sel in (("MPTCP subflows", [x for x in lines if x["mp"]]), ("TCP", [x for x in lines if not x["mp"]])):
        ratios = [x["tb_ratio"] for x in sel]
        print(f"\n{kind}: testbed ACKs/segment median {statistics.median(ratios):.3f} "
              f"({min(ratios):.3f}-{max(ratios):.3f}), {len(sel)} routes")
        for rx in RECEIVERS:
            err = statistics.median(abs(x["tb_ratio"] - x[f"{rx}_ratio"]) for x in sel)
            print(f"  {rx:<6} median |testbed - sim| {err:.3f}")
    mp = [x for x in lines if x["mp"]]
    groups = [x for x in lines if x["mp"] and x["route"] == 0] + [x for x in lines if not x["mp"]]
    print("\nrates, testbed vs linux mode: within 15 % (median |difference|)")
    for rx in RECEIVERS:
        res = []
        for name, sel, key in (("multipath group", [x for x in mp if x["route"] == 0], "rate"),
                               ("its paths", mp, "path"), ("single-path groups", [x for x in groups if not x["mp"]], "rate")):
            d = [abs(_rel(x[f"tb_{key}"], x[f"{rx}_{key}"])) for x in sel]
            res.append(f"{name} {sum(v <= 15 for v in d)}/{len(d)} ({statistics.median(d):.1f} %)")
        print(f"  receiver {rx:<6}: " + ", ".join(res))


if __name__ == "__main__":
    main()
