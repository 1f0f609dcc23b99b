"""Compare the stalls of churn.py results from their recorded JSON alone (CHURN.md §7g): where the
stalled 10 s windows fall (the first connections opened vs the others, per 100 s), the MPTCP
counters, the rate limits' drops, and — for the BPF controls — whether a window jump used on a
connection's initial (path-1) subflow came before that connection's first stall.

    python bench/kernel/notes/stall_compare.py RESULT.json [...] [--secs 600] [--queue 600000]
                                         [--first 5] [--json OUT]

Connection i is the i-th the sink accepted (the client opens them 10 ms apart, so about the i-th
opened); `peers[i]` is its initial subflow's client address, the only path-1 subflow it has (path
1's endpoint is never churned), so a `cwnd_jumps` ring record whose local port is a peer's port is a
path-1 subflow of that connection. A ring record with `cwnd_before` > 10⁶ found the window already
that large when the repair ran (§3c/§7b: used before the repair). The ring holds the run's last 64
records only; the run's clock is `t0_monotonic` or the first executed event − 1 s (churn.py's
`executed`), in the records' CLOCK_MONOTONIC seconds."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

WINDOW_S = 10
HUGE = 10**6
COUNTERS = (("cli", "MPTcpExtMPJoinSynTxConnectErr"), ("cli", "MPTcpExtMPTCPRetrans"),
            ("cli", "MPTcpExtSubflowStale"), ("cli", "MPTcpExtSubflowRecover"), ("cli", "MPTcpExtMPRstRx"),
            ("srv", "MPTcpExtDuplicateData"), ("srv", "MPTcpExtEchoAdd"))


def by_conn(res: dict) -> dict[int, set[int]]:
    out: dict[int, set[int]] = defaultdict(set)
    for s in res["stalled_windows"]:
        out[s["conn"]].add(s["window"])
    return out


def episodes(stalled: dict[int, set[int]]) -> list[int]:
    """Lengths (windows) of the runs of consecutive stalled windows, over all connections."""
    return [next(k for k in range(len(ws) + 1) if w + k not in ws)
            for ws in stalled.values() for w in ws if w - 1 not in ws]


def run_clock(res: dict) -> float | None:
    if res.get("t0_monotonic") is not None:
        return res["t0_monotonic"]
    ex = res.get("executed")
    return ex[0][0] - 1.0 if ex else None       # alternate's first event is at t = 1 s


def jump_association(res: dict) -> dict | None:
    """For each connection whose initial subflow used a window > 10⁶ (ring records): did it stall
    before, first stall after, or never after the first such record? Compared with the share of the
    other connections, not stalled before that window, that stall at or after it (base rate)."""
    t0, jumps = run_clock(res), res.get("cwnd_jumps")
    if t0 is None or not jumps:
        return None
    port_conn = {int(p.rsplit(":", 1)[1]): i for i, p in enumerate(res.get("peers", []))}
    stalled = by_conn(res)
    first: dict[int, int] = {}
    for x in sorted(jumps.get("last", []), key=lambda x: x["ktime_ns"]):
        if x["lport"] in port_conn and x["cwnd_before"] > HUGE:
            first.setdefault(port_conn[x["lport"]], int((x["ktime_ns"] / 1e9 - t0) // WINDOW_S))
    cat, lags, expected, eligible = Counter(), [], 0.0, 0
    for c, w in first.items():
        if any(v < w for v in stalled[c]):
            cat["stalled_before"] += 1
            continue
        eligible += 1
        later = [v for v in stalled[c] if v >= w]
        cat["first_stall_after" if later else "never_after"] += 1
        if later:
            lags.append(min(later) - w)
        pool = [k for k in range(res["conns"]) if k not in first and not any(v < w for v in stalled[k])]
        expected += sum(1 for k in pool if any(v >= w for v in stalled[k])) / len(pool) if pool else 0.0
    ts = [x["ktime_ns"] / 1e9 - t0 for x in jumps.get("last", [])]
    return {"ring_span_s": [round(min(ts)), round(max(ts))] if ts else None, "conns": len(first),
            "stalled_before": cat["stalled_before"], "eligible": eligible,
            "first_stall_after": cat["first_stall_after"], "never_after": cat["never_after"],
            "expected_at_base_rate": round(expected, 1), "lag_windows": sorted(lags)}


def compare(res: dict, first_k: int = 5) -> dict:
    stalled = by_conn(res)
    n_win = int(res["secs"] // WINDOW_S)
    per100 = {"first": [0] * -(-n_win // 10), "others": [0] * -(-n_win // 10)}
    for c, ws in stalled.items():
        for w in ws:
            per100["first" if c < first_k else "others"][w // 10] += 1
    eps = episodes(stalled)
    mc, jumps = res.get("mptcp_counters", {}), res.get("cwnd_jumps")
    ports = {int(p.rsplit(":", 1)[1]) for p in res.get("peers", [])}
    ring = jumps.get("last", []) if jumps else []
    out = {
        "run": f"{res['algorithm']} {res['date'][11:16]}", "secs": res["secs"], "queue_bytes": res.get("queue_bytes"),
        "bottleneck": res.get("bottleneck"), "stalled": len(res["stalled_windows"]), "windows": res["windows"],
        "conns_stalled": len(stalled),
        f"first{first_k}_windows": sum(len(ws) for c, ws in stalled.items() if c < first_k),
        "others_windows": sum(len(ws) for c, ws in stalled.items() if c >= first_k),
        "others_conns": sum(1 for c in stalled if c >= first_k),
        f"first{first_k}_per_100s": per100["first"], "others_per_100s": per100["others"],
        "episodes": len(eps), "longest": max(eps, default=0), "episodes_of_1": sum(e == 1 for e in eps),
        "mbit_s": res["total_mbit_s"], "qdisc_drops": res.get("qdisc_drops"),
        "counters": {k[len("MPTcpExt"):]: mc.get(role, {}).get(k, 0) for role, k in COUNTERS},
    }
    if jumps:
        out["jumps"] = {"count": jumps.get("count"), "unrepaired": jumps.get("unrepaired"), "ring": len(ring),
                        "ring_huge": sum(x["cwnd_before"] > HUGE for x in ring),
                        "ring_path1": sum(x["lport"] in ports for x in ring),
                        "ring_path1_huge": sum(x["lport"] in ports and x["cwnd_before"] > HUGE for x in ring)}
        out["jump_then_stall"] = jump_association(res)
    if "stall_diagnosis" in res:
        out["stall_diagnosis"] = {k: {f: v[f] for f in ("backed_off_subflow_holds_unacked",
                                                       "rto_base_over_1s_holds_unacked", "samples")}
                                  for k, v in res["stall_diagnosis"].items()}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", nargs="+", type=Path, help="churn.py --json files (lists of results)")
    ap.add_argument("--secs", type=float, help="only runs of this length (s), e.g. 600")
    ap.add_argument("--queue", type=int, help="only runs with this queue_bytes, e.g. 600000")
    ap.add_argument("--first", type=int, default=5, help="count the first N connections apart (default 5)")
    ap.add_argument("--json", type=Path, help="write the comparison here")
    a = ap.parse_args(argv)
    if a.first < 0:
        print(f"stall_compare: error: --first {a.first}: give 0 or more connections", file=sys.stderr)
        return 2
    rows = []
    for f in a.results:
        try:
            runs = json.loads(f.read_text())
            runs = runs if isinstance(runs, list) else [runs]
            for r in runs:
                if (a.secs is None or r["secs"] == a.secs) and (a.queue is None or r.get("queue_bytes") == a.queue):
                    rows.append({"file": f.name, **compare(r, a.first)})
        except OSError as e:
            print(f"stall_compare: error: {f}: {e.strerror}: give churn.py --json result files", file=sys.stderr)
            return 2
        except (ValueError, KeyError, TypeError) as e:
            print(f"stall_compare: error: {f}: not a churn.py result ({e!r}): give churn.py --json result files",
                  file=sys.stderr)
            return 2
    for r in rows:
        print(json.dumps(r))
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
