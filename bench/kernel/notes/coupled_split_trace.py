"""Why a coupled connection's split between paths drifts over a long run in the linux mode.

For one generated network and algorithm (default network 1, Coupled), runs the multipath group in
the ideal and the linux mode for SECS seconds and prints, per time window and per path of the
multipath flows: the share of the flow's rate, the mean window and srtt, window reductions per
second, and (linux mode) the share of subflow samples idle (packets out < cwnd) and the data
queued on the subflow. Run from bench/kernel:

    ../../.venv/bin/python notes/coupled_split_trace.py [--network 1] [--algorithm coupled] [--secs 120] \
        [--sim receiver=simple]...

(``--sim``: a [sim] setting for the linux mode, e.g. its receiver or buffers, docs/sim.md.)

Simulator only (no kernel). bench/kernel/RESULTS.md §32 records its output and the conclusion.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from linux_cost_breakdown import variant_options  # noqa: E402
from linux_mode_agreement import cell_scenario, parse_sim_settings  # noqa: E402


def windows(secs: float) -> list[tuple[float, float]]:
    edges = [0.0, 10.0, 30.0, 60.0] + [t for t in (120.0, 300.0) if t <= secs]
    edges = [e for e in edges if e < secs] + [secs]
    return list(zip(edges[:-1], edges[1:]))


def trace(network: int, algorithm: str, secs: float, seeds: int, per_mss: int, extra: dict) -> None:
    import numpy as np
    from mpcc import sim
    opts = variant_options({"sndbuf_per_mss": per_mss})
    opts["linux"] = {**opts["linux"], **extra}
    scenarios = {mode: cell_scenario(network, algorithm, secs, opts[mode]) for mode in ("ideal", "linux")}
    print(f"Network {network}, {algorithm}, {secs:g} s, {seeds} seeds: per path of the multipath flows, "
          "share of the flow's rate | mean cwnd (packets) | srtt (ms) | window reductions /s per subflow"
          " | linux connection level: idle share, data queued on the subflow (KB)\n")
    for mode, sm in scenarios.items():
        if mode == "linux" and extra:
            print("linux mode with " + ", ".join(f"{k} = {v!r}" for k, v in extra.items()) + "\n")
        mp = next(g for g in sm.groups if g.name == "mp")
        n_paths = len(mp.paths)
        print(f"### {mode}\n\n| window | flow Mb/s | " + " | ".join(f"path {r} ({'+'.join(mp.paths[r])})" for r in range(n_paths))
              + " |\n|---|---|" + "---|" * n_paths)
        rows: dict[tuple, list] = {}
        for k in range(seeds):
            # one run per window: the connection-level samples are summed over the measurement window
            for (a, b) in windows(secs):
                run = sim.run(sm, seed=k, sample_interval_s=0.1, measure=(a, b))
                g = run.result.groups["mp"]
                ts = run.timeseries["subflows"]
                sel = (ts["group"] == "mp") & (ts["time_s"] > a) & (ts["time_s"] <= b)
                lim = g.extra.get("connection_limits", {})
                flow_paths = [p for p in g.extra["per_flow_path_mbps"] if sum(p) > 0]
                for r in range(n_paths):
                    s = sel & (ts["route"] == r)
                    shares = [p[r] / sum(p) for p in flow_paths]
                    flows = np.unique(ts["flow"][s])
                    red = [np.ptp(ts["loss_events"][s & (ts["flow"] == f)]) / (b - a) for f in flows]
                    rows.setdefault((a, b, r), []).append((
                        statistics.mean(shares), float(np.mean(ts["cwnd_pkts"][s])),
                        1e3 * float(np.nanmean(ts["srtt_s"][s])), statistics.mean(red) if red else float("nan"),
                        lim.get("path_idle", [float("nan")] * n_paths)[r],
                        lim.get("path_queued_kb", [float("nan")] * n_paths)[r], g.rate_mbps))
        for (a, b) in windows(secs):
            cells = []
            for r in range(n_paths):
                m = [statistics.mean(x[i] for x in rows[(a, b, r)]) for i in range(7)]
                cell = f"{m[0]:.2f} \\| {m[1]:.1f} \\| {m[2]:.0f} \\| {m[3]:.2f}"
                if not math.isnan(m[4]):
                    cell += f" \\| {m[4]:.2f}, {m[5]:.0f}"
                cells.append(cell)
            print(f"| {a:g}–{b:g} s | {m[6]:.2f} | " + " | ".join(cells) + " |")
        print()


def fail(msg: str) -> None:
    print(f"coupled_split_trace.py: {msg}", file=sys.stderr)
    sys.exit(2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--network", type=int, default=1)
    ap.add_argument("--algorithm", default="coupled")
    ap.add_argument("--secs", type=float, default=120.0)
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--per-mss", type=int, default=2304, help="[sim] sndbuf_per_mss (the testbed kernel's)")
    ap.add_argument("--sim", action="append", default=[], metavar="KEY=VALUE",
                    help="a [sim] setting for the linux mode, e.g. receiver=simple (repeatable)")
    a = ap.parse_args()
    try:
        extra = parse_sim_settings(a.sim)
    except ValueError as e:
        fail(str(e))
    if a.secs <= 10 or a.seeds < 1 or a.network < 1:
        fail("--secs > 10, --seeds ≥ 1 and --network ≥ 1 (fix: e.g. --secs 120 --seeds 4)")
    from mpcc.errors import MpccError
    try:
        trace(a.network, a.algorithm, a.secs, a.seeds, a.per_mss, extra)
    except MpccError as e:
        fail(str(e))


if __name__ == "__main__":
    main()
