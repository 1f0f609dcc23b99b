"""Diagnostic counters of a testbed run, for ``mpcc compare``'s diagnosis (docs/compare.md):

* MIB counters of each namespace (``nstat -asz --json``, which reads the namespace's
  /proc/net/{snmp,netstat} without touching nstat's history file): the MPTCP MIB (``MPTcpExt*``:
  joins, fallbacks, data-level duplicates and out-of-order, …) and the TCP ones that tell how
  losses were recovered (``TCPTimeouts``, ``TCPFastRetrans``, ``TCPLostRetransmit``, …), as the
  difference over the run;
* tcp_info chrono stats of every sending socket near the end of the run (``ss -tin``: ``busy``,
  ``rwnd_limited``, ``sndbuf_limited``, plus ``data_segs_out``, ``retrans``, ``lost``), summed
  per (group, route). A subflow that is rwnd- or sndbuf-limited for a large part of its busy time
  is not limited by its congestion window, which the fluid model and the simulator assume;
* the receiving sockets' ACK counts at the same moment (``segs_out`` = ACKs sent, ``data_segs_in``
  = data segments received), summed per (group, route): the receiver's ACKs per data segment,
  which its delayed-ACK engine sets (``tcp_event_data_recv``, ``__tcp_ack_snd_check``).

Every function returns an empty result instead of raising when a tool is missing: diagnostics
never make a run fail.
"""

from __future__ import annotations

import json
import re
import subprocess
from typing import Any

#: TCP MIB counters kept besides every MPTcpExt* counter.
TCP_KEYS = ("TcpRetransSegs", "TcpExtTCPTimeouts", "TcpExtTCPFastRetrans", "TcpExtTCPLostRetransmit",
            "TcpExtTCPSackRecovery", "TcpExtTCPLossProbes", "TcpExtTCPSpuriousRTOs", "TcpExtTCPOFOQueue",
            "TcpExtTCPBacklogDrop", "TcpExtTCPRcvQDrop", "TcpExtTCPDSACKRecv",
            # a receiver's ACK opportunities: each segment merged into the socket backlog's tail while
            # the reader holds the socket (tcp_add_backlog → skb_try_coalesce) gets no ACK of its own;
            # delayed ACKs sent by the timer, and those it found the socket locked for
            "TcpExtTCPBacklogCoalesce", "TcpExtDelayedACKs", "TcpExtDelayedACKLocked")


def _exec(ns: str, cmd: list[str], timeout: float = 10.0) -> str:
    try:
        p = subprocess.run(["ip", "netns", "exec", ns, *cmd], capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return p.stdout if p.returncode == 0 else ""


def parse_nstat(text: str) -> dict[str, int]:
    """MPTcpExt* and :data:`TCP_KEYS` counters from ``nstat --json`` output."""
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    kernel = data.get("kernel", {}) if isinstance(data, dict) else {}
    return {k: int(v) for k, v in kernel.items() if k.startswith("MPTcpExt") or k in TCP_KEYS}


def mib(ns: str) -> dict[str, int]:
    return parse_nstat(_exec(ns, ["nstat", "-asz", "--json"]))


def mib_delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """Counters that changed over the run (after − before)."""
    return {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}


_SOCK = re.compile(r"^\S+\s+\d+\s+\d+\s+(\S+):(\d+)\s+(\S+):(\d+)")
_FIELDS = {"busy_ms": re.compile(r"\bbusy:(\d+)ms"), "rwnd_limited_ms": re.compile(r"\brwnd_limited:(\d+)ms"),
           "sndbuf_limited_ms": re.compile(r"\bsndbuf_limited:(\d+)ms"),
           "data_segs_out": re.compile(r"\bdata_segs_out:(\d+)"), "retrans": re.compile(r"\bretrans:\d+/(\d+)"),
           "lost": re.compile(r"\blost:(\d+)"), "segs_out": re.compile(r"\bsegs_out:(\d+)"),
           "data_segs_in": re.compile(r"\bdata_segs_in:(\d+)")}


def parse_ss(text: str) -> list[dict[str, Any]]:
    """Sockets of ``ss -tin`` output: local/peer address and port and the chrono fields (0 when
    absent; ss prints a field only when it is non-zero)."""
    out: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = None
    for line in text.splitlines():
        m = _SOCK.match(line)
        if m:
            cur = {"local": m.group(1).strip("[]"), "local_port": int(m.group(2)), "peer": m.group(3).strip("[]"),
                   "peer_port": int(m.group(4)), **{k: 0 for k in _FIELDS}}
            out.append(cur)
        elif cur is not None and line[:1].isspace():
            for k, rx in _FIELDS.items():
                f = rx.search(line)
                if f:
                    cur[k] = int(f.group(1))
    return out


_SEND = ("busy_ms", "rwnd_limited_ms", "sndbuf_limited_ms", "data_segs_out", "retrans", "lost")
_RECV = ("segs_out", "data_segs_in")


def _per_route(socks: list[dict[str, Any]], routes: dict[int, dict[str, int]], base_port: int, port: str,
               addr: str, keys: tuple[str, ...]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for s in socks:
        gi = s[port] - base_port
        r = routes.get(gi, {}).get(s[addr])
        if r is None:
            continue
        acc = out.setdefault(f"{gi}/{r}", {k: 0 for k in keys} | {"sockets": 0})
        for k in keys:
            acc[k] += s[k]
        acc["sockets"] += 1
    return out


def chrono(ns: str, routes: dict[int, dict[str, int]], base_port: int) -> dict[str, dict[str, int]]:
    """Chrono stats of the sending sockets in ``ns`` summed per "group/route" (group = peer port
    − ``base_port``; route from the group's client address → route map)."""
    return _per_route(parse_ss(_exec(ns, ["ss", "-tin"])), routes, base_port, "peer_port", "local", _SEND)


def acks(ns: str, routes: dict[int, dict[str, int]], base_port: int) -> dict[str, dict[str, int]]:
    """ACKs sent (``segs_out``) and data segments received of the receiving sockets in the server
    namespace ``ns``, summed per "group/route" (group = local port − ``base_port``, route from
    the peer's address)."""
    return _per_route(parse_ss(_exec(ns, ["ss", "-tin"])), routes, base_port, "local_port", "peer", _RECV)
