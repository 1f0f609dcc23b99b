"""The linux mode's rates with the simple and the Linux receiver against every recorded testbed
run without MPCC_BPF_CONN (bench/kernel/RESULTS.md §20: conn_mechanisms_tb_19.json and _20.json,
87 runs): the multipath group within 15 %, every group, every group and path, and the median
difference per algorithm. Run from the checkout's root:

    .venv/bin/python bench/kernel/notes/receiver_rates.py
"""
import dataclasses
import json
import statistics as st
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "python")); sys.path.insert(0, str(ROOT / "bench" / "kernel"))
from conn_mechanisms import scenario_text, _rel
from mpcc import scenario, sim
rows = json.load(open(ROOT / "bench/kernel/conn_mechanisms_tb_19.json")) + json.load(open(ROOT / "bench/kernel/conn_mechanisms_tb_20.json"))
rows = [r for r in rows if r.get("conn", "none") == "none" and r.get("algorithm")]
cache = {}
res = {v: {"mp": 0, "groups": 0, "all": 0, "mp_err": [], "per_alg": {}} for v in ("simple", "linux")}
for r in rows:
    key = (r["seed"], r["algorithm"])
    if key not in cache:
        s = scenario.loads(scenario_text(r["seed"], 30, r["algorithm"]), "g.toml")
        out = {}
        for v in ("simple", "linux"):
            sm = dataclasses.replace(s, engine={**s.engine, "sim": {"mptcp": "linux", "receiver": v}})
            rs = [sim.run(sm, seed=k, sample_interval_s=0, measure=(10, 30)).result for k in range(2)]
            out[v] = {g.name: (st.mean(x.groups[g.name].rate_mbps for x in rs),
                               [st.mean(x.groups[g.name].path_rate_mbps[i] for x in rs) for i in range(len(g.paths))]) for g in s.groups}
        cache[key] = out
    for v in ("simple", "linux"):
        o = cache[key][v]
        mp = abs(_rel(r["testbed"], o["mp"][0])) <= 15
        others = all(abs(_rel(r["others"][g], o[g][0])) <= 15 for g in r["others"])
        paths = all(abs(_rel(p, q)) <= 15 for p, q in zip(r["paths"], o["mp"][1]))
        res[v]["mp"] += mp; res[v]["groups"] += mp and others; res[v]["all"] += mp and others and paths
        res[v]["per_alg"].setdefault(r["algorithm"], []).append(_rel(r["testbed"], o["mp"][0]))
print(len(rows), "runs")
for v in res:
    print(v, "MP within15", res[v]["mp"], "every group", res[v]["groups"], "every group+path", res[v]["all"])
    print("  medians:", {a: round(st.median(x), 1) for a, x in sorted(res[v]["per_alg"].items())})
