#!/usr/bin/env python3
"""Do unsound testbed runs (linkem releasing more than 1 ‰ of its frames ≥ 1 ms late) measure
different rates from sound ones? Per cell (generated network × algorithm, MPCC_BPF_CONN unset, no
host sysctls) with ≥ 2 runs of each kind: the unsound runs' mean against the sound runs' mean,
per quantity (the multipath group, its paths, the single-path groups); and each run's distance
from its cell's mean by how late its emulator was, in those cells (bench/kernel/RESULTS.md §31).

    .venv/bin/python bench/kernel/notes/sound_vs_unsound.py bench/kernel/conn_mechanisms_tb_{19..30}.json

Concluded (2026-11-30, 19 such cells): unsound − sound, mean over cells with its 95 % interval,
multipath group −0.8 ± 4.0 %, its paths +0.1 ± 4.6 %, single-path groups +0.0 ± 0.9 %; a run's
median distance from its cell's mean 6.0 % (≤ 1 ‰ late, 127 runs), 6.8 % (1–5 ‰, 53), 7.9 %
(5–20 ‰, 37). The sound runs came mostly from the earlier host (Intel), the unsound ones from
this one (AMD), so host and lateness are confounded; the health criterion was left as it is.
"""
import argparse
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from linux_mode_agreement import cells, load_rows, quantities  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", type=Path, help="conn_mechanisms.py testbed JSON files")
    a = ap.parse_args()
    by_cell = cells(load_rows(a.files, "sound_vs_unsound"), 2, sound_only=False)
    diffs: dict[str, list[float]] = {"multipath group": [], "its paths": [], "single-path groups": []}
    spread: list[tuple[float, float]] = []     # (late share, |run / cell mean − 1|)
    for rs in by_cell.values():
        sound = [quantities(r) for r in rs if r["health"].get("sound")]
        unsound = [quantities(r) for r in rs if not r["health"].get("sound")]
        if len(sound) < 2 or len(unsound) < 2:
            continue
        for q in sound[0]:
            kind = "multipath group" if q == "mp" else "its paths" if q.startswith("mp/") else "single-path groups"
            diffs[kind].append(100 * (statistics.mean(x[q] for x in unsound) / statistics.mean(x[q] for x in sound) - 1))
        m = statistics.mean(r["testbed"] for r in rs)
        for r in rs:
            h = r["health"]
            if h.get("linkem_releases") and h.get("linkem_late") is not None:
                spread.append((h["linkem_late"] / h["linkem_releases"], abs(r["testbed"] / m - 1)))
    print("| quantity | cells | unsound − sound: median | mean ± 95 % |")
    print("|---|---|---|---|")
    for kind, d in diffs.items():
        if len(d) >= 2:
            print(f"| {kind} | {len(d)} | {statistics.median(d):+.1f} % | {statistics.mean(d):+.1f} ± "
                  f"{1.96 * statistics.stdev(d) / math.sqrt(len(d)):.1f} % |")
    print("\n| linkem releases ≥ 1 ms late | runs (those cells) | median distance of the multipath rate from its cell's mean |")
    print("|---|---|---|")
    for lo, hi in ((0, 1e-3), (1e-3, 5e-3), (5e-3, 2e-2), (2e-2, 1.0)):
        xs = [d for late, d in spread if lo <= late < hi]
        if xs:
            print(f"| {1e3 * lo:g}–{1e3 * hi:g} ‰ | {len(xs)} | {100 * statistics.median(xs):.1f} % |")


if __name__ == "__main__":
    main()
