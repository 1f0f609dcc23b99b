"""Per-connection profile of a churn.py run (CHURN.md §10): what sets the connections that stall
apart from those that do not, from the run's --trace (per-second `ss` snapshots of the client).

    python -m mpcc.lab.conn_profile RESULT.json TRACE [--json OUT] [--first 5]

Connections are grouped as: the first `--first` accepted (CHURN.md §7g's "first five"), the other
connections that had a path-3 subflow at some point, and those that never had one. For every
connection it takes, over all snapshots that show it, the medians of its path-3 and path-1
subflows' window, unacknowledged and unsent data, RTO and socket memory (`skmem`: send buffer
`tb`, queued `w`; present when the trace was taken with `ss -m`, churn.py since session 12), the
share of snapshots where the path-3 subflow held unacknowledged data in RTO backoff, and its
stalled windows; each group gets the medians of those per-connection values."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from mpcc.lab.stall_holders import num, path_of, per_connection, result_cli

FIELDS = ("cwnd", "unacked", "notsent", "rto", "tb", "w")


def _med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def profile(snaps: list) -> dict:
    """One connection's medians over its snapshots (path p's subflows pooled: a path may have had
    several subflows over the run, one at a time)."""
    out: dict = {}
    for p in (1, 3):
        sfs = [sf for _t, _m, s in snaps for sf in s if path_of(sf) == p and sf["state"] == "ESTAB"]
        out[f"path{p}_snapshots"] = len(sfs)
        for f in FIELDS:
            out[f"path{p}_{f}"] = _med([num(sf, f, None) for sf in sfs])
        if p == 3:
            out["path3_backoff_holding_share"] = (round(sum(bool(num(sf, "backoff") and num(sf, "unacked"))
                                                           for sf in sfs) / len(sfs), 3) if sfs else None)
            out["path3_ports"] = len({sf["local"] for sf in sfs})
    first3 = [t for t, _m, s in snaps if any(path_of(sf) == 3 and sf["state"] == "ESTAB" for sf in s)]
    out["path3_first_seen_s"] = first3[0] if first3 else None
    acked = {}
    for _t, _m, s in snaps:
        for sf in s:
            acked[(path_of(sf), sf["local"])] = num(sf, "bytes_acked")
    tot = sum(acked.values())
    out["path3_share_of_bytes_acked"] = round(sum(v for (p, _), v in acked.items() if p == 3) / tot, 3) if tot else None
    out["msk_outstanding"] = _med([(m.get("write_seq") or 0) - (m.get("snd_una") or 0) for _t, m, _s in snaps])
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("result", type=Path)
    ap.add_argument("trace", type=Path)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--first", type=int, default=5)
    a = ap.parse_args(argv)
    res = json.loads(a.result.read_text())
    res = res[-1] if isinstance(res, list) else res
    conns = per_connection(a.trace, res["peers"])
    stalled: dict[int, int] = {}
    for w in res["stalled_windows"]:
        stalled[w["conn"]] = stalled.get(w["conn"], 0) + 1
    rows = {c: {"stalled_windows": stalled.get(c, 0), **profile(s)} for c, s in conns.items() if s}
    groups = {f"first {a.first}": [c for c in rows if c < a.first],
              "others with path 3": [c for c in rows if c >= a.first and rows[c]["path3_snapshots"]],
              "others without path 3": [c for c in rows if c >= a.first and not rows[c]["path3_snapshots"]]}
    summary = {}
    keys = [k for k in next(iter(rows.values())) if k != "stalled_windows"]
    for g, cs in groups.items():
        summary[g] = {"connections": len(cs), "stalled_windows": sum(rows[c]["stalled_windows"] for c in cs),
                      **{k: _med([rows[c][k] for c in cs]) for k in keys}}
    out = {"run": {k: res.get(k) for k in ("algorithm", "date", "conns", "secs", "queue_bytes", "bottleneck")},
           "groups": summary, "connections": rows}
    print(json.dumps(summary, indent=1))
    if a.json:
        a.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


def cli() -> int:
    return result_cli(main, "conn_profile")


if __name__ == "__main__":
    sys.exit(cli())
