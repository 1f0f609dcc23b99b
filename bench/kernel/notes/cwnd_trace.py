"""Per-subflow window trace of line-rate transfers (diagnosis for bench/kernel/cost.py; root).

One two-path MPTCP connection over two unshaped veth pairs (netlab.TwoPaths, as cost.py), one
transfer of SECS per round and arm; meanwhile the sender's `ss -tinH` is sampled every INTERVAL
seconds. Each sample row: time, subflow (local port), cwnd, ssthresh, rtt (ms), bytes_acked,
unacked, retrans (total), lost, rto, backoff, delivery rate and the kernel's busy / rwnd_limited /
sndbuf_limited times. Prints a summary per round (goodput, retransmissions, min/median cwnd per
subflow and the share of samples with the window full, unacked ≥ cwnd − 1) and writes every
sample, and the change of both ends' TcpExt and MPTcpExt counters per transfer, to --json.

    flock /tmp/mpcc-bench.lock .venv/bin/python bench/kernel/notes/cwnd_trace.py --arms olia,reno \\
        --runs 6 --secs 3 [--offload off] [--json FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import statistics
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[2] / "python"))

from mpcc.lab import netlab  # noqa: E402

BUILTIN = ("reno", "cubic")
FIELDS = {"cwnd": r"\bcwnd:(\d+)", "ssthresh": r"\bssthresh:(\d+)", "rtt": r"\brtt:([\d.]+)/",
          "bytes_acked": r"\bbytes_acked:(\d+)", "unacked": r"\bunacked:(\d+)",
          "retrans": r"\bretrans:\d+/(\d+)", "delivery_rate": r"\bdelivery_rate (\S+)",
          "busy_ms": r"\bbusy:(\d+)ms", "rwnd_limited_ms": r"\brwnd_limited:(\d+)ms",
          "sndbuf_limited_ms": r"\bsndbuf_limited:(\d+)ms", "notsent": r"\bnotsent:(\d+)",
          "rto": r"\brto:([\d.]+)", "backoff": r"\bbackoff:(\d+)", "lost": r"\blost:(\d+)"}


def parse(text: str, port: int) -> list[dict]:
    rows, cur = [], None
    for ln in text.splitlines():
        if ln and not ln[0].isspace():
            parts = ln.split()
            cur = None
            if len(parts) >= 4 and parts[3].endswith(f":{port}"):
                cur = {"lport": int(parts[2].rsplit(":", 1)[1])}
                rows.append(cur)
            continue
        if cur is None:
            continue
        for k, rx in FIELDS.items():
            m = re.search(rx, ln)
            if m:
                v = m.group(1)
                cur[k] = v if k == "delivery_rate" else float(v) if "." in v else int(v)
    return rows


def sampler(lab, port: int, interval: float, stop: threading.Event, out: list):
    t0 = time.monotonic()
    while not stop.is_set():
        txt = lab.ex(lab.ns["cli"], "ss", "-tinH", "state", "established", check=False)
        t = time.monotonic() - t0
        out.extend({"t": round(t, 3), **r} for r in parse(txt, port))
        stop.wait(interval)


def summary(samples: list[dict]) -> dict:
    by = {}
    for s in samples:
        if "cwnd" in s:
            by.setdefault(s["lport"], []).append((s["cwnd"], s.get("unacked", 0)))
    return {p: {"n": len(c), "min": min(w for w, _ in c), "median": statistics.median(w for w, _ in c),
                "max": max(w for w, _ in c),
                "full": round(sum(u >= w - 1 for w, u in c) / len(c), 2)}   # samples with the window full
            for p, c in by.items()}


def counters(lab, role: str) -> dict[str, int]:
    """TcpExt and MPTcpExt counters of a namespace (nstat -az: absolute values)."""
    out = {}
    for ln in lab.ex(lab.ns[role], "nstat", "-az", check=False).splitlines():
        f = ln.split()
        if len(f) >= 2 and f[0].startswith(("TcpExt", "MPTcpExt", "Tcp")) and f[1].isdigit():
            out[f[0]] = int(f[1])
    return out


def delta(a: dict, b: dict) -> dict:
    return {k: b[k] - a.get(k, 0) for k in b if b[k] - a.get(k, 0)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arms", default="olia,reno")
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--secs", type=float, default=3.0)
    ap.add_argument("--interval", type=float, default=0.1)
    ap.add_argument("--offload", choices=("on", "off"), default="off")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args(argv)
    if not netlab.start_as_root("cwnd_trace"):
        return 2
    from mpcc.kernel import bpf
    arms = netlab.parse_arms(a.arms)
    kname = {x: x if x in BUILTIN else bpf.kernel_name(x) for x in arms}
    pin = (0, 1) if (os.cpu_count() or 1) >= 2 else None
    res = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "loadavg": Path("/proc/loadavg").read_text().split()[:3], "offload": a.offload, "rounds": []}
    with contextlib.ExitStack() as stack:
        for x in arms:
            if x not in BUILTIN:
                stack.enter_context(bpf.load(x))
        lab = stack.enter_context(netlab.TwoPaths(offload=a.offload == "on"))
        lab.transfer(lab.server, 1.0, [(7000, "mptcp", "reno")], pin=pin)
        port = 7000
        for i in range(a.runs):
            for x in arms:
                port += 1
                samples, stop = [], threading.Event()
                th = threading.Thread(target=sampler, args=(lab, port, a.interval, stop, samples))
                c0 = {role: counters(lab, role) for role in ("cli", "srv")}
                th.start()
                try:
                    r = lab.transfer(lab.server, a.secs, [(port, "mptcp", kname[x])], pin=pin)
                finally:
                    stop.set()
                    th.join()
                mbps = sum(r["received"].values()) * 8 / a.secs / 1e6
                cnt = {role: delta(c0[role], counters(lab, role)) for role in ("cli", "srv")}
                sm = summary(samples)
                res["rounds"].append({"arm": x, "round": i, "mbps": mbps, "retrans": r["retrans"],
                                      "acks": r["acks"], "summary": sm, "counters": cnt, "samples": samples})
                print(f"round {i} {x:<8} {mbps:7.0f} Mb/s retrans {r['retrans']:5d}  "
                      + "  ".join(f"{p}: cwnd min {v['min']} med {v['median']} max {v['max']} full {v['full']}"
                                  for p, v in sm.items()), flush=True)
    if a.json:
        a.json.write_text(json.dumps(res) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
