"""Reaction latency per TCP connection, seen on one interface (stdlib only; run inside a namespace).

    phase.py IFACE SECS SERVER_PORT...  → JSON {port: {"n": .., "p10_us": .., "p50_us": .., "p90_us": ..,
                                                        "within_20us": ..}}

For every packet *leaving* through IFACE that carries TCP payload (on the sender) or is a pure ACK
(on the receiver), the time since the last packet of the same connection (any subflow of an MPTCP
connection: grouped by the server port) *arrived* on IFACE: how long the host took to react to the
ACK clock (sender) or to incoming data (receiver). At a drop-tail queue that is full, a freed slot
goes to whichever flow's packet arrives first after a departure, so a flow that reacts later loses
more (Floyd & Jacobson's phase effect)."""

import json
import sys

import capture

iface, secs = sys.argv[1], float(sys.argv[2])
ports = {int(p) for p in sys.argv[3:]}
last_in: dict[int, int] = {}
lat: dict[int, list[int]] = {p: [] for p in ports}
for g in capture.segments(secs, iface):
    port = g.dport if g.dport in ports else g.sport if g.sport in ports else None
    if port is None:
        continue
    if g.outgoing:
        if port in last_in:
            lat[port].append(g.t_ns - last_in.pop(port))   # first reaction to each arrival only
    else:
        last_in[port] = g.t_ns
out = {}
for p, v in lat.items():
    v.sort()
    if v:
        q = lambda f: v[int(f * (len(v) - 1))] / 1000
        out[p] = {"n": len(v), "p10_us": q(.1), "p50_us": q(.5), "p90_us": q(.9),
                  "within_20us": sum(x <= 20_000 for x in v) / len(v)}
print(json.dumps(out))
