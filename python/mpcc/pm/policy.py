"""The re-joining path manager's policy: which (source, peer) slots a connection should have a
subflow on, and when a lost or refused one is tried again. Plain data, no I/O: the netlink loop
(:mod:`mpcc.pm.netlink`) feeds it events and sends the joins it asks for.
"""

from __future__ import annotations

import ipaddress
import os
import math
from dataclasses import dataclass, field

#: the events of include/uapi/linux/mptcp.h (mptcp_pm.h on 6.7+; the same values on 5.19–6.18)
EV_CREATED, EV_ESTABLISHED, EV_CLOSED = 1, 2, 3
EV_ANNOUNCED, EV_REMOVED = 6, 7
EV_SUB_ESTABLISHED, EV_SUB_CLOSED = 10, 11
EVENT_NAMES = {EV_CREATED: "created", EV_ESTABLISHED: "established", EV_CLOSED: "closed",
               EV_ANNOUNCED: "announced", EV_REMOVED: "removed", EV_SUB_ESTABLISHED: "sub_established",
               EV_SUB_CLOSED: "sub_closed"}
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
    #: MPTCP_EVENT_ESTABLISHED seen: the kernel refuses a join before it (__mptcp_subflow_connect:
    #: ENOTCONN until mptcp_is_fully_established), and its own path manager waits for it too
    #: (mptcp_pm_fully_established schedules the subflows of mptcp_pm_nl_fully_established)
    established: bool = False
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
            c.established = True
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

    def events_lost(self) -> None:
        """The kernel dropped events (ENOBUFS): an ESTABLISHED may be among them, so every
        connection counts as established (a join that proves early is refused, ENOTCONN, and
        tried again after the back-off)."""
        for c in self.conns.values():
            c.established = True

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
        """The joins due now, of established connections (a slot missing for the first time is due
        at once). Each is marked pending; report its outcome with :meth:`result`."""
        out = []
        for token, c in self.conns.items():
            if not c.established:
                continue
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
            if c.established:                    # before it, nothing is joined (joins)
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
