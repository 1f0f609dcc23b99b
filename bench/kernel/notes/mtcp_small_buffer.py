"""Why one MTC flow reaches only ~5 % of a 5 Mb/s, 100 ms path with a 2-packet linkem buffer
(RESULTS.md §10, §11). Each variant changes one thing on the same scenario (Jiang §5.1, buffer 2):

  base      kernel Reno, one path (no BPF: is it ours?)
  quickack  + the receiver acknowledges every segment (route option ``quickack 1`` in the server
            namespace): no delayed ACK, so the sender no longer answers one ACK with 2–3 segments
  fq        + fq qdisc on the sender's device: the kernel paces TCP (no back-to-back bursts);
            needs sch_fq, which the test machine's kernel does not have
  buffer3   buffer 3 instead of 2 (linkem counts the packet in service; ns-2's queue limit does not)
  ci2, ci2-quickack, ci2-buffer3   coupled-increase (BPF MTCP α = 1, β = 0), n = 2: as base, with
            quickack, with buffer 3

Root; run the whole script under the shared bench lock (~3 min).

    sudo flock /tmp/mpcc-bench.lock .venv/bin/python bench/kernel/notes/mtcp_small_buffer.py OUTDIR [--duration 20] [--variants ...]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from mpcc import scenario as scen
from mpcc.reproduce.jiang2011.scenarios import fig9_scenario
from mpcc.testbed import engine, topology

VARIANTS = {  # name: (algorithm, n, buffer, quickack, fq)
    "base": ("reno", 1, 2, False, False),
    "quickack": ("reno", 1, 2, True, False),
    "fq": ("reno", 1, 2, False, True),
    "buffer3": ("reno", 1, 3, False, False),
    "ci2": ("coupled-increase", 2, 2, False, False),
    "ci2-quickack": ("coupled-increase", 2, 2, True, False),
    "ci2-buffer3": ("coupled-increase", 2, 3, False, False),
}


def _hook(quickack: bool, fq: bool):
    def on_built(topo: topology.Topology) -> None:
        if quickack:  # the receiver (server namespace) ACKs every segment
            subprocess.run(["ip", "-n", topo.server_ns, "route", "change", "default", "via", "198.19.0.254",
                            "dev", "s0", "src", topology.SERVER_ADDR, "quickack", "1"], check=True)
        if fq:
            for gi, ns in topo.hosts.items():
                subprocess.run(["tc", "-n", ns, "qdisc", "replace", "dev", topology.host_dev(gi), "root", "fq"],
                               check=True)
    return on_built


def run(name: str, duration: float, out: Path) -> dict:
    algo, n, buf, quickack, fq = VARIANTS[name]
    text = fig9_scenario("coupled-increase", n, buf, duration_s=duration, measure_from_s=duration / 4)
    if algo == "reno":
        text = text.replace('algorithm = "coupled-increase"', 'algorithm = "reno"')
    s = scen.loads(text, f"<{name}>")
    st = engine.settings_from(s, duration_s=duration, warmup_s=duration / 4, sample_ms=10)
    load = open("/proc/loadavg").read().split()[0]
    started = time.strftime("%H:%M:%S", time.gmtime())
    r, sms = engine.run_detailed(s, st, out / name, progress=False, on_built=_hook(quickack, fq))
    links = r.links.values()
    sent = sum(lk.extra["arrivals"] for lk in links)
    row = {"variant": name, "algorithm": algo, "n": n, "buffer_pkts": buf, "quickack": quickack, "fq": fq,
           "utilisation": sum(lk.load_mbps for lk in links) / (5.0 * n),
           "drop_rate": sum(lk.extra["drops"] for lk in links) / sent if sent else float("nan"),
           "mean_cwnd": float(sum(sms[0].subflows["cwnd_pkts"]) / max(1, len(sms[0].subflows["cwnd_pkts"]))),
           "started_utc": started, "load1": float(load)}
    print(json.dumps(row), flush=True)
    return row


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--duration", type=float, default=20.0)
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    rows = [run(v, a.duration, a.out) for v in a.variants]
    (a.out / "small_buffer.json").write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
