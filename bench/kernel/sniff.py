"""Packet arrival bursts per TCP flow (stdlib only; run inside a namespace by share_diag.py).

    sniff.py IFACE SECS GAP_US   → JSON {"sport>dport": {"packets": n, "mean_burst": b, "p90_burst": q}}

A burst is a run of a flow's data packets each arriving within GAP_US of the flow's previous one
(kernel receive timestamps, SO_TIMESTAMPNS). An ACK-clocked Reno sender emits 1–3 packets per
ACK; long bursts mean packets are released without their own ACK clock."""

import json
import socket
import struct
import sys
import time

SO_TIMESTAMPNS = 35
iface, secs, gap_ns = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]) * 1000
s = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(0x0800))   # DGRAM: starts at the IP header
s.bind((iface, 0))
s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
s.settimeout(0.2)
flows: dict[str, list[int]] = {}
end = time.monotonic() + secs
while time.monotonic() < end:
    try:
        data, anc, _, _ = s.recvmsg(128, 64)
    except socket.timeout:
        continue
    if len(data) < 40 or data[9] != 6:
        continue
    ihl = (data[0] & 15) * 4
    total = struct.unpack("!H", data[2:4])[0]
    sport, dport = struct.unpack("!HH", data[ihl:ihl + 4])
    doff = (data[ihl + 12] >> 4) * 4
    if total - ihl - doff <= 0:        # pure ACK
        continue
    ts = next((struct.unpack("qq", d[:16]) for lvl, typ, d in anc if typ == SO_TIMESTAMPNS), None)
    if ts is None:
        continue
    src = socket.inet_ntoa(data[12:16])
    flows.setdefault(f"{src}:{sport}>{dport}", []).append(ts[0] * 1_000_000_000 + ts[1])
out = {}
for k, t in flows.items():
    bursts, run = [], 1
    for a, b in zip(t, t[1:]):
        if b - a <= gap_ns:
            run += 1
        else:
            bursts.append(run)
            run = 1
    bursts.append(run)
    weighted = sorted(x for x in bursts for _ in range(x))       # the burst each packet belongs to
    out[k] = {"packets": len(t), "mean_burst": sum(weighted) / len(weighted),
              "p90_burst": weighted[int(0.9 * (len(weighted) - 1))], "max_burst": max(bursts)}
print(json.dumps(out))
