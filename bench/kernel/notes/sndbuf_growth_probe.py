"""bench/kernel/notes/sndbuf_growth_probe.py (RESULTS.md §17e; root, under /tmp/mpcc-bench.lock):
    flock /tmp/mpcc-bench.lock .venv/bin/python bench/kernel/notes/sndbuf_growth_probe.py 5 coupled sndbuf none
When does MPCC_BPF_CONN=sndbuf grow the connection's buffer? One run per setting of a generated
RED network, msk.csv's SO_SNDBUF of the multipath group over time, from the attempt the run kept
(the last: an unsound attempt is re-run as run0-againN)."""
import csv
import os
import sys
import tempfile
from pathlib import Path
ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "python")); sys.path.insert(0, str(ROOT / "bench" / "kernel"))
from conn_mechanisms import scenario_text
from mpcc import scenario
from mpcc.testbed import engine as tb
seed, algo = int(sys.argv[1]), sys.argv[2]
s = scenario.loads(scenario_text(seed, 20, algo), "g.toml")
gi = next(i for i, g in enumerate(s.groups) if g.name == "mp")
for conn in sys.argv[3:]:
    os.environ["MPCC_BPF_CONN"] = conn
    d = Path(tempfile.mkdtemp(prefix=f"probe-{conn}-"))
    res, sums = tb.run_detailed(s, tb.settings_from(s, warmup_s=5), d, progress=False)
    kept = sorted(d.glob("run0*"))[-1]
    rows = [r for r in csv.DictReader(open(kept / "msk.csv")) if int(r["group"]) == gi]
    t0 = float(rows[0]["t"])
    by = {}
    for r in rows:
        by.setdefault(r["flow"], []).append((round(float(r["t"]) - t0, 1), int(r["sndbuf"]) // 1024))
    print(conn, "rate", round(res.groups["mp"].rate_mbps, 2), "attempt", kept)
    for f, v in by.items():
        changes = [v[0]] + [b for a, b in zip(v, v[1:]) if b[1] != a[1]]
        print("  flow", f, "sndbuf KB changes (t, KB):", changes[:12], "... last", v[-1])
