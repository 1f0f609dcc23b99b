"""``mpcc kernel pm``: a user-space MPTCP path manager for upstream Linux that re-joins lost paths.

Upstream's in-kernel path manager creates a subflow to an address once, when the connection is
established or the address is announced. A join refused while its link was down (ENETUNREACH), or a
subflow closed by a timeout, is never tried again (a kernel path manager's only join attempt is at establishment and at an announcement): under churn a
connection can lose every subflow and stall until it dies. A congestion control cannot create a
subflow; a path manager can.

This one sets ``net.mptcp.pm_type=1`` (the user-space PM) in its network namespace, follows every
connection on the ``mptcp_pm`` generic-netlink family's ``mptcp_pm_events`` group, and keeps one
subflow per *slot*: a (local source, peer address) pair. The peer addresses are the one the
connection was opened to (until the peer removes it) and every address the peer announced (until
removed). The local source is the routing table's (one slot per peer address), or each
``--source ADDR`` (a multi-homed host). Once the connection is established
(``MPTCP_EVENT_ESTABLISHED``; the kernel refuses a join before it with ENOTCONN), a missing slot is
joined with ``MPTCP_PM_CMD_SUBFLOW_CREATE``; a join the kernel refuses, or a subflow that closes, is tried again
after ``retry`` seconds, doubling to ``max_retry``, and at once when a link comes up
(RTM_NEWLINK). On exit the old ``pm_type`` is set back.

The policy (:mod:`.policy`, :class:`Rejoin`) is plain data with no I/O, tested without a kernel
(tests/kernel/test_pathmanager_policy.py); :mod:`.netlink` is the loop around it: the MPTCP
generic-netlink events in, SUBFLOW_CREATE requests out.

    mpcc kernel pm [--retry 0.5] [--max-retry 8] [--source ADDR]... [--log FILE]
    python -m mpcc.pm ...   (the same; ``--ready`` prints "ready" once listening)

IPv4 and IPv6: a slot's source and peer are of one family (a ``--source`` of the other family
than a peer address is not joined to it). Known limits: connections opened before it started are
not followed; a connection on which the kernel fell back to plain TCP has no subflows to manage.
See docs/kernel.md.
"""

from .netlink import (CMD_SUBFLOW_CREATE, EVENTS, FAMILY, PM_TYPE, messages, create_request,  # noqa: F401
                      event_attrs, main, parser, run, set_pm_type)
from .policy import (EV_ANNOUNCED, EV_CLOSED, EV_CREATED, EV_ESTABLISHED, EV_REMOVED,  # noqa: F401
                     EV_SUB_CLOSED, EV_SUB_ESTABLISHED, EVENT_NAMES, MAX_RETRY_S, PENDING_S, RETRY_S,
                     Connection, Join, Rejoin, Slot, canonical, is_v6, problem, slot_of)
