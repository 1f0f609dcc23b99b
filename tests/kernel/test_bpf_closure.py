"""How much source a kernel engineer reads to review one algorithm: the project files (bpf/) that
the compiler's dependency list (``clang -MM``, with the loader's own flags, bpf.clang_flags)
names for the algorithm's default build, counted in lines. Each algorithm includes only what it
uses (mpcc_pow.h, mpcc_counter.h, mpcc_cap.h, mpcc_periodic.h are its own choice), so Balia, the
paper's algorithm, reads in under 900 lines (issue #29).

Deterministic (the compiler's dependency list of fixed files): no false-failure rate."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from mpcc.kernel import bpf, sources

BALIA_MAX = 900
# what every algorithm file includes (mpcc_algo.h, mpcc_math.h, mpcc_kern.h, mpcc_walk.h), so
# that an algorithm's own file and optional headers are the rest
CORE_MAX = 830
CORE = ("mpcc_algo.h", "mpcc_math.h", "mpcc_kern.h", "mpcc_walk.h")


def _closure(argv: list[str]) -> dict[str, int]:
    """{project file name: lines} of the dependency list ``argv`` prints (-MG: a vmlinux.h not
    generated yet is named, not an error; generated and system headers are not counted)."""
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    project = {p.resolve() for p in [*bpf.BPF_DIR.glob("*.bpf.c"), *bpf.source_headers()]}
    files = {Path(f).resolve() for f in out.replace("\\\n", " ").split()[1:]}
    return {p.name: len(p.read_text().splitlines()) for p in sorted(files & project)}


@pytest.fixture(scope="module")
def closures():
    clang = shutil.which("clang")
    if clang is None or not sources.IN_CHECKOUT:
        pytest.skip("needs clang and a checkout's bpf/ (make setup installs clang)")
    vmlinux_dir = bpf.OUTPUT_DIR   # -MG: vmlinux.h need not exist
    res = {}
    for algo in bpf.algorithms():
        sp = bpf.spec(algo)
        kern = _closure([clang, *bpf.clang_flags(sp, vmlinux_dir), "-MM", "-MG", str(sp.source)])
        host = _closure([clang, "-I", str(bpf.BPF_DIR / "include"), "-MM", "-MG", str(sp.source)])
        res[algo] = kern, host
    return res


def _figures(closures) -> str:
    return "; ".join(f"{a} {sum(k.values())} (host {sum(h.values())})" for a, (k, h) in closures.items())


def test_balia_reads_in_under_900_lines(closures):
    kern, _ = closures["balia"]
    assert set(CORE) <= set(kern), kern
    assert sum(kern.values()) <= BALIA_MAX, (
        f"balia's default build includes {sum(kern.values())} project lines {kern} > {BALIA_MAX} "
        f"(per algorithm, default build: {_figures(closures)})")


def test_every_algorithm_reads_the_core_and_only_its_own_extras(closures):
    for algo, (kern, _) in closures.items():
        core = sum(kern[f] for f in CORE)
        assert core <= CORE_MAX, f"{algo}: the shared core is {core} lines > {CORE_MAX} ({_figures(closures)})"
        text = (bpf.BPF_DIR / f"{algo}.bpf.c").read_text()
        extras = set(kern) - set(CORE) - {f"{algo}.bpf.c"}
        # an optional header is in the build only because the file includes it, or (periodic)
        # declares MPCC_PERIODIC 1
        for h in extras:
            assert f'#include "{h}"' in text or (h == "mpcc_periodic.h" and "#define MPCC_PERIODIC 1" in text), \
                f"{algo} compiles {h} without using it ({_figures(closures)})"
