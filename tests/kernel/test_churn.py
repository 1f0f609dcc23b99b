"""Short subflow-churn soak (bench/kernel/churn.py; root): 10 MPTCP connections × 20 s over three
paths while an endpoint is removed/re-added and a link taken down/up every second. The 10-minute,
100-connection run is the bench (bench/kernel/churn.py, results in bench/kernel/RESULTS.md)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "kernel"))


@pytest.fixture(scope="module")
def soak():
    if os.geteuid() != 0:
        pytest.skip("needs root (BPF struct_ops, network namespaces)")
    from mpcc.testbed import bpf
    problem = bpf.environment_problem()
    if problem:
        pytest.skip(problem)
    import churn
    return churn.run("balia", conns=10, secs=20.0, rate_mbit=10.0)


def test_churn_really_happened(soak):
    # one endpoint toggle and one link toggle per second, ~20 of each
    assert soak["events"]["endpoint_del"] >= 8 and soak["events"]["endpoint_add"] >= 8
    assert soak["events"]["link_down"] >= 8 and soak["events"]["link_up"] >= 8
    assert soak["client"]["errors"] == []
    assert soak["windows"] == 2 * 10


def test_no_kernel_warning_and_nothing_left_behind(soak):
    assert soak["dmesg_warnings"] == []
    assert soak["leaked_maps"] == [] and not soak["struct_ops_left"]
    assert soak["netns_left"] == []


@pytest.mark.xfail(reason="issue 15 item 2: with BPF balia/lia a few 10 s windows carry no data under churn "
                          "(not yet fixed); this run is short, so it often passes", strict=False)
def test_every_connection_progresses_in_every_10s_window(soak):
    assert soak["stalled_windows"] == []
