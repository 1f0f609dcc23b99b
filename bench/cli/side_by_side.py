"""The command line of a git ref and of this work tree, side by side (alternating runs).

Each tree is ``python/`` (the ref's from ``git archive``, this tree's as is) with a Rust core:
by default this tree's ``mpcc/_core`` for both, so that only the Python side differs;
``--core-ref PATH`` gives the ref a different built core (e.g. the ``lib_core.so`` of another
branch's ``cargo build --release -p mpcc-py --features pyo3/extension-module``), ``--core PATH``
this tree. Runs alternate between the trees (one run each per round, so load changes hit both
alike); prints the median wall time, mean and minimum CPU time (user + system) per command and
tree, whether both printed the same bytes, and the load average. The children cache bytecode
(no ``PYTHONDONTWRITEBYTECODE``; a warm-up run per tree), as in ``run.py``.

    .venv/bin/python bench/cli/side_by_side.py --ref main --rounds 7
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
COMMANDS = {
    "mpcc --help": ["--help"],
    "mpcc check (Table III)": ["check", "scenarios/peng2016/table3.toml"],
    "mpcc sim --json, small": ["sim", "scenarios/peng2016/fig3-multipath.toml", "--json", "-q"],
    "mpcc sim --json, dumbbell 600 s": ["sim", str(HERE / "dumbbell-600s.toml"), "--json", "-q"],
}


def _core_of(tree: Path) -> Path:
    cores = sorted((tree / "mpcc").glob("_core*.so"))
    if not cores:
        sys.exit(f"side_by_side: no mpcc/_core*.so in {tree} (fix: make setup)")
    return cores[0]


def _run(tree: Path, args: list[str]) -> tuple[float, float, bytes]:
    env = dict(ENV, PYTHONPATH=str(tree))
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", "from mpcc.cli import main; main()", *args], env=env, cwd=ROOT,
                         stdout=subprocess.PIPE, check=True).stdout
    wall = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ref", default="main", help="git ref whose python/ is compared (default: main)")
    ap.add_argument("--rounds", type=int, default=7, help="runs per command and tree")
    ap.add_argument("--core", type=Path, default=None, help="built _core for this tree (default: its own)")
    ap.add_argument("--core-ref", type=Path, default=None, help="built _core for the ref (default: this tree's)")
    args = ap.parse_args()
    here = ROOT / "python"
    with tempfile.TemporaryDirectory(prefix="mpcc-cli-") as tmp:
        trees = {}
        for label, src, core in ((args.ref, None, args.core_ref), ("this tree", here, args.core)):
            dst = Path(tmp) / ("ref" if src is None else "this")
            if src is None:
                dst.mkdir()
                archive = subprocess.run(["git", "archive", args.ref, "python"], cwd=ROOT, stdout=subprocess.PIPE, check=True)
                subprocess.run(["tar", "-x", "-C", str(dst)], input=archive.stdout, check=True)
            else:
                shutil.copytree(src, dst / "python", ignore=shutil.ignore_patterns("__pycache__", "_core*.so"))
            shutil.copy(core or _core_of(here), dst / "python" / "mpcc" / "_core.abi3.so")
            trees[label] = dst / "python"
        print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        print(f"| command | {' | '.join(f'{k}: wall (s) | CPU mean / min (s)' for k in trees)} | same output |")
        print("|---|" + "---:|---:|" * len(trees) + "---|")
        for name, cmd in COMMANDS.items():
            outs = {k: _run(t, cmd)[2] for k, t in trees.items()}   # warm-up: writes the bytecode cache
            res: dict[str, tuple[list[float], list[float]]] = {k: ([], []) for k in trees}
            for _ in range(args.rounds):
                for k, t in trees.items():
                    w, c, _ = _run(t, cmd)
                    res[k][0].append(w)
                    res[k][1].append(c)
            cells = " | ".join(f"{statistics.median(w):.3f} | {statistics.mean(c):.3f} / {min(c):.3f}" for w, c in res.values())
            print(f"| {name} | {cells} | {'yes' if len(set(outs.values())) == 1 else 'NO'} |")
        print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
