"""The re-joining path manager's policy and request encoding (mpcc.pm; no root,
no kernel): which slots a connection should have, when a missing one is joined again, and the
SUBFLOW_CREATE message as the kernel will parse it. The kernel half is test_pathmanager.py."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from mpcc import pm
from mpcc.pm import (EV_ANNOUNCED, EV_CLOSED, EV_CREATED, EV_ESTABLISHED, EV_REMOVED,
                     EV_SUB_CLOSED, EV_SUB_ESTABLISHED, Join, Rejoin)

TOKEN = 7


def _opened(policy: Rejoin, now=0.0, announced=("10.0.2.2", "10.0.3.2")) -> Rejoin:
    """A connection from 10.0.1.1 to 10.0.1.2:80, established, and the peer's announcements."""
    policy.event(EV_CREATED, {"token": TOKEN, "saddr": "10.0.1.1", "daddr": "10.0.1.2", "dport": 80}, now)
    policy.event(EV_ESTABLISHED, {"token": TOKEN, "saddr": "10.0.1.1", "daddr": "10.0.1.2"}, now)
    for i, a in enumerate(announced, 1):
        policy.event(EV_ANNOUNCED, {"token": TOKEN, "rem_id": i, "daddr": a}, now)
    return policy


def _slots(joins):
    return sorted((j.src, j.daddr, j.dport) for j in joins)


def test_announced_addresses_are_joined_once_from_the_routed_source():
    p = _opened(Rejoin())
    assert _slots(p.joins(0.0)) == [("", "10.0.2.2", 80), ("", "10.0.3.2", 80)]
    assert p.joins(0.1) == []                       # pending: not joined twice
    p.event(EV_SUB_ESTABLISHED, {"token": TOKEN, "saddr": "10.0.2.1", "daddr": "10.0.2.2"}, 0.2)
    assert p.joins(200.0) == [] or _slots(p.joins(200.0)) == [("", "10.0.3.2", 80)]


def test_a_refused_join_backs_off_doubling_to_the_ceiling_and_link_up_makes_it_due():
    p = _opened(Rejoin(retry=0.5, max_retry=2.0), announced=("10.0.2.2",))
    t, waits = 0.0, []
    for _ in range(5):
        (j,) = p.joins(t)
        p.result(j, 101, t)                         # ENETUNREACH
        w = p.wake_at(t)
        waits.append(round(w - t, 3))
        assert p.joins(w - 0.01) == []              # not before its time
        t = w
    assert waits == [0.5, 1.0, 2.0, 2.0, 2.0]
    (j,) = p.joins(t)
    p.result(j, 101, t)
    p.link_up(t + 0.1)                               # the link came up: due now, not in 2 s
    assert _slots(p.joins(t + 0.1)) == [("", "10.0.2.2", 80)]
    assert p.summary()["refusals"] == {"Network is unreachable": 6}


def test_a_closed_subflow_is_rejoined_and_an_established_rejoin_is_counted():
    p = _opened(Rejoin(retry=0.5), announced=("10.0.2.2",))
    (j,) = p.joins(0.0)
    p.result(j, 0, 0.0)
    p.event(EV_SUB_ESTABLISHED, {"token": TOKEN, "saddr": "10.0.2.1", "daddr": "10.0.2.2"}, 0.1)
    assert p.joins(1.0) == []
    p.event(EV_SUB_CLOSED, {"token": TOKEN, "saddr": "10.0.2.1", "daddr": "10.0.2.2", "error": 110}, 5.0)
    assert p.joins(5.1) == [] and p.wake_at(5.1) == pytest.approx(5.5)
    (j,) = p.joins(5.5)
    p.result(j, 0, 5.5)
    p.event(EV_SUB_ESTABLISHED, {"token": TOKEN, "saddr": "10.0.2.1", "daddr": "10.0.2.2"}, 5.6)
    s = p.summary()
    assert s["re_joins_established"] == 1 and s["closed"] == 1 and s["joins"] == 2


def test_the_initial_path_is_rejoined_after_its_subflow_closes():
    p = _opened(Rejoin(), announced=())
    p.event(EV_SUB_CLOSED, {"token": TOKEN, "saddr": "10.0.1.1", "daddr": "10.0.1.2"}, 1.0)
    assert _slots(p.joins(1.5)) == [("", "10.0.1.2", 80)]


def test_a_removed_address_is_not_joined_until_it_is_announced_again():
    p = _opened(Rejoin(), announced=("10.0.2.2",))
    p.event(EV_REMOVED, {"token": TOKEN, "rem_id": 1}, 0.0)
    p.event(EV_REMOVED, {"token": TOKEN, "rem_id": 0}, 0.0)   # the initial address (id 0) too
    p.event(EV_SUB_CLOSED, {"token": TOKEN, "saddr": "10.0.1.1", "daddr": "10.0.1.2"}, 0.1)
    assert p.joins(10.0) == [] and p.wake_at(10.0) is None
    p.event(EV_ANNOUNCED, {"token": TOKEN, "rem_id": 3, "daddr": "10.0.1.2", "dport": 80}, 11.0)
    assert _slots(p.joins(11.0)) == [("", "10.0.1.2", 80)]       # re-announced under a new id


def test_an_accepted_join_without_an_outcome_is_lost_after_the_pending_time():
    p = _opened(Rejoin(pending_s=130.0), announced=("10.0.2.2",))
    (j,) = p.joins(0.0)
    p.result(j, 0, 0.0)
    assert p.joins(129.0) == [] and p.wake_at(1.0) == pytest.approx(130.0)
    assert p.joins(130.5) == []                              # counted lost, backing off 0.5 s
    assert _slots(p.joins(131.0)) == [("", "10.0.2.2", 80)]
    assert p.summary()["lost_pending"] == 1


def test_sources_give_one_slot_per_local_address_and_peer_address():
    p = _opened(Rejoin(sources=("10.0.1.1", "10.0.9.1")), announced=("10.0.2.2",))
    # the initial subflow fills (10.0.1.1, 10.0.1.2); the rest are joined
    assert _slots(p.joins(0.0)) == [("10.0.1.1", "10.0.2.2", 80), ("10.0.9.1", "10.0.1.2", 80),
                                    ("10.0.9.1", "10.0.2.2", 80)]


def test_ipv6_connections_are_joined_with_ipv6_slots():
    p = Rejoin()
    p.event(EV_CREATED, {"token": TOKEN, "saddr": "fd00:1::1", "daddr": "fd00:1::2", "dport": 80}, 0.0)
    p.event(EV_ESTABLISHED, {"token": TOKEN, "saddr": "fd00:1::1", "daddr": "fd00:1::2"}, 0.0)
    p.event(EV_ANNOUNCED, {"token": TOKEN, "rem_id": 1, "daddr": "fd00:2::2"}, 0.0)
    assert _slots(p.joins(0.0)) == [("", "fd00:2::2", 80)]
    p.event(EV_SUB_ESTABLISHED, {"token": TOKEN, "saddr": "fd00:2::1", "daddr": "fd00:2::2"}, 0.1)
    p.event(EV_SUB_CLOSED, {"token": TOKEN, "saddr": "fd00:2::1", "daddr": "fd00:2::2"}, 1.0)
    assert p.joins(1.0) == [] and _slots(p.joins(1.5)) == [("", "fd00:2::2", 80)]


def test_a_source_is_joined_only_to_peer_addresses_of_its_family():
    p = Rejoin(sources=("10.0.1.1", "fd00:9::1"))
    p.event(EV_CREATED, {"token": TOKEN, "saddr": "10.0.1.1", "daddr": "10.0.1.2", "dport": 80}, 0.0)
    p.event(EV_ESTABLISHED, {"token": TOKEN, "saddr": "10.0.1.1", "daddr": "10.0.1.2"}, 0.0)
    assert p.joins(0.0) == []                        # fd00:9::1 cannot reach 10.0.1.2: no slot, no retries
    p.event(EV_ANNOUNCED, {"token": TOKEN, "rem_id": 1, "daddr": "fd00:2::2"}, 1.0)
    assert _slots(p.joins(1.0)) == [("fd00:9::1", "fd00:2::2", 80)]
    assert p.wake_at(1.0) == 1.0 + p.pending_s


def test_sources_are_written_as_the_kernels_events_write_them():
    assert pm.canonical(["FD00:1:0::1", "10.0.1.1", "fd00:1::1"]) == ("fd00:1::1", "10.0.1.1")


def test_server_side_connections_and_closed_connections_are_not_followed():
    p = Rejoin()
    p.event(EV_CREATED, {"token": 1, "saddr": "10.0.1.2", "daddr": "10.0.1.1", "dport": 5, "server_side": 1}, 0)
    p.event(EV_ANNOUNCED, {"token": 1, "rem_id": 1, "daddr": "10.0.2.1"}, 0)
    assert p.joins(0) == [] and p.summary()["connections"] == 0
    _opened(p)
    p.event(EV_CLOSED, {"token": TOKEN}, 1.0)
    assert p.joins(2.0) == [] and p.summary()["open"] == 0
    p.result(Join(TOKEN, "", "10.0.2.2", 80), 111, 3.0)          # a late answer for a closed connection
    assert p.summary()["refused"] == 0


def test_subflow_create_request_nests_both_addresses_with_the_flag_and_decodes_back():
    command, _ = pm.messages()
    msg = pm.create_request(command, Join(0xA1B2C3D4, "", "10.0.2.2", 5301), "10.0.2.1", 3)
    msg["header"]["type"] = 0x20
    msg.encode()
    data = bytes(msg.data)
    back = command(data)
    back.decode()
    assert back["cmd"] == pm.CMD_SUBFLOW_CREATE and back.get_attr("MPTCP_PM_ATTR_TOKEN") == 0xA1B2C3D4
    local, remote = back.get_attr("MPTCP_PM_ATTR_ADDR"), back.get_attr("MPTCP_PM_ATTR_ADDR_REMOTE")
    assert local.get_attr("MPTCP_PM_ADDR_ATTR_ADDR4") == "10.0.2.1" and local.get_attr("MPTCP_PM_ADDR_ATTR_ID") == 3
    assert remote.get_attr("MPTCP_PM_ADDR_ATTR_ADDR4") == "10.0.2.2"
    assert remote.get_attr("MPTCP_PM_ADDR_ATTR_PORT") == 5301
    assert local.get_attr("MPTCP_PM_ADDR_ATTR_FAMILY") == socket.AF_INET
    # NLA_F_NESTED on both nested attributes (type 1 and 6), read from the raw bytes after the
    # 16-byte netlink and 4-byte generic headers
    off, types = 20, []
    while off < len(data):
        ln, typ = int.from_bytes(data[off:off + 2], "little"), int.from_bytes(data[off + 2:off + 4], "little")
        types.append(typ)
        off += (ln + 3) & ~3
    assert sorted(t for t in types if t & 0x7FFF in (1, 6)) == [1 | 0x8000, 6 | 0x8000]


def test_an_ipv6_subflow_create_request_carries_both_addresses_as_ipv6():
    command, _ = pm.messages()
    msg = pm.create_request(command, Join(9, "", "fd00:2::2", 5301), "fd00:2::1", 1)
    msg["header"]["type"] = 0x20
    msg.encode()
    back = command(bytes(msg.data))
    back.decode()
    local, remote = back.get_attr("MPTCP_PM_ATTR_ADDR"), back.get_attr("MPTCP_PM_ATTR_ADDR_REMOTE")
    assert local.get_attr("MPTCP_PM_ADDR_ATTR_FAMILY") == remote.get_attr("MPTCP_PM_ADDR_ATTR_FAMILY") == socket.AF_INET6
    assert local.get_attr("MPTCP_PM_ADDR_ATTR_ADDR6") == "fd00:2::1" and local.get_attr("MPTCP_PM_ADDR_ATTR_ADDR4") is None
    assert remote.get_attr("MPTCP_PM_ADDR_ATTR_ADDR6") == "fd00:2::2" and remote.get_attr("MPTCP_PM_ADDR_ATTR_PORT") == 5301


@pytest.mark.parametrize("args, word", [(["--retry", "nan"], "--retry"), (["--retry", "0"], "--retry"),
                                        (["--max-retry", "0.1"], "--max-retry"),
                                        (["--source", "10.0.0.300"], "--source"),
                                        (["--source", "ff02::1"], "unicast"), (["--source", "::"], "unicast")])
def test_bad_settings_are_one_line_and_exit_2(args, word):
    for cmd in ([sys.executable, "-m", "mpcc.pm"],
                [sys.executable, "-c", "import sys; from mpcc.cli import main; sys.exit(main())", "kernel", "pm"]):
        p = subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=60)
        assert p.returncode == 2, (cmd, p.stderr)
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and word in lines[0] and "fix:" in lines[0], p.stderr


def test_a_join_refused_for_an_unknown_token_forgets_the_connection():
    """The kernel answers "invalid token" when the connection closed before its CLOSED event reached
    us (28 of 541 refusals in a 6.12 storm guest): stop joining it instead of backing off forever."""
    p = _opened(Rejoin(), announced=("10.0.2.2", "10.0.3.2"))
    first, second = p.joins(0.0)
    p.result(first, 22, 0.0, "invalid token")
    p.result(second, 22, 0.0, "invalid token")          # a late answer for the forgotten connection
    assert p.summary()["open"] == 0 and p.wake_at(0.0) is None and p.joins(100.0) == []
    assert p.summary()["refusals"] == {"Invalid argument: invalid token": 1}


def test_nothing_is_joined_before_the_connection_is_established():
    """The kernel refuses a join until the connection is fully established (ENOTCONN from
    __mptcp_subflow_connect); the policy waits for MPTCP_EVENT_ESTABLISHED and does not spin."""
    p = Rejoin(sources=("10.0.1.1", "10.0.2.1"))
    p.event(EV_CREATED, {"token": TOKEN, "saddr": "10.0.1.1", "daddr": "10.0.1.2", "dport": 80}, 0.0)
    assert p.joins(0.0) == [] and p.joins(1.0) == []
    assert p.wake_at(1.0) == pytest.approx(p.pending_s)        # only the initial subflow's time-out
    p.event(EV_ESTABLISHED, {"token": TOKEN, "saddr": "10.0.1.1", "daddr": "10.0.1.2"}, 1.5)
    assert _slots(p.joins(1.5)) == [("10.0.2.1", "10.0.1.2", 80)]


def test_after_lost_events_a_connection_counts_as_established():
    """ENOBUFS on the event socket may have dropped ESTABLISHED: the policy then joins anyway."""
    p = Rejoin(sources=("10.0.1.1", "10.0.2.1"))
    p.event(EV_CREATED, {"token": TOKEN, "saddr": "10.0.1.1", "daddr": "10.0.1.2", "dport": 80}, 0.0)
    assert p.joins(0.0) == []
    p.events_lost()
    assert _slots(p.joins(0.1)) == [("10.0.2.1", "10.0.1.2", 80)]
