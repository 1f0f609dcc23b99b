#!/usr/bin/env python3
"""bench/kernel/notes/share_diag/share_diag.py: why does an uncoupled MPTCP connection (kernel reno on two
subflows) take less than two Reno shares at a shared bottleneck? (root)

Arms, each against one single-path TCP Reno flow through the SharedBottleneck lab (kernel tbf in a
router namespace):

* ``tcp2``    — control: two plain TCP Reno flows (one host) vs one: ideal 2.
* ``mptcp``   — one MPTCP connection, kernel reno on both subflows: ideal 2 as well (variant
  ``one-subflow``: the MPTCP connection keeps its initial subflow only: ideal 1).

under lab variants: the bench's default tbf (burst 3000 B, 100-packet buffer, default socket
buffers), a large tbf burst, and large socket buffers (tcp_rmem/tcp_wmem max 32 MB as the
testbed sets them). During each transfer `ss -tinH` in the client namespace is sampled every
0.5 s; per flow we report goodput, segments out, retransmitted segments (≈ losses), the fraction
of samples where unacked < cwnd (not cwnd-limited at that instant), and tcp_info's
rwnd_limited / sndbuf_limited share of the busy time.

    sudo flock /tmp/mpcc-bench.lock .venv/bin/python bench/kernel/notes/share_diag/share_diag.py [--secs 10] [--runs 2]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[3] / "python"))

from mpcc.lab import netlab  # noqa: E402


class Lab(netlab.SharedBottleneck):
    def __init__(self, burst=3000, bufs=False, one_subflow=False, sysctls=(), **kw):
        super().__init__(**kw)
        self.burst, self.bufs, self.one_subflow, self.sysctls = burst, bufs, one_subflow, sysctls

    def build(self):
        super().build()
        r = self.ns["rtr"]
        self.ex(r, "tc", "qdisc", "replace", "dev", "rs", "root", "tbf", "rate", f"{self.rate_mbit}mbit",
                "burst", str(self.burst), "limit", str(1500 * self.buffer_pkts))
        if self.one_subflow:          # MPTCP with its initial subflow only
            self.ip(self.ns["cli"], "mptcp", "endpoint", "flush")
        for kv in self.sysctls:       # on both hosts
            for n in (self.ns["cli"], self.ns["srv"]):
                self.ex(n, "sysctl", "-qw", kv)
        if self.bufs:
            for n in (self.ns["cli"], self.ns["srv"]):
                self.ex(n, "sysctl", "-qw", "net.ipv4.tcp_wmem=4096 262144 33554432",
                        "net.ipv4.tcp_rmem=4096 262144 33554432")


def _ms(v: str) -> float:
    m = re.match(r"([\d.]+)ms", v)
    return float(m.group(1)) if m else 0.0


def parse(text: str) -> dict[tuple[str, str], dict]:
    """`ss -tinH` → {(local, peer): fields}."""
    out, lines = {}, text.splitlines()
    for i, ln in enumerate(lines):
        if not ln.strip() or ln[0].isspace():
            continue
        parts = ln.split()
        info = lines[i + 1].split() if i + 1 < len(lines) else []
        kv = {f.split(":", 1)[0]: f.split(":", 1)[1] for f in info if ":" in f}
        out[(parts[2], parts[3])] = {
            "cwnd": int(kv.get("cwnd", 0)), "unacked": int(kv.get("unacked", 0)),
            "segs_out": int(kv.get("data_segs_out", 0)),
            "retrans": int(kv.get("retrans", "0/0").split("/")[-1]),
            "busy_ms": _ms(kv.get("busy", "")), "rwnd_ms": _ms(kv.get("rwnd_limited", "")),
            "sndbuf_ms": _ms(kv.get("sndbuf_limited", "")), "mptcp": "tcp-ulp-mptcp" in info,
            "app_limited": "app_limited" in info,
        }
    return out


def run(lab: Lab, secs: float, flows, sample_s=0.5, sniff: bool = False, phase: bool = False,
        drops: bool = False) -> dict:
    samples: list[dict] = []
    stop = threading.Event()
    sniffer = None
    phasers = {}
    dropper = None
    if drops:   # which flow's packets the router's queue drops (drops.py)
        import subprocess
        dropper = subprocess.Popen(["ip", "netns", "exec", lab.ns["rtr"], sys.executable, str(HERE / "drops.py"),
                                    "rc", "rs", str(secs / 2), str(secs / 3)], stdout=subprocess.PIPE, text=True)
    if phase:   # reaction latency: the sender to ACKs (client's cr), the receiver to data (server's sr)
        import subprocess
        ports = sorted({str(p) for p, _, _ in flows})
        for role, dev in (("cli", "cr"), ("srv", "sr")):
            phasers[role] = subprocess.Popen(["ip", "netns", "exec", lab.ns[role], sys.executable,
                                              str(HERE / "phase.py"), dev, str(min(3.0, secs / 3)), *ports],
                                             stdout=subprocess.PIPE, text=True)
    if sniff:   # packet bursts per flow as they arrive at the router (before the tbf), mid-run
        import subprocess
        sniffer = subprocess.Popen(["ip", "netns", "exec", lab.ns["rtr"], sys.executable,
                                    str(HERE / "sniff.py"), "rc", str(min(3.0, secs / 3)), "30"],
                                   stdout=subprocess.PIPE, text=True)

    def sampler():
        while not stop.is_set():
            samples.append(parse(lab.ex(lab.ns["cli"], "ss", "-tinH", "state", "established", check=False)))
            stop.wait(sample_s)

    t = threading.Thread(target=sampler, daemon=True)
    t.start()
    try:
        r = lab.transfer(lab.server, secs, flows)
    finally:
        stop.set()
        t.join()
    if dropper:
        r["drops"] = json.loads(dropper.communicate(timeout=60)[0] or "{}")
    r["phase"] = {role: json.loads(p.communicate(timeout=30)[0] or "{}") for role, p in phasers.items()}
    if sniffer:
        r["bursts"] = json.loads(sniffer.communicate(timeout=30)[0] or "{}")
    per: dict[tuple, dict] = {}
    for s in samples:
        for key, f in s.items():
            d = per.setdefault(key, {"n": 0, "not_cwnd_limited": 0, **f})
            d["n"] += 1
            d["not_cwnd_limited"] += f["unacked"] < f["cwnd"]
            for k in ("segs_out", "retrans", "busy_ms", "rwnd_ms", "sndbuf_ms"):
                d[k] = max(d[k], f[k])
            d["cwnd_samples"] = d.get("cwnd_samples", []) + [f["cwnd"]]
    r["flows"] = per
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--secs", type=float, default=10.0)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--variants", default="default,burst,bufs")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--sniff", action="store_true", help="also measure packet bursts per flow (sniff.py)")
    ap.add_argument("--drops", action="store_true", help="also count the router's drops per flow (drops.py)")
    ap.add_argument("--phase", action="store_true", help="also measure reaction latency per connection (phase.py)")
    a = ap.parse_args()
    netlab.remove_stale()
    variants = {"default": {}, "burst": {"burst": 60000}, "bufs": {"bufs": True},
                "burst+bufs": {"burst": 60000, "bufs": True}, "one-subflow": {"one_subflow": True},
                "nocork": {"sysctls": ("net.ipv4.tcp_autocorking=0",)}}
    arms = {"tcp2": [(7201, "tcp", "reno"), (7202, "tcp", "reno"), (7203, "tcp", "reno")],
            "mptcp": [(7201, "mptcp", "reno"), (7203, "tcp", "reno")]}
    results = []
    for v in a.variants.split(","):
        for i in range(a.runs):
            for arm, flows in (arms.items() if i % 2 == 0 else reversed(arms.items())):
                with Lab(rate_mbit=100, buffer_pkts=100, **variants[v]) as lab:
                    r = run(lab, a.secs, flows, sniff=a.sniff, phase=a.phase, drops=a.drops)
                rec = r["received"]
                mine = rec[7201] + rec.get(7202, 0)
                ratio = mine / max(rec[7203], 1)
                rows = []
                for (loc, peer), f in sorted(r["flows"].items(), key=lambda kv: kv[0][1]):
                    port = int(peer.rsplit(":", 1)[1])
                    rows.append({"port": port, "local": loc, "mptcp_subflow": f["mptcp"],
                                 "loss": f["retrans"] / max(f["segs_out"], 1), "segs_out": f["segs_out"],
                                 "retrans": f["retrans"],
                                 "not_cwnd_limited": f["not_cwnd_limited"] / f["n"],
                                 "rwnd_limited": f["rwnd_ms"] / max(f["busy_ms"], 1),
                                 "sndbuf_limited": f["sndbuf_ms"] / max(f["busy_ms"], 1),
                                 "cwnd_median": statistics.median(f["cwnd_samples"])})
                results.append({"variant": v, "arm": arm, "run": i, "ratio": ratio,
                                "mbps": {p: b * 8 / a.secs / 1e6 for p, b in rec.items()}, "flows": rows,
                                "bursts": r.get("bursts", {}), "phase": r.get("phase", {}), "drops": r.get("drops", {})})
                print(f"{v:<10} {arm:<6} run {i + 1}: ratio {ratio:.2f}  "
                      + "  ".join(f"[{x['port']} {'sf' if x['mptcp_subflow'] else 'tcp'} loss {100 * x['loss']:.2f}% "
                                  f"cwnd~{x['cwnd_median']:.0f} notcwndlim {100 * x['not_cwnd_limited']:.0f}% "
                                  f"rwnd {100 * x['rwnd_limited']:.0f}% sndbuf {100 * x['sndbuf_limited']:.0f}%]"
                                  for x in rows), flush=True)
                if r.get("drops"):
                    print(f"    router sniffer missed {r['drops']['sniffer_missed']} packets", flush=True)
                for flow, d in sorted(r.get("drops", {}).get("flows", {}).items()):
                    print(f"    router {flow:<20} in {d['in']:6d}  dropped {d['dropped']:4d} ({100 * d['rate']:.2f}%) "
                          f"in {d['events']:3d} events; back-to-back (<20 us after the same connection's "
                          f"previous segment) {100 * d['b2b_in'] / max(d['in'], 1):.0f}% of arrivals, "
                          f"{100 * d['b2b_dropped'] / max(d['dropped'], 1):.0f}% of drops  "
                          f"arrived after last departure p10/p50/p90 {d['drop_after_departure_us']} us", flush=True)
                for role, per_port in r.get("phase", {}).items():
                    for port, d in sorted(per_port.items()):
                        what = "ACK in -> data out" if role == "cli" else "data in -> ACK out"
                        print(f"    reaction {role} {what} port {port}: n {d['n']}  p10/p50/p90 "
                              f"{d['p10_us']:.0f}/{d['p50_us']:.0f}/{d['p90_us']:.0f} us  "
                              f"within 20 us {100 * d['within_20us']:.0f}%", flush=True)
                for k, b in sorted(r.get("bursts", {}).items(), key=lambda kv: kv[0].split(">")[1]):
                    print(f"    bursts {k:<28} packets {b['packets']:6d}  mean burst (packet-weighted) "
                          f"{b['mean_burst']:.1f}  p90 {b['p90_burst']}  max {b['max_burst']}", flush=True)
    if a.json:
        a.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
