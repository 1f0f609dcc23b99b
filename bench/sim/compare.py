"""Compare two builds of the engine benchmark (`crates/mpcc-core/examples/simbench`) on the
Table III scenario (100 simulated s, no time series) for Balia, OLIA and FAST: the binaries run
alternately, one run each per round, so that load changes hit both alike. Prints a Markdown
table of median data packets per wall-clock second and per CPU-second and their ratios, and
whether both builds simulated the same events.

Usage (take the shared lock: timing): flock /tmp/mpcc-bench.lock .venv/bin/python
bench/sim/compare.py BEFORE_SIMBENCH AFTER_SIMBENCH [ROUNDS]
"""
from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))

from mpcc import scenario, sim  # noqa: E402
from mpcc.reproduce.peng2016 import sim as peng_sim  # noqa: E402

ALGOS = ("balia", "olia", "fast")


def configs(tmp: Path) -> dict[str, Path]:
    t3 = scenario.load(ROOT / "scenarios/peng2016/table3.toml")
    out = {}
    for a in ALGOS:
        cfg = sim.core_config(peng_sim.testbed(sim.with_algorithm(t3, a)), seed=1, sample_interval_s=0)
        cfg.pop("max_memory_mb", None)
        out[a] = tmp / f"{a}.json"
        out[a].write_text(json.dumps(cfg))
    return out


def main(before: str, after: str, rounds: int = 7) -> None:
    runs: dict[tuple[str, str], list[dict]] = {}
    with tempfile.TemporaryDirectory() as d:
        cfgs = configs(Path(d))
        for _ in range(rounds):
            for a in ALGOS:
                for label, binary in (("before", before), ("after", after)):
                    p = subprocess.run([binary, str(cfgs[a]), "1"], capture_output=True, text=True, check=True)
                    runs.setdefault((label, a), []).append(json.loads(p.stdout))
    print("| algorithm | runs | before M pkt/s (wall) | after | ratio | before M pkt/CPU-s | after | ratio | same events |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for a in ALGOS:
        b, f = runs[("before", a)], runs[("after", a)]
        med = lambda rs, k: statistics.median(r[k] for r in rs)  # noqa: E731
        wb, wf = med(b, "packets_per_s"), med(f, "packets_per_s")
        cb, cf = med(b, "packets_per_cpu_s"), med(f, "packets_per_cpu_s")
        same = {(r["events"], r["data_packets"]) for r in b} == {(r["events"], r["data_packets"]) for r in f}
        print(f"| {a} | {len(b)} | {wb/1e6:.2f} | {wf/1e6:.2f} | {wf/wb:.3f} | {cb/1e6:.2f} | {cf/1e6:.2f} | {cf/cb:.3f} | {'yes' if same else 'no'} |")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 7)
