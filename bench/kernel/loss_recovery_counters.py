#!/usr/bin/env python3
"""bench/kernel/loss_recovery_counters.py: how the kernel recovers from losses, against the
simulator's linux mode with and without tail loss probes (``[sim] tlp``), per group.

The testbed rows of ``conn_mechanisms.py testbed`` record each group's host namespace MIB over the
whole run (``mib``: TcpExtTCPTimeouts, TcpExtTCPLossProbes, TcpExtTCPSackRecovery, …). For each
such row this runs the linux mode over the same whole run ([0, duration]) with the row's flow
start times (``linux_mode_agreement.testbed_starts``), ``--sim-seeds`` seeds each with
``tlp = "on"`` and ``"off"``, and prints per group: timeouts, loss probes and window reductions
(the testbed's SACK recoveries + timeouts, the closest count it has; the simulator's
``loss_events``), summed over the group's flows (bench/kernel/RESULTS.md §23).

    .venv/bin/python bench/kernel/loss_recovery_counters.py bench/kernel/conn_mechanisms_tb_24.json
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from linux_mode_agreement import cell_scenario, fail, load_rows  # noqa: E402


def sim_counters(seed: int, algorithm: str, secs: float, tb_seed: int, tlp: str, seeds: int) -> dict[str, list[float]]:
    """{group: [timeouts, loss probes, loss events]}, mean over ``seeds`` simulator seeds."""
    from mpcc import sim
    sm = cell_scenario(seed, algorithm, secs, {"mptcp": "linux", "tlp": tlp}, tb_seed)
    out: dict[str, list[float]] = {g.name.split("#")[0]: [0.0, 0.0, 0.0] for g in sm.groups}
    for k in range(seeds):
        for name, g in sim.run(sm, seed=k, sample_interval_s=0, measure=(0, secs)).result.groups.items():
            acc = out[name.split("#")[0]]
            for i, key in enumerate(("timeouts", "loss_probes", "loss_events")):
                acc[i] += g.extra[key] / seeds
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--secs", type=float, default=30.0)
    ap.add_argument("--sim-seeds", type=int, default=8)
    a = ap.parse_args()
    rows = [r for r in load_rows(a.files, "loss_recovery_counters")
            if r.get("mib") and (r.get("health") or {}).get("sound") and r.get("conn", "none") == "none"]
    if not rows:
        fail("loss_recovery_counters", "no sound row records its groups' MIB (fix: record some with "
                                       "conn_mechanisms.py testbed)")
    print("| network / algorithm (tb_seed) | group | timeouts: testbed / linux, tlp off / on | loss probes: testbed / on "
          "| reductions: testbed (SACK recoveries + timeouts) / linux, off / on |")
    print("|---|---|---|---|---|")
    ratio = {"off": [], "on": []}
    for r in rows:
        sims = {t: sim_counters(r["seed"], r["algorithm"], a.secs, r.get("tb_seed", 1), t, a.sim_seeds) for t in ("off", "on")}
        for g, m in r["mib"].items():
            to, lp = m.get("TcpExtTCPTimeouts", 0), m.get("TcpExtTCPLossProbes", 0)
            red = m.get("TcpExtTCPSackRecovery", 0) + to
            off, on = sims["off"][g], sims["on"][g]
            print(f"| {r['seed']}/{r['algorithm']} ({r.get('tb_seed', 1)}) | {g} | {to} / {off[0]:.1f} / {on[0]:.1f} "
                  f"| {lp} / {on[1]:.1f} | {red} / {off[2]:.0f} / {on[2]:.0f} |")
            for t, x in (("off", off), ("on", on)):
                ratio[t].append((x[0] + 1) / (to + 1))
    for t, xs in ratio.items():
        print(f"tlp {t}: (simulator timeouts + 1) / (testbed timeouts + 1), median over groups {statistics.median(xs):.2f}")


if __name__ == "__main__":
    main()
