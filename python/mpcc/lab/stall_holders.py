"""What holds each stalled connection-window of a churn.py run (CHURN.md §7), from its --trace.

    mpcc lab stall-holders RESULT.json TRACE [--json OUT]

For every stalled (connection, 10 s window) it takes the connection's per-second snapshots (`ss -tinHM`
of the client) in that window and names the "holder": among the connection's subflows (any state)
with unacknowledged data, the one with the largest RTO over the window. Windows are sorted by the
holder's path and RTO (path 3 with an RTO > 10 s, inflated — RTO/2^backoff > 1 s — or by backoff
alone; path 2 at ≤ 2 s; ...). For the path-2 ones (CHURN.md §7: "not diagnosed") it then asks,
for each of CHURN.md §5's upstream behaviours:

1. failed join never retried: the connection never had a path-3 subflow in the whole trace;
2. re-injection behind queued data: in the window the path-1 subflow made TCP progress
   (bytes_acked grew, no RTO backoff) while the connection's data-level ACK (msk snd_una) stayed
   frozen (path 2's endpoint is removed every other second, and each REMOVE_ADDR re-injects the
   connection's whole queue): whatever path 1 carried was not the data the receiver waited for —
   its copy sits behind path 1's own queue (`notsent`, up to tcp_wmem's 4 MB);
3. connection-level retransmission only on an idle subflow: no subflow of the connection was
   ever idle (nothing unacked and nothing queued) in the window, so `mptcp_subflow_get_retrans()`
   found none;
and counts the windows where path 1 itself was in RTO backoff holding data."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

WINDOW_S = 10
CLOSING = ("FIN-WAIT-1", "FIN-WAIT-2", "LAST-ACK", "CLOSING", "CLOSE-WAIT")


def path_of(sf: dict) -> int:
    return int(sf["local"].split(".")[2])


def num(sf: dict, k: str, default=0.0) -> float:
    v = sf.get(k)
    return float(v.split("/")[0]) if isinstance(v, str) else float(v) if v is not None else default


def per_connection(trace: Path, peers: list[str]) -> dict[int, list[tuple[float, dict, list[dict]]]]:
    """conn → [(t, msk, subflows of its token)] for every snapshot that shows it."""
    index = {p: i for i, p in enumerate(peers)}
    out: dict[int, list] = {i: [] for i in range(len(peers))}
    for ln in trace.read_text().splitlines():
        snap = json.loads(ln)
        by_token: dict[str, list] = {}
        for sf in snap["sf"]:
            by_token.setdefault(sf["token"], []).append(sf)
        for local, msk in snap["msk"].items():
            if local in index:
                out[index[local]].append((snap["t"], msk, by_token.get(msk["token"], [])))
    return out


def holder(snaps) -> dict | None:
    best = None
    for t, _msk, sfs in snaps:
        for sf in sfs:
            if num(sf, "unacked") > 0 and (best is None or num(sf, "rto") > num(best[1], "rto")):
                best = (t, sf)
    return None if best is None else {"t": best[0], "path": path_of(best[1]), "rto_ms": num(best[1], "rto"),
                                      "backoff": int(num(best[1], "backoff")), "state": best[1]["state"]}


def bytes_acked_delta(snaps, path: int) -> tuple[float, int]:
    """TCP progress of the path's subflows over the window: sum over ports of (last − first bytes_acked),
    and how many distinct ports the path had."""
    first, last = {}, {}
    for _t, _msk, sfs in snaps:
        for sf in sfs:
            if path_of(sf) == path:
                first.setdefault(sf["local"], num(sf, "bytes_acked"))
                last[sf["local"]] = num(sf, "bytes_acked")
    return sum(last[k] - first[k] for k in last), len(last)


def features(snaps, had_path3: bool) -> dict:
    una = [msk.get("snd_una") for _t, msk, _ in snaps]
    p1 = [sf for _t, _m, sfs in snaps for sf in sfs if path_of(sf) == 1]
    p2 = [sf for _t, _m, sfs in snaps for sf in sfs if path_of(sf) == 2]
    d1, _ = bytes_acked_delta(snaps, 1)
    d2, n2 = bytes_acked_delta(snaps, 2)
    idle_any = any(sf["state"] == "ESTAB" and not num(sf, "unacked") and not num(sf, "notsent")
                   for _t, _m, sfs in snaps for sf in sfs)
    return {
        "never_had_path3": not had_path3,
        "data_ack_frozen": len(set(una)) <= 1,
        "path1_progress_bytes": d1,
        "path1_backoff_holding": any(num(sf, "backoff") and num(sf, "unacked") for sf in p1),
        "path1_max_notsent": max((num(sf, "notsent") for sf in p1), default=0),
        "path1_max_rto_ms": max((num(sf, "rto") for sf in p1), default=0),
        "path2_ports": n2,
        "path2_progress_bytes": d2,
        "path2_closing_seen": any(sf["state"] in CLOSING for sf in p2),
        "path2_closing_with_data": any(sf["state"] in CLOSING and (num(sf, "unacked") or num(sf, "notsent"))
                                       for sf in p2),
        "some_subflow_idle": idle_any,
        "outstanding_bytes": max(((msk.get("write_seq") or 0) - (msk.get("snd_una") or 0)
                                  for _t, msk, _ in snaps), default=0),
    }


def classify(h: dict | None) -> str:
    if h is None:
        return "nothing unacked"
    if h["path"] == 3 and h["rto_ms"] > 10000:
        return "path 3, RTO > 10 s, inflated" if h["rto_ms"] / 2 ** h["backoff"] > 1000 else \
            "path 3, RTO > 10 s by backoff"
    if h["path"] == 2 and h["rto_ms"] <= 2000:
        return "path 2, RTO <= 2 s"
    band = "<= 2 s" if h["rto_ms"] <= 2000 else "2-10 s" if h["rto_ms"] <= 10000 else "> 10 s"
    return f"path {h['path']}, RTO {band}"


def item2(x: dict) -> bool:
    """§5 item 2's signature: the data-level ACK frozen while path 1 carried data (no backoff). Under
    `alternate` path 2's endpoint is removed 5 times in every window (each REMOVE_ADDR re-injects the
    connection's queue); whether a snapshot caught the closing subflow is counted apart."""
    return x["data_ack_frozen"] and x["path1_progress_bytes"] > 0 and not x["path1_backoff_holding"]


def tally(rows: list[dict]) -> dict:
    med = sorted(x["path1_max_notsent"] for x in rows)
    return {
        "windows": len(rows),
        "never_had_path3 (item 1)": sum(x["never_had_path3"] for x in rows),
        "data_ack_frozen": sum(x["data_ack_frozen"] for x in rows),
        "path1 progressed (no backoff), data ACK frozen (item 2)": sum(item2(x) for x in rows),
        "item 2 and never had path 3": sum(item2(x) and x["never_had_path3"] for x in rows),
        "no subflow ever idle (item 3)": sum(not x["some_subflow_idle"] for x in rows),
        "path 1 in RTO backoff holding data": sum(x["path1_backoff_holding"] for x in rows),
        "a snapshot caught a closing path-2 subflow": sum(x["path2_closing_seen"] for x in rows),
        "a closing path-2 subflow still held data": sum(x["path2_closing_with_data"] for x in rows),
        "path1 max notsent, median bytes": med[len(med) // 2] if med else None,
        "path1 max notsent > 1 MB": sum(v > 1e6 for v in med),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("result", type=Path)
    ap.add_argument("trace", type=Path)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args(argv)
    res = json.loads(a.result.read_text())
    res = res[0] if isinstance(res, list) else res
    conns = per_connection(a.trace, res["peers"])
    had3 = {c: any(path_of(sf) == 3 and sf["state"] == "ESTAB" for _t, _m, sfs in s for sf in sfs)
            for c, s in conns.items()}
    rows = []
    for w in res["stalled_windows"]:
        c, k = w["conn"], w["window"]
        snaps = [x for x in conns[c] if k * WINDOW_S <= x[0] < (k + 1) * WINDOW_S]
        h = holder(snaps)
        rows.append({"conn": c, "window": k, "class": classify(h), "holder": h, **features(snaps, had3[c])})
    by_class: dict[str, dict] = {}
    for cls in sorted({r["class"] for r in rows}, key=lambda x: -sum(r["class"] == x for r in rows)):
        by_class[cls] = tally([r for r in rows if r["class"] == cls])
    by_class["all"] = tally(rows)
    out = {"run": {k: res.get(k) for k in ("algorithm", "date", "conns", "secs", "queue_bytes", "bottleneck")},
           "stalled_windows": len(res["stalled_windows"]),
           "conns_never_path3": sum(not v for v in had3.values()),
           "by_holder": by_class,
           "path2_examples": [r for r in rows if r["class"] == "path 2, RTO <= 2 s"][:5]}
    print(json.dumps({k: v for k, v in out.items() if k != "path2_examples"}, indent=1))
    if a.json:
        a.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


def result_cli(main, prog: str, inputs: str = "churn.py's --json result and its --trace file") -> int:
    """Run a churn-result reader's main(): a missing file, not JSON or not a churn.py result is one
    line naming what to give, and exit 2 (shared by the trace and capture readers)."""
    try:
        return main()
    except (OSError, ValueError, KeyError) as e:
        print(f"{prog}: error: {e!r}: give {inputs}", file=sys.stderr)
        return 2


def cli() -> int:
    return result_cli(main, "stall_holders")


if __name__ == "__main__":
    sys.exit(cli())
