"""Fluid model vs packet-level simulator on random RED networks (mpcc.scenario_gen).

    nice -n 10 .venv/bin/python bench/compare/fluid_vs_sim.py --scenarios 30 --runs 3 --duration 60

For every generated scenario (aqm = "red", algorithms with a fluid model) it runs
``mpcc.compare.compare(engines=("fluid", "sim"))`` and records, per group and per path, the
relative difference sim vs fluid, with the diagnosis quantities of the routes. Writes
bench/compare/fluid_vs_sim.json and prints the per-algorithm summary (median / max |rel|)
that RESULTS.md records.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from mpcc import compare, scenario_gen
from mpcc.results import dumps


def one(seed: int, runs: int, duration: float, bdp=None) -> dict:
    s = scenario_gen.generate(seed, aqm="red", algorithms_=scenario_gen.FLUID_ALGORITHMS,
                              ranges=replace(scenario_gen.Ranges(), duration_s=duration, red_min_th_bdp=bdp))
    t = time.perf_counter()
    c = compare.compare(s, engines=("fluid", "sim"), runs=runs, seed=1)
    rec = {"seed": seed, "wall_s": time.perf_counter() - t, "errors": {e: r.error for e, r in c.runs.items() if not r.ok},
           "groups": []}
    if rec["errors"]:
        return rec
    d = c.differences["groups"]
    for g in s.groups:
        dg = d[g.name]
        fl = c.results["fluid"].groups[g.name]
        rec["groups"].append({
            "group": g.name, "algorithm": g.algorithm.name, "describe": g.algorithm.describe(), "count": g.count,
            "paths": [list(p) for p in g.paths], "fluid_mbps": dg["rate_mbps"]["fluid"], "sim_mbps": dg["rate_mbps"]["sim"],
            "rel": dg["rel"]["sim vs fluid"], "fluid_unique": fl.extra.get("unique", True),
            "path_rel": [p["rel"]["sim vs fluid"] for p in dg["paths"]],
            "path_fluid_mbps": [p["rate_mbps"]["fluid"] for p in dg["paths"]],
            "path_sim_mbps": [p["rate_mbps"]["sim"] for p in dg["paths"]],
            "sim_routes": c.routes["sim"][g.name], "fluid_routes": c.routes["fluid"][g.name]})
    rec["diagnosis"] = c.diagnosis
    return rec


def summary(records: list[dict]) -> str:
    by: dict[str, dict[str, list[float]]] = {}
    for r in records:
        for g in r["groups"]:
            a = by.setdefault(g["algorithm"], {"group": [], "path": []})
            a["group"].append(abs(g["rel"]))
            if len(g["paths"]) > 1:
                a["path"] += [abs(x) for x in g["path_rel"] if x is not None and math.isfinite(x)]
    lines = ["| algorithm | groups | median / max group |rel| | within 10 % | multipath routes | median / max path |rel| | within 10 % |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for a in sorted(by):
        g, p = np.array(by[a]["group"]), np.array(by[a]["path"])
        gp = f"{100 * np.median(g):.1f} / {100 * g.max():.1f} %" if g.size else "—"
        pp = f"{100 * np.median(p):.1f} / {100 * p.max():.1f} %" if p.size else "—"
        lines.append(f"| {a} | {g.size} | {gp} | {int((g <= 0.1).sum())}/{g.size} | {p.size} | {pp} | "
                     f"{int((p <= 0.1).sum()) if p.size else 0}/{p.size} |")
    return "\n".join(lines) + "\n\n" + cause_table(records)


def cause_table(records: list[dict]) -> str:
    """Misses (|rel| > 10 %, per group and per multipath route) by the causes the diagnosis names."""
    from collections import Counter
    count, n_miss, unexplained = Counter(), 0, []
    for r in records:
        for g in r["groups"]:
            items = [(abs(g["rel"]), sorted({c for row in g["sim_routes"] for c in row.get("causes", [])}))]
            if len(g["paths"]) > 1:
                items += [(abs(x), row.get("causes", [])) for x, row in zip(g["path_rel"], g["sim_routes"])
                          if x is not None and math.isfinite(x)]
            for rel, tags in items:
                if rel > 0.10:
                    n_miss += 1
                    count.update(tags)
                    if not tags:
                        unexplained.append(f"scenario {r['seed']} {g['group']} ({g['describe']})")
    lines = [f"misses (group or multipath route > 10 %): {n_miss}; without a named cause: {len(unexplained)}",
             "", "| cause | misses showing it |", "| --- | --- |"]
    lines += [f"| {c} | {k} |" for c, k in count.most_common()]
    if unexplained:
        lines += ["", "without a named cause: " + "; ".join(unexplained)]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenarios", type=int, default=30)
    ap.add_argument("--first-seed", type=int, default=1)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--duration", type=float, default=60.0)
    ap.add_argument("--red-bdp", type=float, nargs=2, default=None, metavar=("LO", "HI"),
                    help="RED min_th as a fraction of the BDP (scenario_gen red_min_th_bdp)")
    ap.add_argument("--out", default=str(Path(__file__).with_name("fluid_vs_sim.json")))
    a = ap.parse_args()
    records = []
    for seed in range(a.first_seed, a.first_seed + a.scenarios):
        rec = one(seed, a.runs, a.duration, tuple(a.red_bdp) if a.red_bdp else None)
        records.append(rec)
        worst = max((abs(g["rel"]) for g in rec["groups"]), default=float("nan"))
        print(f"scenario {seed}: {len(rec['groups'])} groups, worst group |rel| {100 * worst:.1f} %, "
              f"{rec['wall_s']:.1f} s {rec['errors'] or ''}", flush=True)
        Path(a.out).write_text(dumps({"args": vars(a), "records": records}) + "\n")
    print(summary([r for r in records if not r["errors"]]))


if __name__ == "__main__":
    main()
