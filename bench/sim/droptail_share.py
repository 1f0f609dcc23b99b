"""The drop-tail shared bottleneck of docs/testbed.md ("Known behaviour"): one MPTCP connection
with uncoupled Reno on two subflows next to one TCP Reno flow through one 20 Mb/s, 10 ms,
50-packet drop-tail link (the testbed's lab: bench/kernel/RESULTS.md §6), 30 s, measured from 4 s.
Prints the MPTCP connection's rate in TCP shares per seed, for both connection levels and for
the linux one with the Linux TCP receiver (``[sim] receiver``; the kernel gives 0.8–1.3, two TCP
flows 2.09).

Usage: .venv/bin/python bench/sim/droptail_share.py [--seeds 5]
"""
from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))

LAB = """
name = "shared-droptail"
duration_s = 30.0
[[links]]
name = "l"
capacity_mbps = 20.0
delay_ms = 10.0
buffer_pkts = 50
[[groups]]
name = "mp"
count = 1
algorithm = "reno"
paths = [["l"], ["l"]]
[[groups]]
name = "tcp"
count = 1
algorithm = "reno"
paths = [["l"]]
"""


def main() -> None:
    from mpcc import scenario, sim

    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=5)
    a = ap.parse_args()
    s = scenario.loads(LAB)
    for name, opts in (("ideal", {"mptcp": "ideal"}), ("linux", {"mptcp": "linux"}),
                       ("linux + linux receiver", {"mptcp": "linux", "receiver": "linux"})):
        sm = dataclasses.replace(s, engine={"sim": opts})
        rs = [sim.run(sm, seed=k, sample_interval_s=0, measure=(4.0, 30.0)).result for k in range(a.seeds)]
        shares = [r.groups["mp"].rate_mbps / r.groups["tcp"].rate_mbps for r in rs]
        print(f"{name}: MPTCP / TCP = {', '.join(f'{x:.2f}' for x in shares)}; mean {statistics.mean(shares):.2f}")


if __name__ == "__main__":
    main()
