"""Tang et al. Example 1 / Table I on the kernel (issue 14): kernel Reno vs BPF ``fast`` without
(1a) and with (1b) Algorithm 2, buffer 400 and 80 packets of the paper scaled by 1/10
(mpcc.reproduce.tang2010.kernel explains the scaling). Either one configuration per call, or all
four side by side on four links in one run (``--together``: one lock hold of ~8 min for 420 s):

    flock /tmp/mpcc-bench.lock .venv/bin/python bench/kernel/fast/table1.py OUTDIR NAME [DURATION WARMUP]
    flock /tmp/mpcc-bench.lock .venv/bin/python bench/kernel/fast/table1.py OUTDIR --together [DURATION WARMUP]
    .venv/bin/python bench/kernel/fast/table1.py OUTDIR --check      (rows for RESULTS.md; exit 1 on a miss)

NAME ∈ example1a-b400, example1a-b80, example1b-b400, example1b-b80. Targets (issue 14): without
Algorithm 2 the Reno/FAST ratio moves by ≥ 5× between the buffers; with it, within a factor 2 of 1
in both.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path


def run(out: Path, name: str, duration: float, warmup: float) -> None:
    from mpcc.reproduce.tang2010 import kernel

    b = replace(kernel.FULL, name="bench", runs=1, duration_s=duration, warmup_s=warmup)
    t0, load0 = time.time(), os.getloadavg()[0]
    res = kernel.table1_cell(name, b, out / "runs")
    res.update(started_utc=time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t0)), wall_s=round(time.time() - t0, 1),
               load_start=round(load0, 2), load_end=round(os.getloadavg()[0], 2), duration_s=duration, warmup_s=warmup)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(res, indent=1) + "\n")
    print(json.dumps(res))


def together(out: Path, duration: float, warmup: float, names=None, adapt_w=None) -> None:
    from mpcc.reproduce.tang2010 import kernel

    b = replace(kernel.FULL, name="bench", runs=1, duration_s=duration, warmup_s=warmup)
    t0, load0 = time.time(), os.getloadavg()[0]
    res = kernel.table1_together(b, names=tuple(names or kernel.PAPER_TABLE1), out=out / "runs", adapt_w=adapt_w)
    stamp = dict(started_utc=time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t0)), wall_s=round(time.time() - t0, 1),
                 load_start=round(load0, 2), load_end=round(os.getloadavg()[0], 2), duration_s=duration,
                 warmup_s=warmup, together=True)
    out.mkdir(parents=True, exist_ok=True)
    for name, row in res.items():
        if name != "setup":
            (out / f"{name}.json").write_text(json.dumps({**row, **stamp}, indent=1) + "\n")
    print(json.dumps(res))


def check(out: Path) -> int:
    r = {n: json.loads((out / f"{n}.json").read_text()) for n in
         ("example1a-b400", "example1a-b80", "example1b-b400", "example1b-b80")}
    for n, v in r.items():
        print(f"| {n} (B = {v['buffer_pkts']}) | {v['reno']:.2f} / {v['fast']:.2f} | {v['ratio']:.2f} | "
              f"{100 * v['utilisation']:.1f} % | {v['queue_mean_pkts']:.1f} | {v['drops']} | {v['started_utc']}, "
              f"load {v['load_start']}–{v['load_end']} |")
    move = r["example1a-b400"]["ratio"] / r["example1a-b80"]["ratio"]
    with_ok = all(0.5 <= r[n]["ratio"] <= 2.0 for n in ("example1b-b400", "example1b-b80"))
    print(f"without Algorithm 2 the ratio moves {move:.1f}× (target ≥ 5: {'pass' if move >= 5 else 'FAIL'}); "
          f"with it {r['example1b-b400']['ratio']:.2f} and {r['example1b-b80']['ratio']:.2f} "
          f"(target 0.5–2: {'pass' if with_ok else 'FAIL'})")
    return 0 if move >= 5 and with_ok else 1


if __name__ == "__main__":
    out = Path(sys.argv[1])
    if sys.argv[2] == "--check":
        sys.exit(check(out))
    if sys.argv[2] == "--together":
        together(out, float(sys.argv[3]) if len(sys.argv) > 3 else 420.0, float(sys.argv[4]) if len(sys.argv) > 4 else 168.0)
        sys.exit(0)
    if sys.argv[2] == "--calibrated":        # OUTDIR --calibrated FROM_DIR DURATION WARMUP: 1b rows at w from B = 400
        from mpcc.reproduce.tang2010.example1 import calibrate_w
        src = json.loads((Path(sys.argv[3]) / "example1b-b400.json").read_text())
        alpha0, w_cal = 5.0, 1.25                       # the scaled files' α₀ and w (kernel scale)
        cal = calibrate_w(src["reno"] / 10, src["fast"] / 10, w_cal, alpha0)   # kernel-scale rates
        (out / "calibration.json").parent.mkdir(parents=True, exist_ok=True)
        (out / "calibration.json").write_text(json.dumps(cal, indent=1) + "\n")
        print("calibrated w (kernel scale):", cal["w_s"])
        together(out, float(sys.argv[4]), float(sys.argv[5]), names=("example1b-b400", "example1b-b80"),
                 adapt_w=cal["w_s"])
        sys.exit(0)
    run(out, sys.argv[2], float(sys.argv[3]) if len(sys.argv) > 3 else 240.0,
        float(sys.argv[4]) if len(sys.argv) > 4 else 96.0)
