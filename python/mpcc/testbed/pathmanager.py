"""``mpcc kernel pm``: a user-space MPTCP path manager for upstream Linux that re-joins lost paths.

Upstream's in-kernel path manager creates a subflow to an address once, when the connection is
established or the address is announced. A join refused while its link was down (ENETUNREACH), or a
subflow closed by a timeout, is never tried again (bench/kernel/CHURN.md §7f, §13): under churn a
connection can lose every subflow and stall until it dies. A congestion control cannot create a
subflow; a path manager can.

This one sets ``net.mptcp.pm_type=1`` (the user-space PM) in its network namespace, follows every
connection on the ``mptcp_pm`` generic-netlink family's ``mptcp_pm_events`` group, and keeps one
subflow per *slot*: a (local source, peer address) pair. The peer addresses are the one the
connection was opened to (until the peer removes it) and every address the peer announced (until
removed). The local source is the routing table's (one slot per peer address), or each
``--source ADDR`` (a multi-homed host). A missing slot is joined with
``MPTCP_PM_CMD_SUBFLOW_CREATE``; a join the kernel refuses, or a subflow that closes, is tried again
after ``retry`` seconds, doubling to ``max_retry``, and at once when a link comes up
(RTM_NEWLINK). On exit the old ``pm_type`` is set back.

The policy (:class:`Rejoin`) is plain data with no I/O, tested without a kernel
(tests/kernel/test_pathmanager_policy.py); :func:`serve` is the netlink loop around it.

    mpcc kernel pm [--retry 0.5] [--max-retry 8] [--source ADDR]... [--log FILE]
    python -m mpcc.testbed.pathmanager ...   (the same; ``--ready`` prints "ready" once listening)

IPv4 and IPv6: a slot's source and peer are of one family (a ``--source`` of the other family
than a peer address is not joined to it). Known limits: connections opened before it started are
not followed; a connection on which the kernel fell back to plain TCP has no subflows to manage.
See docs/kernel.md.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import math
import os
import signal
import socket
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import EnvironmentProblem, MpccError

#: MPTCP's generic-netlink family, its event group, and the numbers of include/uapi/linux/mptcp.h
#: (and mptcp_pm.h on 6.7+; the values are the same on 5.19–6.18)
FAMILY, EVENTS = "mptcp_pm", "mptcp_pm_events"
CMD_SUBFLOW_CREATE = 10
EV_CREATED, EV_ESTABLISHED, EV_CLOSED = 1, 2, 3
EV_ANNOUNCED, EV_REMOVED = 6, 7
EV_SUB_ESTABLISHED, EV_SUB_CLOSED = 10, 11
EVENT_NAMES = {EV_CREATED: "created", EV_ESTABLISHED: "established", EV_CLOSED: "closed",
               EV_ANNOUNCED: "announced", EV_REMOVED: "removed", EV_SUB_ESTABLISHED: "sub_established",
               EV_SUB_CLOSED: "sub_closed"}
SO_RCVBUFFORCE = 33
PM_TYPE = Path("/proc/sys/net/mptcp/pm_type")
#: how long a join the kernel accepted may stay without SUB_ESTABLISHED / SUB_CLOSED before it is
#: counted as lost and tried again: TCP's SYN retries (tcp_syn_retries 6: 1+2+...+64 s = 127 s) + 3 s
PENDING_S = 130.0
#: the retry back-off's start and ceiling, s (one place for both entry points: mpcc kernel pm and -m)
RETRY_S, MAX_RETRY_S = 0.5, 8.0


# --- the policy: plain data, no I/O ----------------------------------------------------------------
Slot = tuple[str, str]          # (local source, "" = the routing table's; peer address)


@dataclass
class Join:
    """One MPTCP_PM_CMD_SUBFLOW_CREATE to send: from ``src`` ("" = routed) to ``daddr:dport``."""

    token: int
    src: str
    daddr: str
    dport: int

    @property
    def slot(self) -> Slot:
        return (self.src, self.daddr)


@dataclass
class Connection:
    """What the policy knows of one MPTCP connection (the client side of it)."""

    daddr: str                                   # the address it was opened to (peer id 0)
    dport: int
    initial_removed: bool = False                # the peer removed id 0
    announced: dict[int, tuple[str, int]] = field(default_factory=dict)    # peer id → (addr, port)
    live: dict[Slot, int] = field(default_factory=dict)                    # slot → established subflows
    pending: dict[Slot, float] = field(default_factory=dict)               # slot → join sent at
    next_at: dict[Slot, float] = field(default_factory=dict)               # slot → retry not before
    delay: dict[Slot, float] = field(default_factory=dict)                 # slot → current back-off


def slot_of(src: str, daddr: str, sources: tuple[str, ...]) -> Slot:
    """The slot a subflow from ``src`` to ``daddr`` fills: (src, daddr) with --source, else ("", daddr)."""
    return (src, daddr) if sources else ("", daddr)


def is_v6(addr: str) -> bool:
    """An address's family as the events and requests carry it (IPv6 text has a colon)."""
    return ":" in addr


class Rejoin:
    """The re-joining policy. Feed it the kernel's events (:meth:`event`), link-ups (:meth:`link_up`)
    and the outcome of each join (:meth:`result`); ask it what to join now (:meth:`joins`) and when
    to wake next (:meth:`wake_at`). Times are seconds on any monotonic clock."""

    def __init__(self, retry: float = RETRY_S, max_retry: float = MAX_RETRY_S, sources: tuple[str, ...] = (),
                 pending_s: float = PENDING_S):
        self.retry, self.max_retry, self.sources, self.pending_s = retry, max_retry, tuple(sources), pending_s
        self.conns: dict[int, Connection] = {}
        self.counts = {"connections": 0, "joins": 0, "refused": 0, "established": 0, "closed": 0,
                       "re_joins_established": 0, "lost_pending": 0}
        self.reasons: dict[str, int] = {}

    # events --------------------------------------------------------------------------------------
    def event(self, kind: int, a: dict, now: float) -> None:
        """One ``mptcp_pm_events`` message: ``kind`` its command (EV_*), ``a`` its attributes by short
        name (token, saddr, daddr, dport, rem_id, server_side, error; addresses IPv4 or IPv6 text)."""
        token = a.get("token")
        if token is None:
            return
        if kind == EV_CREATED:
            if a.get("server_side"):
                return
            c = Connection(daddr=a.get("daddr", ""), dport=a.get("dport", 0))
            self.conns[token] = c
            self.counts["connections"] += 1
            c.pending[slot_of(a.get("saddr", ""), c.daddr, self.sources)] = now   # the initial subflow
            return
        c = self.conns.get(token)
        if c is None:
            return
        if kind == EV_CLOSED:
            del self.conns[token]
        elif kind in (EV_ESTABLISHED, EV_SUB_ESTABLISHED):
            s = slot_of(a.get("saddr", ""), a.get("daddr", c.daddr), self.sources)
            if kind == EV_SUB_ESTABLISHED and s in c.delay:
                self.counts["re_joins_established"] += 1
            c.live[s] = c.live.get(s, 0) + 1
            c.pending.pop(s, None)
            c.delay.pop(s, None)
            c.next_at.pop(s, None)
            self.counts["established"] += kind == EV_SUB_ESTABLISHED
        elif kind == EV_SUB_CLOSED:
            s = slot_of(a.get("saddr", ""), a.get("daddr", ""), self.sources)
            self.counts["closed"] += 1
            if c.live.get(s, 0) > 0 and s not in c.pending:
                c.live[s] -= 1
                if not c.live[s]:
                    del c.live[s]
            else:                                    # a join that never established
                c.pending.pop(s, None)
            if s not in c.live:
                self._back_off(c, s, now)
        elif kind == EV_ANNOUNCED:
            addr = a.get("daddr")
            if addr:
                c.announced[a.get("rem_id", 0)] = (addr, a.get("dport") or c.dport)
                if addr == c.daddr:
                    c.initial_removed = False
        elif kind == EV_REMOVED:
            rid = a.get("rem_id", 0)
            if rid == 0:
                c.initial_removed = True
            c.announced.pop(rid, None)

    def link_up(self, now: float) -> None:
        """A link came up: every slot waiting for its retry is due now."""
        for c in self.conns.values():
            for s in c.next_at:
                c.next_at[s] = min(c.next_at[s], now)

    # what to do ----------------------------------------------------------------------------------
    def wanted(self, c: Connection) -> dict[Slot, int]:
        """The slots this connection should have, each with the peer port to join: every peer
        address from every source of its family (the routed source, "", for any)."""
        peers = {} if c.initial_removed else {c.daddr: c.dport}
        for addr, port in c.announced.values():
            peers.setdefault(addr, port)
        srcs = self.sources or ("",)
        return {(s, d): p for d, p in peers.items() for s in srcs if not s or is_v6(s) == is_v6(d)}

    def missing(self, c: Connection, now: float) -> list[Slot]:
        """Wanted slots with no subflow and no join in flight (a join older than pending_s counts
        as lost)."""
        for s, t in list(c.pending.items()):
            if now - t > self.pending_s:
                del c.pending[s]
                self.counts["lost_pending"] += 1
                self._back_off(c, s, now)
        return self._absent(c)

    def _absent(self, c: Connection) -> list[Slot]:
        """Wanted slots with no subflow and no join in flight (no time-out applied)."""
        return [s for s in self.wanted(c) if s not in c.live and s not in c.pending]

    def joins(self, now: float) -> list[Join]:
        """The joins due now (a slot missing for the first time is due at once). Each is marked
        pending; report its outcome with :meth:`result`."""
        out = []
        for token, c in self.conns.items():
            want = self.wanted(c)
            for s in self.missing(c, now):
                if c.next_at.get(s, now) <= now:
                    out.append(Join(token, s[0], s[1], want[s]))
                    c.pending[s] = now
        self.counts["joins"] += len(out)
        return out

    def result(self, j: Join, err: int, now: float, reason: str = "") -> None:
        """The kernel's answer to a join: 0 (accepted: wait for SUB_ESTABLISHED / SUB_CLOSED), or a
        positive errno (refused: try again after the back-off)."""
        c = self.conns.get(j.token)
        if not err or c is None:
            return
        self.counts["refused"] += 1
        key = f"{os.strerror(err)}" + (f": {reason}" if reason else "")
        self.reasons[key] = self.reasons.get(key, 0) + 1
        if reason == "invalid token":            # the connection is gone; its CLOSED event is late
            del self.conns[j.token]
            return
        c.pending.pop(j.slot, None)
        self._back_off(c, j.slot, now)

    def wake_at(self, now: float) -> float | None:
        """The next time something is due: a retry, or a pending join's time-out (None: nothing)."""
        times = []
        for c in self.conns.values():
            times += [c.next_at.get(s, now) for s in self._absent(c)]
            times += [t + self.pending_s for t in c.pending.values()]
        return min(times) if times else None

    def summary(self) -> dict:
        return {**self.counts, "open": len(self.conns), "refusals": dict(sorted(self.reasons.items()))}

    def _back_off(self, c: Connection, s: Slot, now: float) -> None:
        d = c.delay.get(s)
        d = self.retry if d is None else min(2 * d, self.max_retry)
        c.delay[s] = d
        c.next_at[s] = now + d


def problem(retry: float, max_retry: float, sources) -> str | None:
    """What is wrong with these settings, as one line with its fix (None: nothing)."""
    if not (isinstance(retry, (int, float)) and math.isfinite(retry) and retry > 0):
        return f"--retry {retry}: must be a positive number of seconds (fix: e.g. --retry 0.5)"
    if not (isinstance(max_retry, (int, float)) and math.isfinite(max_retry) and max_retry >= retry):
        return f"--max-retry {max_retry}: must be a number of seconds ≥ --retry {retry} (fix: e.g. --max-retry 8)"
    for s in sources:
        try:
            a = ipaddress.ip_address(s)
        except ValueError:
            return f"--source {s!r}: not an IP address (fix: e.g. --source 10.0.1.1 or --source fd00:1::1)"
        if a.is_unspecified or a.is_multicast:
            return f"--source {s}: not a unicast address (fix: give an address of this host, e.g. --source 10.0.1.1)"
    return None


def canonical(sources) -> tuple[str, ...]:
    """--source addresses as the kernel's events write them (``FD00:1:0::1`` → ``fd00:1::1``), so that a
    subflow's source matches its slot."""
    return tuple(dict.fromkeys(str(ipaddress.ip_address(s)) for s in sources))


# --- netlink ----------------------------------------------------------------------------------------
def _messages():
    """pyroute2 message classes for the family's commands and events (imported here: only the PM
    itself needs pyroute2)."""
    from pyroute2.netlink import genlmsg, nla

    class pm_addr(nla):
        prefix = "MPTCP_PM_ADDR_ATTR_"
        nla_map = (("MPTCP_PM_ADDR_ATTR_UNSPEC", "none"), ("MPTCP_PM_ADDR_ATTR_FAMILY", "uint16"),
                   ("MPTCP_PM_ADDR_ATTR_ID", "uint8"), ("MPTCP_PM_ADDR_ATTR_ADDR4", "ip4addr"),
                   ("MPTCP_PM_ADDR_ATTR_ADDR6", "ip6addr"), ("MPTCP_PM_ADDR_ATTR_PORT", "uint16"),
                   ("MPTCP_PM_ADDR_ATTR_FLAGS", "uint32"), ("MPTCP_PM_ADDR_ATTR_IF_IDX", "int32"))

    class command(genlmsg):
        prefix = "MPTCP_PM_ATTR_"
        nla_map = (("MPTCP_PM_ATTR_UNSPEC", "none"), ("MPTCP_PM_ATTR_ADDR", "pm_addr"),
                   ("MPTCP_PM_ATTR_RCV_ADD_ADDRS", "uint32"), ("MPTCP_PM_ATTR_SUBFLOWS", "uint32"),
                   ("MPTCP_PM_ATTR_TOKEN", "uint32"), ("MPTCP_PM_ATTR_LOC_ID", "uint8"),
                   ("MPTCP_PM_ATTR_ADDR_REMOTE", "pm_addr"))
    command.pm_addr = pm_addr

    class event(genlmsg):
        prefix = "MPTCP_ATTR_"
        nla_map = (("MPTCP_ATTR_UNSPEC", "none"), ("MPTCP_ATTR_TOKEN", "uint32"),
                   ("MPTCP_ATTR_FAMILY", "uint16"), ("MPTCP_ATTR_LOC_ID", "uint8"),
                   ("MPTCP_ATTR_REM_ID", "uint8"), ("MPTCP_ATTR_SADDR4", "ip4addr"),
                   ("MPTCP_ATTR_SADDR6", "ip6addr"), ("MPTCP_ATTR_DADDR4", "ip4addr"),
                   ("MPTCP_ATTR_DADDR6", "ip6addr"), ("MPTCP_ATTR_SPORT", "be16"),
                   ("MPTCP_ATTR_DPORT", "be16"), ("MPTCP_ATTR_BACKUP", "uint8"),
                   ("MPTCP_ATTR_ERROR", "uint8"), ("MPTCP_ATTR_FLAGS", "uint16"),
                   ("MPTCP_ATTR_TIMEOUT", "uint32"), ("MPTCP_ATTR_IF_IDX", "int32"),
                   ("MPTCP_ATTR_RESET_REASON", "uint32"), ("MPTCP_ATTR_RESET_FLAGS", "uint32"),
                   ("MPTCP_ATTR_SERVER_SIDE", "uint8"))

    return command, event


NLA_F_NESTED = 0x8000


def create_request(command_cls, j: Join, saddr: str, local_id: int):
    """The SUBFLOW_CREATE message for join ``j`` from local ``saddr`` with local address id
    ``local_id`` (1-255, the same for an address on every connection: the kernel keeps a list of the
    connection's local addresses and refuses an id it holds for another address, "did not match
    address and id"; the initial subflow has id 0). The nested addresses carry NLA_F_NESTED: 6.1
    refuses them without it ("NLA_F_NESTED is missing"), 6.12+ do not check."""
    def family(addr: str) -> list:
        return ([("MPTCP_PM_ADDR_ATTR_FAMILY", socket.AF_INET6), ("MPTCP_PM_ADDR_ATTR_ADDR6", addr)] if is_v6(addr)
                else [("MPTCP_PM_ADDR_ATTR_FAMILY", socket.AF_INET), ("MPTCP_PM_ADDR_ATTR_ADDR4", addr)])

    msg = command_cls()
    msg["cmd"] = CMD_SUBFLOW_CREATE
    msg["version"] = 1
    msg["attrs"] = [
        ("MPTCP_PM_ATTR_TOKEN", j.token),
        ("MPTCP_PM_ATTR_ADDR", {"attrs": [*family(saddr), ("MPTCP_PM_ADDR_ATTR_ID", local_id)]}, NLA_F_NESTED),
        ("MPTCP_PM_ATTR_ADDR_REMOTE", {"attrs": [*family(j.daddr), ("MPTCP_PM_ADDR_ATTR_PORT", j.dport)]}, NLA_F_NESTED),
    ]
    return msg


_SHORT = {"MPTCP_ATTR_TOKEN": "token", "MPTCP_ATTR_SADDR4": "saddr", "MPTCP_ATTR_DADDR4": "daddr",
          "MPTCP_ATTR_SADDR6": "saddr", "MPTCP_ATTR_DADDR6": "daddr",
          "MPTCP_ATTR_DPORT": "dport", "MPTCP_ATTR_REM_ID": "rem_id", "MPTCP_ATTR_SERVER_SIDE": "server_side",
          "MPTCP_ATTR_ERROR": "error", "MPTCP_ATTR_LOC_ID": "loc_id"}


def event_attrs(msg) -> dict:
    """An event message's attributes by the short names :meth:`Rejoin.event` reads (an event
    carries the addresses of one family: SADDR4/DADDR4 or SADDR6/DADDR6)."""
    return {_SHORT[k]: v for k, v in msg["attrs"] if k in _SHORT}


def set_pm_type(value: str) -> str:
    """Write net.mptcp.pm_type in this namespace; return the old value."""
    if not PM_TYPE.exists():
        raise EnvironmentProblem("this kernel has no net.mptcp.pm_type, so no user-space path manager "
                                 "(fix: Linux 5.19 or newer with CONFIG_MPTCP)")
    old = PM_TYPE.read_text().strip()
    PM_TYPE.write_text(value)
    return old


async def _serve(policy: Rejoin, log, ready: bool, stop) -> None:
    import asyncio
    import errno as E
    from pyroute2 import AsyncIPRoute
    from pyroute2.netlink.exceptions import NetlinkError
    from pyroute2.netlink.generic import AsyncGenericNetlinkSocket
    from pyroute2.netlink.rtnl import RTMGRP_LINK

    command_cls, event_cls = _messages()
    t0 = time.monotonic()

    def now():
        return time.monotonic() - t0

    def record(**kw):
        if log:
            log.write(json.dumps({"t": round(now(), 3), **kw}) + "\n")
            log.flush()

    try:
        ev = AsyncGenericNetlinkSocket()
        await ev.bind(FAMILY, event_cls)
        ev.add_membership(EVENTS)
        # a storm of events (100 connections losing a path at once) must not overflow the socket:
        # a lost SUB_CLOSED would leave a slot counted as live and never re-joined
        ev.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 8 << 20)
        cmd = AsyncGenericNetlinkSocket(ext_ack=True)
        await cmd.bind(FAMILY, command_cls)
        ipr = AsyncIPRoute()
        await ipr.bind(groups=RTMGRP_LINK)
    except (NetlinkError, KeyError, OSError) as e:
        raise EnvironmentProblem(f"the kernel refused MPTCP's path-manager netlink family ({e}) "
                                 "(fix: a kernel with CONFIG_MPTCP, 5.19 or newer, and root)") from None
    routes = AsyncIPRoute()
    wake = asyncio.Event()
    local_ids: dict[str, int] = {}         # local address → its id, 1, 2, ... in order of first use

    async def events():
        while True:
            try:
                got = [m async for m in ev.get()]
            except OSError as e:          # ENOBUFS: the kernel dropped events (counted, said in the summary)
                if e.errno != E.ENOBUFS:
                    raise
                policy.counts["events_lost"] = policy.counts.get("events_lost", 0) + 1
                record(ev="events_lost")
                continue
            for m in got:
                kind = m["cmd"]
                a = event_attrs(m)
                policy.event(kind, a, now())
                if kind in EVENT_NAMES:
                    record(ev=EVENT_NAMES[kind], **{k: a[k] for k in ("token", "saddr", "daddr", "rem_id", "error")
                                                    if k in a})
                wake.set()

    async def links():
        while True:
            async for m in ipr.get():
                if m.get("event") == "RTM_NEWLINK" and m["flags"] & 0x1 and m["flags"] & 0x10000:  # IFF_UP, IFF_LOWER_UP
                    policy.link_up(now())
                    record(ev="link_up", ifname=m.get_attr("IFLA_IFNAME"))
                    wake.set()

    async def source_for(daddr: str) -> str:
        rts = await routes.route("get", dst=daddr, family=socket.AF_INET6 if is_v6(daddr) else socket.AF_INET)
        rts = rts if isinstance(rts, (list, tuple)) else [r async for r in rts]
        src = rts[0].get_attr("RTA_PREFSRC") if rts else None
        if not src:
            raise NetlinkError(E.ENETUNREACH)
        return src

    async def join(j: Join):
        reason, err = "", 0
        try:
            saddr = j.src or await source_for(j.daddr)
            lid = local_ids.setdefault(saddr, len(local_ids) + 1)
            if lid > 255:
                raise NetlinkError(E.ENOSPC, "more than 255 local addresses")
            async for _ in await cmd.nlm_request(create_request(command_cls, j, saddr, lid), msg_type=cmd.prid,
                                                 msg_flags=0x1 | 0x4):   # NLM_F_REQUEST | NLM_F_ACK
                pass
        except NetlinkError as e:
            err, reason = abs(e.code) or E.EINVAL, (e.args[1] if len(e.args) > 1 and e.args[1] != os.strerror(abs(e.code)) else "")
        policy.result(j, err, now(), str(reason or ""))
        record(ev="join", token=j.token, src=j.src, daddr=j.daddr, err=err, **({"reason": reason} if reason else {}))

    record(ev="start", monotonic=t0)       # the log's t is seconds after this monotonic time
    tasks = [asyncio.ensure_future(events()), asyncio.ensure_future(links())]
    if ready:
        print("ready", flush=True)
    try:
        while not stop.is_set():
            for j in policy.joins(now()):
                await join(j)
            w = policy.wake_at(now())
            timeout = 1.0 if w is None else min(1.0, max(0.0, w - now()))
            wake.clear()
            try:
                await asyncio.wait_for(wake.wait(), timeout=max(timeout, 0.01))
            except asyncio.TimeoutError:
                pass
            for t in tasks:
                if t.done() and t.exception():
                    raise t.exception()
    finally:
        for t in tasks:
            t.cancel()
        for s in (ev, cmd, ipr, routes):
            s.close()


def run(retry: float = RETRY_S, max_retry: float = MAX_RETRY_S, sources=(), log_path: str | None = None,
        ready: bool = False) -> dict:
    """Run the path manager in this process's network namespace until SIGINT/SIGTERM; return the
    policy's summary. Bad settings, no root or no user-space PM raise MpccError."""
    import asyncio
    bad = problem(retry, max_retry, sources)
    if bad:
        raise MpccError(bad)
    try:
        import pyroute2  # noqa: F401
    except ImportError:
        raise EnvironmentProblem("pyroute2 is not installed (fix: pip install 'pyroute2==0.9.7', or make setup)") from None
    if os.geteuid() != 0:
        raise EnvironmentProblem("the path manager needs root: it sets net.mptcp.pm_type and creates subflows "
                                 "(fix: run it with sudo)")
    policy = Rejoin(retry, max_retry, canonical(sources))
    old = set_pm_type("1")
    log = open(log_path, "a") if log_path else None

    async def main():
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await _serve(policy, log, ready, stop)

    try:
        asyncio.run(main())
    finally:
        PM_TYPE.write_text(old)
        if log:
            log.write(json.dumps({"ev": "summary", **policy.summary()}) + "\n")
            log.close()
    return policy.summary()


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m mpcc.testbed.pathmanager", description=__doc__.split("\n\n")[0])
    p.add_argument("--retry", type=float, default=RETRY_S, help="first retry of a refused or closed join, s "
                   "(default %(default)s)")
    p.add_argument("--max-retry", type=float, default=MAX_RETRY_S, help="retry back-off ceiling, s (default %(default)s)")
    p.add_argument("--source", action="append", default=[], metavar="ADDR",
                   help="a local IPv4 or IPv6 address to join from, to peer addresses of its family "
                   "(repeatable; default: the routing table's)")
    p.add_argument("--log", help="append one JSON line per event and join to this file")
    p.add_argument("--ready", action="store_true", help='print "ready" once listening')
    return p


def main(argv=None) -> int:
    a = parser().parse_args(argv)
    try:
        summary = run(a.retry, a.max_retry, a.source, a.log, a.ready)
    except MpccError as e:
        print(f"mpcc kernel pm: {e}", file=sys.stderr)
        return e.exit_code
    print(json.dumps(summary), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
