"""The loader's names and its one-line environment errors (no root or kernel needed)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from mpcc import algorithms as algos
from mpcc.errors import EnvironmentProblem, MpccError
from mpcc.testbed import bpf
from mpcc.testbed.kernel_cli import command


def test_names():
    assert bpf.algorithms() == ["balia", "lia", "olia", "ewtcp", "semicoupled", "coupled"]
    assert bpf.kernel_name("balia") == "mpcc_balia"
    assert bpf.kernel_name("max") == "mpcc_lia"                     # alias of LIA
    assert bpf.kernel_name(algos.get("olia")) == "mpcc_olia"        # Algorithm objects
    assert bpf.kernel_name({"name": "coupled"}) == "mpcc_coupled"
    assert bpf.kernel_name("mpcc_semicoup") == "mpcc_semicoup"
    for k in map(bpf.kernel_name, bpf.algorithms()):
        assert k.startswith("mpcc_") and len(k) <= 15                # TCP_CA_NAME_MAX - 1
    with pytest.raises(MpccError, match="no BPF congestion control named 'fast'"):
        bpf.kernel_name("fast")


def test_not_root_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(bpf.os, "geteuid", lambda: 1000)
    with pytest.raises(EnvironmentProblem, match="needs root"):
        bpf.load("balia")
    r = CliRunner().invoke(command, ["load", "balia"])
    assert r.exit_code != 0 and "needs root" in str(r.exception)


def test_missing_kernel_features_are_clear_errors(monkeypatch):
    monkeypatch.setattr(bpf.os, "geteuid", lambda: 0)
    monkeypatch.setattr(bpf, "_btf_has", lambda token: token != b"bpf_struct_ops_tcp_congestion_ops")
    if bpf.Path("/sys/kernel/btf/vmlinux").exists():
        with pytest.raises(EnvironmentProblem, match="no BPF struct_ops for TCP congestion control"):
            bpf.check_environment()
    monkeypatch.setattr(bpf, "_btf_has", lambda token: token != b"mptcp_subflow_context")
    if bpf.Path("/sys/kernel/btf/vmlinux").exists():
        with pytest.raises(EnvironmentProblem, match="no MPTCP"):
            bpf.check_environment()


def test_missing_clang_names_the_apt_fix(monkeypatch):
    monkeypatch.setattr(bpf.os, "geteuid", lambda: 0)
    monkeypatch.setattr(bpf, "_btf_has", lambda token: True)
    monkeypatch.setattr(bpf, "_tool", lambda name: None if name == "clang" else "/bin/true")
    if not bpf.Path("/sys/kernel/btf/vmlinux").exists() or not bpf.Path("/proc/sys/net/mptcp/enabled").exists():
        pytest.skip("kernel without BTF/MPTCP: the earlier checks fire first")
    with pytest.raises(EnvironmentProblem, match="clang not found.*apt-get install clang"):
        bpf.check_environment()


def test_cli_list_needs_no_root(monkeypatch):
    monkeypatch.setattr(bpf.os, "geteuid", lambda: 1000)
    r = CliRunner().invoke(command, ["list"])
    assert r.exit_code == 0
    assert "semicoupled  mpcc_semicoup" in r.output
