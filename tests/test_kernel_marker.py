"""The kernel marker's guard (tests/conftest.py): a test not marked kernel cannot act on the kernel,
neither in its own process nor in the processes it starts; `make test` runs such tests in parallel.
Each check uses an action that, were the guard missing, would fail harmlessly in another way (a
namespace or object that does not exist), so that this test never changes the kernel itself."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

NODE = "tests/test_kernel_marker.py::"


def test_the_testbed_and_loader_refuse_in_an_unmarked_test():
    from mpcc.kernel import bpf
    from mpcc.testbed import netns
    with pytest.raises(RuntimeError, match=r"is not marked kernel.*fix: add @pytest.mark.kernel") as e:
        netns.Run(runid="guardcheck").add_netns("x")
    assert type(e.value).__name__ == "KernelActionInUnmarkedTest" and str(e.value).startswith(NODE)
    with pytest.raises(RuntimeError, match="registers a BPF struct_ops"):
        bpf._register(None)
    with pytest.raises(RuntimeError, match="starts a process in a network namespace"):
        netns.spawn(["true"], "mpcc-guardcheck-none")


@pytest.mark.parametrize("cmd,what", [
    (["ip", "netns", "exec", "mpcc-guardcheck-none", "true"], "ip netns exec"),
    (["ip", "-n", "mpcc-guardcheck-none", "link", "set", "lo", "up"], "ip -n"),
    (["tc", "qdisc", "add", "dev", "mpcc-guardcheck-none", "root", "netem"], "tc qdisc add"),
    (["bpftool", "struct_ops", "register", "/nonexistent/guardcheck.o"], "bpftool struct_ops register"),
])
def test_a_started_process_is_refused_a_kernel_change_in_one_line(cmd, what):
    if shutil.which(cmd[0]) is None:
        pytest.skip(f"{cmd[0]} not installed")
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    assert p.returncode == 2, p.stderr
    assert p.stderr.count("\n") == 1 and what in p.stderr, p.stderr
    assert NODE + "test_a_started_process_is_refused_a_kernel_change_in_one_line" in p.stderr
    assert "fix: add @pytest.mark.kernel" in p.stderr


def test_reading_the_kernel_state_still_works_in_an_unmarked_test():
    if shutil.which("ip") is None:
        pytest.skip("ip not installed")
    assert Path(shutil.which("ip")).parent != Path("/usr/sbin")     # the stand-in is first on PATH
    p = subprocess.run(["ip", "-j", "link", "show", "lo"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0 and '"ifname":"lo"' in p.stdout.replace(" ", ""), p.stderr


@pytest.mark.kernel
def test_a_kernel_test_has_the_real_tools_and_functions():
    from mpcc.kernel import bpf
    from mpcc.testbed import netns
    assert os.environ.get("MPCC_UNMARKED_TEST") is None
    assert "mpcc-kernel-guard" not in (shutil.which("ip") or "")
    assert netns.spawn.__module__ == "mpcc.testbed.netns" and bpf._register.__module__ == "mpcc.kernel.bpf"
