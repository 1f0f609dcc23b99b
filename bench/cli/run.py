"""Start-up cost of the ``mpcc`` command line, side by side with ``python -c pass``.

For each command: wall time (median of ``--runs`` runs, hyperfine when installed — ``apt-get
install hyperfine`` — else a loop of ``time.perf_counter``) and peak RSS (median over the same
number of runs of ``getrusage(RUSAGE_CHILDREN).ru_maxrss`` in a fresh child). Writes
``bench/cli/RESULTS.md`` (with ``--write``: the table at the top, the ``## …`` sections below it
kept) with date, machine and load average, and prints it.

The children run without ``PYTHONDONTWRITEBYTECODE``: the warm-up run writes the bytecode cache
(``__pycache__``), as a user's first run does, so the timed runs measure a normal start, not
the compilation of every module (some shells, like this project's agent sessions, set it).

    .venv/bin/python bench/cli/run.py --runs 7 --write
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
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
BIN = Path(sys.executable).parent
SMALL = ROOT / "scenarios" / "peng2016" / "fig3-multipath.toml"
DUMBBELL = HERE / "dumbbell-600s.toml"

COMMANDS = [
    ("python -c pass", [sys.executable, "-c", "pass"]),
    ("mpcc --help", [str(BIN / "mpcc"), "--help"]),
    ("mpcc check (Table III scenario)", [str(BIN / "mpcc"), "check", str(ROOT / "scenarios/peng2016/table3.toml")]),
    ("mpcc sim --json, small (1 flow, 60 s, 10 Mb/s)", [str(BIN / "mpcc"), "sim", str(SMALL), "--json", "-q"]),
    ("mpcc sim (table), small", [str(BIN / "mpcc"), "sim", str(SMALL), "-q"]),
    ("mpcc sim --json, dumbbell 600 s (30 LIA + 30 Reno, 2 × 60 Mb/s)", [str(BIN / "mpcc"), "sim", str(DUMBBELL), "--json", "-q"]),
]


def machine() -> str:
    cpu = "unknown CPU"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{cpu}, {os.cpu_count()} cores, {mem:.0f} GiB, Linux {platform.release()}, Python {platform.python_version()}"


#: The children's environment: bytecode is cached (see the module docstring).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def commit() -> str:
    """The work tree's commit (``+`` when it has uncommitted changes)."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True,
                               text=True, check=True).stdout.strip()
        return head + ("+" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown commit"


def peak_rss_mb(cmd: list[str]) -> float:
    """Peak RSS of one run of ``cmd`` (a fresh wrapper process, so only this child counts)."""
    probe = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True); "
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", probe, *cmd], capture_output=True, text=True, check=True, env=ENV)
    return int(out.stdout.strip()) / 1024.0


def wall_hyperfine(cmds: list[list[str]], runs: int) -> list[tuple[float, float]]:
    """(median wall, mean user + system CPU) per command."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        path = f.name
    try:
        quoted = [" ".join(subprocess.list2cmdline([c]) for c in cmd) for cmd in cmds]
        subprocess.run(["hyperfine", "-N", "-w", "1", "-r", str(runs), "--export-json", path, *quoted],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
        return [(r["median"], r["user"] + r["system"]) for r in json.loads(Path(path).read_text())["results"]]
    finally:
        os.unlink(path)


def wall_loop(cmd: list[str], runs: int) -> tuple[float, float]:
    subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True, env=ENV)  # warm-up (writes the bytecode cache)
    times, cpu = [], []
    for _ in range(runs):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True, env=ENV)
        times.append(time.perf_counter() - t)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime)
    return statistics.median(times), statistics.mean(cpu)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7, help="runs per command (median)")
    ap.add_argument("--write", action="store_true", help="write bench/cli/RESULTS.md")
    args = ap.parse_args()
    load_before = os.getloadavg()
    tool = "hyperfine" if shutil.which("hyperfine") else "loop"
    cmds = [c for _, c in COMMANDS]
    walls = wall_hyperfine(cmds, args.runs) if tool == "hyperfine" else [wall_loop(c, args.runs) for c in cmds]
    rss = [statistics.median(peak_rss_mb(c) for _ in range(args.runs)) for c in cmds]
    load_after = os.getloadavg()
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = ["# `mpcc` command-line start-up", "",
             f"{now}; {machine()}; commit {commit()}.", "",
             f"Load average before/after: {' '.join(f'{x:.2f}' for x in load_before)} / "
             f"{' '.join(f'{x:.2f}' for x in load_after)} (the machine is shared: other jobs were running).", "",
             f"Wall: median of {args.runs} runs ({tool}{', -N, 1 warm-up' if tool == 'hyperfine' else ''}); "
             "CPU: mean user + system time (less sensitive to the other jobs than wall); "
             f"peak RSS: median of {args.runs} runs (getrusage of the child); bytecode cached by the warm-up run "
             "(children run without PYTHONDONTWRITEBYTECODE). "
             "Reproduce: `.venv/bin/python bench/cli/run.py --runs 7 --write`.", "",
             "| command | wall (s) | CPU (s) | peak RSS (MB) |", "|---|---:|---:|---:|"]
    for (name, _), (w, c), r in zip(COMMANDS, walls, rss):
        lines.append(f"| {name} | {w:.3f} | {c:.3f} | {r:.1f} |")
    lines += ["", "Targets (issue 16): `mpcc --help` and `mpcc check` ≤ 0.2 s; a small `mpcc sim --json` ≤ 50 MB peak. "
              "`sim --json` imports neither numpy, matplotlib, pyarrow, dask, scipy nor rich "
              "(tests/test_lean_cli.py checks `sys.modules`).", ""]
    text = "\n".join(lines)
    print(text)
    if args.write:   # replaces the latest table; earlier sections ("## …", the history) are kept
        out = HERE / "RESULTS.md"
        old = out.read_text() if out.exists() else ""
        history = old[old.index("\n## "):] if "\n## " in old else ""
        out.write_text(text + history)


if __name__ == "__main__":
    main()
