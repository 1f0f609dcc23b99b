#!/usr/bin/env python3
"""Per path of the multipath group: rate, window, srtt, from a testbed run's and a simulator
run's subflows.parquet, and each testbed group's retransmitted fraction (bench/kernel/RESULTS.md
§29, network 7 with OLIA, whose second path the linux mode over-predicts).

    sudo flock /tmp/mpcc-bench.lock .venv/bin/mpcc testbed NET.toml --runs 2 --out TB
    .venv/bin/mpcc sim NET_LINUX.toml --runs 4 --measure 10 30 --out SIM    ([sim] mptcp = "linux")
    .venv/bin/python bench/kernel/notes/path_trace_compare.py TB SIM

Concluded (2026-11-30, network 7, OLIA, two sound runs against four simulator seeds): the
kernel's second path runs a window 15 % smaller (10.0 against 11.7 packets) at a 7 % shorter srtt;
its subflow loses the same fraction of its packets as the Reno flows on its link (0.68 % and
0.67 %), so the router does not single it out. The link's price is 15 % higher on the testbed in
these runs, for the Reno flows too, which accounts for about half of the window's difference.
"""
import collections
import sys

import numpy as np
import pyarrow.parquet as pq

WARMUP_S = 10.0


def series(out_dir: str) -> dict:
    rows = pq.read_table(f"{out_dir}/subflows.parquet").to_pylist()
    run = "run" if "run" in rows[0] else "seed"
    by = collections.defaultdict(list)
    for x in rows:
        if x["time_s"] >= WARMUP_S:
            by[(str(x["group"]), x["route"], x[run], x["flow"])].append(x)
    for h in by.values():
        h.sort(key=lambda x: x["time_s"])
    return by


def report(out_dir: str) -> None:
    by = series(out_dir)
    print(out_dir)
    paths = collections.defaultdict(list)
    for (g, r, _, _), h in by.items():
        if g == "mp":
            paths[r].extend(h)
    for r in sorted(paths):
        w = np.array([x["cwnd_pkts"] for x in paths[r]], float)
        s = np.array([x["srtt_s"] for x in paths[r]])
        rate = np.array([x["rate_mbps"] for x in paths[r]])
        print(f"  mp path {r}: {rate.mean():.2f} Mb/s, cwnd {w.mean():.1f} (p10 {np.quantile(w, .1):.0f}, "
              f"p90 {np.quantile(w, .9):.0f}), srtt {1e3 * s.mean():.1f} ms")
    stalls(by)
    if not any("retrans" in h[0] for h in by.values()):
        return
    lost = collections.defaultdict(lambda: [0, 0.0])
    for (g, r, _, _), h in by.items():
        dt = h[-1]["time_s"] - h[0]["time_s"]
        lost[(g, r)][0] += h[-1]["retrans"] - h[0]["retrans"]
        lost[(g, r)][1] += np.mean([x["rate_mbps"] for x in h]) * dt * 1e6 / 8 / 1448
    for (g, r), (n, pk) in sorted(lost.items()):
        print(f"  {g} path {r}: retransmitted {n} of ≈ {pk:.0f} packets ({100 * n / pk:.2f} %)")


def stalls(by: dict) -> None:
    """Per path of the multipath group: the samples in which a subflow carried less than a
    tenth of the path's mean rate, and the runs of them (stalls): how long, how far apart."""
    per = collections.defaultdict(list)
    for (g, r, _, _), h in by.items():
        if g == "mp":
            per[r].append(h)
    for r in sorted(per):
        dt = np.median(np.diff([x["time_s"] for x in per[r][0]]))
        low = 0.1 * np.mean([x["rate_mbps"] for h in per[r] for x in h])
        n, idle, length, gaps = 0, 0, [], []
        for h in per[r]:
            z = np.array([x["rate_mbps"] < low for x in h])
            n, idle = n + len(z), idle + int(z.sum())
            edges = np.flatnonzero(np.diff(np.concatenate(([0], z.astype(int), [0]))))
            starts, ends = edges[::2], edges[1::2]
            length += list((ends - starts) * dt)
            gaps += list(np.diff(starts) * dt)
        if length:
            print(f"  mp path {r}: {100 * idle / n:.0f} % of {dt * 1e3:.0f}-ms samples below a tenth of its mean; "
                  f"{len(length)} stalls, median {np.median(length):.2f} s, starts {np.median(gaps) if gaps else np.nan:.2f} s apart")


if __name__ == "__main__":
    for d in sys.argv[1:]:
        report(d)
