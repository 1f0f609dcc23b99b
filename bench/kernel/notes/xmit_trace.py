#!/usr/bin/env python3
"""bench/kernel/notes/xmit_trace.py: which kernel code path sends each data segment of an MPTCP
connection's subflows vs a plain TCP flow at a shared bottleneck (root, perf).

``perf record -e net:net_dev_queue -g -a`` during a testbed run records the kernel stack of every
frame the hosts queue on their devices; the testbed names each group's host device ``host<g>``,
so group 0 (the MPTCP connection, kernel reno on two subflows) and group 1 (the TCP Reno flow)
are told apart. Each data frame's stack (len > 200) is classified by the innermost known caller:

* ``tcp_ack``           — the socket's own ACK clock: an ACK arrived, tcp_ack/tcp_rcv_established
  → tcp_data_snd_check / __tcp_push_pending_frames
* ``mptcp push (ack)``  — the MPTCP socket pushed data onto a subflow when a data-level ACK freed
  room (__mptcp_check_push, __mptcp_subflow_push_pending, delegated actions, mptcp_napi_poll):
  the segment goes out on whichever subflow the scheduler picks
* ``mptcp release_cb``, ``mptcp worker``, ``tcp TSQ``, ``timer (RTO)``, ``app write``
  (tcp_sendmsg / mptcp_sendmsg: the application's send() call)

No kprobes are needed (this kernel has none); the tracepoint needs tracefs, which the script
mounts at /sys/kernel/tracing for the run when it is missing (netlab.tracefs).

    sudo flock /tmp/mpcc-bench.lock .venv/bin/python bench/kernel/notes/xmit_trace.py [--aqm droptail|red] [--secs 20]
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2] / "python"))
from mpcc.lab import netlab  # noqa: E402  (bench/kernel, beside this script)

# first match wins, scanning the stack from the innermost frame outwards
CLASSES = [
    ("tcp TSQ", ("tcp_tsq_handler", "tcp_tasklet_func")),
    ("timer (RTO)", ("tcp_retransmit_timer", "tcp_write_timer")),
    ("mptcp push (ack)", ("__mptcp_check_push", "mptcp_subflow_process_delegated", "mptcp_napi_poll",
                          "__mptcp_subflow_push_pending")),
    ("mptcp release_cb", ("mptcp_release_cb",)),
    ("mptcp worker", ("mptcp_worker",)),
    ("app write", ("mptcp_sendmsg", "tcp_sendmsg")),
    ("tcp_ack", ("tcp_ack", "tcp_data_snd_check", "tcp_rcv_established", "tcp_v4_do_rcv")),
]

SHARED = """
name = "xmit-trace"
duration_s = {secs}
[[links]]
name = "l"
capacity_mbps = 20.0
delay_ms = 10.0
buffer_pkts = 50
{aqm}
[[groups]]
name = "mp"
count = 1
algorithm = "reno"
paths = [["l"], ["l"]]
[[groups]]
name = "sp"
count = 1
algorithm = "reno"
paths = [["l"]]
"""


def classify(frames: list[str]) -> str:
    for f in frames:
        for name, keys in CLASSES:
            if f in keys:
                return name
    return "other"


def receiver_ack_class(frames: list[str]) -> str:
    """Who sent an ACK at the receiver: the application's read (recvmsg → cleanup_rbuf) or the
    arrival of data (softirq), split by whether MPTCP code is on the stack."""
    mptcp = any(f.startswith(("mptcp", "__mptcp", "subflow")) for f in frames)
    if "mptcp_recvmsg" in frames:
        return "mptcp: app read"
    if "tcp_recvmsg" in frames:
        return "tcp: app read"
    if "mptcp_worker" in frames or "mptcp_release_cb" in frames:
        return "mptcp: worker/release_cb"
    return "mptcp: on data arrival" if mptcp else "on data arrival (no mptcp frame)"


def parse(text: str, devs: dict[str, str]) -> dict[str, dict[str, int]]:
    """{flow: {class: frames}} from ``perf script`` output; ``devs`` maps device -> flow label."""
    out: dict[str, dict[str, int]] = {}
    for block in text.split("\n\n"):
        lines = block.strip().splitlines()
        if not lines:
            continue
        r = re.search(r"netif_receive_skb: dev=(\S+) skbaddr=\S+ len=(\d+)", lines[0])
        if r and r.group(1) in devs and int(r.group(2)) <= 100:  # an ACK into the sender's host
            d = out.setdefault(devs[r.group(1)], {})
            d["acks in"] = d.get("acks in", 0) + 1
            continue
        m = re.search(r"net_dev_queue: dev=(\S+) skbaddr=\S+ len=(\d+)", lines[0])
        if m and m.group(1) == "s0" and int(m.group(2)) <= 100:  # an ACK leaving the receiver
            frames = [re.sub(r"\+0x[0-9a-f]+$", "", ln.split()[1]) for ln in lines[1:] if len(ln.split()) >= 2]
            c = receiver_ack_class(frames)
            d = out.setdefault("receiver ACKs", {})
            d[c] = d.get(c, 0) + 1
            continue
        if not m or m.group(1) not in devs or int(m.group(2)) <= 200:
            continue
        frames = [re.sub(r"\+0x[0-9a-f]+$", "", ln.split()[1]) for ln in lines[1:] if len(ln.split()) >= 2]
        d = out.setdefault(devs[m.group(1)], {})
        c = classify(frames)
        d[c] = d.get(c, 0) + 1
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--aqm", choices=["droptail", "red"], default="droptail")
    ap.add_argument("--secs", type=float, default=20.0)
    ap.add_argument("--data", type=Path, default=Path("/tmp/xmit_trace.perf"))
    a = ap.parse_args()
    from mpcc import scenario
    from mpcc.testbed import engine, topology
    aqm = 'aqm = "red"\nred = {min_th = 10, max_th = 30, max_p = 0.1}' if a.aqm == "red" else ""
    s = scenario.loads(SHARED.format(secs=a.secs, aqm=aqm))
    with netlab.tracefs("net"):
        perf = subprocess.Popen(["perf", "record", "-q", "-e", "net:net_dev_queue", "-e", "net:netif_receive_skb", "-g", "-a", "-o", str(a.data)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(1.0)
        try:
            res = engine.run_scenario(s, engine.settings_from(s, warmup_s=4.0), None, progress=False)
        finally:
            perf.send_signal(signal.SIGINT)
            perf.wait(timeout=60)
        text = subprocess.run(["perf", "script", "-i", str(a.data)], capture_output=True, text=True).stdout
    os.unlink(a.data)
    mp, sp = res.groups["mp"], res.groups["sp"]
    print(f"{a.aqm}: mp {mp.rate_mbps:.2f} Mb/s (paths {', '.join(f'{x:.2f}' for x in mp.path_rate_mbps)}), "
          f"tcp {sp.rate_mbps:.2f} Mb/s, ratio {mp.rate_mbps / sp.rate_mbps:.2f}")
    table = parse(text, {topology.host_dev(0): "mptcp (2 subflows)", topology.host_dev(1): "tcp"})
    classes = [c for c, _ in CLASSES] + ["other"]
    print("| flow | data frames | " + " | ".join(classes) + " |")
    print("|---" * (len(classes) + 2) + "|")
    rx = table.pop("receiver ACKs", {})
    print("receiver ACKs by sender of the ACK: " + ", ".join(f"{k} {v}" for k, v in sorted(rx.items())))
    for flow, d in sorted(table.items()):
        acks = d.pop("acks in", 0)
        tot = sum(d.values())
        print(f"| {flow} | {tot} | " + " | ".join(f"{100 * d.get(c, 0) / tot:.1f} %" for c in classes) + " |")
        print(f"  {flow}: {acks} ACKs in, {tot / max(acks, 1):.2f} data frames sent per ACK")


if __name__ == "__main__":
    main()
