"""Example 2a Reno-first: how long the Reno state (Reno holding l12/l34, l23 nearly empty) holds after
the FAST flows join at 100 s, against FAST's α and FAST's window-update details. Used for
bench/hetero/RESULTS.md ("Why the Reno state of 2a is lost").

Each run is the scenario file with the FAST groups' parameters replaced (α, and optionally
update_interval_s, gamma), noise on unless --no-noise. The queues and rates are sampled every
--dt s. The Reno state is lost at the first time after 100 s at which the l23 queue (5 s mean)
exceeds 20 packets while the 8 Reno flows' total rate (5 s mean) is below half of their 50–100 s
mean; "hold" = that time − 100 s (censored at the run's end: reported as ">T").

    nice -n 10 .venv/bin/python bench/hetero/notes/example2_reno_hold.py --alpha 8.2 20 50 --seeds 1 2 3 \\
        [--update-interval 0.02 0.2] [--gamma 0.5] [--duration 900] [--json]
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
from pathlib import Path

import numpy as np

from mpcc import algorithms
from mpcc import scenario as sc
from mpcc.hetero import packet
from mpcc.reproduce.tang2010.packet import stretch as _stretch

ROOT = Path(__file__).resolve().parents[3]
FAST_START = 100.0


def scenario(alpha: float, update: float, gamma: float, duration: float, noise: bool,
             red_weight: float | None = None, max_p_scale: float = 1.0, first: str = "reno"):
    s = _stretch(sc.load(ROOT / f"scenarios/tang2010/example2a-{first}-first.toml"), duration)
    if max_p_scale != 1.0:
        s = s.with_changes(links=tuple(dataclasses.replace(lk, red=dataclasses.replace(
            lk.red, max_p=lk.red.max_p * max_p_scale)) for lk in s.links))
    if not noise:
        s = s.with_changes(background=())
    if red_weight is not None:
        s = s.with_changes(links=tuple(dataclasses.replace(lk, red=dataclasses.replace(lk.red, weight=red_weight))
                                       for lk in s.links))
    fast = algorithms.get({"name": "fast", "alpha": alpha, "update_interval_s": update, "gamma": gamma})
    return s.with_changes(groups=tuple(dataclasses.replace(g, algorithm=fast) if g.name.startswith("fast") else g
                                       for g in s.groups))


def _mean_every(t: np.ndarray, x: np.ndarray, width: float) -> tuple[np.ndarray, np.ndarray]:
    edges = np.arange(0.0, t[-1] + width, width)
    idx = np.clip(np.digitize(t, edges) - 1, 0, len(edges) - 2)
    tot = np.bincount(idx, weights=x, minlength=len(edges) - 1)
    n = np.maximum(np.bincount(idx, minlength=len(edges) - 1), 1)
    return edges[:-1], tot / n


def marks(alpha: float, seed: int, update: float, gamma: float, duration: float, noise: bool,
          red_weight: float | None, window: tuple[float, float]) -> dict:
    """Marks per link, and the Reno flows' marks per packet sent, over ``window``."""
    from mpcc import sim
    s = scenario(alpha, update, gamma, duration, noise, red_weight)
    c = sim.simulate(s, seed=seed, sample_interval_s=0.0, measure=window).columns
    reno = c["sf_group"] == packet.group_index(s, "reno")
    span = window[1] - window[0]
    return {"alpha": alpha, "seed": seed, "window": list(window),
            "link_marks": [int(m) for m in c["link_marks"]],
            "link_load_pkts_per_ms": [float(a) / span / 1e3 for a in c["link_arrivals"]],
            "reno_marks_per_sent": float(c["sf_marks"][reno].sum() / max(c["sf_sent"][reno].sum(), 1)),
            "reno_loss_events": int(c["sf_loss_events"][reno].sum())}


def one(alpha: float, seed: int, update: float, gamma: float, duration: float, dt: float, noise: bool,
        red_weight: float | None = None, max_p_scale: float = 1.0, first: str = "reno") -> dict:
    s = scenario(alpha, update, gamma, duration, noise, red_weight, max_p_scale, first)
    fr = packet.run(s, seed=seed, measure=(FAST_START, duration), sample_interval_s=dt)
    q = fr.queues
    l23 = q["link"] == 1
    t0, q23 = _mean_every(q["time_s"][l23], q["queue_pkts"][l23], 5.0)
    qs = {name: _mean_every(q["time_s"][q["link"] == i], q["queue_pkts"][q["link"] == i], 5.0)[1]
          for i, name in enumerate(("l12", "l23", "l34"))}
    r = fr.rates
    gi = packet.group_index(s, "reno")
    sel = r["group"] == gi
    # total Reno rate per sample time, then 5 s means (packets/ms)
    tr, inv = np.unique(r["time_s"][sel], return_inverse=True)
    reno_tot = np.bincount(inv, weights=r["rate_pps"][sel]) / 1e3
    _, reno5 = _mean_every(tr, reno_tot, 5.0)
    n = min(len(t0), len(reno5))
    t0, q23, reno5 = t0[:n], q23[:n], reno5[:n]
    before = reno5[(t0 >= 50) & (t0 < FAST_START)].mean()
    lost = np.nonzero((t0 >= FAST_START) & (q23 > 20) & (reno5 < 0.5 * before))[0]
    t_lost = float(t0[lost[0]] + 5.0) if lost.size else None
    fr_tot = {}
    for g in ("fast-123", "fast-234"):
        sg = r["group"] == packet.group_index(s, g)
        fr_tot[g] = float(r["rate_pps"][sg & (r["time_s"] >= FAST_START)].mean() * 2 / 1e3)
    tail = t0 >= max(FAST_START, t0[-1] - 300)
    return {"alpha": alpha, "seed": seed, "update_interval_s": update, "gamma": gamma, "noise": noise,
            "red_weight": red_weight, "max_p_scale": max_p_scale, "first": first,
            "duration_s": duration, "reno_before": float(before),
            "hold_s": None if t_lost is None else t_lost - FAST_START,
            "last300_queues": {k: float(v[:n][tail].mean()) for k, v in qs.items()},
            "last300_reno_total": float(reno5[tail].mean()), "fast_total_mean": fr_tot, "wall_s": fr.wall_s}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--alpha", type=float, nargs="+", default=[8.2, 20, 50])
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--update-interval", type=float, nargs="+", default=[0.02])
    ap.add_argument("--gamma", type=float, nargs="+", default=[0.5])
    ap.add_argument("--duration", type=float, default=900.0)
    ap.add_argument("--dt", type=float, default=0.5)
    ap.add_argument("--no-noise", action="store_true")
    ap.add_argument("--red-weight", type=float, default=None,
                    help="RED EWMA weight on every link instead of the file's 0.002")
    ap.add_argument("--max-p-scale", type=float, default=1.0,
                    help="RED max_p × this on every link (1/3: the mean marking rate of ns-2's default "
                         "wait_ = true, ≈ 2/3·p_b, instead of the FJ93 count rule's ≈ 2·p_b)")
    ap.add_argument("--first", default="reno", choices=["reno", "fast"])
    ap.add_argument("--marks-window", type=float, nargs=2, default=None, metavar=("T0", "T1"),
                    help="instead: marks per link and Reno's marks per packet over [T0, T1]")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    for alpha, u, g, seed in itertools.product(a.alpha, a.update_interval, a.gamma, a.seeds):
        if a.marks_window:
            m = marks(alpha, seed, u, g, a.duration, not a.no_noise, a.red_weight, tuple(a.marks_window))
            print(json.dumps(m) if a.json else
                  f"α={alpha:g} seed={seed} {a.marks_window}: link marks {m['link_marks']}, link load "
                  f"{' / '.join(f'{x:.2f}' for x in m['link_load_pkts_per_ms'])} packets/ms, Reno marks/sent "
                  f"{m['reno_marks_per_sent']:.2e}, Reno window reductions {m['reno_loss_events']}", flush=True)
            continue
        res = one(alpha, seed, u, g, a.duration, a.dt, not a.no_noise, a.red_weight, a.max_p_scale, a.first)
        if a.json:
            print(json.dumps(res), flush=True)
        else:
            hold = f">{a.duration - FAST_START:.0f}" if res["hold_s"] is None else f"{res['hold_s']:.0f}"
            qq = res["last300_queues"]
            print(f"{a.first}-first α={alpha:g} update={u:g}s γ={g:g} red_weight={a.red_weight} "
                  f"max_p×{a.max_p_scale:g} seed={seed}: hold {hold} s; last 300 s queues "
                  f"{qq['l12']:.0f}/{qq['l23']:.0f}/{qq['l34']:.0f}, Reno total {res['last300_reno_total']:.2f}, "
                  f"FAST total {sum(res['fast_total_mean'].values()):.2f} packets/ms ({res['wall_s']:.0f} s wall)", flush=True)


if __name__ == "__main__":
    main()
