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
import socket
import struct
import sys
import time

SO_TIMESTAMPNS = 35
EVENT_GAP_NS = 20_000_000      # drops of one flow closer than this (> 1 RTT here) are one loss event
PACKET_OUTGOING = 4
in_if, out_if, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
time.sleep(float(sys.argv[4]) if len(sys.argv) > 4 else 0.0)     # e.g. skip slow start
s = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(0x0003))
s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 << 20)
s.settimeout(0.2)
arrivals: list[tuple[str, int, int, float, bool]] = []  # flow, seq, t, since last departure, back-to-back
last_conn: dict[int, int] = {}    # server port → last arrival of that connection (any subflow)
BACK_TO_BACK_NS = 20_000          # < 20 µs after the previous segment of the same connection
departed: dict[tuple[str, int], int] = {}   # departures per (flow, seq): a retransmission departs again
last_dep = None
end = time.monotonic() + secs
while time.monotonic() < end:
    try:
        data, anc, _, addr = s.recvmsg(128, 64)
    except socket.timeout:
        continue
    if addr[1] != 0x0800 or len(data) < 40 or data[9] != 6:
        continue
    ihl = (data[0] & 15) * 4
    total = struct.unpack("!H", data[2:4])[0]
    doff = (data[ihl + 12] >> 4) * 4
    if total - ihl - doff <= 0:
        continue
    ts = next((struct.unpack("qq", d[:16]) for lvl, typ, d in anc if typ == SO_TIMESTAMPNS), None)
    t = ts[0] * 1_000_000_000 + ts[1] if ts else time.time_ns()
    sport, dport = struct.unpack("!HH", data[ihl:ihl + 4])
    seq = struct.unpack("!I", data[ihl + 4:ihl + 8])[0]
    flow = f"{socket.inet_ntoa(data[12:16])}:{sport}"
    if addr[0] == in_if and addr[2] != PACKET_OUTGOING:
        b2b = t - last_conn.get(dport, -10**12) < BACK_TO_BACK_NS
        last_conn[dport] = t
        arrivals.append((flow, seq, t, (t - last_dep) / 1000 if last_dep else -1, b2b))
    elif addr[0] == out_if and addr[2] == PACKET_OUTGOING:
        departed[flow, seq] = departed.get((flow, seq), 0) + 1
        last_dep = t
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
PACKET_STATISTICS, SOL_PACKET = 6, 263
lost_by_sniffer = struct.unpack("II", s.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))[1]
print(json.dumps({"flows": out, "sniffer_missed": lost_by_sniffer}))
