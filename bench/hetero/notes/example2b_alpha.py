"""Example 2b (Algorithm 2, w = 1820 s): the α trajectory and the state (which links hold the
queues) over time, per start order and seed. Used for bench/hetero/RESULTS.md ("Why 2b cycles").

Per run: every Algorithm-2 update of the FAST flow 1 of group fast-123 (time, α, q, l) is folded into
600-s rows: α at the end of the row, mean q (ms) and l of the updates in it, and the state string per
300 s ("R" = l12 and l34 hold ≥ 100 packets, "F" = l23 holds ≥ 10, "-" = neither). Switches R→F
are listed with the α at which they happened.

    nice -n 10 .venv/bin/python bench/hetero/notes/example2b_alpha.py --first reno fast --seeds 1 2 [--duration 10800]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import numpy as np

from mpcc import scenario as sc
from mpcc.hetero import packet
from mpcc.reproduce.tang2010.packet import stretch as _stretch

ROOT = Path(__file__).resolve().parents[3]


def one(first: str, seed: int, duration: float, max_p_scale: float = 1.0) -> dict:
    s = _stretch(sc.load(ROOT / f"scenarios/tang2010/example2b-{first}-first.toml"), duration)
    if max_p_scale != 1.0:
        s = s.with_changes(links=tuple(dataclasses.replace(lk, red=dataclasses.replace(
            lk.red, max_p=lk.red.max_p * max_p_scale)) for lk in s.links))
    fr = packet.run(s, seed=seed, measure=(duration / 2, duration), sample_interval_s=1.0)
    t, q = packet.binned_queues(fr, 300.0)
    state = np.where((q["l12"] >= 100) & (q["l34"] >= 100), "R", np.where(q["l23"] >= 10, "F", "-"))
    al = fr.alpha_log
    gi = packet.group_index(s, "fast-123")
    sel = (al["group"] == gi) & (al["flow"] == 0)
    ta, a, qa, la = al["time_s"][sel], al["alpha"][sel], al["q_s"][sel], al["l"][sel]
    rows = []
    for t0 in np.arange(0.0, duration, 600.0):
        m = (ta > t0) & (ta <= t0 + 600.0)
        if m.any():
            rows.append({"t_end": float(t0 + 600.0), "alpha": float(a[m][-1]), "q_ms": float(1e3 * qa[m].mean()),
                         "l": float(la[m].mean())})
    switches = []
    for k in range(1, len(state)):
        if state[k] != state[k - 1]:
            tk = float(t[k] - 150.0)
            ak = a[ta <= tk]
            switches.append({"t_s": tk, "to": str(state[k]), "alpha": float(ak[-1]) if ak.size else float(a[0])})
    reno = packet.binned_rates(fr, "reno", 300.0)[1]
    fst = packet.binned_rates(fr, "fast-123", 300.0)[1]
    half = t >= duration / 2
    return {"first": first, "seed": seed, "duration_s": duration, "max_p_scale": max_p_scale, "states": "".join(state), "alpha_rows": rows,
            "switches": switches, "alpha_max": float(a.max()) if a.size else None,
            "alpha_min": float(a.min()) if a.size else None,
            "second_half_reno": float(reno[half].mean()), "second_half_fast": float(fst[half].mean()),
            "wall_s": fr.wall_s}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--first", nargs="+", default=["reno", "fast"], choices=["reno", "fast"])
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--duration", type=float, default=10800.0)
    ap.add_argument("--max-p-scale", type=float, default=1.0,
                    help="RED max_p × this on every link (1/3 ≈ ns-2's wait_ = true marking rate)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    for first in a.first:
        for seed in a.seeds:
            r = one(first, seed, a.duration, a.max_p_scale)
            if a.json:
                print(json.dumps(r), flush=True)
                continue
            print(f"{first}-first seed {seed} ({r['wall_s']:.0f} s wall): states per 300 s {r['states']}")
            print("  α per 600 s: " + " ".join(f"{x['alpha']:.1f}" for x in r["alpha_rows"]))
            print("  switches: " + ", ".join(f"{x['t_s']:.0f} s →{x['to']} at α {x['alpha']:.1f}" for x in r["switches"]))
            print(f"  α range {r['alpha_min']:.2f}–{r['alpha_max']:.1f}; second half Reno {r['second_half_reno']:.2f}, "
                  f"FAST {r['second_half_fast']:.2f} packets/ms per flow", flush=True)


if __name__ == "__main__":
    main()
