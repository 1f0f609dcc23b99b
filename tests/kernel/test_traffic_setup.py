"""traffic.establish on loopback (no root, no namespaces): a connection that is refused is
retried alone, each attempt's reason logged with its errno, and given up after
CONNECT_ATTEMPTS; one that comes up is returned ready with its record."""

from __future__ import annotations

import io
import random
import socket

import pytest

from mpcc.testbed import traffic


def _group(port: int) -> dict:
    return {"index": 0, "name": "sp", "count": 1, "multipath": False, "cc": "reno", "port": port,
            "server_addr": "127.0.0.1", "bind_addr": "127.0.0.1", "routes": {"127.0.0.1": 0}}


def test_refused_connection_is_retried_alone_then_reported_with_errno(monkeypatch):
    monkeypatch.setattr(traffic, "BACKOFF_S", 0.001)
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()                       # nothing listens there: ECONNREFUSED
    log = io.StringIO()
    s, rec = traffic.establish(_group(port), 3, traffic.Pacer(), log, random.Random(1))
    assert s is None and rec["attempts"] == traffic.CONNECT_ATTEMPTS and rec["joined"] == 0
    assert len(rec["failures"]) == traffic.CONNECT_ATTEMPTS
    lines = log.getvalue().splitlines()
    assert len(lines) == traffic.CONNECT_ATTEMPTS
    assert lines[0].startswith("group sp flow 3 attempt 1: connect on route 0 (127.0.0.1): errno 111 (ECONNREFUSED)")


def test_a_connection_that_comes_up_is_ready_on_its_route():
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(4)
    try:
        s, rec = traffic.establish(_group(ls.getsockname()[1]), 0, traffic.Pacer(), io.StringIO(), random.Random(1))
        assert s is not None and rec == {"group": "sp", "flow": 0, "attempts": 1, "failures": [], "routes": 1,
                                         "joined": 1}
        c, _ = ls.accept()
        assert traffic.HEADER.unpack(c.recv(8)) == (0, 0)   # the flow header, and nothing else yet
        c.settimeout(0.2)
        with pytest.raises(socket.timeout):
            c.recv(1)
        s.close()
        c.close()
    finally:
        ls.close()


def test_connect_budget_bounds_a_worst_case_flow():
    one = traffic.CONNECT_ATTEMPTS * (traffic.CONNECT_TIMEOUT_S + traffic.JOIN_TIMEOUT_S)
    assert traffic.connect_budget_s(1) > one and traffic.connect_budget_s(400) < 120
