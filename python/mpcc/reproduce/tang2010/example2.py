"""Examples 2a/2b of Tang et al. at packet level (Fig. 4 network, RED with ECN marking): FAST first
or Reno first, without (2a) and with (2b) Algorithm 2; the regime (which links hold the queues)
read off the mean queues."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .packet import EXAMPLE2_MEASURE, mean_over_runs, plot_packet, run_packet_jobs
from .paper import PAPER_EXAMPLE2

def example2(scenario_dir: str | Path, *, runs: int = 5, seed: int = 1, duration_s: float | None = None,
             measure: dict | None = None, workers: int = 1, progress: bool = False,
             out_dir: str | Path | None = None) -> dict:
    """Examples 2a/2b (Fig. 4 network, RED with ECN marking): 8 Reno flows on l12–l23–l34, 2 FAST
    flows on l12–l23 and 2 on l23–l34, FAST first or Reno first (the other set starts at 100 s);
    2b with Algorithm 2 (w = 1820 s). Per configuration: mean per-flow rate of Reno and FAST
    (packets/ms), mean α, mean queues (bottlenecks = links with a mean queue ≥ 10 packets)."""
    measure = measure or EXAMPLE2_MEASURE
    names = list(PAPER_EXAMPLE2)
    jobs = [(str(Path(scenario_dir) / f"{name}.toml"), duration_s, seed + k, measure[name[:9]], 300.0)
            for name in names for k in range(runs)]
    res = run_packet_jobs(jobs, workers, progress, "Example 2 runs")
    out = {"runs": runs, "rows": {}}
    for name in names:
        rs = [r for r in res if r["name"] == name]
        fast = [0.5 * (r["rates"]["fast-123"] + r["rates"]["fast-234"]) for r in rs]
        q = {l: float(np.mean([r["mean_queue"][l] for r in rs])) for l in ("l12", "l23", "l34")}
        util = {l: float(np.mean([r["utilization"][l] for r in rs])) for l in q}
        row = {"paper": PAPER_EXAMPLE2[name], "measure_s": rs[0]["measure_s"],
               "reno": mean_over_runs(rs, "rates", "reno"), "fast": float(np.mean(fast)),
               "reno_per_seed": [r["rates"]["reno"] for r in rs], "fast_per_seed": fast,
               "mean_queue": q, "utilization": util, "bottlenecks": [l for l, v in util.items() if v >= 0.95],
               "switches": [_switches(r) for r in rs], "reno_regime_fraction": float(np.mean(
                   [_reno_regime_fraction(r) for r in rs])),
               "mark_rate": {l: float(np.mean([r["mark_or_drop_rate"][l] for r in rs])) for l in q},
               "wall_s_per_run": float(np.mean([r["wall_s"] for r in rs]))}
        al = [0.5 * (r["alpha"]["fast-123"] + r["alpha"]["fast-234"]) for r in rs if "fast-123" in r["alpha"]]
        if al:
            row["alpha"] = float(np.mean(al))
            row["alg2_q_ms"] = 1e3 * mean_over_runs(rs, "alg2_q_s", "fast-123")
            row["alg2_l"] = mean_over_runs(rs, "alg2_l", "fast-123")
        out["rows"][name] = row
    if out_dir is not None:
        out["plots"] = plot_packet(Path(out_dir), res, names, "tang2010_example2",
                                    {"reno": "Reno", "fast-123": "FAST 1-2-3", "fast-234": "FAST 2-3-4"})
    return out


# Regimes of the Fig. 4 network, from the 300-s mean queues: "reno" = Reno holds queues at l12 and
# l34 (the equilibrium of Theorem 11 / Reno-first), "fast" = FAST holds the queue at l23.
REGIME_QUEUE_PKTS = 100.0


def _regimes(r):
    qs = r["series"]["queues"]
    t = np.asarray(qs["t"])
    reno = (np.asarray(qs["l12"]) >= REGIME_QUEUE_PKTS) & (np.asarray(qs["l34"]) >= REGIME_QUEUE_PKTS)
    fast = np.asarray(qs["l23"]) >= 10.0
    return t, np.where(reno, "reno", np.where(fast, "fast", "none"))


def _switches(r):
    """Changes of regime (bin centre time, new regime, mean α of the FAST flows then)."""
    t, reg = _regimes(r)
    out, prev = [], None
    al = r["series"]["alpha"]
    for ti, g in zip(t, reg):
        if g == "none" or g == prev:
            continue
        if prev is not None:
            a = [float(np.asarray(v["alpha"])[np.searchsorted(v["t"], ti, side="right") - 1]) for v in al.values()]
            out.append({"t": float(ti), "to": str(g), "alpha": float(np.mean(a)) if a else None})
        prev = g
    return out


def _reno_regime_fraction(r):
    t, reg = _regimes(r)
    t0, t1 = r["measure_s"]
    sel = (t >= t0) & (t <= t1)
    return float(np.mean(reg[sel] == "reno")) if sel.any() else float("nan")
