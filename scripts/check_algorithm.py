"""`make check-algorithm ALGO=name`: every check docs/algorithms.md ("Adding an algorithm") lists
for an algorithm, one line each, in the order a new algorithm meets them. Exit 0 when none
failed, 1 when one did, 2 for a bad name. Each check runs the project's own tests for that
algorithm (pytest node ids whose parameter names it, cargo's vector test), so this script
holds no expectations of its own.

The kernel check needs root and takes /tmp/mpcc-bench.lock itself; without root it says so.
The 6.1 / 6.12 guests (TCG, ~10 min per boot) run only with GUESTS=1.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = str(ROOT / ".venv" / "bin" / "python")
LOCK = "/tmp/mpcc-bench.lock"


def _collect(path: str) -> list[str]:
    p = subprocess.run([PY, "-m", "pytest", "-o", "addopts=", "--collect-only", "-q", "-p", "no:cacheprovider", path],
                       cwd=ROOT, capture_output=True, text=True)
    return [ln.strip() for ln in p.stdout.splitlines() if "::" in ln]


def _for(name: str, ids: list[str], *, tests: tuple[str, ...] = ()) -> list[str]:
    """The node ids parametrized by the algorithm (its name, its name with parameters, or one of
    its vector cases), plus the named whole-registry tests."""
    pat = re.compile(r"\[" + re.escape(name) + r"(?:[(/\]]|$)")
    return [i for i in ids if pat.search(i) or i.split("::")[-1].split("[")[0] in tests]


def _pytest(ids: list[str], *, lock: bool = False) -> tuple[str, str]:
    if not ids:
        return "FAIL", "no test names it (add it where docs/algorithms.md says)"
    cmd = [PY, "-m", "pytest", "-o", "addopts=", "-q", "-p", "no:cacheprovider", "-rfs", *ids]
    if lock:
        cmd = ["flock", LOCK, *cmd]
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    tail = [ln for ln in p.stdout.splitlines() if ln.strip()]
    summary = re.sub(r"=+", "", tail[-1]).strip() if tail else "no output"
    summary = re.sub(r" in [\d.]+s.*", "", summary)
    if p.returncode == 0:
        skipped = "skipped" in summary and "passed" not in summary
        return ("skip" if skipped else "ok"), summary
    first = next((ln for ln in tail if ln.startswith(("FAILED", "ERROR"))), summary)
    return "FAIL", f"{summary}; {first[:150]}"


def check_python(name: str) -> tuple[str, str]:
    sys.path.insert(0, str(ROOT / "python"))
    from mpcc import algorithms
    if name not in algorithms.REGISTRY:
        return "FAIL", "not in mpcc.algorithms.REGISTRY (python/mpcc/algorithms/__init__.py)"
    algo = algorithms.get(name)
    inc = algo.on_ack([10.0, 20.0], [0.02, 0.05])
    return "ok", f"{type(algo).__name__} in python/mpcc/algorithms/{algorithms.REGISTRY.modules[type(algo).__name__]}.py, I_r at (10, 20) = {list(map(float, inc))}"


def check_vectors_cover(name: str) -> tuple[str, str]:
    doc = json.loads((ROOT / "spec" / "vectors" / "algorithms.json").read_text())
    variants = {json.dumps(c["algorithm"], sort_keys=True) for c in doc["cases"] if c["algorithm"]["name"] == name}
    if not variants:
        return "FAIL", "no cases in spec/vectors/algorithms.json (add it to mpcc.vectors.VECTOR_ALGORITHMS, then `mpcc vectors write`)"
    return "ok", f"{len(variants)} parameter variant(s) in spec/vectors/algorithms.json"


def check_fluid(name: str) -> tuple[str, str]:
    from mpcc import algorithms, fluid, scenario
    algo = algorithms.get(name)
    if not algo.fluid_model:
        return "skip", "fluid_model = False: the fluid model does not describe it"
    sc = scenario.load(ROOT / "scenarios" / "peng2016" / "fig1.toml")
    eq = fluid.equilibrium(sc, algorithm=algo)
    ok = eq.residual < 1e-9
    return ("ok" if ok else "FAIL"), f"Fig. 1 equilibrium, residual {eq.residual:.1e}"


def check_bpf_file(name: str) -> tuple[str, str]:
    f = ROOT / "bpf" / f"{name}.bpf.c"
    if not f.exists():
        return "FAIL", f"no {f.relative_to(ROOT)} (docs/algorithms.md, \"BPF: one file\")"
    return "ok", f"{f.relative_to(ROOT)}"


def check_prebuilt(name: str) -> tuple[str, str]:
    p = subprocess.run(["make", "-s", "bpf-prebuilt"], cwd=ROOT, capture_output=True, text=True)
    if p.returncode != 0:
        return "FAIL", (p.stderr.strip().splitlines() or ["make bpf-prebuilt failed"])[-1][:150]
    index = json.loads((ROOT / "python" / "mpcc" / "testbed" / "bpf_prebuilt" / "index.json").read_text())
    text = json.dumps(index)
    objs = sorted(ROOT.glob(f"python/mpcc/kernel/objects/{name}*.bpf.o"))
    if not objs or f'"{name}' not in text:
        return "FAIL", "make bpf-prebuilt built no object for it"
    return "ok", f"make bpf-prebuilt: {', '.join(o.name for o in objs)}"


def check_kernel(name: str) -> tuple[str, str]:
    if os.geteuid() != 0:
        return "skip", "needs root (run as root: verifier, register, two-path MPTCP transfer, bit-identical trace)"
    return _pytest(_for(name, _collect("tests/kernel/test_bpf_kernel.py")), lock=True)


def check_guests(name: str) -> tuple[str, str]:
    if os.environ.get("GUESTS") != "1":
        return "skip", f"not run (TCG guests, slow): GUESTS=1 make check-algorithm ALGO={name}, or make kernels"
    p = subprocess.run([PY, "-m", "mpcc.lab.kernels", name, "--kernels", "6.1,6.12", "--no-doc"],
                       cwd=ROOT, capture_output=True, text=True)
    last = (p.stdout.strip().splitlines() or ["no output"])[-1][:150]
    return ("ok" if p.returncode == 0 else "FAIL"), last


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not re.fullmatch(r"[a-z][a-z0-9_]*", argv[0] or ""):
        print("check-algorithm: give one algorithm name (fix: make check-algorithm ALGO=balia)", file=sys.stderr)
        return 2
    name = argv[0]
    sys.path.insert(0, str(ROOT / "python"))
    from mpcc import algorithms
    if name not in algorithms.REGISTRY and not (ROOT / "bpf" / f"{name}.bpf.c").exists():
        print(f"check-algorithm: unknown algorithm {name!r} (fix: use one of: {', '.join(algorithms.REGISTRY)})",
              file=sys.stderr)
        return 2
    t_alg = _collect("tests/test_algorithms.py")
    checks = [
        ("Python rule and registry line", lambda: check_python(name)),
        ("parameter ranges (python/mpcc/ranges.py)",
         lambda: _pytest(["tests/test_algorithms.py::test_every_registry_parameter_has_a_physical_range"])),
        ("independent transcription (tests/test_algorithms.py)",
         lambda: _pytest(_for(name, t_alg, tests=("test_every_registry_algorithm_has_an_independent_transcription",)))),
        ("vectors cover it", lambda: check_vectors_cover(name)),
        ("vectors current and stable under insertion",
         lambda: _pytest([f"tests/test_algorithms.py::{t}" for t in (
             "test_committed_vectors_match_reference", "test_vectors_of_one_algorithm_do_not_depend_on_the_others")])),
        ("Rust rule: registry defaults equal Python's",
         lambda: _pytest(["tests/sim/test_engine_limits.py::test_rust_registry_has_the_python_defaults"])),
        ("Rust rule on every vector (cargo test --test vectors)", lambda: _cargo()),
        ("fluid model (mpcc fluid)", lambda: check_fluid(name)),
        ("packet simulator on two paths (mpcc sim)",
         lambda: _pytest(_for(name, _collect("tests/sim/test_engine.py")))),
        ("BPF rule file", lambda: check_bpf_file(name)),
        ("BPF host build on every vector and its declared defaults",
         lambda: _pytest(_for(name, _collect("tests/kernel/test_bpf_math.py"),
                              tests=("test_vectors_cover_every_bpf_algorithm_the_reference_knows",)))),
        ("BPF math library bounds (spec/vectors/math.json)",
         lambda: _pytest(["tests/kernel/test_bpf_mathlib.py"])),
        ("BPF stack within 512 bytes on 6.1 and 6.12+ (test_bpf_stack.py)",
         lambda: _pytest(_for(name, _collect("tests/kernel/test_bpf_stack.py")))),
        ("prebuilt objects (make bpf-prebuilt)", lambda: check_prebuilt(name)),
        ("this kernel: verifier, register, two-path transfer, bit-identical (test_bpf_kernel.py)",
         lambda: check_kernel(name)),
        ("Linux 6.1 and 6.12 guests (mpcc lab kernels)", lambda: check_guests(name)),
    ]
    failed = 0
    for label, run in checks:
        try:
            status, detail = run()
        except Exception as e:  # a check that cannot run is a failure of that check, not of the rest
            status, detail = "FAIL", f"{type(e).__name__}: {' '.join(str(e).split())[:150]}"
        failed += status == "FAIL"
        print(f"{status:<4}  {label}: {detail}", flush=True)
    return 1 if failed else 0


def _cargo() -> tuple[str, str]:
    p = subprocess.run(["cargo", "test", "-q", "-p", "mpcc-core", "--release", "--test", "vectors"],
                       cwd=ROOT, capture_output=True, text=True)
    res = [ln for ln in p.stdout.splitlines() if ln.startswith("test result")]
    detail = res[-1] if res else (p.stderr.strip().splitlines() or ["cargo failed"])[-1]
    return ("ok" if p.returncode == 0 else "FAIL"), detail[:150]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
