"""The receivers' ACKs over a testbed run (diagnosis for bench/kernel/RESULTS.md §20; root).

Runs one generated RED network (conn_mechanisms.py's, ``--seed``, ``--algorithm`` in its
multipath group) on the testbed and samples ``ss -tinmH`` in the server namespace every
``--every`` seconds: per receiving socket, ACKs sent (segs_out), data segments received
(data_segs_in), rcv_ssthresh, rcv_space, the receive buffer (skmem rb) and ato. Prints, per
socket, the ACKs per data segment over each interval and those fields at its end.

    flock /tmp/mpcc-bench.lock .venv/bin/python bench/kernel/notes/rx_ack_trace.py --seed 1 \\
        --algorithm coupled [--secs 30] [--every 5] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parents[2] / "python"))

FIELDS = {k: re.compile(rf"\b{k}:(\d+)") for k in ("segs_out", "data_segs_in", "rcv_ssthresh", "rcv_space")}
FIELDS["rcvbuf"] = re.compile(r"\bskmem:\(r\d+,rb(\d+)")
ATO = re.compile(r"\bato:([\d.]+)")
SOCK = re.compile(r"^\S+\s+\d+\s+\d+\s+(\S+):(\d+)\s+(\S+):(\d+)")


def sample(ns: str) -> list[dict]:
    p = subprocess.run(["ip", "netns", "exec", ns, "ss", "-tinmH"], capture_output=True, text=True, timeout=10)
    out, cur = [], None
    for line in p.stdout.splitlines():
        m = SOCK.match(line)
        if m:
            cur = {"local_port": int(m.group(2)), "peer": m.group(3).strip("[]"), "peer_port": int(m.group(4))}
            out.append(cur)
        elif cur is not None:
            for k, rx in FIELDS.items():
                f = rx.search(line)
                if f:
                    cur[k] = int(f.group(1))
            a = ATO.search(line)
            if a:
                cur["ato_ms"] = float(a.group(1))
    return out


def main() -> None:
    from conn_mechanisms import scenario_text
    from mpcc import scenario
    from mpcc.testbed import engine as tb, topology

    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--algorithm", default="coupled")
    ap.add_argument("--secs", type=float, default=30.0)
    ap.add_argument("--every", type=float, default=5.0)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    s = scenario.loads(scenario_text(a.seed, a.secs, a.algorithm), "generated.toml")
    samples: list[tuple[float, list[dict]]] = []
    stop = threading.Event()

    def on_built(topo) -> None:
        def loop() -> None:
            t0 = time.monotonic()
            while not stop.wait(a.every):
                samples.append((time.monotonic() - t0, sample(topo.server_ns)))
        threading.Thread(target=loop, daemon=True).start()
        on_built.topo = topo

    with tempfile.TemporaryDirectory() as d:
        tb.run_detailed(s, tb.settings_from(s, warmup_s=10.0), Path(d), progress=False, on_built=on_built)
    stop.set()
    routes = on_built.topo.routes
    rows = []
    for (t, socks) in samples:
        for x in socks:
            gi = x["local_port"] - topology.BASE_PORT
            r = routes.get(gi, {}).get(x["peer"])
            if r is not None and "segs_out" in x:
                rows.append({"t": round(t, 1), "group": s.groups[gi].name, "route": r, **x})
    prev: dict = {}
    for row in rows:
        k = (row["group"], row["route"], row["peer"], row["peer_port"])
        p = prev.get(k)
        if p and row.get("data_segs_in", 0) > p.get("data_segs_in", 0) and "segs_out" in p:
            d_ack = row["segs_out"] - p["segs_out"]
            d_seg = row["data_segs_in"] - p["data_segs_in"]
            print(f'{row["t"]:6.1f} {row["group"]:<6} {row["route"]} :{row["peer_port"]} acks/seg {d_ack / d_seg:.3f} ({d_seg} segs) '
                  f'rcv_ssthresh {row.get("rcv_ssthresh")} rcv_space {row.get("rcv_space")} '
                  f'rcvbuf {row.get("rcvbuf")} ato {row.get("ato_ms")}')
        prev[k] = row
    if a.json:
        a.json.write_text(json.dumps(rows))


if __name__ == "__main__":
    main()
