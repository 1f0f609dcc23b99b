"""The package's prebuilt CO-RE objects (python/mpcc/kernel/prebuilt.py): which object the
loader takes, and — root only — `mpcc kernel load balia` with clang hidden from PATH."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mpcc.kernel import bpf, prebuilt as bpf_prebuilt


def _index(directory: Path, sp, digest) -> Path:
    obj = directory / f"{sp.stem}.bpf.o"
    obj.write_bytes(b"\x7fELF")
    (directory / "index.json").write_text(json.dumps({"objects": {sp.stem: {
        "file": obj.name, "kernel_name": sp.kernel_name, "source_sha256": digest}}}))
    return obj


def test_find_takes_a_shipped_object_only_for_the_same_set_and_sources(tmp_path):
    sp = bpf.spec("balia")
    digest = bpf_prebuilt.source_digest(sp, bpf.BPF_DIR)
    obj = _index(tmp_path, sp, digest)
    assert bpf_prebuilt.find(sp, bpf.BPF_DIR, tmp_path) == obj
    # another parameter set, or another algorithm: not shipped
    assert bpf_prebuilt.find(bpf.spec("ewtcp(a=0.5)"), bpf.BPF_DIR, tmp_path) is None
    assert bpf_prebuilt.find(bpf.spec("lia"), bpf.BPF_DIR, tmp_path) is None
    # sources edited since the object was built: compile instead
    _index(tmp_path, sp, "0" * 64)
    assert bpf_prebuilt.find(sp, bpf.BPF_DIR, tmp_path) is None
    # an installed package has no bpf/ sources: the shipped object is used as is
    assert bpf_prebuilt.find(sp, tmp_path / "no-bpf-here", tmp_path) is not None
    obj.unlink()
    assert bpf_prebuilt.find(sp, tmp_path / "no-bpf-here", tmp_path) is None


def test_source_digest_changes_with_the_parameters():
    a, b = bpf.spec("ewtcp"), bpf.spec("ewtcp(a=0.25)")
    assert bpf_prebuilt.source_digest(a, bpf.BPF_DIR) != bpf_prebuilt.source_digest(b, bpf.BPF_DIR)
    assert bpf_prebuilt.source_digest(a, bpf.BPF_DIR) == bpf_prebuilt.source_digest(bpf.spec("ewtcp"), bpf.BPF_DIR)


def test_the_checkouts_prebuilt_objects_are_built_from_the_current_sources():
    """A stale object (bpf/ edited since `make bpf-prebuilt`; `make setup` and `make test` rebuild
    it) would ship in the wheel: every object's recorded digest is that of today's sources."""
    index = bpf_prebuilt._index(bpf_prebuilt.PREBUILT_DIR)
    if not index:
        pytest.skip("no prebuilt objects in this checkout (fix: make bpf-prebuilt)")
    stale = [ent["describe"] for ent in index["objects"].values()
             if ent["source_sha256"] != bpf_prebuilt.source_digest(
                 bpf.variant(bpf.spec(ent["describe"]), ent.get("build", "default")), bpf.BPF_DIR)]
    assert stale == [], f"prebuilt objects older than bpf/: {stale} (fix: make bpf-prebuilt)"
    assert sorted(index["objects"]) == sorted(
        bpf.variant(bpf.spec(a), b).stem for a in [*bpf.algorithms(), *bpf_prebuilt.COMMON_SETS]
        for b in bpf_prebuilt.PREBUILT_BUILDS)


@pytest.mark.kernel
def test_load_balia_with_clang_hidden_uses_the_package(path_without_clang, tmp_path):
    """False-failure rate: 0: the CLI's exit code and output and the kernel's registrations, no
    traffic."""
    if os.geteuid() != 0:
        pytest.skip("needs root (BPF struct_ops)")
    problem = bpf.environment_problem()
    if problem:
        pytest.skip(problem)
    if "mpcc_balia" in bpf.registered():
        pytest.skip("mpcc_balia is registered by another process on this machine")
    assert bpf_prebuilt.find(bpf.spec("balia"), bpf.BPF_DIR) is not None, \
        "no prebuilt balia object in the package (fix: make bpf-prebuilt)"
    path = path_without_clang
    env = {**os.environ, "PATH": path, "MPCC_BPF_OUTPUT": str(tmp_path / "out")}
    assert shutil.which("clang", path=path) is None
    mpcc = [sys.executable, "-c", "from mpcc.cli import main; main()"]
    try:
        p = subprocess.run([*mpcc, "kernel", "load", "balia"], env=env, capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        assert "mpcc_balia" in bpf.registered()
        assert "mpcc_balia" in Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
        # nothing was compiled: no object and no vmlinux.h in the build directory
        assert not list((tmp_path / "out").glob("*.bpf.o")) and not (tmp_path / "out" / "vmlinux.h").exists()
    finally:
        subprocess.run([*mpcc, "kernel", "unload", "balia"], env=env, capture_output=True, text=True, timeout=60)
    assert "mpcc_balia" not in Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
