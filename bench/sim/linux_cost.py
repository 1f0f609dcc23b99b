"""The linux MPTCP connection level's cost per data packet: the Table III scenario (Balia, 100
simulated s, no time series; bench/sim/run.py's engine case) with `[sim] mptcp = "ideal"` and
`"linux"`, run alternately by crates/mpcc-core/examples/simbench (build it first:
`cargo build --release -p mpcc-core --example simbench`; ``SIMBENCH=path`` runs another build of
it, e.g. the parent commit's, for a before/after), medians of CPU ns per data packet.

Usage: .venv/bin/python bench/sim/linux_cost.py [--rounds 5]
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
BIN = Path(os.environ.get("SIMBENCH", ROOT / "target/release/examples/simbench"))


def main() -> None:
    from mpcc import scenario
    from mpcc.sim.engine import core_config

    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    s = scenario.load(ROOT / "scenarios/peng2016/table3.toml").with_changes(duration_s=100.0)
    runs: dict[str, list[dict]] = {"ideal": [], "linux": []}
    with tempfile.TemporaryDirectory() as d:
        cfgs = {}
        for mode in runs:
            sm = dataclasses.replace(s, engine={**s.engine, "sim": {**(s.engine.get("sim") or {}), "mptcp": mode}})
            cfg = core_config(sm, seed=1, sample_interval_s=0)
            cfg.pop("max_memory_mb", None)
            cfgs[mode] = Path(d) / f"{mode}.json"
            cfgs[mode].write_text(json.dumps(cfg))
        for _ in range(a.rounds):
            for mode, cfg in cfgs.items():
                p = subprocess.run([str(BIN), str(cfg), "1"], capture_output=True, text=True, check=True)
                runs[mode].append(json.loads(p.stdout.splitlines()[-1].replace(": inf", ": null")))
    print("| mode | data packets | events/packet | CPU ns/packet (median) | M packets/s (median, wall) | peak RSS MB |")
    print("|---|---:|---:|---:|---:|---:|")
    for mode, rs in runs.items():
        r0 = rs[0]
        cpu = statistics.median(r["cpu_s"] / r["data_packets"] * 1e9 for r in rs)
        print(f"| {mode} | {r0['data_packets']:,} | {r0['events'] / r0['data_packets']:.2f} | {cpu:.0f} | "
              f"{statistics.median(r['packets_per_s'] for r in rs) / 1e6:.2f} | "
              f"{statistics.median(r['peak_rss_kb'] for r in rs) / 1024:.1f} |")


if __name__ == "__main__":
    main()
