"""mpcc.lab.netlab.tracefs: the tracepoint tools (test_cong_control, ssthresh_watch.py,
xmit_trace.py) mount tracefs for themselves and leave the machine's mount table as they found it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mpcc.lab import netlab

pytestmark = [pytest.mark.kernel,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root (mount)")]


def _mounted() -> bool:
    return any(line.split()[1] == netlab.TRACEFS and line.split()[2] == "tracefs"
               for line in Path("/proc/mounts").read_text().splitlines())


@pytest.fixture
def unmounted():
    """tracefs not mounted at the start (as on a fresh boot); restored after the test."""
    before = _mounted()
    while _mounted():
        subprocess.run(["umount", netlab.TRACEFS], check=True)
    yield
    if before and not _mounted():
        subprocess.run(["mount", "-t", "tracefs", "tracefs", netlab.TRACEFS], check=True)


def test_mounted_for_the_block_and_unmounted_after(unmounted):
    """False-failure rate: deterministic (mount state read back). 0."""
    with netlab.tracefs("tcp") as events:
        assert _mounted()
        assert (events / "tcp" / "tcp_probe").is_dir()
    assert not _mounted()


def test_unmounted_after_an_exception(unmounted):
    """False-failure rate: deterministic (mount state read back). 0."""
    with pytest.raises(KeyError):
        with netlab.tracefs("tcp"):
            raise KeyError("the block failed")
    assert not _mounted()


def test_a_mount_that_was_there_is_left_there(unmounted):
    """False-failure rate: deterministic (mount state read back). 0."""
    subprocess.run(["mount", "-t", "tracefs", "tracefs", netlab.TRACEFS], check=True)
    try:
        with netlab.tracefs("tcp"):
            pass
        assert _mounted()
    finally:
        subprocess.run(["umount", netlab.TRACEFS], check=False)


def test_events_the_kernel_lacks_raise_one_line_and_unmount(unmounted):
    """False-failure rate: deterministic (mount state read back). 0."""
    with pytest.raises(RuntimeError, match="no_such_subsystem"):
        with netlab.tracefs("no_such_subsystem"):
            pass
    assert not _mounted()
