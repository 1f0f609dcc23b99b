"""One line per churn.py result (bench/kernel/notes/CHURN.md's columns): stalled 10 s windows, connections
with a stall, longest stall, goodput, failed joins, duplicate data, rate-limit drops, dmesg
warnings, leaks, subflow-set check, window jumps.

    python bench/kernel/notes/churn_summary.py RESULT.json [...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def longest_stall(stalled: list[dict]) -> int:
    """The longest run of consecutive stalled windows of one connection."""
    by_conn: dict[int, set[int]] = {}
    for s in stalled:
        by_conn.setdefault(s["conn"], set()).add(s["window"])
    best = 0
    for ws in by_conn.values():
        for w in ws:
            if w - 1 not in ws:
                k = 0
                while w + k in ws:
                    k += 1
                best = max(best, k)
    return best


def summary(r: dict) -> dict:
    cli = r.get("mptcp_counters", {}).get("cli", {})
    srv = r.get("mptcp_counters", {}).get("srv", {})
    chk = r.get("subflow_set_check", {})
    jumps = r.get("cwnd_jumps", {})
    return {
        "algorithm": r["algorithm"], "bottleneck": r.get("bottleneck", "sender"), "pattern": r["pattern"],
        "seed": r["seed"], "date": r["date"], "load": r["load_before"],
        "stalled": f"{len(r['stalled_windows'])}/{r['windows']}",
        "conns_stalled": len({s["conn"] for s in r["stalled_windows"]}),
        "longest": longest_stall(r["stalled_windows"]),
        "mbit_s": r["total_mbit_s"],
        "failed_joins": cli.get("MPTcpExtMPJoinSynTxConnectErr", 0),
        "dup_data": srv.get("MPTcpExtDuplicateData", 0),
        "drops": r.get("qdisc_drops"),
        "warnings": len(r["dmesg_warnings"]),
        "leaks": {"maps": r["leaked_maps"], "struct_ops": r["struct_ops_left"], "netns": r["netns_left"],
                  "orphans": r.get("orphan_sockets"), "freed_s": r.get("freed_after_s")},
        "set_check": f"{chk.get('compared')}/{chk.get('mismatched')}" if "compared" in chk else chk.get("skipped"),
        "jumps": (f"{jumps.get('count')} ({jumps.get('repaired')} repaired, {jumps.get('late_init', 0)} late inits, "
                  f"{jumps.get('unrepaired')} faults; {(jumps.get('unseen') or {}).get('packets', 0)} packets unseen)")
        if jumps else None,
        "client_errors": len(r["client"]["errors"]),
        "events": r["events"],
    }


def main(argv: list[str]) -> int:
    for f in argv:
        for r in json.loads(Path(f).read_text()):
            print(json.dumps(summary(r)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
