"""Which flow's packets a router drops (stdlib only; run inside the router namespace).

    drops.py IN_IFACE OUT_IFACE SECS [START_AFTER_S]  → JSON {"SRC:SPORT": {"in": n, "dropped": d, "rate": d/n,
          "events": e, "b2b_in": .., "b2b_dropped": .., "drop_after_departure_us": [p10, p50, p90]},
         "sniffer_missed": n}

Every TCP data segment arriving on IN_IFACE is matched (by flow and sequence number) with its
departure on OUT_IFACE (seen after the queue); one that never departs was dropped at the queue.
For each drop we also record how long after the queue's last departure it arrived: at a full
drop-tail queue, the packet that arrives first after a departure takes the freed slot. "b2b" counts
segments that arrive < 20 µs after the previous segment of the same connection (any subflow of an
MPTCP connection: connections are told apart by the server port)."""

import json
import sys
import time

import capture

EVENT_GAP_NS = 20_000_000      # drops of one flow closer than this (> 1 RTT here) are one loss event
BACK_TO_BACK_NS = 20_000       # < 20 µs after the previous segment of the same connection
in_if, out_if, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
time.sleep(float(sys.argv[4]) if len(sys.argv) > 4 else 0.0)     # e.g. skip slow start
arrivals: list[tuple[str, int, int, float, bool]] = []  # flow, seq, t, since last departure, back-to-back
last_conn: dict[int, int] = {}    # server port → last arrival of that connection (any subflow)
departed: dict[tuple[str, int], int] = {}   # departures per (flow, seq): a retransmission departs again
last_dep = None
for g in capture.segments(secs):
    if g.payload <= 0:
        continue
    flow = f"{g.src}:{g.sport}"
    if g.iface == in_if and not g.outgoing:
        b2b = g.t_ns - last_conn.get(g.dport, -10**12) < BACK_TO_BACK_NS
        last_conn[g.dport] = g.t_ns
        arrivals.append((flow, g.seq, g.t_ns, (g.t_ns - last_dep) / 1000 if last_dep else -1, b2b))
    elif g.iface == out_if and g.outgoing:
        departed[flow, g.seq] = departed.get((flow, g.seq), 0) + 1
        last_dep = g.t_ns
# the last 0.5 s of arrivals may still be queued
cut = arrivals[-1][2] - 500_000_000 if arrivals else 0
out: dict[str, dict] = {}
for flow, seq, t, since, b2b in arrivals:
    if t > cut:
        break
    d = out.setdefault(flow, {"in": 0, "dropped": 0, "_since": [], "b2b_in": 0, "b2b_dropped": 0})
    d["in"] += 1
    d["b2b_in"] += b2b
    if departed.get((flow, seq), 0) > 0:       # departures are matched to arrivals in order
        departed[flow, seq] -= 1
    else:
        d["dropped"] += 1
        d["b2b_dropped"] += b2b
        d["_since"].append(since)
        if t - d.get("_last", -10**12) > EVENT_GAP_NS:   # a new loss event (the sender halves once per event)
            d["events"] = d.get("events", 0) + 1
        d["_last"] = t
for d in out.values():
    v = sorted(d.pop("_since"))
    d.pop("_last", None)
    d.setdefault("events", 0)
    d["rate"] = d["dropped"] / d["in"]
    d["drop_after_departure_us"] = [v[int(f * (len(v) - 1))] for f in (.1, .5, .9)] if v else []
print(json.dumps({"flows": out, "sniffer_missed": capture.missed}))
