#!/usr/bin/env python3
"""bench/kernel/conn_mechanisms.py: the connection-level mechanisms of bpf/include/mpcc_conn.h
(MPCC_BPF_CONN: sndbuf, pacing, penalise) on the generated RED scenarios of
bench/kernel/sim_vs_testbed.py: the multipath group's per-flow rate on the testbed against the
simulator's ideal and linux modes (``[sim] mptcp``), with the testbed's connection-level samples
(msk.csv, ``msk_limits``: send-buffer fill, idle samples with no data at the connection level).

    .venv/bin/python bench/kernel/conn_mechanisms.py sim --seeds 1,2,4,5 --secs 30 --json SIM.json
    sudo flock /tmp/mpcc-bench.lock .venv/bin/python bench/kernel/conn_mechanisms.py testbed \\
        --seeds 1,2 --conn none,all --secs 30 --json TB.json      (appends to TB.json)
    .venv/bin/python bench/kernel/conn_mechanisms.py table SIM.json TB.json

The simulator is deterministic per seed (2 seeds per mode); each testbed row is one run.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "python"))
sys.path.insert(0, str(HERE))

PAYLOAD = 1448


def _seeds(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def sim_rows(seeds: list[int], secs: float, warmup: float, sim_seeds: int = 2) -> dict:
    from sim_vs_testbed import generate
    from mpcc import scenario, sim
    out = {}
    for seed in seeds:
        s = scenario.loads(generate(seed, secs), "generated.toml")
        mp = next(g for g in s.groups if g.name == "mp")
        row = {"algorithm": mp.algorithm.describe(), "count": mp.count}
        for mode in ("ideal", "linux"):
            sm = dataclasses.replace(s, engine={**s.engine, "sim": {"mptcp": mode}})
            rs = [sim.run(sm, seed=k, sample_interval_s=0, measure=(warmup, secs)).result for k in range(sim_seeds)]
            row[mode] = statistics.mean(r.groups["mp"].rate_mbps for r in rs)
        out[str(seed)] = row
        print(seed, row, flush=True)
    return out


def testbed_rows(seeds: list[int], conns: list[str], secs: float, warmup: float) -> list[dict]:
    from sim_vs_testbed import generate, msk_limits
    from mpcc import scenario
    from mpcc.testbed import engine as tb
    rows = []
    for seed in seeds:
        s = scenario.loads(generate(seed, secs), "generated.toml")
        gi = next(i for i, g in enumerate(s.groups) if g.name == "mp")
        for conn in conns:
            os.environ["MPCC_BPF_CONN"] = conn
            with tempfile.TemporaryDirectory() as d:
                out = Path(d)
                try:
                    res = tb.run_detailed(s, tb.settings_from(s, warmup_s=warmup), out, progress=False)[0]
                except Exception as e:   # noqa: BLE001 (one failed variant must not lose the others)
                    print(json.dumps({"seed": seed, "conn": conn, "error": str(e)[:300]}), flush=True)
                    continue
                t0 = json.loads((out / "run0" / "connect.json").read_text())["t0"]
                msk = msk_limits(out / "run0", gi, t0 + warmup, t0 + secs)
            rate = res.groups["mp"].rate_mbps * s.packet_bytes / PAYLOAD
            row = {"seed": seed, "conn": conn, "testbed": rate, "msk": msk,
                   "others": {g.name: res.groups[g.name].rate_mbps * s.packet_bytes / PAYLOAD
                              for g in s.groups if g.name != "mp"}}
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def table(sim: dict, tbr: list[dict]) -> None:
    print("| seed | MP group | mechanisms | testbed | vs ideal | vs linux | idle | idle no data | send buffer / queued KB |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in tbr:
        s = sim[str(r["seed"])]
        m = r["msk"]
        print(f"| {r['seed']} | {s['algorithm']} ×{s['count']} | {r['conn']} | {r['testbed']:.2f} "
              f"| {100 * (r['testbed'] / s['ideal'] - 1):+.1f} % (ideal {s['ideal']:.2f}) "
              f"| {100 * (r['testbed'] / s['linux'] - 1):+.1f} % (linux {s['linux']:.2f}) "
              f"| {m.get('idle', float('nan')):.2f} | {m.get('idle_no_data', float('nan')):.2f} "
              f"| {m.get('sndbuf_kb', float('nan')):.0f} / {m.get('queued_kb', float('nan')):.0f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=("sim", "testbed", "table"))
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--seeds", default="1,2,4,5")
    ap.add_argument("--conn", default="none;all", help="semicolon-separated MPCC_BPF_CONN values")
    ap.add_argument("--secs", type=float, default=30.0)
    ap.add_argument("--warmup", type=float, default=10.0)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    if a.mode == "table":
        table(json.loads(a.files[0].read_text()), json.loads(a.files[1].read_text()))
        return
    if a.mode == "sim":
        data = sim_rows(_seeds(a.seeds), a.secs, a.warmup)
        if a.json:
            a.json.write_text(json.dumps(data, indent=1))
        return
    rows = testbed_rows(_seeds(a.seeds), a.conn.split(";"), a.secs, a.warmup)
    if a.json:
        old = json.loads(a.json.read_text()) if a.json.exists() else []
        a.json.write_text(json.dumps(old + rows, indent=1))


if __name__ == "__main__":
    main()
