"""Jiang et al. Fig. 9 on the kernel, short: overall utilisation of one MTC flow with one subflow
on each of n paths (5 Mb/s, D = 100 ms, buffer 2 packets: γ ≈ 0.05), for the MTCP presets and
MSTCP, n = 1, 2, 4. The paper's ordering (§3.2, Fig. 4, §5.1 Fig. 9): coupled-increase stays near
single-path TCP; coupled-decrease falls with n but stays ≥ 50 %; fully-coupled and MSTCP fall
lowest. Root; one testbed run at a time under the shared bench lock.

    sudo .venv/bin/python bench/kernel/mtcp/fig9.py OUTDIR [--duration 40]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from mpcc.reproduce.jiang2011.scenarios import fig9_scenario

ALGOS = ("coupled-increase", "coupled-decrease", "fully-coupled", "mstcp")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--duration", type=float, default=40.0)
    ap.add_argument("--n", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--buffer", type=int, default=2, help="packets per link (Fig. 9: 2 and 20)")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    rows = {}
    for algo in ALGOS:
        for n in a.n:
            toml = a.out / f"{algo}-n{n}-b{a.buffer}.toml"
            toml.write_text(fig9_scenario(algo, n, a.buffer, duration_s=a.duration))
            p = subprocess.run(["flock", "/tmp/mpcc-bench.lock", sys.executable, "-m", "mpcc.cli", "testbed", str(toml),
                                "--json", "--no-progress", "--warmup", str(a.duration / 4)],
                               capture_output=True, text=True)
            if p.returncode != 0:
                print(f"{algo} n={n}: failed: {p.stderr.strip()[-300:]}", file=sys.stderr)
                continue
            (a.out / f"{algo}-n{n}-b{a.buffer}.json").write_text(p.stdout)
            r = json.loads(p.stdout)
            u = sum(l["load_mbps"] for l in r["links"].values()) / (5.0 * n)
            rows[f"{algo}/n{n}/b{a.buffer}"] = u
            print(f"| {algo} | {n} | {a.buffer} | {100 * u:.1f} % |", flush=True)
    (a.out / f"fig9-b{a.buffer}.json").write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
