"""The loader's names and its one-line environment errors (no root or kernel needed)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from mpcc import algorithms as algos
from mpcc.errors import EnvironmentProblem, MpccError
from mpcc.testbed import bpf
from mpcc.testbed.kernel_cli import command


def test_names():
    assert bpf.algorithms() == ["balia", "lia", "olia", "ewtcp", "semicoupled", "coupled", "generalized"]
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


# --- the generalized (β, η, n) family: one object and kernel name per parameter set -----------
def test_generalized_names_are_deterministic_and_distinct():
    default = bpf.spec("generalized")
    assert dict(default.params) == {"beta": 0.2, "eta": 0.5, "n": "inf"}       # Peng et al.'s Balia-like point
    same = [bpf.spec(x) for x in ("generalized(beta=0.2, eta=0.5, n=inf)", {"name": "generalized", "eta": 0.5},
                                  algos.get({"name": "generalized", "beta": 0.2, "eta": 0.5, "n": "inf"}),
                                  algos.get("generalized"), algos.get("generalized").describe())]
    assert {s.kernel_name for s in same} == {default.kernel_name}
    names = {bpf.kernel_name({"name": "generalized", "beta": b, "eta": e, "n": n})
             for b in (0.0, 0.2, 0.5, 1.0) for e in (0.0, 0.5, 1.0) for n in (1, 2, "inf")}
    assert len(names) == 36                                                     # no two parameter sets share a name
    for k in names:
        assert k.startswith("mpcc_g") and len(k) == 15                          # TCP_CA_NAME_MAX - 1
    # the parameters reach the compiler as fixed-point constants
    sp = bpf.spec({"name": "generalized", "beta": 0.5, "eta": 1.0, "n": 2})
    assert set(sp.defines) == {f"-DMPCC_GEN_BETA_Q32={2**31}ULL", f"-DMPCC_GEN_ETA_Q32={2**32}ULL",
                               "-DMPCC_GEN_NORM=2", f"-DMPCC_GEN_SYM={sp.kernel_name}"}
    assert sp.stem == "generalized-" + sp.kernel_name[len("mpcc_g"):]


@pytest.mark.parametrize("bad, message", [
    ({"name": "generalized", "n": 3}, "n=3 has no BPF implementation"),
    ({"name": "generalized", "beta": 1.5}, "beta=1.5 is out of range"),
    ({"name": "generalized", "eta": -1}, "eta=-1 is out of range"),
    ({"name": "generalized", "gamma": 1}, "unknown parameter"),
    ("generalized(beta=x)", "must be numbers"),
])
def test_generalized_parameters_outside_the_bpf_program_are_one_line_errors(bad, message):
    with pytest.raises(MpccError, match=message):
        bpf.spec(bad)


def test_cli_generalized_options(monkeypatch):
    monkeypatch.setattr(bpf.os, "geteuid", lambda: 1000)
    r = CliRunner().invoke(command, ["load", "balia", "--beta", "0.3"])
    assert r.exit_code != 0 and "parameters of generalized" in str(r.exception)
    r = CliRunner().invoke(command, ["load", "generalized", "--n", "3"])
    assert r.exit_code != 0 and "n=3 has no BPF implementation" in str(r.exception)
    r = CliRunner().invoke(command, ["list"])
    assert r.exit_code == 0
    assert f"generalized  {bpf.kernel_name('generalized')}" in r.output and "beta=0.2, eta=0.5, n=inf" in r.output
