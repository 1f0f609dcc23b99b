"""Tang et al. Example 1 / Table I on the kernel (issue 14): kernel Reno vs BPF ``fast`` without
(1a) and with (1b) Algorithm 2, buffer 400 and 80 packets of the paper scaled by 1/10
(mpcc.reproduce.tang2010.kernel explains the scaling). Either one configuration per call, or all
four side by side on four links in one run (``--together``: one lock hold of ~8 min for 420 s):

    flock /tmp/mpcc-bench.lock .venv/bin/python bench/kernel/fast/table1.py OUTDIR NAME [DURATION WARMUP]
    flock /tmp/mpcc-bench.lock .venv/bin/python bench/kernel/fast/table1.py OUTDIR --together [DURATION WARMUP]
    flock /tmp/mpcc-bench.lock .venv/bin/python bench/kernel/fast/table1.py OUTDIR --with-calibrated FROM DURATION WARMUP
                      (the four and the 1b pair at the w calibrated on FROM's B = 400 row: six links, one run)
    flock /tmp/mpcc-bench.lock .venv/bin/python bench/kernel/fast/table1.py OUTDIR --k K DURATION WARMUP NAME...
                      (the named configurations side by side at scale K instead of 10)
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


def with_calibrated(out: Path, cal_from: Path, duration: float, warmup: float) -> None:
    """The four configurations and the two 1b ones at the w calibrated from ``cal_from``'s B = 400
    row (footnote 6, docs/hetero.md), six links side by side in one run: NAME.json for the four,
    NAME-wcal.json for the two, calibration.json."""
    from dataclasses import replace as rep

    from mpcc.reproduce.tang2010 import kernel
    from mpcc.reproduce.tang2010.example1 import calibrate_w
    from mpcc.reproduce.tang2010.packet import with_adapt_w
    from mpcc.testbed import engine

    src = json.loads((cal_from / "example1b-b400.json").read_text())
    cal = calibrate_w(src["reno"] / 10, src["fast"] / 10, 1.25, 5.0)      # kernel-scale rates, w and α₀
    cal["from"] = str(cal_from)
    base = kernel.side_by_side(list(kernel.PAPER_TABLE1))
    cal_names = ("example1b-b400", "example1b-b80")
    c = with_adapt_w(kernel.side_by_side(cal_names), cal["w_s"])
    ren = lambda n: n.replace("example1b-b400.", "example1b-b400-wcal.").replace("example1b-b80.", "example1b-b80-wcal.")  # noqa: E731
    links = base.links + tuple(rep(l, name=ren(l.name)) for l in c.links)
    groups = base.groups + tuple(rep(g, name=ren(g.name), paths=tuple(tuple(ren(x) for x in p) for p in g.paths))
                                 for g in c.groups)
    bgs = base.background + tuple(rep(b, name=ren(b.name), path=tuple(ren(x) for x in b.path)) for b in c.background)
    s = base.with_changes(name="tang2010-table1-kernel-cal", links=links, groups=groups, background=bgs)
    t0, load0 = time.time(), os.getloadavg()[0]
    st = engine.settings_from(s, runs=1, duration_s=duration, warmup_s=warmup)
    r = engine.run_scenario(s, st, out / "runs" / "together")
    stamp = dict(started_utc=time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t0)), wall_s=round(time.time() - t0, 1),
                 load_start=round(load0, 2), load_end=round(os.getloadavg()[0], 2), duration_s=duration,
                 warmup_s=warmup, together=True, links=len(s.links))
    out.mkdir(parents=True, exist_ok=True)
    (out / "calibration.json").write_text(json.dumps(cal, indent=1) + "\n")
    for n in list(kernel.PAPER_TABLE1) + [f"{x}-wcal" for x in cal_names]:
        row = {**kernel._row(r.groups, r.links, f"{n}."), **stamp,
               "buffer_pkts": next(l.buffer_pkts for l in s.links if l.name == f"{n}.bottleneck")}
        if n.endswith("-wcal"):
            row["adapt_w"] = cal["w_s"]
        (out / f"{n}.json").write_text(json.dumps(row, indent=1) + "\n")
    print("calibrated w (kernel scale):", cal["w_s"])


def together_k(out: Path, k: float, duration: float, warmup: float, names) -> None:
    """``names`` side by side at scale k instead of the kernel's 10 (rates reported ×k)."""
    from mpcc.reproduce.tang2010 import kernel
    from mpcc.testbed import engine

    s = kernel.side_by_side(names, k)
    t0, load0 = time.time(), os.getloadavg()[0]
    r = engine.run_scenario(s, engine.settings_from(s, runs=1, duration_s=duration, warmup_s=warmup),
                            out / "runs" / "together")
    stamp = dict(started_utc=time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t0)), wall_s=round(time.time() - t0, 1),
                 load_start=round(load0, 2), load_end=round(os.getloadavg()[0], 2), duration_s=duration,
                 warmup_s=warmup, together=True, k=k)
    out.mkdir(parents=True, exist_ok=True)
    for n in names:
        row = {**kernel._row(r.groups, r.links, f"{n}.", k), **stamp,
               "buffer_pkts": next(l.buffer_pkts for l in s.links if l.name == f"{n}.bottleneck")}
        (out / f"{n}.json").write_text(json.dumps(row, indent=1) + "\n")
        print(json.dumps(row))


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
    if sys.argv[2] == "--k":                  # OUTDIR --k K DURATION WARMUP NAME...: at scale K instead of 10
        together_k(out, float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]), sys.argv[6:])
        sys.exit(0)
    if sys.argv[2] == "--with-calibrated":    # OUTDIR --with-calibrated FROM_DIR DURATION WARMUP: all six, one run
        with_calibrated(out, Path(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]))
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
