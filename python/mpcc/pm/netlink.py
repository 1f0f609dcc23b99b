"""The path manager's netlink side: ``mptcp_pm`` generic-netlink events in, ``SUBFLOW_CREATE``
requests out, ``pm_type`` set for the run and set back; the decisions are :mod:`mpcc.pm.policy`'s."""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import sys
import time
from pathlib import Path

from ..errors import EnvironmentProblem, MpccError
from .policy import (EV_ANNOUNCED, EV_CLOSED, EV_CREATED, EV_ESTABLISHED, EV_REMOVED,  # noqa: F401
                     EV_SUB_CLOSED, EV_SUB_ESTABLISHED, EVENT_NAMES, MAX_RETRY_S, RETRY_S, Join, Rejoin,
                     canonical, is_v6, problem)

#: MPTCP's generic-netlink family, its event group, and the numbers of include/uapi/linux/mptcp.h
#: (and mptcp_pm.h on 6.7+; the values are the same on 5.19–6.18)
FAMILY, EVENTS = "mptcp_pm", "mptcp_pm_events"
CMD_SUBFLOW_CREATE = 10
SO_RCVBUFFORCE = 33
PM_TYPE = Path("/proc/sys/net/mptcp/pm_type")


# --- netlink ----------------------------------------------------------------------------------------
def messages():
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

    command_cls, event_cls = messages()
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
                policy.events_lost()
                record(ev="events_lost")
                wake.set()
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
    p = argparse.ArgumentParser(prog="python -m mpcc.pm", description="A user-space MPTCP path manager that re-joins lost paths.")
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
