"""Run every benchmark in turn (each writes its own bench/<area>/RESULTS.md).

    .venv/bin/python bench/run.py [AREA ...]     # areas: fluid sim hetero linkem kernel

The kernel and linkem benchmarks need root (network namespaces, BPF) and are skipped without it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCHES = {
    "fluid": ["fluid/run.py"],
    "sim": ["sim/run.py"],
    "hetero": ["hetero/run.py"],
    "linkem": ["linkem/run.py"],
    "kernel": ["kernel/run.py"],
}
NEEDS_ROOT = {"linkem", "kernel"}


def main(argv: list[str]) -> int:
    areas = argv or list(BENCHES)
    status = 0
    for area in areas:
        if area not in BENCHES:
            print(f"bench: unknown area {area!r} (choose from {', '.join(BENCHES)})", file=sys.stderr)
            return 2
        if area in NEEDS_ROOT and os.geteuid() != 0:
            print(f"bench: skipping {area} (needs root)")
            continue
        for script in BENCHES[area]:
            print(f"== bench/{script}", flush=True)
            status |= subprocess.call([sys.executable, str(HERE / script)])
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
