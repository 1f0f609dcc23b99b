"""The engine before and after a change, side by side in one run: the 600 s dumbbell of issue 16
and k = 4, 8, 16 fat trees (8-subflow LIA, permutation traffic, as in bench/sim/fattree.py).

Builds `crates/mpcc-core/examples/simbench` from a git ref (default: main) in a temporary
directory and from this work tree, then runs the two binaries alternately (one run each per
round, so load changes hit both alike) and reports medians of wall time, CPU time, data
packets per wall-clock second and peak RSS (VmHWM), their ratios, and whether both builds gave
identical results (a digest of every output column, else the event and packet counts).

Usage (timing: take the shared lock):
    flock /tmp/mpcc-bench.lock .venv/bin/python bench/sim/side_by_side.py [--ref main] [--rounds 3] [--write]
        [--before-bin PATH]   (a simbench already built from --ref: no build while holding the lock)
--write appends the table, with machine, date and load, to bench/sim/SIDE_BY_SIDE.md.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fattree import DURATION  # noqa: E402  (simulated seconds per k)


def build(src: Path, target: Path) -> Path:
    subprocess.run(["cargo", "build", "-q", "--release", "-p", "mpcc-core", "--example", "simbench"],
                   cwd=src, check=True, env={**os.environ, "CARGO_TARGET_DIR": str(target)})
    return target / "release/examples/simbench"


def build_ref(ref: str, tmp: Path) -> Path:
    src = tmp / "src"
    src.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", ref], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
    return build(src, tmp / "target")


def configs(tmp: Path) -> dict[str, Path]:
    from mpcc import scenario, topo
    from mpcc.sim.engine import core_config

    cases = {"dumbbell 600 s": scenario.load(ROOT / "bench/cli/dumbbell-600s.toml")}
    for k, d in DURATION.items():
        cases[f"fat tree k={k}, LIA"] = topo.scenario(topo.fattree(k, subflows=8, algorithm="lia", seed=1,
                                                                   duration_s=d))
    out = {}
    for i, (name, s) in enumerate(cases.items()):
        cfg = core_config(s, seed=1, sample_interval_s=0)
        cfg.pop("max_memory_mb", None)
        out[name] = tmp / f"case{i}.json"
        out[name].write_text(json.dumps(cfg))
    return out


def run(binary: Path, cfg: Path) -> dict:
    p = subprocess.run([str(binary), str(cfg), "1"], capture_output=True, text=True, check=True)
    return json.loads(p.stdout.replace(": inf", ": null"))


def main(ref: str, rounds: int, write: bool, before_bin: str | None = None) -> None:
    from run import machine  # bench/sim/run.py

    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        before = Path(before_bin) if before_bin else build_ref(ref, tmp / "before")
        after = build(ROOT, ROOT / "target")
        cfgs = configs(tmp)
        load0 = os.getloadavg()
        t0 = datetime.datetime.now(datetime.timezone.utc)
        runs: dict[tuple[str, str], list[dict]] = {}
        for _ in range(rounds):
            for name, cfg in cfgs.items():
                for label, binary in (("before", before), ("after", after)):
                    runs.setdefault((label, name), []).append(run(binary, cfg))
        load1 = os.getloadavg()
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    lines = [f"## {t0:%Y-%m-%d %H:%M} UTC · {machine()} · load average before/after {load0[0]:.2f} / {load1[0]:.2f}", "",
             f"before = `{ref}`, after = work tree at {head} (+ uncommitted changes, if any); {rounds} rounds, "
             "alternating; medians. `same` = identical digest of every output column (or, for a build "
             "without digests, identical event and packet counts).", "",
             "| case | data pkts | before wall s | after wall s | before M pkt/s | after M pkt/s | speed-up (wall) "
             "| speed-up (CPU) | before RSS MB | after RSS MB | same |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for name in cfgs:
        b, a = runs[("before", name)], runs[("after", name)]
        med = lambda rs, k: statistics.median(r[k] for r in rs)  # noqa: E731
        key = "digest" if all("digest" in r for r in b + a) else None
        ident = (lambda r: r[key]) if key else (lambda r: (r["events"], r["data_packets"]))
        same = {ident(r) for r in b} == {ident(r) for r in a} and len({ident(r) for r in a}) == 1
        wb, wa, cb, ca = med(b, "wall_s"), med(a, "wall_s"), med(b, "cpu_s"), med(a, "cpu_s")
        lines.append(f"| {name} | {a[0]['data_packets']:,} | {wb:.2f} | {wa:.2f} | {med(b, 'packets_per_s') / 1e6:.2f} | "
                     f"{med(a, 'packets_per_s') / 1e6:.2f} | {wb / wa:.2f}× | {cb / ca:.2f}× | "
                     f"{med(b, 'peak_rss_kb') / 1024:.1f} | {med(a, 'peak_rss_kb') / 1024:.1f} | {'yes' if same else 'NO'} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if write:
        out = Path(__file__).with_name("SIDE_BY_SIDE.md")
        if not out.exists():
            out.write_text("# Simulator engine before / after, side by side (bench/sim/side_by_side.py)\n\n")
        with out.open("a") as f:
            f.write("\n" + text)
        print(f"appended to {out}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--ref", default="main", help="git ref of the 'before' build")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--before-bin", help="simbench built from --ref beforehand (skips that build)")
    a = ap.parse_args()
    main(a.ref, a.rounds, a.write, a.before_bin)
