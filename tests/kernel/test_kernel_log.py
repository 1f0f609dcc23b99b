"""bench/kernel/netlab.KernelLog: the soak's warning check reads /dev/kmsg as records arrive.

Diffing `dmesg` by line count (the old check) saw nothing once the small ring buffer was full:
the count stays the same while records scroll out (on this machine the ring holds ~20 minutes of
the bridge's port messages), so every later run compared an empty slice."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "kernel"))
import netlab  # noqa: E402

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (/dev/kmsg)")


def test_a_warning_written_during_the_run_is_seen():
    log = netlab.KernelLog()
    with open("/dev/kmsg", "w") as f:     # a record as the kernel would print it (userspace facility)
        f.write("mpcc-test: WARNING: CPU: 0 PID: 1 at net/ipv4/tcp_input.c:1 (test record, not a real warning)\n")
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not log.lines:
        time.sleep(0.05)
    r = log.stop()
    assert any("mpcc-test: WARNING:" in w for w in r["warnings"])
    assert r["records"] >= 1 and r["lost"] == 0
    assert r["new_taint"] == 0                      # writing a log line taints nothing


def test_records_before_the_start_are_not_counted():
    with open("/dev/kmsg", "w") as f:
        f.write("mpcc-test: WARNING: written before the check started\n")
    log = netlab.KernelLog()
    time.sleep(0.3)
    r = log.stop()
    assert not any("before the check started" in w for w in r["warnings"])


def test_a_result_names_what_the_check_could_not_see():
    clean = {"warnings": ["WARNING: x"], "lost": 0, "new_taint": 0}
    assert netlab.kernel_log_warnings(clean) == ["WARNING: x"]
    blind = {"warnings": [], "lost": 3, "new_taint": 0x200}
    assert netlab.kernel_log_warnings(blind) == ["kernel log: 3 records lost unread, new taint 0x200"]
    assert clean["warnings"] == ["WARNING: x"]       # the summary itself is not changed
