"""The window trace of one TCP connection over one path with deterministic losses: linkem drops
every N-th data packet of the forward direction (``--drop-every``), and the kernel's
``tcp:tcp_probe`` tracepoint (tracefs) records snd_cwnd and ssthresh at every packet the sender
receives. Used to check that the default build's single-route EWTCP(a = 1) grows and backs off
as the kernel's own Reno (the ``trace:ewtcp`` row of kernels_check.py, tests/kernel/test_cwnd_trace.py).

    python -m mpcc.lab.cwnd_trace [--drop-every 200] [--secs 4] CC[:tcp|:mptcp] ...

What "equal" means. The drops are fixed by packet count, and Reno's increase counts packets
acknowledged (snd_cwnd_cnt += acked), but when each ACK arrives is not (delayed ACKs acknowledge
one or two packets by timer races), so the window at a given ACK does not repeat between two runs
of the same congestion control. Compared are the loss events: the (window before the reduction,
ssthresh set) pairs, one per reduction, over the events both runs reached. Reno itself does not
always repeat them: after the first 5 events (slow start and its exit) a run settles in, or
switches between, two cycles, (22, 11) and (21, 10), so the check (same_dynamics) compares the
first events window by window and the later ones as a set.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import subprocess
import sys
import time
from pathlib import Path

from mpcc.lab import netlab
from mpcc.testbed import topology

PORT = 5201
#: tcp_probe's line: "... snd_cwnd=10 ssthresh=2147483647 ..."
_PROBE = re.compile(r"dest=\S+:(\d+) .*?snd_cwnd=(\d+) ssthresh=(\d+)")
BUFFER_KB = 16384            # per-CPU trace buffer during a run (tracefs buffer_size_kb)


class LinkemPath(netlab.Lab):
    """Client and server on one /24, with linkem as a bump in the wire in a relay namespace
    (rate, one-way delay, buffer, and the deterministic drops on the client→server direction);
    offloads off so linkem sees (and counts) every packet. One route: MPTCP adds no subflow."""
    roles = ("cli", "rel", "srv")
    server = "198.18.1.2"

    def __init__(self, drop_every: int, rate_mbit: float = 50.0, delay_ms: float = 5.0, buffer_pkts: int = 2000):
        super().__init__()
        self.drop_every, self.rate_mbit, self.delay_ms, self.buffer_pkts = drop_every, rate_mbit, delay_ms, buffer_pkts

    def build(self):
        c, r, s = self.ns["cli"], self.ns["rel"], self.ns["srv"]
        self.veth("cli", "p1c", "rel", "lkc")
        self.veth("rel", "lks", "srv", "p1s")
        for n, dev in ((c, "p1c"), (r, "lkc"), (r, "lks"), (s, "p1s")):
            self.ex(n, "ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off", "tx", "off", "rx", "off",
                    check=False)
        self.ip(c, "addr", "add", "198.18.1.1/24", "dev", "p1c")
        self.ip(s, "addr", "add", "198.18.1.2/24", "dev", "p1s")
        for n in (c, s):
            self.ip(n, "mptcp", "limits", "set", "subflows", "0", "add_addr_accepted", "0")
            # no cached ssthresh from the previous connection; buffers that never limit the window
            self.ex(n, "sysctl", "-qw", "net.ipv4.tcp_no_metrics_save=1", "net.ipv4.tcp_congestion_control=reno",
                    "net.ipv4.tcp_rmem=4096 1048576 16777216", "net.ipv4.tcp_wmem=4096 1048576 16777216")
        self.linkem = self.run.spawn(
            [topology.linkem_binary(), "--in", "lkc", "--out", "lks", "--rate-mbps", repr(self.rate_mbit),
             "--delay-ms", repr(self.delay_ms), "--buffer-pkts", str(self.buffer_pkts),
             "--drop-every", str(self.drop_every), "--no-realtime"], r,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.3)
        if self.linkem.poll() is not None:
            raise RuntimeError(f"linkem exited with {self.linkem.returncode} in {r}")


@contextlib.contextmanager
def tcp_probe(port: int = PORT):
    """tcp:tcp_probe enabled for sockets whose peer port is ``port``, on an empty buffer; yields a
    function returning the lines recorded so far. The event, its filter and the buffer size are
    set back on the way out (exception included)."""
    with netlab.tracefs("tcp") as events:
        tfs, ev = events.parent, events / "tcp" / "tcp_probe"
        text = (tfs / "buffer_size_kb").read_text()      # "7 (expanded: 1408)" before first use
        size0 = (re.search(r"expanded: (\d+)", text) or re.match(r"\s*(\d+)", text)).group(1)
        (tfs / "buffer_size_kb").write_text(str(BUFFER_KB))
        try:
            (ev / "filter").write_text(f"dport == {port}")
            (tfs / "trace").write_text("")
            (ev / "enable").write_text("1")
            yield lambda: (tfs / "trace").read_text().splitlines()
        finally:
            (ev / "enable").write_text("0")
            (ev / "filter").write_text("0")
            (tfs / "trace").write_text("")
            (tfs / "buffer_size_kb").write_text(size0)


def windows(lines: list[str], port: int = PORT) -> list[tuple[int, int]]:
    """(snd_cwnd, ssthresh) at each probe of the connection to ``port``, consecutive repeats dropped."""
    out: list[tuple[int, int]] = []
    for ln in lines:
        m = _PROBE.search(ln)
        if m and int(m.group(1)) == port:
            w = (int(m.group(2)), int(m.group(3)))
            if not out or out[-1] != w:
                out.append(w)
    return out


def loss_events(trace: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """(window before the reduction, ssthresh set) at each fall of the probe's ssthresh. tcp_probe
    records tcp_current_ssthresh(): snd_ssthresh during a reduction (CWR, Recovery), else
    max(snd_ssthresh, 3/4 snd_cwnd), which rises with the window; so a reduction is where it
    falls (from 2^31 − 1, or from ≥ 3/4 of the window to half of it)."""
    ev = []
    for (w0, s0), (_, s1) in zip(trace, trace[1:]):
        if s1 < s0:
            ev.append((w0, s1))
    return ev


def run_one(cc: str, proto: str, secs: float, drop_every: int) -> dict:
    """One connection on a fresh path: linkem's packet count starts at 0, so the same packets of
    every run are dropped."""
    with LinkemPath(drop_every) as lab, tcp_probe() as lines:
        res = lab.transfer(lab.server, secs, [(PORT, proto, cc)])
        time.sleep(0.2)
        trace = windows(lines())
    return {"cc": cc, "proto": proto, "received": res["received"].get(PORT, 0), "retrans": res["retrans"],
            "trace_len": len(trace), "loss_events": loss_events(trace), "trace": trace}


def compare(a: dict, b: dict, min_events: int) -> str | None:
    """None when both runs' loss events agree over the events both reached (at least
    ``min_events``), else one line naming the first difference."""
    ea, eb = a["loss_events"], b["loss_events"]
    n = min(len(ea), len(eb))
    if n < min_events:
        return f"only {n} loss events in common (< {min_events}): the runs are too short to compare"
    for i in range(n):
        if ea[i] != eb[i]:
            return (f"loss event {i + 1}: {a['cc']} (window, ssthresh) = {ea[i]}, {b['cc']} {eb[i]} "
                    f"(events before it equal)")
    return None


#: Allowed difference of the window at a loss event, in packets. At the slow-start exit the window
#: is the count of packets ACKed before the third duplicate ACK (both controls grow it by the
#: kernel's tcp_slow_start(), and one delayed ACK more or less at the receiver moves it by one);
#: later, drop-every-N AIMD has two cycles one packet apart ((22, 11) and (21, 10) for N = 200),
#: and ACK timing picks one. Reno shows both spreads itself (bench/kernel/RESULTS.md §16: exits at
#: 209 and 210 on one kernel; two reno runs of one boot in different cycles). Every event's
#: ssthresh is still asked to be Reno's halving of its own window.
HEAD_SLACK = 1


def reno_ssthresh(w: int) -> int:
    """tcp_reno_ssthresh(): max(cwnd >> 1, 2)."""
    return max(w >> 1, 2)


def same_dynamics(x: dict, refs: list[dict], head: int = 5, min_events: int = 8,
                  slack: int = HEAD_SLACK) -> str | None:
    """None when every loss event of ``x`` sets Reno's ssthresh (reno_ssthresh of its window), its
    first ``head`` windows (slow start and its exit) are within ``slack`` packets of every run of
    ``refs``' at the same event, and each of its later windows is within ``slack`` of a later
    window some ref run had; else one line. Reno does not repeat its later events in order or
    even its cycle (it switches between two cycles one packet apart by ACK timing: HEAD_SLACK),
    so their order is not compared."""
    if any(len(r["loss_events"]) < min_events for r in [x, *refs]):
        return f"fewer than {min_events} loss events in a run: too short to compare"
    for i, (w, s) in enumerate(x["loss_events"]):
        if s != reno_ssthresh(w):
            return f"loss event {i + 1}: {x['cc']} set ssthresh {s} at window {w}; Reno sets {reno_ssthresh(w)}"
    h = x["loss_events"][:head]
    for r in refs:
        rh = r["loss_events"][:head]
        if any(abs(a[0] - b[0]) > slack for a, b in zip(h, rh)):
            return f"first {head} loss events: {x['cc']} {h}, {r['cc']} {rh} (windows more than {slack} apart)"
    seen = {e[0] for r in refs for e in r["loss_events"][head:]}
    new = [e for e in x["loss_events"][head:] if all(abs(e[0] - w) > slack for w in seen)]
    return (f"{x['cc']} loss events more than {slack} packet(s) from every window a reference run had "
            f"after event {head}: {new[:5]}") if new else None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("flows", nargs="+", help="congestion control[:tcp|:mptcp], one run each, in order")
    ap.add_argument("--drop-every", type=int, default=200)
    ap.add_argument("--secs", type=float, default=4.0)
    ap.add_argument("--min-events", type=int, default=8)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args(argv)
    if a.drop_every < 2:
        print("cwnd_trace: --drop-every must be >= 2 (fix: e.g. --drop-every 200)", file=sys.stderr)
        return 2
    runs = []
    for f in a.flows:
        cc, proto = (f.split(":") + ["tcp"])[:2]
        runs.append(run_one(cc, proto, a.secs, a.drop_every))
    verdicts = [compare(runs[0], r, a.min_events) for r in runs[1:]]
    for r in runs:
        print(f"{r['cc']}:{r['proto']} events={len(r['loss_events'])} first={r['loss_events'][:12]}")
    for r, v in zip(runs[1:], verdicts):
        print(f"{runs[0]['cc']} vs {r['cc']}: {'equal' if v is None else v}")
    if a.out:
        a.out.write_text(json.dumps({"drop_every": a.drop_every, "secs": a.secs, "runs": runs,
                                     "verdicts": verdicts}) + "\n")
    return 0 if all(v is None for v in verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
