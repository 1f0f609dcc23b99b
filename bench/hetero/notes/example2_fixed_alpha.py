"""Example 2a with FAST's α fixed at other values (the paper's Fig. 18 uses α = 8.2): which state
(Reno holding l12/l34, or FAST holding l23) each start order ends in. Used for bench/hetero/RESULTS.md.

    .venv/bin/python bench/hetero/notes/example2_fixed_alpha.py --alpha 8.2 --seeds 1 2 3 [--no-noise]
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import numpy as np

from mpcc import algorithms
from mpcc import scenario as sc
from mpcc.hetero import packet
from mpcc.reproduce.tang2010.packet import stretch as _stretch

ROOT = Path(__file__).resolve().parents[3]


def run(first: str, alpha: float, seed: int, duration: float, noise: bool) -> str:
    s = _stretch(sc.load(ROOT / f"scenarios/tang2010/example2a-{first}-first.toml"), duration)
    if not noise:
        s = s.with_changes(background=())
    fast = algorithms.get({"name": "fast", "alpha": alpha})
    s = s.with_changes(groups=tuple(dataclasses.replace(g, algorithm=fast) if g.name.startswith("fast") else g
                                    for g in s.groups))
    fr = packet.run(s, seed=seed, measure=(duration / 2, duration), sample_interval_s=1.0)
    t, q = packet.binned_queues(fr, 300.0)
    reno = packet.binned_rates(fr, "reno", 300.0)[1]
    fst = packet.binned_rates(fr, "fast-123", 300.0)[1]
    state = np.where((q["l12"] >= 100) & (q["l34"] >= 100), "R", np.where(q["l23"] >= 10, "F", "-"))
    return (f"{first}-first α={alpha:g} seed={seed} noise={noise}: states per 300 s {''.join(state)}; "
            f"last bin Reno {reno[-1]:.2f} FAST {fst[-1]:.2f} packets/ms, queues l12/l23/l34 "
            f"{q['l12'][-1]:.0f}/{q['l23'][-1]:.0f}/{q['l34'][-1]:.0f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--alpha", type=float, default=8.2)
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--duration", type=float, default=3600.0)
    ap.add_argument("--no-noise", action="store_true")
    a = ap.parse_args()
    for seed in a.seeds:
        for first in ("fast", "reno"):
            print(run(first, a.alpha, seed, a.duration, not a.no_noise), flush=True)


if __name__ == "__main__":
    main()
