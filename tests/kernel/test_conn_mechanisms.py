"""The connection-level mechanisms of bpf/include/mpcc_conn.h (MPCC_BPF_CONN: sndbuf, pacing,
penalise): the variant's name and flags (host), each mechanism compiled into both builds (host,
clang) within the verifier's 512 bytes of stack per call chain (host, llvm-objdump), and
registered on this kernel with sndbuf_expand in the ops table, penalise in both builds (root).

False-failure rate: 0. Nothing here is statistical: compiling, verifying and registering a
program is deterministic on a given kernel, and the ops-table dump reads back what was
registered. Whether a mechanism helps is measured in bench/kernel/conn_mechanisms.py, not here.
"""
from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from mpcc.errors import MpccError
from mpcc.kernel import bpf
from mpcc.kernel.bpf import environment_problem
from mpcc.kernel.sources import CONN_MECHANISMS, conn_mask, with_conn
from mpcc.lab import bpf_stack

MULTIPATH = ("coupled", "balia", "olia", "lia", "ewtcp")
needs_clang = pytest.mark.skipif(not (shutil.which("clang") and shutil.which("bpftool")), reason="needs clang and bpftool")


def test_the_variant_names_its_mechanisms_and_defaults_to_none():
    assert conn_mask(None) == conn_mask("") == conn_mask("none") == 0
    assert conn_mask("all") == 7 == sum(CONN_MECHANISMS.values())
    assert conn_mask("sndbuf, penalise") == 5
    with pytest.raises(MpccError, match="unknown mechanism 'burst'.*fix"):
        conn_mask("sndbuf,burst")


def test_a_variant_has_its_own_object_and_flag_and_none_is_the_plain_object():
    sp = bpf.spec("balia")
    assert with_conn(sp, 0) == sp
    v = with_conn(sp, 5)
    assert v.stem == "balia.conn5" and "-DMPCC_CONN=5" in v.defines and v.kernel_name == sp.kernel_name
    assert with_conn(v, 5) == v          # applied once (load() then build())


def _btf_funcs(obj) -> set[str]:
    out = subprocess.run(["bpftool", "btf", "dump", "file", str(obj)], capture_output=True, text=True, check=True).stdout
    return {line.split("'")[1] for line in out.splitlines() if "] FUNC '" in line}


@needs_clang
@pytest.mark.parametrize("build", ["default", "compat"])
def test_each_mechanism_is_in_both_builds_and_none_adds_nothing(build, monkeypatch):
    # pacing: only cong_control (the compat build) can keep a rate (tcp_update_pacing_rate)
    for mech, expect in (("none", set()), ("sndbuf", {"mpcc_conn_sndbuf"}), ("penalise", {"mpcc_conn_penalise_run"}),
                         ("pacing", {"mpcc_conn_pacing_set"} if build == "compat" else set())):
        monkeypatch.setenv("MPCC_BPF_CONN", mech)
        funcs = _btf_funcs(bpf.build("balia", build=build)[0])
        walk = {"mpcc_conn_walk"} if mech != "none" else set()   # the walk (a global subprogram)
        assert {f for f in funcs if f.startswith("mpcc_conn_")} == expect | walk, (mech, build)


@needs_clang
@pytest.mark.skipif(not shutil.which("llvm-objdump"), reason="needs llvm-objdump")
@pytest.mark.parametrize("build", ["default", "compat"])
@pytest.mark.parametrize("algo", MULTIPATH)
def test_all_mechanisms_fit_the_verifiers_stack_in_both_builds(algo, build, monkeypatch):
    # penalise's view of the connection is in a per-CPU map, not on its frame: with it on the
    # stack the chain (compat: cong_control → cong_avoid → penalise → walk) counted 560-576 bytes
    monkeypatch.setenv("MPCC_BPF_CONN", "all")
    obj = bpf.build(algo, build=build)[0]
    rows = bpf_stack.report(obj)
    # penalise is called (so its chains are among those the bound below takes the deepest of)
    assert any("mpcc_conn_penalise_run" in f.calls for f in bpf_stack.functions(obj).values())
    for rule in ("6.1", "6.12+"):
        worst = max(rows, key=lambda r: r[rule]["combined"])
        assert worst[rule]["combined"] <= bpf_stack.MAX_BPF_STACK, (rule, worst[rule])


def _ops_table(map_id: int) -> dict:
    out = subprocess.run(["bpftool", "-j", "struct_ops", "dump", "id", str(map_id)],
                         capture_output=True, text=True, check=True).stdout
    text = out.strip()
    docs = json.loads(text if text.startswith("[") else f"[{text}]")
    return next(d["bpf_struct_ops_tcp_congestion_ops"]["data"] for d in docs if "bpf_struct_ops_tcp_congestion_ops" in d)


@pytest.mark.kernel
@pytest.mark.skipif(environment_problem() is not None, reason=environment_problem() or "")
@pytest.mark.parametrize("conn,build", [("sndbuf,pacing", None), ("all", "default"), ("all", "compat")])
@pytest.mark.parametrize("algo", MULTIPATH)
def test_the_mechanisms_register_with_sndbuf_expand_in_the_ops_table(algo, conn, build, monkeypatch):
    # None: the build this kernel selects (compat here, default on a stock kernel); "all" carries
    # penalise, whose chain the verifier checks in each build (only registered: no traffic)
    monkeypatch.setenv("MPCC_BPF_CONN", conn)
    with bpf.load(algo, build=build) as reg:
        data = _ops_table(reg.map_id)
    assert "prog_id:" in str(data["sndbuf_expand"]), data["sndbuf_expand"]
    assert "prog_id:" in str(data["cong_avoid"]), data["cong_avoid"]
    if build == "compat":
        assert "prog_id:" in str(data["cong_control"]), data["cong_control"]
