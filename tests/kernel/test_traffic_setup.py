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


SO_MEMINFO = 55                                         # include/uapi/asm-generic/socket.h
SK_MEMINFO_SNDBUF, SK_MEMINFO_WMEM_QUEUED = 3, 5        # include/uapi/linux/sock_diag.h


def _filled(writer) -> tuple[int, int]:
    """Write 64 KB chunks into a loopback connection whose reader never reads until the writer
    gives up (no progress within its wait); the sender's (sk_sndbuf, sk_wmem_queued) then."""
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)   # the peer takes little
    ls.bind(("127.0.0.1", 0))
    ls.listen(1)
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)  # fixed: no autotuning
    s.connect(ls.getsockname())
    c, _ = ls.accept()
    try:
        writer(s)
        buf = bytes(65536)
        for _ in range(200):            # 12.5 MB: far beyond both buffers
            try:
                s.send(buf)
            except (BlockingIOError, socket.timeout):
                break
        info = s.getsockopt(socket.SOL_SOCKET, SO_MEMINFO, 9 * 4)
        mem = [int.from_bytes(info[4 * i:4 * i + 4], "little") for i in range(9)]
        return mem[SK_MEMINFO_SNDBUF], mem[SK_MEMINFO_WMEM_QUEUED]
    finally:
        for x in (s, c, ls):
            x.close()


def test_the_sender_fills_its_send_buffer_as_a_blocking_bulk_writer_does():
    """traffic.blocking_writer: sendmsg copies until sk_wmem_queued reaches sk_sndbuf. Python's
    settimeout writer polls for POLLOUT (free ≥ queued / 2) before each write, so it stops near
    two thirds of the buffer plus one chunk: the control that shows the check can fail."""
    sndbuf, queued = _filled(lambda s: traffic.blocking_writer(s, 0.05))
    assert queued >= sndbuf - 65536, (sndbuf, queued)
    sndbuf_p, queued_p = _filled(lambda s: s.settimeout(0.05))
    assert queued_p <= 2 * sndbuf_p / 3 + 2 * 65536 < sndbuf - 65536, (sndbuf_p, queued_p)
