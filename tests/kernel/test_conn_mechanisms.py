"""The connection-level mechanisms of bpf/include/mpcc_conn.h (MPCC_BPF_CONN: sndbuf, pacing,
penalise): the variant's name and flags (host), each mechanism compiled into both builds (host,
clang), and registered on this kernel with sndbuf_expand in the ops table (root).

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


@pytest.mark.kernel
@pytest.mark.skipif(environment_problem() is not None, reason=environment_problem() or "")
@pytest.mark.parametrize("algo", MULTIPATH)
def test_sndbuf_and_pacing_register_with_sndbuf_expand_in_the_ops_table(algo, monkeypatch):
    # (penalise is left out: the compat build's cong_control chain then counts 560-576 bytes of
    # stack, over the verifier's 512; bench/kernel/RESULTS.md §17)
    monkeypatch.setenv("MPCC_BPF_CONN", "sndbuf,pacing")
    with bpf.load(algo) as reg:      # the build this kernel selects (compat here, default on stock)
        out = subprocess.run(["bpftool", "-j", "struct_ops", "dump", "id", str(reg.map_id)],
                             capture_output=True, text=True, check=True).stdout
    text = out.strip()
    docs = json.loads(text if text.startswith("[") else f"[{text}]")
    data = next(d["bpf_struct_ops_tcp_congestion_ops"]["data"] for d in docs if "bpf_struct_ops_tcp_congestion_ops" in d)
    assert "prog_id:" in str(data["sndbuf_expand"]), data["sndbuf_expand"]
    assert "prog_id:" in str(data["cong_avoid"]), data["cong_avoid"]
