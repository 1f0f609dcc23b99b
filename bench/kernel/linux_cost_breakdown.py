#!/usr/bin/env python3
"""bench/kernel/linux_cost_breakdown.py: the kernel's multipath deficit against the ideal model,
mechanism by mechanism (issue #30, done-when item 2).

The simulator runs each cell in seven variants, all against its ideal mode:

    ideal            [sim] mptcp = "ideal", receiver = "simple", tlp = "off": the papers' MPTCP,
                     every subflow always has data
    tcp              ideal + every receiver's Linux delayed-ACK engine and tail loss probes
                     (receiver = "linux", tlp = "on"): Linux TCP on every flow, nothing of MPTCP's
    linux            the linux mode as linux_mode_agreement.py runs it: upstream's connection
                     level with the testbed's tcp_wmem and tcp_rmem (4096 262144 33554432), the
                     buffers sized as upstream sizes them (tcp_sndbuf_expand, mptcp_rcv_space_adjust)
    rcvbuf 64 MB     linux with tcp_rmem's initial and maximum 64 MB: the shared receive window
                     never closes in a 30-s run
    sndbuf 64 MB     linux with tcp_wmem's initial and maximum 64 MB: every subflow's send buffer
                     holds whatever the scheduler gives it
    both 64 MB       both: what is left is the scheduler's 64-KB bursts whatever the window, data
                     freed only by the DATA_ACK, the connection-level timer and stale subflows
    quickack         linux with every receiver ACKing each segment at once (receiver = "simple"):
                     the route metric quickack 1 at the receiver (tcp_in_quickack_mode), which
                     conn_mechanisms.py testbed --quickack sets on the testbed

so a limit's cost is linux minus linux without it. Per cell (a generated network × the multipath
group's algorithm with ≥ --min-runs sound testbed runs, MPCC_BPF_CONN unset, as
linux_mode_agreement.py reads them) the multipath group's rate per flow is the mean over
⌈sim-seeds / runs⌉ simulator seeds per testbed run, given each run's start times (``--starts
testbed`` of linux_mode_agreement.py), and so is the testbed's mean: each 100 (x / ideal − 1);
per algorithm the medians over its cells.

    .venv/bin/python bench/kernel/linux_cost_breakdown.py bench/kernel/conn_mechanisms_tb_{19..30}.json

``--no-testbed`` leaves the testbed out: the rows then only give the cells and start times, and
``--secs`` / ``--warmup`` may differ from the runs' (e.g. ``--secs 120 --warmup 100``: the last 20 s
of longer runs). ``--json F`` writes every cell's numbers. ``sndbuf_per_mss`` (a constant of the kernel's build)
is the rows' recorded value, as in linux_mode_agreement.py.

``--over-time SEED:ALGORITHM`` (no files) shows that an unbounded buffer only postpones the stall:
the cell's ideal, linux, "both 64 MB" and quickack rates over the last 20 s of runs of 30, 120 and 300 s
(4 simulator seeds, the simulator's own starts, the running kernel's sndbuf_per_mss), with the
share of idle subflow samples whose receive window was full and the weaker path's share of a
flow's rate (mean over flows).
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conn_mechanisms import QUICKACK_SIM  # noqa: E402
from linux_mode_agreement import cells, check_length, fail, load_rows, set_per_mss, sim_at_testbed_starts  # noqa: E402

#: bytes: more than a 30-s run of these networks queues, as a buffer's initial and maximum size
UNBOUNDED = 64 << 20
IDEAL = {"mptcp": "ideal", "receiver": "simple", "tlp": "off"}
LINUX = {"mptcp": "linux"}
RCV = {"tcp_rmem_default": UNBOUNDED, "tcp_rmem_max": UNBOUNDED}
SND = {"tcp_wmem_default": UNBOUNDED, "tcp_wmem_max": UNBOUNDED}
#: the variants (see the module's text); the linux ones also get the kernel's sndbuf_per_mss
VARIANTS: dict[str, dict] = {
    "ideal": IDEAL,
    "tcp": {**IDEAL, "receiver": "linux", "tlp": "on"},
    "linux": LINUX,
    "rcvbuf 64 MB": {**LINUX, **RCV},
    "sndbuf 64 MB": {**LINUX, **SND},
    "both 64 MB": {**LINUX, **RCV, **SND},
    "quickack": {**LINUX, **QUICKACK_SIM},
}
#: what each limit costs: (name, variant, the variant without it)
COSTS = [("Linux TCP", "tcp", "ideal"), ("receive buffer", "linux", "rcvbuf 64 MB"),
         ("send buffer", "linux", "sndbuf 64 MB"), ("both buffers", "linux", "both 64 MB"),
         ("connection level, no buffer limit", "both 64 MB", "tcp"),
         ("delayed ACKs", "linux", "quickack")]


def variant_options(per_mss: dict) -> dict[str, dict]:
    """Each variant's [sim] table; ``per_mss``: the linux variants' sndbuf_per_mss."""
    return {n: {**o, **(per_mss if o["mptcp"] == "linux" else {})} for n, o in VARIANTS.items()}


def over_time(cell: str, per_mss: dict, lengths=(30.0, 120.0, 300.0), seeds: int = 4, last: float = 20.0) -> None:
    """The ``--over-time`` table (module text)."""
    from linux_mode_agreement import cell_scenario
    from mpcc import sim
    seed, _, algo = cell.partition(":")
    if not seed.isdigit() or not algo:
        fail("linux_cost_breakdown", f"--over-time {cell!r}: not SEED:ALGORITHM (fix: e.g. --over-time 1:coupled)")
    shown = ("ideal", "linux", "both 64 MB", "quickack")
    variants = variant_options(per_mss)
    from mpcc.errors import MpccError
    try:
        cell_scenario(int(seed), algo, lengths[0], variants["linux"])
    except MpccError as e:
        fail("linux_cost_breakdown", f"--over-time {cell!r}: {e}")
    print(f"Network {seed}, {algo}: the multipath group over the last {last:g} s, Mb/s per flow (mean of {seeds} "
          f"seeds); in parentheses the weaker path's share of a flow's rate and, where there were idle "
          f"subflow samples, the share of them with the receive window full\n")
    print("| run length | " + " | ".join(shown) + " |")
    print("|---|" + "---|" * len(shown))
    for secs in lengths:
        cols = []
        for name in shown:
            sm = cell_scenario(int(seed), algo, secs, variants[name])
            rs = [sim.run(sm, seed=k, sample_interval_s=0, measure=(secs - last, secs)).result.groups["mp"]
                  for k in range(seeds)]
            full = [g.extra["connection_limits"].get("idle_rwnd_full", math.nan) for g in rs
                    if "connection_limits" in g.extra]
            full = [x for x in full if not math.isnan(x)]
            weaker = [min(p) / sum(p) for g in rs for p in g.extra["per_flow_path_mbps"] if sum(p) > 0]
            cols.append(f"{statistics.mean(g.rate_mbps for g in rs):.2f} ({statistics.mean(weaker):.2f}"
                        + (f"; {100 * statistics.mean(full):.0f} %)" if full else ")"))
        print(f"| {secs:g} s | " + " | ".join(cols) + " |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", type=Path, help="conn_mechanisms.py testbed JSON files")
    ap.add_argument("--over-time", metavar="SEED:ALGORITHM", help="the stall over longer runs instead (no files)")
    ap.add_argument("--secs", type=float, default=30.0)
    ap.add_argument("--warmup", type=float, default=10.0)
    ap.add_argument("--sim-seeds", type=int, default=16)
    ap.add_argument("--min-runs", type=int, default=2)
    ap.add_argument("--json", type=Path, help="write every cell's numbers here")
    ap.add_argument("--no-testbed", action="store_true", help="the simulator's variants only: the rows give the "
                    "cells and start times, --secs and --warmup may differ from theirs")
    a = ap.parse_args()
    prog = "linux_cost_breakdown"
    if a.over_time:
        per_mss: dict = {}
        set_per_mss(per_mss, [], prog)
        over_time(a.over_time, per_mss)
        return
    if not a.files:
        fail(prog, "no testbed files (fix: give conn_mechanisms.py testbed JSON files, e.g. "
                   "bench/kernel/conn_mechanisms_tb_27.json, or --over-time SEED:ALGORITHM)")
    rows = load_rows(a.files, prog)
    per_mss = {}
    set_per_mss(per_mss, rows, prog)
    variants = variant_options(per_mss)
    cs = cells(rows, a.min_runs)
    if not cs:
        fail(prog, f"no cell has {a.min_runs} sound runs (fix: record more with conn_mechanisms.py testbed, "
                   "or lower --min-runs)")
    if not a.no_testbed:
        check_length([r for rs in cs.values() for r in rs], a.secs, a.warmup, prog, ", or --no-testbed")
    records = []
    for (seed, algo), runs in cs.items():
        per = max(2, math.ceil(a.sim_seeds / len(runs)))
        mp = {name: statistics.mean(q["mp"] for q in sim_at_testbed_starts(seed, algo, a.secs, a.warmup, runs, per, o))
              for name, o in variants.items()}
        if not a.no_testbed:
            mp["testbed"] = statistics.mean(r["testbed"] for r in runs)
        rec = {"seed": seed, "algorithm": algo, "runs": len(runs), "mp_mbps": mp,
               "vs_ideal": {k: 100 * (v / mp["ideal"] - 1) for k, v in mp.items()}}
        records.append(rec)
        print(f"{seed}/{algo}: " + ", ".join(f"{k} {v:+.1f}" for k, v in rec["vs_ideal"].items()),
              file=sys.stderr, flush=True)
    by_algo: dict[str, list[dict]] = {}
    for r in records:
        by_algo.setdefault(r["algorithm"], []).append(r)
    groups = sorted(by_algo.items()) + [("all", records)]
    names = [n for n in variants if n != "ideal"] + ([] if a.no_testbed else ["testbed"])
    print(f"Multipath group against the ideal mode, % (median over cells; {a.sim_seeds} simulator seeds "
          f"per cell at the testbed runs' starts):\n")
    print("| MP algorithm | cells | " + " | ".join(names) + " |")
    print("|---|---|" + "---|" * len(names))
    for algo, rs in groups:
        print(f"| {algo} | {len(rs)} | " + " | ".join(f"{statistics.median(r['vs_ideal'][n] for r in rs):+.1f}"
                                                     for n in names) + " |")
    print("\nWhat each costs (median over cells of the variant minus the variant without it, points of the "
          "ideal rate), and the testbed against the linux mode:\n")
    print("| MP algorithm | " + " | ".join(f"{c} ({v} − {w})" for c, v, w in COSTS)
          + ("" if a.no_testbed else " | testbed − linux") + " |")
    print("|---|" + "---|" * (len(COSTS) + (0 if a.no_testbed else 1)))
    for algo, rs in groups:
        cols = [statistics.median(r["vs_ideal"][v] - r["vs_ideal"][w] for r in rs) for _, v, w in COSTS]
        if not a.no_testbed:
            cols.append(statistics.median(r["vs_ideal"]["testbed"] - r["vs_ideal"]["linux"] for r in rs))
        print(f"| {algo} | " + " | ".join(f"{c:+.1f}" for c in cols) + " |")
    if a.json:
        a.json.write_text(json.dumps({"variants": variants, "cells": records}, indent=1))


if __name__ == "__main__":
    main()
