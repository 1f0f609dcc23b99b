#!/usr/bin/env python3
"""Per cell (generated network × algorithm): the multipath group's rate split by whether the
connection's send buffer grew past its initial size, on the testbed's rows and in the linux mode
given the same runs' start times (bench/kernel/RESULTS.md §30).

A connection's send buffer (the sum of its subflows', `__mptcp_sync_sndbuf`) grows only when a
subflow's window passes 2 · per_mss · w > its initial `tcp_wmem` buffer (w > 56 packets with
per_mss 2304 and 256 KB: `tcp_sndbuf_expand`); a run either crosses that or not, so a cell's
mean mixes two rates, and its agreement depends on how often each engine crosses.

    .venv/bin/python bench/kernel/notes/sndbuf_growth_split.py [--cells 4:fully-coupled,4:coupled] \\
        [--per-run 8] bench/kernel/conn_mechanisms_tb_{19..29}.json

Concluded (2026-11-30, network 4 with Coupled and fully-coupled, all 21 and 19 rows, sound or
not): given the buffer's growth, the linux mode's group and path rates are within 2–6 % of the
testbed's for fully-coupled and 2–11 % for Coupled; the cells' gap is how often the buffer grows
(testbed 10 of 21 and 9 of 19 runs, the linux mode 21 % and 28 % of its runs with the same
starts; over all of network 4's cells 30 of 103 runs against 15 predicted). The growth is
decided in the first second: the long path's window escapes the first loss round of the
flows' slow starts (116–177 packets) or not (36–57); in 12 traced attempts on 4 start draws the
testbed grew it 6 times, the linux mode 6.7 expected.
"""
import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from conn_mechanisms import SIM_MODES  # noqa: E402
from linux_mode_agreement import load_rows, quantities, set_per_mss, sim_at_testbed_starts  # noqa: E402

GROWN_KB = 600   # the connection's initial buffer is 2 × 258 KB = 516 KB on the testbed


def split(rates: list[float], bufs: list[float]) -> str:
    """Runs whose sampled send buffer grew past GROWN_KB, and the mean rate of each side."""
    g = [x for x, b in zip(rates, bufs) if b > GROWN_KB]
    n = [x for x, b in zip(rates, bufs) if b <= GROWN_KB]
    m = lambda v: f"{statistics.mean(v):.2f}" if v else "  – "  # noqa: E731
    return f"grown {len(g):3d}/{len(rates):3d} {m(g)} | not {m(n)}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--cells", default="", help="comma list of seed:algorithm (default: every cell)")
    ap.add_argument("--per-run", type=int, default=8, help="simulator seeds per testbed run's starts")
    ap.add_argument("--sound-only", action="store_true")
    a = ap.parse_args()
    rows = [r for r in load_rows(a.files, "sndbuf_growth_split")
            if r.get("conn", "none") == "none" and r.get("msk") and "paths" in r and r.get("algorithm")
            and ((r.get("health") or {}).get("sound", False) or not a.sound_only)]
    want = {(int(c.split(":")[0]), c.split(":")[1]) for c in a.cells.split(",") if c}
    cells: dict = {}
    for r in rows:
        if not want or (r["seed"], r["algorithm"]) in want:
            cells.setdefault((r["seed"], r["algorithm"]), []).append(r)
    linux = dict(SIM_MODES["linux"])
    set_per_mss(linux, rows, "sndbuf_growth_split")
    for (seed, algo), runs in sorted(cells.items()):
        sim = sim_at_testbed_starts(seed, algo, 30.0, 10.0, runs, a.per_run, linux)
        tb = [quantities(r) for r in runs]
        tb_buf = [r["msk"]["sndbuf_kb"] for r in runs]
        sim_buf = [x["conn:sndbuf_kb"] for x in sim]
        print(f"{seed}/{algo}")
        for q in ["mp"] + [f"mp/path {i}" for i in range(len(runs[0]["paths"]))]:
            print(f"  {q:<10} testbed {split([t[q] for t in tb], tb_buf)}   linux {split([x[q] for x in sim], sim_buf)}")


if __name__ == "__main__":
    main()
