"""mpcc.lab.netlab.KernelLog: the soak's warning check reads /dev/kmsg as records arrive.

Diffing `dmesg` by line count (the old check) saw nothing once the small ring buffer was full:
the count stays the same while records scroll out (on this machine the ring holds ~20 minutes of
the bridge's port messages), so every later run compared an empty slice."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from mpcc.lab import netlab

pytestmark = [pytest.mark.kernel,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root (/dev/kmsg)")]


def test_a_warning_written_during_the_run_is_seen():
    """False-failure rate: deterministic (records written to /dev/kmsg and read back, or pure
    functions). 0."""
    log = netlab.KernelLog()
    with open("/dev/kmsg", "w") as f:     # a record as the kernel would print it (userspace facility)
        f.write("mpcc-test: WARNING: CPU: 0 PID: 1 at net/ipv4/tcp_input.c:1 (test record, not a real warning)\n")
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not log.reports:
        time.sleep(0.05)
    r = log.stop()
    assert any("mpcc-test: WARNING:" in w for w in r["warnings"])
    assert r["records"] >= 1 and r["lost"] == 0
    assert r["new_taint"] == 0                      # writing a log line taints nothing


def test_records_before_the_start_are_not_counted():
    """False-failure rate: deterministic (records written to /dev/kmsg and read back, or pure
    functions). 0."""
    with open("/dev/kmsg", "w") as f:
        f.write("mpcc-test: WARNING: written before the check started\n")
    log = netlab.KernelLog()
    time.sleep(0.3)
    r = log.stop()
    assert not any("before the check started" in w for w in r["warnings"])


def test_a_result_names_what_the_check_could_not_see():
    """False-failure rate: deterministic (records written to /dev/kmsg and read back, or pure
    functions). 0."""
    clean = {"warnings": ["WARNING: x"], "lost": 0, "new_taint": 0}
    assert netlab.kernel_log_warnings(clean) == ["WARNING: x"]
    blind = {"warnings": [], "lost": 3, "new_taint": 0x200}
    assert netlab.kernel_log_warnings(blind) == ["kernel log: 3 records lost unread, new taint 0x200"]
    assert clean["warnings"] == ["WARNING: x"]       # the summary itself is not changed


# the warning of 2026-11-24 23:05 UTC on a fresh boot of the testbed host (balia churn run), trimmed
HOST_DEFECT = [
    "WARNING: CPU: 0 PID: 75 at ./include/net/tcp.h:1434 tcp_undo_cwnd_reduction+0xbd/0xd0",
    "CPU: 0 UID: 0 PID: 75 Comm: tokio-rt-worker Not tainted 6.18.44-fc-v595 #1 PREEMPT(none) ",
    "RIP: 0010:tcp_undo_cwnd_reduction+0xbd/0xd0",
    "RSP: 0018:ffffc90000003b60 EFLAGS: 00010282",
    "RAX: ffffffff81104110 RBX: ffff888192013780 RCX: 0000000000000000",
    "Call Trace:",
    " tcp_try_undo_loss+0x9e/0x190",
]


def test_an_undo_warning_with_a_kernel_address_returned_is_the_host_defect():
    """False-failure rate: deterministic (records written to /dev/kmsg and read back, or pure
    functions). 0."""
    assert "kernel address 0xffffffff81104110" in netlab.host_defect(HOST_DEFECT)
    assert "unwritten return slot" in netlab.host_defect(HOST_DEFECT)
    # a value a BPF program of ours could have returned (a 32-bit window, zero-extended) counts
    ours = [ln.replace("RAX: ffffffff81104110", "RAX: 0000000081104110") for ln in HOST_DEFECT]
    assert netlab.host_defect(ours) is None
    # the same register in another function's warning counts
    other = ["WARNING: CPU: 0 PID: 75 at net/ipv4/tcp_input.c:1 tcp_fastretrans_alert+0x1/0x2", *HOST_DEFECT[1:]]
    assert netlab.host_defect(other) is None
    assert netlab.host_defect(HOST_DEFECT[:1]) is None          # no register dump read: counts


def test_the_host_defect_is_listed_apart_and_its_taint_explained():
    """False-failure rate: deterministic (records written to /dev/kmsg and read back, or pure
    functions). 0."""
    log = {"warnings": [], "host_defect_warnings": ["WARNING: ... [undo_cwnd returned ...]"], "lost": 0,
           "new_taint": netlab.TAINT_WARN}
    assert netlab.kernel_log_warnings(log) == []
    # another warning beside it, a record lost or another taint bit: the check says so
    assert netlab.kernel_log_warnings({**log, "warnings": ["WARNING: x"]})[0] == "WARNING: x"
    assert netlab.kernel_log_warnings({**log, "lost": 1}) != []
    assert netlab.kernel_log_warnings({**log, "new_taint": netlab.TAINT_WARN | 1}) != []


def test_a_warnings_dump_is_kept_with_it():
    """False-failure rate: deterministic (records written to /dev/kmsg and read back, or pure
    functions). 0."""
    log = netlab.KernelLog()
    with open("/dev/kmsg", "w") as f:
        for ln in ["mpcc-test: " + HOST_DEFECT[0], *HOST_DEFECT[1:]]:
            f.write(ln + "\n")          # one write, one record (as the kernel prints a dump)
            f.flush()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and (not log.reports or len(log.reports[-1]) < len(HOST_DEFECT)):
        time.sleep(0.05)
    r = log.stop()
    assert r["warnings"] == [] and len(r["host_defect_warnings"]) == 1
    assert r["reports"][0][4].startswith("RAX: ffffffff81104110")
