"""Identical results of two engine builds: `simbench` (crates/mpcc-core/examples) of each on every
scenario in scenarios/ that the sim loads (first 30 s, time series every 0.5 s) and on k = 4
fat-tree variants (0.3 ms per hop, delayed ACKs, no jitter, 0.1 % loss, RED/ECN, background
traffic, Reno) plus k = 8 and 16; prints `same`/`DIFF` per case (the FNV-1a digest of every
output column). No timing: no lock needed.

Usage: .venv/bin/python bench/sim/same_results.py BEFORE_SIMBENCH AFTER_SIMBENCH
"""
import copy
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
from mpcc import scenario, topo
from mpcc.sim.engine import core_config
tmp = Path(tempfile.mkdtemp())
cases = {}
for p in sorted((ROOT / "scenarios").rglob("*.toml")):
    try:
        s = scenario.load(p)
        cfg = core_config(s, seed=1, sample_interval_s=0.5)
    except Exception as e:  # a scenario the packet simulator does not run (model-only, …)
        print("skip", p.name, str(e)[:60])
        continue
    d = min(cfg["duration_s"], 30.0)
    cfg["duration_s"] = d
    m0, m1 = cfg["measure"]
    cfg["measure"] = [min(m0, d / 2), d]
    cases[p.stem + "-" + p.parent.name] = cfg


def ft(k, d, **kw):
    tree = topo.fattree(k, subflows=8, algorithm=kw.pop("algorithm", "lia"), seed=1, duration_s=d, **kw)
    return core_config(topo.scenario(tree), seed=1, sample_interval_s=0.01)



base = ft(4, 0.3)
cases["ft4"] = base
cases["ft4-0.3ms"] = ft(4, 0.3, delay_ms=0.3)
for name in ("delack", "nojitter", "loss", "red-ecn", "bg"):
    c = cases[f"ft4-{name}"] = copy.deepcopy(base)
    if name == "delack":
        c["options"]["delayed_ack"] = True
    elif name == "nojitter":
        c["options"]["host_jitter_s"] = 0.0
    elif name == "loss":
        for link in c["links"]:
            link["loss"] = 0.001
    elif name == "red-ecn":
        c["options"]["ecn"] = True
        for link in c["links"]:
            link["red"] = {"min_th": 10, "max_th": 40, "max_p": 0.1, "ecn": True}
    else:
        c["background"] = [{"path": g["paths"][0], "rate_mbps": 300, "mean_on_s": 0.01, "mean_off_s": 0.01,
                            "stop_s": 0.3} for g in c["groups"][:4]]
cases["ft4-reno"] = ft(4, 0.3, algorithm="reno")
cases["ft8"] = ft(8, 0.1)
cases["ft16"] = ft(16, 0.02)
bins = sys.argv[1:3]
bad = 0
for name, cfg in cases.items():
    cfg.pop("max_memory_mb", None)
    f = tmp / f"{name}.json"
    f.write_text(json.dumps(cfg))
    ds = []
    for b in bins:
        p = subprocess.run([b, str(f), "1"], capture_output=True, text=True)
        ds.append(json.loads(p.stdout.replace(": inf", ": null"))["digest"] if p.returncode == 0 else "ERR " + p.stderr[-200:])
    ok = ds[0] == ds[1] and not ds[0].startswith("ERR")
    bad += not ok
    print(f"{'same' if ok else 'DIFF'} {name} {ds}")
print(f"{len(cases)} cases, {bad} differ")
