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


def path_items(g: dict) -> list[tuple[float, dict]]:
    """(|rel|, sim route row) per route of a multipath group. A route the fluid model leaves empty
    (boundary equilibrium) that the sim uses differs by +∞ (null in the JSON): a miss, not a
    missing value (until 2026-11-24 these were left out)."""
    out = []
    for k, (x, row) in enumerate(zip(g["path_rel"], g["sim_routes"])):
        if x is None or not math.isfinite(x):
            if g["path_fluid_mbps"][k] == 0 and g["path_sim_mbps"][k] > 0:
                x = math.inf
            elif x is None or math.isnan(x):
                continue
        out.append((abs(x), row))
    return out


def _fmt(v: float) -> str:
    return "∞" if math.isinf(v) else f"{100 * v:.1f}"


def summary(records: list[dict]) -> str:
    by: dict[str, dict[str, list[float]]] = {}
    for r in records:
        for g in r["groups"]:
            a = by.setdefault(g["algorithm"], {"group": [], "path": []})
            a["group"].append(abs(g["rel"]))
            if len(g["paths"]) > 1:
                a["path"] += [x for x, _ in path_items(g)]
    lines = ["| algorithm | groups | median / max group |rel| | within 10 % | multipath routes | median / max path |rel| | within 10 % |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    tot = {"g": [0, 0], "p": [0, 0], "gm": [], "pm": []}
    for a in sorted(by):
        g, p = np.array(by[a]["group"]), np.array(by[a]["path"])
        gp = f"{_fmt(np.median(g))} / {_fmt(g.max())} %" if g.size else "—"
        pp = f"{_fmt(np.median(p))} / {_fmt(p.max())} %" if p.size else "—"
        lines.append(f"| {a} | {g.size} | {gp} | {int((g <= 0.1).sum())}/{g.size} | {p.size} | {pp} | "
                     f"{int((p <= 0.1).sum()) if p.size else 0}/{p.size} |")
        tot["g"][0] += int((g <= 0.1).sum()); tot["g"][1] += g.size
        tot["p"][0] += int((p <= 0.1).sum()); tot["p"][1] += p.size
        tot["gm"] += list(g); tot["pm"] += list(p)
    lines.append(f"| all | {tot['g'][1]} | {_fmt(np.median(tot['gm']))} / {_fmt(max(tot['gm']))} % | {tot['g'][0]}/{tot['g'][1]} | "
                 f"{tot['p'][1]} | {_fmt(np.median(tot['pm']))} / {_fmt(max(tot['pm']))} % | {tot['p'][0]}/{tot['p'][1]} |")
    return "\n".join(lines) + "\n\n" + cause_table(records) + "\n\n" + rtt_line(records)


def rtt_line(records: list[dict]) -> str:
    """The sim's mean RTT against the fluid τ_r over every route."""
    ratio = np.array([s["mean_rtt_ms"] / f["mean_rtt_ms"] for r in records for g in r["groups"]
                      for s, f in zip(g["sim_routes"], g["fluid_routes"])
                      if s.get("mean_rtt_ms") and f.get("mean_rtt_ms")])
    if not ratio.size:
        return ""
    q1, med, q3 = np.percentile(ratio, [25, 50, 75])
    return (f"sim mean RTT / fluid RTT over {ratio.size} routes: median {med:.3f} (IQR {q1:.3f}–{q3:.3f}); "
            f"within 10 %: {int((np.abs(ratio - 1) <= 0.1).sum())}/{ratio.size}")


def cause_table(records: list[dict]) -> str:
    """Misses (|rel| > 10 %, per group and per multipath route) by the causes the diagnosis names."""
    from collections import Counter
    count, n_miss, unexplained = Counter(), 0, []
    for r in records:
        for g in r["groups"]:
            items = [(abs(g["rel"]), sorted({c for row in g["sim_routes"] for c in row.get("causes", [])}))]
            if len(g["paths"]) > 1:
                items += [(x, row.get("causes", [])) for x, row in path_items(g)]
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


def retag(records: list[dict]) -> None:
    """Recompute every sim route's cause tags with the current ``mpcc.compare.diagnosis.causes``
    from the quantities stored in the records (to compare runs made with another diagnosis)."""
    from mpcc.compare import diagnosis
    for r in records:
        for g in r["groups"]:
            for row, frow in zip(g["sim_routes"], g["fluid_routes"]):
                row["causes"] = diagnosis.causes({k: (math.nan if v is None else v) for k, v in row.items()},
                                                 {k: (math.nan if v is None else v) for k, v in frow.items()})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenarios", type=int, default=30)
    ap.add_argument("--first-seed", type=int, default=1)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--duration", type=float, default=60.0)
    ap.add_argument("--red-bdp", type=float, nargs=2, default=None, metavar=("LO", "HI"),
                    help="RED min_th as a fraction of the BDP (scenario_gen red_min_th_bdp)")
    ap.add_argument("--out", default=str(Path(__file__).with_name("fluid_vs_sim.json")))
    ap.add_argument("--summarize", metavar="JSON", help="print the summary of an earlier run's records and stop")
    ap.add_argument("--retag", action="store_true", help="with --summarize: recompute the cause tags with the current diagnosis")
    a = ap.parse_args()
    if a.summarize:
        records = [r for r in json.loads(Path(a.summarize).read_text())["records"] if not r["errors"]]
        if a.retag:
            retag(records)
        print(summary(records))
        return
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
