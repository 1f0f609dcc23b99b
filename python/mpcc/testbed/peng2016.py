"""Peng, Walid, Hwang, Low (2016), Section V (Dummynet experiments) on the real kernel:
Tables III–V and Fig. 3 with kernel MPTCP, the BPF congestion controls and linkem.

The paper repeats each experiment 20 times for 100 s (Tables III, IV) or 200 s (Table V). The
defaults here are shorter (stated in each function and in the returned ``"setup"``); pass
``runs``/``duration_s`` for longer runs. Every function returns plain dicts the coordinator puts
beside paper / fluid / sim:

  table3() -> {algorithm: {"mp": (mean, ci95), "sp": (mean, ci95)}}      Mb/s per flow
  table4() -> {algorithm: {"mp": (mean, ci95)}}                          Mb/s
  table5() -> {algorithm: {"convergence_s": float, "sp_total_mbps": float}}
  fig3()   -> {"multipath": {...}, "reno": {...}}                       window oscillation

Algorithms are the paper's columns: ewtcp, semicoupled ("semi."), lia ("max"), balia, coupled,
olia. ci95 is the 95 % Student-t half-width over runs (over flows when runs = 1).
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Iterable

import numpy as np

from .. import scenario as scen
from . import engine

SCENARIOS = Path(__file__).resolve().parents[3] / "scenarios" / "peng2016"
ALGORITHMS = ("ewtcp", "semicoupled", "lia", "balia", "coupled", "olia")

#: Values printed in the paper (002: Tables III–V), for side-by-side tables.
PAPER = {
    "table3": {"ewtcp": {"mp": (2.75, 0.005), "sp": (0.951, 0.005)},
               "semicoupled": {"mp": (2.65, 0.004), "sp": (1.07, 0.007)},
               "lia": {"mp": (2.60, 0.005), "sp": (1.13, 0.008)},
               "balia": {"mp": (2.52, 0.006), "sp": (1.22, 0.006)},
               "coupled": {"mp": (2.44, 0.005), "sp": (1.29, 0.005)},
               "olia": {"mp": (2.61, 0.004), "sp": (1.12, 0.004)}},
    "table4": {"ewtcp": {"mp": (9.26, 0.008)}, "semicoupled": {"mp": (9.27, 0.006)},
               "lia": {"mp": (9.26, 0.006)}, "balia": {"mp": (9.27, 0.01)},
               "coupled": {"mp": (9.28, 0.01)}, "olia": {"mp": (9.19, 0.09)}},
    "table5": {"ewtcp": {"convergence_s": 3.25, "sp_total_mbps": 13.89},
               "semicoupled": {"convergence_s": 7.46, "sp_total_mbps": 15.35},
               "lia": {"convergence_s": 17.75, "sp_total_mbps": 15.8},
               "balia": {"convergence_s": 14.73, "sp_total_mbps": 16.28},
               "coupled": {"convergence_s": 94.36, "sp_total_mbps": 16.64},
               "olia": {"convergence_s": 58.5, "sp_total_mbps": 16.97}},
}


def _algos(algorithms: Iterable[str] | None) -> list[str]:
    return list(algorithms) if algorithms else list(ALGORITHMS)


def _settings(s, **kw) -> engine.Settings:
    return engine.settings_from(s, **kw)


def _mean_ci(per_run: list[float], per_flow: list[float]) -> tuple[float, float | None]:
    xs = per_run if len(per_run) > 1 else per_flow
    return float(np.mean(per_run)), engine._ci95(xs)


def table3(algorithms=None, runs: int = 3, duration_s: float = 40.0, warmup_s: float = 10.0,
           out: Path | None = None, progress: bool = True) -> dict:
    """TCP friendliness, equal RTTs: 30 multipath + 30 Reno flows, c1 = c2 = 60 Mb/s, 5 ms.
    Default: 3 runs × 40 s (10 s warm-up) per algorithm (paper: 20 × 100 s)."""
    s0 = scen.load(SCENARIOS / "table3.toml")
    res = {}
    for a in _algos(algorithms):
        r, sms = engine.run_detailed(s0, _settings(s0, runs=runs, duration_s=duration_s, warmup_s=warmup_s, algorithm=a),
                                     _sub(out, f"table3-{a}"), progress)
        res[a] = {g: _mean_ci(r.groups[g].extra["rate_per_run_mbps"], [x for sm in sms for x in sm.flow_rate[gi]])
                  for gi, g in enumerate(("mp", "sp"))}
    res["setup"] = {"runs": runs, "duration_s": duration_s, "warmup_s": warmup_s}
    return res


def table4(algorithms=None, runs: int = 3, duration_s: float = 30.0, warmup_s: float = 5.0,
           out: Path | None = None, progress: bool = True) -> dict:
    """WiFi (8 Mb/s, 10 ms) + 3G (2 Mb/s, 100 ms), one multipath flow. Default 3 runs × 30 s
    (5 s warm-up) per algorithm (paper: 20 × 100 s). Also returns per-path rates and how many
    runs used the 3G path (≥ 0.5 Mb/s) — the paper saw OLIA sometimes leave it unused."""
    s0 = scen.load(SCENARIOS / "table4.toml")
    res = {}
    for a in _algos(algorithms):
        r, sms = engine.run_detailed(s0, _settings(s0, runs=runs, duration_s=duration_s, warmup_s=warmup_s, algorithm=a),
                                     _sub(out, f"table4-{a}"), progress)
        g = r.groups["mp"]
        res[a] = {"mp": _mean_ci(g.extra["rate_per_run_mbps"], [x for sm in sms for x in sm.flow_rate[0]]),
                  "path_rate_mbps": g.path_rate_mbps,
                  "runs_using_3g": sum(1 for sm in sms if np.mean([p[1] for p in sm.path_rate[0]]) >= 0.5)}
    res["setup"] = {"runs": runs, "duration_s": duration_s, "warmup_s": warmup_s}
    return res


def table5(algorithms=None, runs: int = 1, tail_s: float = 60.0, out: Path | None = None,
           progress: bool = True) -> dict:
    """Responsiveness: one multipath flow on two 20 Mb/s, 10 ms links; 5 Reno flows on link 2
    from 40 to 80 s. Measured: total Reno throughput over 40–80 s, and the convergence time —
    the first time after 80 s that the multipath flow's window on path 2 reaches its average
    before 40 s (paper footnote 2; "e.g. 60"). The run ends ``tail_s`` after 80 s (default 60 s,
    paper 120 s): a convergence slower than that is reported as NaN (≥ tail_s)."""
    s0 = scen.load(SCENARIOS / "table5.toml")
    end = 80.0 + tail_s
    s0 = replace(s0, duration_s=end, groups=tuple(replace(g, stop_s=min(g.stop_s, end)) for g in s0.groups))
    res = {}
    for a in _algos(algorithms):
        r, sms = engine.run_detailed(s0, _settings(s0, runs=runs, warmup_s=0.0, algorithm=a),
                                     _sub(out, f"table5-{a}"), progress)
        conv = [convergence_time(sm, before=(10.0, 40.0), after=80.0) for sm in sms]
        res[a] = {"convergence_s": float(np.nanmax(conv)) if not all(math.isnan(c) for c in conv) else math.nan,
                  "convergence_per_run_s": conv,
                  "sp_total_mbps": r.groups["sp"].rate_mbps * r.groups["sp"].count}
    res["setup"] = {"runs": runs, "duration_s": end, "note": "convergence: longest over runs, as the paper"}
    return res


def convergence_time(sm: engine.Summary, before: tuple[float, float], after: float,
                     group: str = "mp", route: int = 1) -> float:
    """Seconds after ``after`` until the route's cwnd first reaches its mean over ``before``."""
    sub = sm.subflows
    t = np.asarray(sub["time_s"])
    m = (np.asarray(sub["group"]) == group) & (np.asarray(sub["flow"]) == 0) & (np.asarray(sub["route"]) == route)
    t, w = t[m], np.asarray(sub["cwnd_pkts"])[m]
    pre = (t >= before[0]) & (t < before[1])
    if not pre.any():
        return math.nan
    target = float(w[pre].mean())
    hit = np.nonzero((t >= after) & (w >= target))[0]
    return float(t[hit[0]] - after) if len(hit) else math.nan


def fig3(algorithm: str = "balia", duration_s: float = 30.0, warmup_s: float = 5.0,
         out: Path | None = None, progress: bool = True) -> dict:
    """Window oscillation on one 10 Mb/s link: a multipath flow with two subflows vs one Reno
    flow. Returns the mean, standard deviation and coefficient of variation of the aggregate
    window (Σ routes) and of each route's window, after the warm-up."""
    out_d = {}
    for key, name, algo in (("multipath", "fig3-multipath.toml", algorithm), ("reno", "fig3-reno.toml", None)):
        s0 = scen.load(SCENARIOS / name)
        kw = {"algorithm": algo} if algo else {}
        r, sms = engine.run_detailed(s0, _settings(s0, duration_s=duration_s, warmup_s=warmup_s, **kw),
                                     _sub(out, f"fig3-{key}"), progress)
        sub = sms[0].subflows
        t = np.asarray(sub["time_s"])
        route, w = np.asarray(sub["route"]), np.asarray(sub["cwnd_pkts"], dtype=float)
        keep = t >= warmup_s
        routes = sorted(set(route[keep]))
        # aggregate window on a common time grid: the sampler records all routes each tick
        times = np.unique(np.round(t[keep], 3))
        agg = np.zeros(len(times))
        per_route = {}
        for rr in routes:
            m = keep & (route == rr)
            per_route[int(rr)] = {"mean": float(w[m].mean()), "std": float(w[m].std())}
            agg += np.interp(times, t[m], w[m])
        out_d[key] = {"algorithm": r.groups[s0.groups[0].name].algorithm, "aggregate_mean": float(agg.mean()),
                      "aggregate_std": float(agg.std()), "aggregate_cv": float(agg.std() / agg.mean()),
                      "routes": per_route, "rate_mbps": r.groups[s0.groups[0].name].rate_mbps}
    out_d["setup"] = {"duration_s": duration_s, "warmup_s": warmup_s}
    return out_d


def _sub(out: Path | None, name: str) -> Path | None:
    return Path(out) / name if out else None


def print_tables(t3: dict | None = None, t4: dict | None = None, t5: dict | None = None, f3: dict | None = None) -> None:
    """Paper vs testbed, as rich tables."""
    from rich.console import Console
    from rich.table import Table

    c = Console()

    def fmt(v):
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return "–"
        if isinstance(v, tuple):
            return f"{v[0]:.3g} ± {v[1]:.2g}" if v[1] is not None else f"{v[0]:.3g}"
        return f"{v:.3g}"

    for title, res, key, rows in (("Table III (Mb/s per flow)", t3, "table3", ("mp", "sp")),
                                  ("Table IV (Mb/s)", t4, "table4", ("mp",)),
                                  ("Table V", t5, "table5", ("convergence_s", "sp_total_mbps"))):
        if not res:
            continue
        algos = [a for a in ALGORITHMS if a in res]
        st = res["setup"]
        t = Table(title=f"{title}: paper vs testbed ({st.get('runs', 1)} run(s) × {st.get('duration_s')} s)")
        t.add_column("")
        for a in algos:
            t.add_column("max (lia)" if a == "lia" else a, justify="right")
        for row in rows:
            t.add_row(f"{row} paper", *[fmt(PAPER[key][a][row]) for a in algos])
            t.add_row(f"{row} testbed", *[fmt(res[a][row]) for a in algos])
        c.print(t)
    if f3:
        t = Table(title="Fig. 3 window oscillation (testbed)")
        for col in ("flow", "aggregate cwnd mean", "std", "CV"):
            t.add_column(col)
        for k in ("multipath", "reno"):
            v = f3[k]
            t.add_row(f"{k} ({v['algorithm']})", fmt(v["aggregate_mean"]), fmt(v["aggregate_std"]), fmt(v["aggregate_cv"]))
        c.print(t)
