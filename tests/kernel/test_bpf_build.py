"""Which BPF build the loader picks (python/mpcc/kernel/bpf.py detect_build, selected_build) from
facts of the running kernel, with fake /proc and BTF inputs (no root, no kernel work), and what
each build compiles with (bpf_sources.variant)."""

from __future__ import annotations

import pytest

from mpcc.errors import MpccError
from mpcc.kernel import bpf

# `bpftool btf dump file … format raw` of a kernel whose bpf_prog_aux has the patch's member, and
# of one where only another struct has a member of that name
RAW_PATCHED = """[10] STRUCT 'bpf_prog_aux' size=1024 vlen=3
\t'refcnt' type_id=5 bits_offset=0
\t'init_owned' type_id=70 bits_offset=7816
\t'used_map_cnt' type_id=8 bits_offset=7840
[11] STRUCT 'other' size=8 vlen=1
\t'x' type_id=8 bits_offset=0
"""
RAW_ELSEWHERE = """[10] STRUCT 'bpf_prog_aux' size=1024 vlen=1
\t'refcnt' type_id=5 bits_offset=0
[11] STRUCT 'other' size=8 vlen=1
\t'init_owned' type_id=8 bits_offset=0
"""


def _btf(tmp_path, with_name: bool):
    p = tmp_path / "vmlinux"
    p.write_bytes(b"\x9f\xeb\x01\x00" + (b"init_owned\x00" if with_name else b"") + b"bpf_prog_aux\x00")
    return p


def _no_dump(path):
    raise AssertionError("bpftool must not run when the BTF has no such name")


def test_init_private_one_selects_compat_and_says_why(tmp_path):
    ip = tmp_path / "init_private"
    ip.write_text("1\n")
    build, why = bpf.detect_build(ip, tmp_path / "absent", _no_dump)
    assert build == "compat"
    assert bpf.build_notice(build, why) == ("BPF build: compat (this kernel skips struct_ops programs while PID 1 "
                                            "runs: kernel.init_private=1)")


def test_init_private_zero_selects_default_even_with_the_patch_in_btf(tmp_path):
    ip = tmp_path / "init_private"
    ip.write_text("0\n")
    assert bpf.detect_build(ip, _btf(tmp_path, True), lambda p: RAW_PATCHED)[0] == "default"


def test_without_the_sysctl_the_btf_member_decides(tmp_path):
    absent = tmp_path / "no_such_sysctl"
    build, why = bpf.detect_build(absent, _btf(tmp_path, True), lambda p: RAW_PATCHED)
    assert build == "compat" and "bpf_prog_aux.init_owned" in why
    # the name in another struct is not the patch
    assert bpf.detect_build(absent, _btf(tmp_path, True), lambda p: RAW_ELSEWHERE)[0] == "default"


def test_a_stock_kernel_selects_default_without_running_bpftool(tmp_path):
    build, why = bpf.detect_build(tmp_path / "no_such_sysctl", _btf(tmp_path, False), _no_dump)
    assert (build, why) == ("default", "stock kernel: no kernel.init_private, no bpf_prog_aux.init_owned")
    assert bpf.detect_build(tmp_path / "no_such_sysctl", tmp_path / "no_btf", _no_dump)[0] == "default"


def test_the_environment_overrides_detection_and_diag_needs_compat(monkeypatch):
    monkeypatch.setenv("MPCC_BPF_BUILD", "default")
    assert bpf.selected_build() == ("default", "MPCC_BPF_BUILD=default")
    assert bpf.selected_build(override="compat") == ("compat", "--build=compat")
    build, why = bpf.selected_build(diag=True)
    assert build == "compat-diag" and "diagnostic maps requested" in why
    monkeypatch.setenv("MPCC_BPF_BUILD", "fast")
    with pytest.raises(MpccError, match="unknown build 'fast'"):
        bpf.selected_build()


def test_each_build_is_its_own_object_with_its_defines_and_the_same_kernel_name():
    sp = bpf.spec("ewtcp(a=0.25)")
    compat, diag = bpf.variant(sp, "compat"), bpf.variant(sp, "compat-diag")
    assert sp.build == "default" and "-DMPCC_COMPAT=1" not in sp.defines
    assert compat.stem == sp.stem + ".compat" and compat.defines == (*sp.defines, "-DMPCC_COMPAT=1")
    assert diag.stem == sp.stem + ".compat-diag" and diag.defines[-2:] == ("-DMPCC_COMPAT=1", "-DMPCC_DIAG=1")
    assert {x.kernel_name for x in (sp, compat, diag)} == {sp.kernel_name}
    assert bpf.variant(diag, "default") == sp


def test_a_runs_result_names_the_build_its_registrations_used():
    from mpcc.testbed import engine
    assert engine._bpf_build([]) is None
    assert engine._bpf_build([bpf.build_notice("compat", "why"), bpf.build_notice("compat", "why")]) == "compat"
    assert engine._bpf_build([bpf.build_notice("default", "a"), bpf.build_notice("compat", "b")]) == "compat+default"
