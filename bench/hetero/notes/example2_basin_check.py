"""Example 2a Reno-first at fixed FAST α: do the l12/l34 queues dip below the fluid model's saddle
queue (≈ 3.9·α packets, bench/hetero/RESULTS.md "Basin of the Reno state") shortly before FAST takes l23,
and stay above it at α = 8.2? Used for bench/hetero/RESULTS.md (Example 2 in the analytic model).

Each (α, seed) runs Reno-first Example 2a (noise on, FAST α fixed, FAST starts at 100 s) with the
instantaneous queue and the per-flow rates sampled every --dt s (default 2 ms). The simulator does not
export RED's EWMA queue; "ewma" below is the samples filtered with the EWMA's time constant
1/(weight · capacity) (55 ms on l12/l34, 36 ms on l23), an approximation of RED's average.

Switch: t_switch = first time after 105 s at which the l23 queue (1 s mean) exceeds 20 packets and the
8 Reno flows' total rate (1 s mean) is below half its 50–100 s mean; t_onset = the last time before
that at which the l23 1 s mean was below 5 packets (l23 still holding "a few packets"). Reported for
"pre5s" = [t_onset − 5 s, t_onset] and "reno_state" = [120 s, t_onset − 5 s] (the whole run from 120 s
without a switch): min instantaneous / min ewma / min 1 s mean of l12 and l34, the instantaneous l23
queue at the ewma minimum, the number, longest and total duration of ewma excursions below 3.9·α,
max l23 (instantaneous, 1 s mean), mean total FAST (4 flows) and Reno (8 flows) rates in packets/ms.

    nice -n 19 .venv/bin/python bench/hetero/notes/example2_basin_check.py --alpha 8.2 20 30 50 --seeds 1 2 3

(≈ 3–6 s wall per run; durations 1200 s at α < 20, 900 s at 20, 300 s above unless --duration.)
Traces are cached in --cache (default /tmp/example2_basin) as .npz and reused; --json prints the
full per-run results instead of the summary table.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import numpy as np

from mpcc import algorithms
from mpcc import scenario as sc
from mpcc.hetero import packet
from mpcc.reproduce.tang2010.packet import stretch as _stretch

ROOT = Path(__file__).resolve().parents[3]
LINKS = ("l12", "l23", "l34")
FAST_START = 100.0


def simulate(alpha: float, seed: int, duration: float, dt: float, path: Path) -> None:
    s = _stretch(sc.load(ROOT / "scenarios/tang2010/example2a-reno-first.toml"), duration)
    fast = algorithms.get({"name": "fast", "alpha": alpha})
    s = s.with_changes(groups=tuple(dataclasses.replace(g, algorithm=fast) if g.name.startswith("fast") else g
                                    for g in s.groups))
    fr = packet.run(s, seed=seed, measure=(duration / 2, duration), sample_interval_s=dt)
    q = fr.queues
    t = q["time_s"][q["link"] == 0]
    out = {"t": t, "dt": dt, "wall": fr.wall_s}
    for i, name in enumerate(LINKS):
        out[name] = q["queue_pkts"][q["link"] == i]
        lk = s.links[i]
        out[f"tau_{name}"] = 1.0 / (lk.red.weight * lk.capacity_mbps * 1e6 / (8.0 * s.packet_bytes))
    r = fr.rates
    for g in ("reno", "fast-123", "fast-234"):
        gi = packet.group_index(s, g)
        sel = r["group"] == gi
        idx = np.searchsorted(t, r["time_s"][sel])
        tot = np.bincount(np.clip(idx, 0, t.size - 1), weights=r["rate_pps"][sel], minlength=t.size)
        out[f"rate_{g}"] = tot / 1e3  # packets/ms, group total
    np.savez_compressed(path, **out)


def ewma(x: np.ndarray, dt: float, tau: float) -> np.ndarray:
    a = 1.0 - np.exp(-dt / tau)
    y = np.empty_like(x)
    acc = x[0]
    for k in range(x.size):
        acc += a * (x[k] - acc)
        y[k] = acc
    return y


def smooth(x: np.ndarray, n: int) -> np.ndarray:
    """trailing mean over n samples"""
    c = np.concatenate(([0.0], np.cumsum(x)))
    out = np.empty_like(x, dtype=float)
    k = np.arange(x.size)
    lo = np.maximum(k + 1 - n, 0)
    out[:] = (c[k + 1] - c[lo]) / (k + 1 - lo)
    return out


def _dips(x: np.ndarray, thr: float, dt: float) -> tuple[int, float, float]:
    """(number of excursions of x below thr, longest in s, total time in s)"""
    e = np.flatnonzero(np.diff(np.r_[0, (x < thr).astype(int), 0]))
    d = (e[1::2] - e[::2]) * dt
    return int(d.size), float(d.max()) if d.size else 0.0, float(d.sum())


def analyse(path: Path, alpha: float, seed: int) -> dict:
    d = np.load(path)
    t, dt = d["t"], float(d["dt"])
    n1 = max(int(round(1.0 / dt)), 1)
    q = {l: d[l].astype(float) for l in LINKS}
    avg = {l: ewma(q[l], dt, float(d[f"tau_{l}"])) for l in LINKS}
    mean1 = {l: smooth(q[l], n1) for l in LINKS}
    reno_1s = smooth(d["rate_reno"], n1)
    fast_1s = smooth(d["rate_fast-123"] + d["rate_fast-234"], n1)
    thr = 3.9 * alpha
    reno_ref = np.mean(d["rate_reno"][(t >= FAST_START - 50) & (t < FAST_START)])
    cand = np.flatnonzero((t >= FAST_START + 5.0) & (mean1["l23"] > 20) & (reno_1s < 0.5 * reno_ref))
    res = {"alpha": alpha, "seed": seed, "saddle_3.9a": thr, "dt": dt, "duration": float(t[-1])}
    if cand.size:
        ks = cand[0]
        below = np.flatnonzero((mean1["l23"][:ks] < 5) & (t[:ks] >= FAST_START))
        k_on = below[-1] if below.size else ks
        tail = t >= 0.8 * t[-1]
        res.update(t_switch=float(t[ks]), t_onset=float(t[k_on]),
                   end_state_l12_l23_l34=[round(float(q[l][tail].mean()), 1) for l in LINKS])
        periods = {"pre5s": (float(t[k_on]) - 5.0, float(t[k_on])),
                   "reno_state": (FAST_START + 20.0, float(t[k_on]) - 5.0)}
    else:
        res.update(t_switch=None, t_onset=None)
        periods = {"reno_state": (FAST_START + 20.0, float(t[-1]))}
    for name, (lo, hi) in periods.items():
        sel = (t >= max(lo, FAST_START)) & (t <= hi)
        if not sel.any():
            continue
        idx = np.flatnonzero(sel)
        row = {"from": lo, "to": hi, "fast_total_mean": float(fast_1s[sel].mean()),
               "reno_total_mean": float(d["rate_reno"][sel].mean()),
               "l23_inst_max": float(q["l23"][sel].max()), "l23_1s_max": float(mean1["l23"][sel].max())}
        for l in ("l12", "l34"):
            ka = idx[np.argmin(avg[l][sel])]
            n, longest, total = _dips(avg[l][sel], thr, dt)
            row[l] = {"min_inst": float(q[l][sel].min()), "min_ewma": float(avg[l][ka]),
                      "min_1s_mean": float(mean1[l][sel].min()), "l23_inst_at_min_ewma": float(q["l23"][ka]),
                      "ewma_dips_below_3.9a": n, "longest_dip_s": longest, "time_below_s": total}
        res[name] = row
    return res


def _row(r: dict) -> str:
    w = r.get("pre5s") or r["reno_state"]
    f = lambda l, k: f"{w[l][k]:.0f}"
    return (f"| {r['alpha']:g} | {r['seed']} | {r['saddle_3.9a']:.0f} | "
            f"{'—' if r['t_onset'] is None else format(r['t_onset'], '.1f')} | "
            f"{'pre5s' if 'pre5s' in r else 'reno_state'} | {f('l12', 'min_inst')} / {f('l34', 'min_inst')} | "
            f"{f('l12', 'min_ewma')} / {f('l34', 'min_ewma')} | {f('l12', 'min_1s_mean')} / {f('l34', 'min_1s_mean')} | "
            f"{w['l12']['ewma_dips_below_3.9a']} / {w['l34']['ewma_dips_below_3.9a']} "
            f"(≤ {max(w['l12']['longest_dip_s'], w['l34']['longest_dip_s']):.2f} s) | "
            f"{w['l23_inst_max']:.0f} / {w['l23_1s_max']:.1f} | {w['fast_total_mean']:.2f} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--alpha", type=float, nargs="+", required=True)
    ap.add_argument("--seeds", type=int, nargs="+", default=[1])
    ap.add_argument("--duration", type=float, default=None)
    ap.add_argument("--dt", type=float, default=0.002)
    ap.add_argument("--cache", default="/tmp/example2_basin")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    cache = Path(a.cache)
    cache.mkdir(parents=True, exist_ok=True)
    if not a.json:
        print("| α | seed | 3.9α | t_onset (s) | window | min inst l12/l34 | min ewma l12/l34 | min 1 s mean l12/l34 "
              "| ewma dips < 3.9α l12/l34 | max l23 inst / 1 s mean | FAST total (pkt/ms) |")
        print("|" + " --- |" * 11)
    for alpha in a.alpha:
        duration = a.duration or (1200.0 if alpha < 20 else 900.0 if alpha < 30 else 300.0)
        for seed in a.seeds:
            path = cache / f"a{alpha:g}_s{seed}_d{duration:g}_dt{a.dt:g}.npz"
            if not path.exists():
                simulate(alpha, seed, duration, a.dt, path)
            r = analyse(path, alpha, seed)
            print(json.dumps(r, indent=1) if a.json else _row(r), flush=True)


if __name__ == "__main__":
    main()
