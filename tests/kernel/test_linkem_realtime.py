"""linkem's real-time mode: a SCHED_FIFO forwarding thread (one for both directions, or one per
direction with --threads 2) with locked memory by default, a clear warning (and still
forwarding) when that is not permitted, normal scheduling with --no-realtime; and the timing
report accounts for every forwarded frame of each direction.

Correctness only — how precise the delays are is measured in bench/linkem, not asserted here.
Needs root, a built linkem, ping and setpriv; skips otherwise. ~10 s.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from test_linkem_emulator import _ready, one_link, ping_rtts_ms

pytestmark = [pytest.mark.kernel,
              pytest.mark.skipif(os.geteuid() != 0, reason="kernel testbed tests need root")]

SCHED_OTHER, SCHED_FIFO = 0, 1


def _threads(pid: int) -> dict[str, tuple[int, int]]:
    """{thread name: (scheduling policy, rt priority)} from /proc (stat fields 40 and 41)."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        name = (task / "comm").read_text().strip()
        fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        # fields[0] is stat field 3 (state): rt_priority = field 40, policy = field 41
        out[name] = (int(fields[38]), int(fields[37]))
    return out


def _vmlck_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmLck:"):
            return int(line.split()[1])
    return 0


def _start(tmp_path, linkem_args=()):
    _ready()
    from mpcc.testbed import netns, topology
    r = netns.Run().open()
    try:
        t = topology.build(one_link(rate=100.0, delay=5.0), r, tmp_path, linkem_args=tuple(linkem_args))
    except BaseException:
        r.close()
        raise
    # the log line about real time is written once both forwarding threads have started
    log = tmp_path / "linkem-0.log"
    deadline = time.monotonic() + 5
    while "real-time" not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    return r, t, r.procs[0].pid, log


def _forwards(t) -> list[float]:
    server = t.links["l"].server_addr
    rtts = ping_rtts_ms(t.client_ns, server, 10, interval=0.02)
    assert len(rtts) == 10, "ping through linkem lost packets"
    assert min(rtts) >= 10.0  # 2 × 5 ms, never early
    return rtts


def test_forwarding_threads_are_sched_fifo_with_locked_memory_by_default(tmp_path):
    """False-failure rate: deterministic (scheduler policy and memory lock read from /proc). 0."""
    r, t, pid, log = _start(tmp_path)
    try:
        th = _threads(pid)
        # one forwarding thread serves both directions; the stats thread stays normal
        assert th == {"fwd+rev": (SCHED_FIFO, 10), "linkem": (SCHED_OTHER, 0)}, th
        assert _vmlck_kb(pid) > 0
        assert "SCHED_FIFO priority 10, memory locked" in log.read_text()
        _forwards(t)
    finally:
        r.close()
    # at exit linkem reports its release timing: every echo request went forward, every reply back
    timing = json.loads((tmp_path / "linkem-0-timing.json").read_text())
    assert timing["realtime"] is True and timing["threads"] == 1
    for d in ("fwd", "rev"):
        assert timing[d]["release_late"]["n"] >= 10
        assert timing[d]["rx_lag"]["n"] >= 10  # frames carried kernel receive stamps
        assert 0 <= timing[d]["release_late"]["p50_us"] <= timing[d]["release_late"]["max_us"]


def test_two_threads_give_each_direction_its_own_sched_fifo_thread(tmp_path):
    """False-failure rate: deterministic (/proc thread states). 0."""
    r, t, pid, log = _start(tmp_path, ["--threads", "2"])
    try:
        th = _threads(pid)
        assert th["fwd"] == (SCHED_FIFO, 10) and th["rev"] == (SCHED_FIFO, 10) and "fwd+rev" not in th, th
        _forwards(t)
    finally:
        r.close()
    timing = json.loads((tmp_path / "linkem-0-timing.json").read_text())
    assert timing["threads"] == 2
    for d in ("fwd", "rev"):
        assert timing[d]["release_late"]["n"] >= 10


def test_no_realtime_uses_normal_scheduling(tmp_path):
    """False-failure rate: deterministic (/proc). 0."""
    r, t, pid, log = _start(tmp_path, ["--no-realtime"])
    try:
        th = _threads(pid)
        assert th["fwd+rev"][0] == SCHED_OTHER, th
        assert _vmlck_kb(pid) == 0
        assert "real-time off (--no-realtime)" in log.read_text()
        _forwards(t)
    finally:
        r.close()


def test_without_permission_it_warns_and_still_forwards(tmp_path, monkeypatch):
    """Drop CAP_SYS_NICE and CAP_IPC_LOCK (root's RLIMIT_RTPRIO is 0 here): SCHED_FIFO is refused;
    linkem says so on stderr and forwards with normal scheduling.

    False-failure rate: deterministic (a warning and forwarding). 0."""
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) not installed")
    if int(os.popen("sh -c 'ulimit -r'").read().strip() or 0) >= 10:
        pytest.skip("RLIMIT_RTPRIO allows SCHED_FIFO without CAP_SYS_NICE here")
    from mpcc.testbed import topology
    _ready()
    wrapper = tmp_path / "linkem-unprivileged"
    wrapper.write_text("#!/bin/sh\nexec setpriv --bounding-set -sys_nice,-ipc_lock --inh-caps -sys_nice,-ipc_lock "
                       f"{topology.linkem_binary()} \"$@\"\n")
    wrapper.chmod(0o755)
    monkeypatch.setenv("MPCC_LINKEM", str(wrapper))
    r, t, pid, log = _start(tmp_path / "run")
    try:
        text = log.read_text()
        assert "warning: real-time not permitted" in text and "SCHED_FIFO" in text, text
        th = _threads(pid)
        assert th["fwd+rev"][0] == SCHED_OTHER, th
        _forwards(t)
    finally:
        r.close()
    assert json.loads((tmp_path / "run" / "linkem-0-timing.json").read_text())["realtime"] is False
