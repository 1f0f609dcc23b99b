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
import socket
import struct
import sys
import time

SO_TIMESTAMPNS = 35
PACKET_OUTGOING = 4
iface, secs = sys.argv[1], float(sys.argv[2])
ports = {int(p) for p in sys.argv[3:]}
s = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(0x0003))   # ETH_P_ALL: outgoing too
s.bind((iface, 0))
s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
s.settimeout(0.2)
last_in: dict[int, int] = {}
lat: dict[int, list[int]] = {p: [] for p in ports}
end = time.monotonic() + secs
while time.monotonic() < end:
    try:
        data, anc, _, addr = s.recvmsg(128, 64)
    except socket.timeout:
        continue
    if addr[1] != 0x0800 or len(data) < 40 or data[9] != 6:
        continue
    ts = next((struct.unpack("qq", d[:16]) for lvl, typ, d in anc if typ == SO_TIMESTAMPNS), None)
    if ts is None:
        continue
    t = ts[0] * 1_000_000_000 + ts[1]
    ihl = (data[0] & 15) * 4
    sport, dport = struct.unpack("!HH", data[ihl:ihl + 4])
    port = dport if dport in ports else sport if sport in ports else None
    if port is None:
        continue
    if addr[2] == PACKET_OUTGOING:
        if port in last_in:
            lat[port].append(t - last_in.pop(port))   # first reaction to each arrival only
    else:
        last_in[port] = t
out = {}
for p, v in lat.items():
    v.sort()
    if v:
        q = lambda f: v[int(f * (len(v) - 1))] / 1000
        out[p] = {"n": len(v), "p10_us": q(.1), "p50_us": q(.5), "p90_us": q(.9),
                  "within_20us": sum(x <= 20_000 for x in v) / len(v)}
print(json.dumps(out))
