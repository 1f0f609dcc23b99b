"""Where was the data a stalled connection waited for? From churn.py --pcap captures of paths 1 and 2.

    python -m mpcc.lab.pcap_hole RESULT.json PCAP_DIR TRACE [--paths 1,2] [--json OUT]

For each stalled (connection, 10 s window), the connection's data-level ACK at the window's first
snapshot (msk `snd_una` in the ss trace) is the hole: the first connection-level byte the receiver
lacks. Every data segment whose MPTCP mapping (DSS: DSN, length) covers that byte is a copy of it.
From the client's captures: when and on which path copies were sent; from the server's: which
arrived; from the server's DSS data ACKs: when the hole was filled. (A connection's data sequence
space starts at a random 64-bit number, so a mapping that covers the hole is that connection's.)"""

from __future__ import annotations

import argparse
import bisect
import json
import sys
from collections import Counter
from pathlib import Path
from mpcc.lab import pcap  # noqa: E402
from mpcc.lab.stall_holders import result_cli  # noqa: E402

WINDOW_S = 10


NEAR = 1 << 24        # a mapping within 16 MB of the hole belongs to the same connection


def copies(pcap_dir: Path, paths, t0: float, holes: list[int]):
    """{hole: {"sent": [(t, path)], "arrived": [(t, path)], "acked": t or None}} for 64-bit holes. A
    segment carries the hole if its own connection-level range does: DSN + (its subflow sequence
    offset − the mapping's relative subflow sequence number), the subflow's initial sequence number
    being the most common (seq − ssn) of its segments (a mapping's first segment gives it exactly).
    A connection's subflows are the client ports with mappings within NEAR of its hole; the hole is
    filled when the server's data ACK on one of them passes it."""
    hs = sorted(set(holes))
    out = {h: {"sent": [], "arrived": [], "acked": None, "ports": set()} for h in hs}

    def near(dsn, dlen):
        i = bisect.bisect_left(hs, dsn - NEAR)
        while i < len(hs) and hs[i] < dsn + dlen + NEAR:
            yield hs[i]
            i += 1

    def segs(p, side):                      # streamed: a capture holds millions of packets
        f = pcap_dir / f"{side}_p{p}.pcap"
        return (s for s in pcap.read(f) if s.dss) if f.exists() else iter(())

    isn: dict[tuple, Counter] = {}
    cand = []                               # (side, t, path, port, seq, ssn, dsn, payload, hole)
    for p in paths:
        client = f"198.18.{p}.1"
        for side in ("cli", "srv"):
            for s in segs(p, side):
                _ack, dsn, ssn, dlen = s.dss
                if s.src != client or dsn is None or s.payload <= 0:
                    continue
                if side == "cli":
                    isn.setdefault((p, s.sport), Counter())[(s.seq - ssn) % (1 << 32)] += 1
                for h in near(dsn, dlen):
                    if side == "cli":
                        out[h]["ports"].add((p, s.sport))
                    if dsn <= h < dsn + max(dlen, 1):
                        cand.append((side, s.t - t0, p, s.sport, s.seq, ssn, dsn, s.payload, h))
    base = {k: c.most_common(1)[0][0] for k, c in isn.items()}
    for side, t, p, port, seq, ssn, dsn, payload, h in cand:
        b = base.get((p, port))
        start = dsn + ((seq - b) % (1 << 32) - ssn) if b is not None else dsn
        if start <= h < start + payload:
            out[h]["sent" if side == "cli" else "arrived"].append((round(t, 4), p))
    by_port = {}
    for h, rec in out.items():
        for pp in rec["ports"]:
            by_port.setdefault(pp, []).append(h)
    for p in paths:                         # the server's data ACKs
        for s in segs(p, "srv"):
            ack = s.dss[0]
            if s.src == f"198.18.{p}.2" and ack is not None:
                for h in by_port.get((p, s.dport), ()):
                    if out[h]["acked"] is None and 0 < (ack - h) % (1 << 32) < NEAR:
                        out[h]["acked"] = round(s.t - t0, 4)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("result", type=Path)
    ap.add_argument("pcap_dir", type=Path)
    ap.add_argument("trace", type=Path)
    ap.add_argument("--paths", default="1,2")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args(argv)
    res = json.loads(a.result.read_text())
    res = res[0] if isinstance(res, list) else res
    stalled = {(w["conn"], w["window"]) for w in res["stalled_windows"]}
    index = {p: i for i, p in enumerate(res["peers"])}
    holes, p1_notsent = {}, {}
    for ln in a.trace.read_text().splitlines():
        snap = json.loads(ln)
        for local, msk in snap["msk"].items():
            key = (index.get(local), int(snap["t"] // WINDOW_S))
            if key in stalled and key not in holes and msk.get("snd_una") is not None:
                holes[key] = msk["snd_una"]
                p1_notsent[key] = next((int(sf.get("notsent", 0)) for sf in snap["sf"] if sf["local"] == local), None)
    found = copies(a.pcap_dir, [int(x) for x in a.paths.split(",")], res["t0_unix"], list(holes.values()))
    rows = []
    for (c, k), h in sorted(holes.items()):
        r = found[h]
        w0 = k * WINDOW_S
        rows.append({"conn": c, "window": k, "hole": h, "path1_notsent_at_start": p1_notsent[(c, k)],
                     "sent_before": [x for x in r["sent"] if x[0] < w0][-3:],
                     "sent_in_window": [x for x in r["sent"] if w0 <= x[0] < w0 + WINDOW_S],
                     "arrived_before_window": [x for x in r["arrived"] if x[0] < w0][-3:],
                     "arrived_in_window": [x for x in r["arrived"] if w0 <= x[0] < w0 + WINDOW_S][:6],
                     "filled_at": r["acked"], "subflows_seen": len(r["ports"])})
    tally = {
        "stalled_windows_seen": len(rows),
        "hole_sent_before_window": sum(bool(x["sent_before"]) for x in rows),
        "last_copy_before_window_on_path": {
            p: sum(bool(x["sent_before"]) and x["sent_before"][-1][1] == p for x in rows) for p in (1, 2)},
        "hole_sent_in_window": sum(bool(x["sent_in_window"]) for x in rows),
        "a_copy_arrived_in_window": sum(bool(x["arrived_in_window"]) for x in rows),
        "a_copy_arrived_before_window": sum(bool(x["arrived_before_window"]) for x in rows),
        "filled_in_capture": sum(x["filled_at"] is not None for x in rows),
    }
    print(json.dumps(tally, indent=1))
    if a.json:
        a.json.write_text(json.dumps({"tally": tally, "windows": rows}, indent=1) + "\n")
    return 0


def cli() -> int:
    return result_cli(main, "pcap_hole", "churn.py's --json result, its --pcap directory and its --trace file")


if __name__ == "__main__":
    sys.exit(cli())
