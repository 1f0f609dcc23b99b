#!/usr/bin/env python3
"""bench/kernel/xmit_trace.py: which kernel code path sends each data segment of an MPTCP
subflow vs a plain TCP flow at a shared bottleneck (root, bpftrace).

A bpftrace kprobe on ``__tcp_transmit_skb`` records, for every data segment (> 200 bytes) of the
testbed's group 0 (port 5001, the MPTCP connection) and group 1 (port 5002, the TCP flow), the
kernel stack; each stack is classified by the first known caller on it:

* ``tcp_ack``           — the flow's own ACK clock: an ACK arrived, tcp_ack → tcp_data_snd_check
* ``mptcp push (ack)``  — an ACK of *a* subflow made the MPTCP socket push (its data-level ACK
  freed room): __mptcp_check_push / delegated action / mptcp_napi_poll — the segment leaves on
  whichever subflow the scheduler picks, not necessarily the one that got the ACK
* ``mptcp release_cb``  — pushed when the MPTCP socket lock was released (deferred work)
* ``mptcp worker``, ``tcp TSQ``, ``timer (RTO)``, ``app write`` (tcp_sendmsg / mptcp_sendmsg)

    sudo flock /tmp/mpcc-bench.lock .venv/bin/python bench/kernel/xmit_trace.py [--aqm droptail|red] [--secs 20]

Writes a table (share of each subflow's / the TCP flow's segments per path) to stdout and the raw
bpftrace map to --raw.
"""

from __future__ import annotations

import argparse
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "python"))

SCRIPT = r"""
kprobe:__tcp_transmit_skb
{
  $sk = (struct sock *)arg0;
  $skb = (struct sk_buff *)arg1;
  $dport = $sk->__sk_common.skc_dport;
  if ($skb->len > 200) {
    if ($dport == 0x8913) { @mp[$sk->__sk_common.skc_rcv_saddr, kstack(16)] = count(); }
    if ($dport == 0x8a13) { @tcp[kstack(16)] = count(); }
  }
}
"""

# first match wins, scanning the stack from the innermost frame outwards
CLASSES = [
    ("tcp TSQ", ("tcp_tsq_handler", "tcp_tasklet_func")),
    ("timer (RTO)", ("tcp_retransmit_timer", "tcp_write_timer")),
    ("mptcp push (ack)", ("__mptcp_check_push", "mptcp_subflow_process_delegated", "mptcp_napi_poll",
                          "__mptcp_subflow_push_pending")),
    ("mptcp release_cb", ("mptcp_release_cb",)),
    ("mptcp worker", ("mptcp_worker",)),
    ("app write", ("mptcp_sendmsg", "tcp_sendmsg")),
    ("tcp_ack", ("tcp_ack", "tcp_data_snd_check", "tcp_rcv_established")),
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


def classify(stack: str) -> str:
    frames = [re.sub(r"\+\d+$", "", f.strip()) for f in stack.strip().splitlines() if f.strip()]
    for f in frames:
        for name, keys in CLASSES:
            if f in keys:
                return name
    return "other"


def parse(raw: str) -> dict[str, dict[str, int]]:
    """{flow: {class: segments}} from bpftrace's map dump."""
    out: dict[str, dict[str, int]] = {}
    for m in re.finditer(r"@(mp|tcp)\[(.*?)\]: (\d+)", raw, re.S):
        kind, key, n = m.group(1), m.group(2), int(m.group(3))
        if kind == "mp":
            addr, _, stack = key.partition(",")
            a = int(addr.strip())
            flow = "subflow " + ".".join(str((a >> s) & 255) for s in (0, 8, 16, 24))
        else:
            flow, stack = "tcp", key
        d = out.setdefault(flow, {})
        c = classify(stack)
        d[c] = d.get(c, 0) + n
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--aqm", choices=["droptail", "red"], default="droptail")
    ap.add_argument("--secs", type=float, default=20.0)
    ap.add_argument("--raw", type=Path, default=Path("/tmp/xmit_trace.raw"))
    a = ap.parse_args()
    from mpcc import scenario
    from mpcc.testbed import engine
    aqm = 'aqm = "red"\nred = {min_th = 10, max_th = 30, max_p = 0.1}' if a.aqm == "red" else ""
    s = scenario.loads(SHARED.format(secs=a.secs, aqm=aqm))
    bt = subprocess.Popen(["bpftrace", "-e", SCRIPT], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(3.0)  # attach
    try:
        res = engine.run_scenario(s, engine.settings_from(s, warmup_s=4.0), None, progress=False)
    finally:
        bt.send_signal(signal.SIGINT)
        raw, err = bt.communicate(timeout=60)
    a.raw.write_text(raw)
    mp, sp = res.groups["mp"], res.groups["sp"]
    print(f"{a.aqm}: mp {mp.rate_mbps:.2f} Mb/s (paths {', '.join(f'{x:.2f}' for x in mp.path_rate_mbps)}), "
          f"tcp {sp.rate_mbps:.2f} Mb/s, ratio {mp.rate_mbps / sp.rate_mbps:.2f}")
    table = parse(raw)
    classes = [c for c, _ in CLASSES] + ["other"]
    print("| flow | segments | " + " | ".join(classes) + " |")
    print("|---" * (len(classes) + 2) + "|")
    for flow, d in sorted(table.items()):
        tot = sum(d.values())
        print(f"| {flow} | {tot} | " + " | ".join(f"{100 * d.get(c, 0) / tot:.1f} %" for c in classes) + " |")
    if not table:
        print("no segments traced; bpftrace said:", err.strip()[-500:], file=sys.stderr)


if __name__ == "__main__":
    main()
