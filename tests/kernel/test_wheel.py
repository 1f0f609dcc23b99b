"""The built wheel (issue 15, "no compiler on the target"): it carries a prebuilt CO-RE object for
every algorithm of bpf/ and the common parameter sets, and — root only — the package installed
from it, outside the checkout and with clang hidden from PATH, loads and unloads `mpcc_balia`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from mpcc.kernel import bpf, prebuilt as bpf_prebuilt

ROOT = Path(__file__).resolve().parents[2]
PREFIX = "mpcc/kernel/objects/"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    if not (bpf_prebuilt.PREBUILT_DIR / bpf_prebuilt.INDEX).exists():
        pytest.skip("no prebuilt objects in this checkout (fix: make bpf-prebuilt)")
    out = tmp_path_factory.mktemp("wheel")
    # in the cargo target directory of `make setup`'s editable build (Makefile: target/py), whose
    # compiled dependencies are the wheel's too: cargo only links, instead of building pyo3 & co. anew
    env = {**os.environ, "CARGO_TARGET_DIR": str(ROOT / "target" / "py")}
    p = subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w", str(out)],
                       capture_output=True, text=True, timeout=900, env=env)
    assert p.returncode == 0, p.stderr[-2000:]
    (whl,) = out.glob("mpcc-*.whl")
    return whl


def test_wheel_ships_an_object_for_every_algorithm_and_common_set(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        index = json.loads(z.read(PREFIX + bpf_prebuilt.INDEX))
    objects = index["objects"]
    # every bpf/<algorithm>.bpf.c with its defaults, and every common set, by kernel name
    wanted = [bpf.variant(sp, b) for b in bpf_prebuilt.PREBUILT_BUILDS
              for sp in [bpf.spec(a) for a in bpf.algorithms()] + [bpf.spec(s) for s in bpf_prebuilt.COMMON_SETS]]
    for sp in wanted:
        ent = objects.get(sp.stem)
        assert ent is not None, f"{sp.describe()} not in the wheel's index"
        assert ent["kernel_name"] == sp.kernel_name
        assert ent["source_sha256"] == bpf_prebuilt.source_digest(sp, bpf.BPF_DIR), \
            f"{ent['file']} was built from older sources than bpf/ (fix: make bpf-prebuilt)"
        assert PREFIX + ent["file"] in names, f"{ent['file']} named in the index but not in the wheel"
    with zipfile.ZipFile(wheel) as z:
        for ent in objects.values():
            assert z.read(PREFIX + ent["file"])[:4] == b"\x7fELF"
        # the sources they were built from, byte for byte (names, parameters and the clang fallback)
        for f in [*bpf.BPF_DIR.glob("*.bpf.c"), *bpf.source_headers()]:
            assert z.read(PREFIX + "src/" + str(f.relative_to(bpf.BPF_DIR))) == f.read_bytes(), f.name


@pytest.mark.kernel
def test_installed_wheel_loads_balia_without_clang(path_without_clang, wheel, tmp_path):
    """False-failure rate: deterministic (what loads, what is listed). 0."""
    if os.geteuid() != 0:
        pytest.skip("needs root (BPF struct_ops)")
    problem = bpf.environment_problem()
    if problem:
        pytest.skip(problem)
    if "mpcc_balia" in bpf.registered():
        pytest.skip("mpcc_balia is registered by another process on this machine")
    site = tmp_path / "site"
    p = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(wheel)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    path = path_without_clang
    assert shutil.which("clang", path=path) is None
    # the installed copy comes first; the checkout's editable install only supplies dependencies
    env = {**os.environ, "PATH": path, "PYTHONPATH": str(site), "MPCC_BPF_OUTPUT": str(tmp_path / "out")}
    run = [sys.executable, "-c", "import mpcc, sys; from mpcc.cli import main; "
           "sys.stderr.write(mpcc.__file__ + '\\n'); main()"]
    try:
        p = subprocess.run([*run, "kernel", "load", "balia"], env=env, cwd=tmp_path,
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        assert p.stderr.splitlines()[0].startswith(str(site)), "the test did not run the installed copy"
        assert "mpcc_balia" in Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
        assert not list((tmp_path / "out").glob("*.bpf.o"))
    finally:
        subprocess.run([*run, "kernel", "unload", "balia"], env=env, cwd=tmp_path,
                       capture_output=True, text=True, timeout=60)
    assert "mpcc_balia" not in Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    # a parameter set the package does not ship needs the compiler, and says so in one line
    p = subprocess.run([*run, "kernel", "load", "ewtcp(a=0.37)"], env=env, cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "clang" in p.stderr and "Traceback" not in p.stderr, p.stderr


@pytest.mark.kernel
def test_installed_wheel_compiles_a_new_parameter_set_from_its_own_sources(wheel, tmp_path):
    """False-failure rate: deterministic (what compiles and loads). 0."""
    if os.geteuid() != 0:
        pytest.skip("needs root (BPF struct_ops)")
    problem = bpf.environment_problem()
    if problem:
        pytest.skip(problem)
    if shutil.which("clang") is None:
        pytest.skip("no clang to compile a new parameter set with")
    site = tmp_path / "site"
    p = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(wheel)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    env = {**os.environ, "PYTHONPATH": str(site), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    env.pop("MPCC_BPF_OUTPUT", None)
    run = [sys.executable, "-c", "from mpcc.cli import main; main()"]
    sp = bpf.spec("ewtcp(a=0.37)")
    try:
        p = subprocess.run([*run, "kernel", "load", "ewtcp(a=0.37)"], env=env, cwd=tmp_path,
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr
        assert sp.kernel_name in Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
        # compiled into the user's cache, not into the installed package
        stem = bpf.variant(sp, bpf.selected_build()[0]).stem
        assert list((tmp_path / "cache" / "mpcc" / "bpf").glob(f"{stem}.bpf.o"))
    finally:
        subprocess.run([*run, "kernel", "unload", sp.kernel_name], env=env, cwd=tmp_path,
                       capture_output=True, text=True, timeout=60)
    assert sp.kernel_name not in Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
