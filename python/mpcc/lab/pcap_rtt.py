"""Which RTT samples did the flapping path's subflows take? From churn.py --pcap captures (CHURN.md §7).

    mpcc lab pcap-rtt RESULT.json PCAP_DIR TRACE [--path 3] [--show N] [--json OUT]

For every subflow of the path (client port), from the client's capture: the data it sent (a
segment whose sequence range starts below the highest one sent before is a retransmission), and
each ACK that advanced its cumulative ACK. For such an ACK it computes the sample Linux takes
(tcp_ack_update_rtt): the sequence sample (ACK time − send time of the first newly acknowledged
segment) unless retransmitted data is among the newly acknowledged (Karn), else the timestamp
sample (ACK time − the client's send time of the TSval the ACK echoes, TSecr). Samples over 1 s are
"inflated" (the paths have no propagation delay and queues of ≤ 0.3 s). For each inflated sample it
reports whether its TSecr predates the last link-down before the ACK, and how many ACKs the server
sent for this subflow while the client's link was down (the server's capture; lost, since the
access link was down), and the subflow's srtt/rttvar/RTO in the per-second ss trace before and after.
--show N prints the packet-level story of the N largest inflated samples."""

from __future__ import annotations

import argparse
import bisect
import json
import sys
from pathlib import Path
from mpcc.lab import pcap  # noqa: E402
from mpcc.lab.stall_holders import result_cli  # noqa: E402
from mpcc.lab.churn_patterns import schedule  # noqa: E402


def link_outages(res: dict, path: int) -> list[tuple[float, float]]:
    """(down, up) run times (s) of the path's link, from the executed events (executed[i] is plan[i])."""
    plan = schedule(res["pattern"], res["secs"], res["seed"])
    t0 = res["t0_monotonic"]
    out, down = [], None
    for (when, kind, p, on), (e0, _e1) in zip(plan, res["executed"]):
        if kind == "link" and p == path:
            if not on:
                down = e0 - t0
            elif down is not None:
                out.append((down, e0 - t0))
                down = None
    if down is not None:
        out.append((down, res["secs"]))
    return out


def load(pcap_dir: Path, path: int, t0: float, client: str, server: str):
    """Per client port: data segments the client sent, ACKs it received (client capture), ACKs the server
    sent (server capture), with run times (s)."""
    flows: dict[int, dict] = {}

    def f(port):
        return flows.setdefault(port, {"data": [], "acks": [], "srv_acks": [], "srv_data": []})

    for s in pcap.read(pcap_dir / f"cli_p{path}.pcap"):
        if s.src == client and s.payload > 0:
            f(s.sport)["data"].append((s.t - t0, s.seq, s.seq + s.payload, s.tsval))
        elif s.src == server and "A" in s.flags:
            f(s.dport)["acks"].append((s.t - t0, s.ack, s.tsecr, s.sack))
    for s in pcap.read(pcap_dir / f"srv_p{path}.pcap"):
        if s.src == server and "A" in s.flags:
            f(s.dport)["srv_acks"].append((s.t - t0, s.ack, s.tsecr))
        elif s.src == client and s.payload > 0:
            f(s.sport)["srv_data"].append((s.t - t0, s.seq, s.seq + s.payload, s.tsval))
    return flows


def samples(flow: dict) -> list[dict]:
    """The RTT sample Linux takes on each ACK that advances the cumulative ACK (see the module doc)."""
    data = flow["data"]
    if not data:
        return []
    isn = data[0][1]

    def off(x):                             # sequence offset from the first data byte (no wrap within a run)
        return (x - isn) % (1 << 32)

    sent_ts: dict[int, float] = {}          # TSval → first time the client sent it
    starts: list[int] = []                  # sorted offsets of segment starts
    seg: dict[int, list] = {}               # start offset → [first send time, retransmitted?]
    hi = 0
    events = [(t, 0, a, b, v) for t, a, b, v in data] + [(t, 1, k, e, None) for t, k, e, _ in flow["acks"]]
    events.sort(key=lambda e: (e[0], e[1]))
    una, out = 0, []
    for t, is_ack, a, b, tsval in events:
        if not is_ack:
            if tsval is not None:
                sent_ts.setdefault(tsval, t)
            o = off(a)
            rtx = o < hi
            if o in seg:
                seg[o][1] = seg[o][1] or rtx
            else:
                bisect.insort(starts, o)
                seg[o] = [t, rtx]
            hi = max(hi, o + (b - a))
            continue
        ack, tsecr = off(a), b
        if ack <= una or ack > hi:
            continue                        # no new data acknowledged (or an ACK from before the first capture)
        i, j = bisect.bisect_left(starts, una), bisect.bisect_left(starts, ack)
        newly = [seg[o] for o in starts[i:j]]
        rtx = any(x[1] for x in newly)
        first = min((x[0] for x in newly if not x[1]), default=None)
        if not rtx and first is not None:
            kind, rtt, echoed = "seq", t - first, None
        elif tsecr and tsecr in sent_ts:
            kind, rtt, echoed = "tsecr", t - sent_ts[tsecr], sent_ts[tsecr]
        else:
            kind, rtt, echoed = "none", None, None
        out.append({"t": t, "ack": a, "acked": ack - una, "kind": kind, "rtt": rtt, "echoed_sent": echoed,
                    "retrans_acked": rtx, "tsecr": tsecr})
        una = ack
    return out


def trace_rows(trace: Path, port: int) -> list[tuple[float, dict]]:
    rows = []
    for ln in trace.read_text().splitlines():
        snap = json.loads(ln)
        for sf in snap["sf"]:
            if sf["local"].endswith(f":{port}"):
                rows.append((snap["t"], sf))
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("result", type=Path)
    ap.add_argument("pcap_dir", type=Path)
    ap.add_argument("trace", type=Path)
    ap.add_argument("--path", type=int, default=3)
    ap.add_argument("--show", type=int, default=2)
    ap.add_argument("--port", type=int, help="--show this client port's samples")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args(argv)
    res = json.loads(a.result.read_text())
    res = res[0] if isinstance(res, list) else res
    client, server = f"198.18.{a.path}.1", f"198.18.{a.path}.2"
    outs = link_outages(res, a.path)
    downs = [d for d, _ in outs]
    flows = load(a.pcap_dir, a.path, res["t0_unix"], client, server)
    summary = {"run": {k: res.get(k) for k in ("algorithm", "conns", "secs", "date", "load_before", "bottleneck",
                                                "queue_bytes")},
               "captures": res.get("pcap"), "outages": len(outs), "subflows": 0, "samples": 0,
               "by_kind": {}, "inflated": 0, "inflated_by_kind": {}, "inflated_tsecr_before_outage": 0,
               "inflated_with_server_acks_lost_in_outage": 0, "largest": []}
    found = []
    rows_by_port: dict[int, list] = {}
    for ln in a.trace.read_text().splitlines():
        snap = json.loads(ln)
        for sf in snap["sf"]:
            if sf["local"].startswith(client + ":"):
                rows_by_port.setdefault(int(sf["local"].rsplit(":", 1)[1]), []).append((snap["t"], sf))
    summary["inflated_next_ss_rto_base_over_1s"] = 0
    for port, fl in sorted(flows.items()):
        if not fl["data"]:
            continue
        summary["subflows"] += 1
        for s in samples(fl):
            summary["samples"] += 1
            summary["by_kind"][s["kind"]] = summary["by_kind"].get(s["kind"], 0) + 1
            if s["rtt"] is None or s["rtt"] <= 1.0:
                continue
            summary["inflated"] += 1
            summary["inflated_by_kind"][s["kind"]] = summary["inflated_by_kind"].get(s["kind"], 0) + 1
            # the outage the sample spans: the first one that began after the echoed segment was sent
            start = s["echoed_sent"] if s["echoed_sent"] is not None else s["t"] - s["rtt"]
            i = bisect.bisect_left(downs, start - 0.05)
            out = outs[i] if i < len(outs) and outs[i][0] < s["t"] else None
            if out and s["kind"] == "tsecr":
                summary["inflated_tsecr_before_outage"] += 1
            lost = [x for x in fl["srv_acks"] if out and out[0] <= x[0] < out[1]]
            if lost:
                summary["inflated_with_server_acks_lost_in_outage"] += 1
            rows = rows_by_port.get(port, [])
            before = next((sf for t, sf in reversed(rows) if t < s["t"]), None)
            after = next((sf for t, sf in rows if t >= s["t"]), None)
            s["ss_before"], s["ss_after"] = before, after
            if after and float(after.get("rto", 0)) / 2 ** int(after.get("backoff", 0)) > 1000:
                summary["inflated_next_ss_rto_base_over_1s"] += 1
            found.append((s["rtt"], port, s, out, len(lost)))
    found.sort(key=lambda x: -x[0])
    def brief(sf):
        return sf and {k: sf.get(k) for k in ("rtt", "rto", "backoff", "unacked")}

    summary["largest"] = [{"port": p, "t": round(s["t"], 3), "rtt_s": round(r, 3), "kind": s["kind"],
                           "outage": [round(x, 2) for x in o] if o else None, "server_acks_in_outage": n,
                           "ss_before": brief(s["ss_before"]), "ss_after": brief(s["ss_after"])}
                          for r, p, s, o, n in found[:20]]
    # the stories: the largest samples whose next ss snapshot still shows the inflated RTO
    kept = [f for f in found if f[2]["ss_after"] and float(f[2]["ss_after"].get("rto", 0)) /
            2 ** int(f[2]["ss_after"].get("backoff", 0)) > 1000]
    if a.port:
        kept = [f for f in found if f[1] == a.port]
    for r, port, s, out, _n in kept[:a.show]:
        print(story(flows[port], port, s, out, outs, a.trace))
    print(json.dumps({k: v for k, v in summary.items() if k != "largest"}))
    if a.json:
        a.json.write_text(json.dumps(summary, indent=1) + "\n")
    return 0


def story(fl: dict, port: int, s: dict, out, outs, trace: Path) -> str:
    """The packets of one inflated sample: the outage it spans, what the client sent, what reached the
    server, the server's ACKs, the ACK that gave the sample, and the ss trace around it."""
    lines = [f"== subflow :{port}: {s['kind']} sample {s['rtt']:.3f} s at t={s['t']:.3f} (acked {s['acked']} bytes, "
             f"retransmitted data among them: {s['retrans_acked']}); outage {out}"]
    lo = (s["echoed_sent"] if s["echoed_sent"] is not None else s["t"] - s["rtt"]) - 0.3
    hi = s["t"] + 0.05
    span = [o for o in outs if o[1] >= lo and o[0] <= hi]
    lines.append(f"   link-3 outages in the span: {[(round(a, 2), round(b, 2)) for a, b in span]}")
    ev = [(t, "cli>", f"data {a}-{b} TSval {v}") for t, a, b, v in fl["data"] if lo <= t <= hi]
    ev += [(t, "srv<", f"data {a}-{b} TSval {v}") for t, a, b, v in fl["srv_data"] if lo <= t <= hi]
    ev += [(t, "srv>", f"ACK {k} TSecr {e}") for t, k, e in fl["srv_acks"] if lo <= t <= hi]
    ev += [(t, "cli<", f"ACK {k} TSecr {e}" + (f" SACK {sk}" if sk else ""))
           for t, k, e, sk in fl["acks"] if lo <= t <= hi]
    ev.sort()
    keep = ev if len(ev) <= 40 else ev[:12] + [(None, "...", f"{len(ev) - 30} more")] + ev[-18:]
    for t, who, what in keep:
        lines.append(f"   {'' if t is None else f'{t:9.4f}'} {who} {what}")
    rows = [(t, sf) for t, sf in trace_rows(trace, port) if s["t"] - s["rtt"] - 2 <= t <= s["t"] + 3]
    for t, sf in rows:
        lines.append(f"   ss t={t:7.2f} {sf.get('state')} rtt {sf.get('rtt')} rto {sf.get('rto')} backoff "
                     f"{sf.get('backoff', 0)} unacked {sf.get('unacked', 0)} retrans {sf.get('retrans', '-')} "
                     f"lastsnd {sf.get('lastsnd')} lastack {sf.get('lastack')}")
    return "\n".join(lines)


def cli() -> int:
    return result_cli(main, "pcap_rtt", "churn.py's --json result, its --trace file and its --pcap directory")


if __name__ == "__main__":
    sys.exit(cli())
