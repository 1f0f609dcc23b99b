"""The generalized (β, η, n) family in the running kernel (root only; skipped with the reason
otherwise): one object and kernel name per parameter set — two sets live side by side, the CLI
loads a set from --beta/--eta/--n and shows its parameters, and a testbed scenario whose
multipath group is `{name = "generalized", ...}` runs on the program of exactly that set.

(That every set builds, verifies, registers, is selectable, carries a two-path MPTCP connection
and computes bit-identically to the host build is in test_bpf_kernel.py, parametrized with the
other algorithms.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mpcc.errors import EnvironmentProblem
from mpcc.kernel.bpf import environment_problem

ROOT = Path(__file__).resolve().parents[2]
os.environ["PATH"] = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])


_SKIP = environment_problem()
pytestmark = [pytest.mark.kernel, pytest.mark.skipif(_SKIP is not None, reason=_SKIP or "")]

A = {"name": "generalized", "beta": 0.2, "eta": 0.5, "n": "inf"}
B = {"name": "generalized", "beta": 0.5, "eta": 1.0, "n": 2}
C = {"name": "generalized", "beta": 1.0, "eta": 0.0, "n": 1}


def _available() -> list[str]:
    return Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()


def _struct_ops_names() -> set[str]:
    out = subprocess.run(["bpftool", "-j", "struct_ops", "list"], capture_output=True, text=True, check=True).stdout
    return {r["name"] for r in json.loads(out or "[]")}


def _skip_if_in_use(*specs):
    from mpcc.kernel import bpf
    busy = {r.kernel_name for r in bpf.status() if r.registered and (r.holders or r.persistent or not r.owned)}
    for sp in specs:
        if bpf.kernel_name(sp) in busy:
            pytest.skip(f"{bpf.kernel_name(sp)} is in use by another process")


@pytest.fixture(autouse=True)
def _nothing_left_behind():
    from mpcc.kernel import bpf
    yield
    mine = {bpf.kernel_name(x) for x in (A, B, C)}
    left = [r.kernel_name for r in bpf.status() if r.kernel_name in mine and r.registered
            and r.owned and not r.holders and not r.persistent]
    bpf.cleanup_stale()
    assert not left, f"left registered with no holder: {left}"


def test_two_parameter_sets_are_two_congestion_controls():
    """False-failure rate: 0: registration state and parameters read back from the kernel and the
    loader's records, no traffic."""
    from mpcc.kernel import bpf
    _skip_if_in_use(A, B)
    with bpf.load(A) as ra, bpf.load(B) as rb:
        assert ra.kernel_name != rb.kernel_name
        assert {ra.kernel_name, rb.kernel_name} <= set(_available())
        rows = {r.kernel_name: r for r in bpf.status()}
        assert rows[ra.kernel_name].params == {"beta": 0.2, "eta": 0.5, "n": "inf"}
        assert rows[rb.kernel_name].params == {"beta": 0.5, "eta": 1.0, "n": 2}
        assert rows[rb.kernel_name].registered and os.getpid() in rows[rb.kernel_name].holders
        # the kernel name alone finds the parameters again (build sidecar / ownership record)
        assert bpf.spec(rb.kernel_name) == bpf.spec(B)
    assert ra.kernel_name not in _available() and rb.kernel_name not in _available()


def test_cli_load_status_unload_generalized():
    """False-failure rate: 0: the CLI's output and the kernel's list of congestion controls, no
    traffic."""
    from mpcc.kernel import bpf
    _skip_if_in_use(C)
    kname = bpf.kernel_name(C)
    mpcc = [sys.executable, "-m", "mpcc.cli"]
    r = subprocess.run([*mpcc, "kernel", "load", "generalized", "--beta", "1", "--eta", "0", "--n", "1"],
                       capture_output=True, text=True)
    try:
        assert r.returncode == 0, r.stderr
        assert kname in r.stdout and "beta=1, eta=0, n=1" in r.stdout
        assert kname in _available() and kname in _struct_ops_names()     # persists after the CLI exited
        st = json.loads(subprocess.run([*mpcc, "kernel", "status", "--json"], capture_output=True,
                                       text=True, check=True).stdout)
        row = next(x for x in st if x["kernel_name"] == kname)
        assert row["registered"] and row["persistent"] and row["params"] == {"beta": 1.0, "eta": 0.0, "n": 1}
        listed = subprocess.run([*mpcc, "kernel", "list"], capture_output=True, text=True, check=True).stdout
        assert any(kname in ln and "registered" in ln and "beta=1, eta=0, n=1" in ln for ln in listed.splitlines())
    finally:
        r = subprocess.run([*mpcc, "kernel", "unload", kname], capture_output=True, text=True)
    assert r.returncode == 0 and f"{kname} unregistered" in r.stdout, r.stderr
    assert kname not in _available()


TABLE4_GENERALIZED = """
name = "table4-generalized"
duration_s = 8.0
[[links]]
name = "wifi"
capacity_mbps = 8.0
delay_ms = 10.0
buffer_pkts = 50
[[links]]
name = "3g"
capacity_mbps = 2.0
delay_ms = 100.0
buffer_pkts = 50
[[groups]]
name = "mp"
count = 1
algorithm = {name = "generalized", beta = 0.2, eta = 0.5, n = "inf"}
paths = [["wifi"], ["3g"]]
"""


def test_testbed_runs_a_generalized_multipath_group():
    """The testbed selects the program of the scenario's own (β, η, n) and both paths carry data
    (how well each parameter set fills the paths is a measurement, not asserted here).

    False-failure rate: ≈ 0 on a stock kernel: each subflow is alone on its link (8 and 2 Mb/s)
    for the 5 s measured, where a backlogged subflow carries Mb/s; the bound, 0.1 Mb/s each
    (5 % of the 3G link), fails only if a path or the program stops carrying data for seconds."""
    from mpcc import scenario
    from mpcc.kernel import bpf
    from mpcc.testbed import engine, netns, topology
    try:
        netns.check_environment()
        topology.linkem_binary()
    except EnvironmentProblem as e:
        pytest.skip(str(e))
    _skip_if_in_use(A)
    s = scenario.loads(TABLE4_GENERALIZED, "table4-generalized.toml")
    res = engine.run_scenario(s, engine.settings_from(s, warmup_s=3.0), None, progress=False)
    g = res.groups["mp"]
    assert bpf.kernel_name(A) in g.algorithm and "beta=0.2" in g.algorithm, g.algorithm
    wifi, g3 = g.path_rate_mbps
    assert wifi > 0.1 and g3 > 0.1, g.path_rate_mbps     # both subflows carry data
    assert bpf.kernel_name(A) not in _available()        # released when the run ended
