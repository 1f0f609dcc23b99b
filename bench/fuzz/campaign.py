"""Long hostile-input campaign (issue #12): the generators of tests/hostile/fuzzlib.py, run for
``--duration`` seconds in this process, every case judged by ``fuzzlib.judge``. Prints and
(optionally) writes counts per input kind and outcome, and every finding with its argv and input.

    nice -n 15 .venv/bin/python bench/fuzz/campaign.py --duration 1800 --json bench/fuzz/last.json

Each case is bounded: a 60 s timer (a slower case is a finding: "hang"), with the product's cost
limit at fuzzlib.CASE_MAX_WALL_S (10 s) so that every case it lets run fits that timer, and the
process runs under an address-space limit (--memory-gb, default 8) so a runaway allocation is a
MemoryError finding, not a machine in swap.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import resource
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "hostile"))
os.environ.setdefault("MPLBACKEND", "Agg")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=1800.0, help="seconds to run (default 1800)")
    ap.add_argument("--memory-gb", type=float, default=8.0, help="address-space limit of this process")
    ap.add_argument("--case-timeout", type=float, default=60.0)
    ap.add_argument("--json", dest="json_out", default=None, help="write counts and findings here")
    args = ap.parse_args(argv)

    lim = int(args.memory_gb * 1024**3)
    resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
    warnings.filterwarnings("ignore")   # hypothesis' NonInteractiveExampleWarning for .example()

    from hypothesis import strategies as st

    import fuzzlib as fz

    from mpcc import cost
    cost.MAX_WALL_S = fz.CASE_MAX_WALL_S     # for the whole campaign: every case fits its timer
    tmp = fz.fresh_tmpdir()
    scen = fz.write_case(tmp, "cli.toml", fz.small_scenario().example())
    het = fz.write_case(tmp, "cli-hetero.toml", fz.HETERO_BASE)
    kinds = ["scenario", "valid-scenario", "hetero", "command"]
    counts = {k: collections.Counter() for k in kinds}
    findings = []
    t0 = time.time()
    i = 0
    while time.time() - t0 < args.duration:
        kind = kinds[i % len(kinds)] if i % 8 else "scenario"
        i += 1
        doc, doc_h, must_fail = None, None, False
        if kind == "scenario":
            doc = fz.mutated(fz.small_scenario().example()).example()
            path = fz.write_case(tmp, "case.toml", doc)
            argv = fz.scenario_command(path, st.integers(0, 4).example())
        elif kind == "valid-scenario":
            doc = fz.small_scenario().example()
            path = fz.write_case(tmp, "case.toml", doc)
            argv = fz.scenario_command(path, st.integers(0, 4).example())
        elif kind == "hetero":
            doc_h = fz.mutated(fz.HETERO_BASE).example()
            argv = ["hetero", "run", "--json", fz.write_case(tmp, "case-hetero.toml", doc_h)]
        else:
            argv, must_fail = fz.command_line(scen, het).example()
        start = time.time()
        o = fz.run_cli(argv, timeout_s=args.case_timeout)
        wall = time.time() - start
        problems = fz.judge(o, doc, must_fail=must_fail)
        outcome = ("exit0" if o.code == 0 else "exit2" if o.code == 2 else "other") if not problems else "FINDING"
        counts[kind][outcome] += 1
        counts[kind]["slowest_s"] = max(counts[kind]["slowest_s"], round(wall, 2))
        if problems:
            text = fz.to_toml(doc) if doc is not None else fz.to_toml(doc_h) if kind == "hetero" else None
            findings.append({"kind": kind, "argv": argv, "problems": problems, "input": text})
            print(f"FINDING {kind}: mpcc {' '.join(map(repr, argv))}: {problems}", flush=True)
    elapsed = time.time() - t0
    total = sum(c[k] for c in counts.values() for k in ("exit0", "exit2", "other", "FINDING"))
    report = {"date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime(t0)), "duration_s": round(elapsed),
              "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, {platform.platform()}",
              "load_avg_end": os.getloadavg(), "cases": total,
              "counts": {k: dict(v) for k, v in counts.items()}, "findings": findings}
    print(json.dumps({k: v for k, v in report.items() if k != "findings"}, indent=1))
    print(f"{len(findings)} findings in {total} cases")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(report, indent=1, default=str) + "\n")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
