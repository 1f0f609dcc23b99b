"""Packet arrival bursts per TCP flow (stdlib only; run inside a namespace by share_diag.py).

    sniff.py IFACE SECS GAP_US   → JSON {"sport>dport": {"packets": n, "mean_burst": b, "p90_burst": q}}

A burst is a run of a flow's data packets each arriving within GAP_US of the flow's previous one
(kernel receive timestamps, SO_TIMESTAMPNS). An ACK-clocked Reno sender emits 1–3 packets per
ACK; long bursts mean packets are released without their own ACK clock."""

import json
import sys

import capture

iface, secs, gap_ns = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]) * 1000
flows: dict[str, list[int]] = {}
for g in capture.segments(secs, iface):
    if g.outgoing or g.payload <= 0:        # arrivals with data only (not pure ACKs)
        continue
    flows.setdefault(f"{g.src}:{g.sport}>{g.dport}", []).append(g.t_ns)
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
