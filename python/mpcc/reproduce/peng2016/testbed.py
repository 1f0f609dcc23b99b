"""Peng, Walid, Hwang, Low (2016), Section V (Dummynet experiments) on the real kernel (:mod:`mpcc.testbed`):
Tables III–V and Fig. 3 with kernel MPTCP, the BPF congestion controls and linkem.

The paper repeats each experiment 20 times for 100 s (Tables III, IV) or 200 s (Table V). The
defaults here are shorter (stated in each function and in the returned ``"setup"``); pass
``runs``/``duration_s`` for longer runs. Every function returns plain dicts the coordinator puts
beside paper / fluid / sim:

  table3() -> {algorithm: {"mp": (mean, ci95), "sp": (mean, ci95), "mp_per_run": [...], "sp_per_run": [...]}}
                                                                         Mb/s per flow
  table4() -> {algorithm: {"mp": (mean, ci95)}}                          Mb/s
  table5() -> {algorithm: {"convergence_s": float, "sp_total_mbps": float}}
  fig3(a)  -> {"ds": D_s of eq. (13), "aggregate_cv": ..., ...}       window oscillation
  reproduce() -> the dict ``mpcc reproduce peng2016 --engine testbed`` consumes (printed
                 beside paper / fluid / sim by :class:`mpcc.reproduce.table.Reproduction`)

Algorithms are the paper's columns: ewtcp, semicoupled ("semi."), lia ("max"), balia, coupled,
olia, which runs as ``olia(per_ack=1)``, mptcp_olia.c's window update that the paper's hosts
ran (:func:`.paper.paper_algorithm`). ci95 is the 95 % Student-t half-width over runs (over
flows when runs = 1).
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import replace
from pathlib import Path
from typing import Iterable

import numpy as np

from ... import algorithms
from ... import scenario as scen
from ...results import ci95
from ...testbed import engine
from ..common import SCENARIO_DIR, failed, kernel_cells  # noqa: F401  (failed: part of this API)
from .paper import PENG_COLUMNS as ALGORITHMS
from .paper import paper_algorithm

SCENARIOS = SCENARIO_DIR / "peng2016"


_cells = kernel_cells   # one kernel cell per algorithm; failed(cell): the reason a cell failed


def _algos(algorithms: Iterable[str] | None) -> list[str]:
    return list(algorithms) if algorithms else list(ALGORITHMS)


def _kernel_algorithm(name: str) -> str:
    """The paper's column ``name`` as the testbed's ``--algorithm`` (``olia(per_ack=1.0)``)."""
    return algorithms.get(paper_algorithm(name)).describe()


def _settings(s, **kw) -> engine.Settings:
    return engine.settings_from(s, **kw)


def _mean_ci(per_run: list[float], per_flow: list[float]) -> tuple[float, float | None]:
    """Mean over runs; 95 % half-width over runs (over flows when there is one run; None with
    fewer than two finite values)."""
    xs = [x for x in (per_run if len(per_run) > 1 else per_flow) if not math.isnan(x)]
    return float(np.mean(per_run)), ci95(xs) if len(xs) > 1 else None


def table3(algorithms=None, runs: int = 3, duration_s: float = 40.0, warmup_s: float = 10.0,
           out: Path | None = None, progress: bool = True, bed: engine.Testbed | None = None) -> dict:
    """TCP friendliness, equal RTTs: 30 multipath + 30 Reno flows, c1 = c2 = 60 Mb/s, 5 ms.
    Default: 3 runs × 40 s (10 s warm-up) per algorithm (paper: 20 × 100 s)."""
    s0 = scen.load(SCENARIOS / "table3.toml")

    def measure(a):
        r, sms = engine.run_detailed(s0, _settings(s0, runs=runs, duration_s=duration_s, warmup_s=warmup_s, algorithm=_kernel_algorithm(a)),
                                     _sub(out, f"table3-{a}"), progress, bed=tb)
        cell = {g: _mean_ci(r.groups[g].extra["rate_per_run_mbps"], [x for sm in sms for x in sm.flow_rate[gi]])
                for gi, g in enumerate(("mp", "sp"))}
        return {**cell, **{f"{g}_per_run": r.groups[g].extra["rate_per_run_mbps"] for g in ("mp", "sp")},
                "health": r.extra.get("health")}

    with _session(bed) as tb:
        res = _cells(_algos(algorithms), measure)
    res["setup"] = {"runs": runs, "duration_s": duration_s, "warmup_s": warmup_s}
    return res


def table4(algorithms=None, runs: int = 3, duration_s: float = 30.0, warmup_s: float = 5.0,
           out: Path | None = None, progress: bool = True, bed: engine.Testbed | None = None) -> dict:
    """WiFi (8 Mb/s, 10 ms) + 3G (2 Mb/s, 100 ms), one multipath flow. Default 3 runs × 30 s
    (5 s warm-up) per algorithm (paper: 20 × 100 s). Also returns per-path rates and how many
    runs used the 3G path (≥ 0.5 Mb/s) — the paper saw OLIA sometimes leave it unused."""
    s0 = scen.load(SCENARIOS / "table4.toml")

    def measure(a):
        r, sms = engine.run_detailed(s0, _settings(s0, runs=runs, duration_s=duration_s, warmup_s=warmup_s, algorithm=_kernel_algorithm(a)),
                                     _sub(out, f"table4-{a}"), progress, bed=tb)
        g = r.groups["mp"]
        return {"mp": _mean_ci(g.extra["rate_per_run_mbps"], [x for sm in sms for x in sm.flow_rate[0]]),
                "path_rate_mbps": g.path_rate_mbps,
                "runs_using_3g": sum(1 for sm in sms if np.mean([p[1] for p in sm.path_rate[0]]) >= 0.5),
                "health": r.extra.get("health")}

    with _session(bed) as tb:
        res = _cells(_algos(algorithms), measure)
    res["setup"] = {"runs": runs, "duration_s": duration_s, "warmup_s": warmup_s}
    return res


def table5(algorithms=None, runs: int = 1, tail_s: float = 120.0, out: Path | None = None,
           progress: bool = True, sp_s: tuple[float, float] = (40.0, 80.0),
           reference_s: tuple[float, float] = (10.0, 40.0), bed: engine.Testbed | None = None) -> dict:
    """Responsiveness: one multipath flow on two 20 Mb/s, 10 ms links; 5 Reno flows on link 2
    during ``sp_s`` (the paper: 40–80 s). Measured: total Reno throughput while they run, and the
    convergence time — the first time after they leave that the multipath flow's window on path 2
    reaches its average over ``reference_s`` (paper footnote 2; "e.g. 60"). The run ends ``tail_s``
    after they leave (default 120 s: the paper's 200 s run): a convergence slower than that is
    reported as NaN (≥ tail_s). Also returns a trace of that window (every 0.1 s)."""
    s0 = scen.load(SCENARIOS / "table5.toml")
    end = sp_s[1] + tail_s
    s0 = replace(s0, duration_s=end, groups=tuple(
        replace(g, start_s=sp_s[0], stop_s=sp_s[1]) if g.name == "sp" else replace(g, stop_s=min(g.stop_s, end))
        for g in s0.groups))

    def measure(a):
        r, sms = engine.run_detailed(s0, _settings(s0, runs=runs, warmup_s=0.0, algorithm=_kernel_algorithm(a)),
                                     _sub(out, f"table5-{a}"), progress, bed=tb)
        conv = [convergence_time(sm, before=reference_s, after=sp_s[1]) for sm in sms]
        return {"convergence_s": float(np.nanmax(conv)) if not all(math.isnan(c) for c in conv) else math.nan,
                "convergence_per_run_s": conv,
                "sp_total_mbps": r.groups["sp"].rate_mbps * r.groups["sp"].count,
                "trace": route_trace(sms[0], route=1, step_s=0.1), "health": r.extra.get("health")}

    with _session(bed) as tb:
        res = _cells(_algos(algorithms), measure)
    res["setup"] = {"runs": runs, "duration_s": end, "sp_s": list(sp_s), "reference_s": list(reference_s),
                    "note": "convergence: longest over runs, as the paper"}
    return res


def route_trace(sm: engine.Summary, route: int, step_s: float, group: str = "mp", flow: int = 0) -> dict:
    """``{"time_s": [...], "cwnd": [[...]]}``: the window of one route, one sample per ``step_s``."""
    sub = sm.subflows
    t = np.asarray(sub["time_s"], dtype=float)
    m = (np.asarray(sub["group"]) == group) & (np.asarray(sub["flow"]) == flow) & (np.asarray(sub["route"]) == route)
    t, w = t[m], np.asarray(sub["cwnd_pkts"], dtype=float)[m]
    if not len(t):
        return {"time_s": [], "cwnd": [[]]}
    grid = np.arange(t[0], t[-1], step_s)
    return {"time_s": grid.round(3).tolist(), "cwnd": [np.interp(grid, t, w).round(2).tolist()]}


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
         out: Path | None = None, progress: bool = True, seed: int = 1, bed: engine.Testbed | None = None) -> dict:
    """Window oscillation on one 10 Mb/s link: a multipath flow with two subflows
    (``algorithm``; "reno" = the single-path Reno flow of fig3-reno). Sampled every 10 ms.
    Returns the empirical D_s of eq. (13) — the mean relative decrease of the aggregate window
    per loss event (:func:`oscillation_ds`; 0.5 for Reno) — and the mean, standard deviation
    and coefficient of variation of the aggregate window after the warm-up."""
    reno = algorithm == "reno"
    s0 = scen.load(SCENARIOS / ("fig3-reno.toml" if reno else "fig3-multipath.toml"))
    kw = {} if reno else {"algorithm": algorithm}
    with _session(bed) as tb:
        r, sms = engine.run_detailed(s0, _settings(s0, duration_s=duration_s, warmup_s=warmup_s, sample_ms=10,
                                                  seed=seed, **kw), _sub(out, f"fig3-{algorithm}"), progress, bed=tb)
    routes, times, cw, st, rt, srtt = window_arrays(sms[0].subflows, warmup_s)
    agg = cw.sum(axis=0)
    g = r.groups[s0.groups[0].name]
    return {"algorithm": g.algorithm, "ds": oscillation_ds(cw, st, rt, srtt, times), "aggregate_mean": float(agg.mean()),
            "aggregate_std": float(agg.std()), "aggregate_cv": float(agg.std() / agg.mean()),
            "routes": {int(k): {"mean": float(cw[i].mean()), "std": float(cw[i].std())} for i, k in enumerate(routes)},
            "rate_mbps": g.rate_mbps, "duration_s": duration_s, "warmup_s": warmup_s,
            "trace": {"time_s": times.tolist(), "cwnd": cw.tolist()}, "health": r.extra.get("health")}


def window_arrays(sub: dict, warmup_s: float) -> tuple[np.ndarray, ...]:
    """One connection's subflow samples after ``warmup_s`` on a common time grid (the sampler reads
    every subflow at the same instant): the routes, times, and arrays [route, sample] of cwnd, ssthresh
    (interpolated), the retransmission counter and the smoothed RTT (the last sample at or
    before each time: a counter is not interpolated)."""
    t = np.round(np.asarray(sub["time_s"], dtype=float), 3)
    keep = t >= warmup_s
    route = np.asarray(sub["route"])[keep]
    t = t[keep]
    cols = {k: np.asarray(sub[k], dtype=float)[keep] for k in ("cwnd_pkts", "ssthresh_pkts", "retrans", "srtt_s")}
    routes = sorted(set(route))
    times = np.unique(t)

    def on_grid(k, col, step):
        tk, vk = t[route == k], cols[col][route == k]
        if not step:
            return np.interp(times, tk, vk)
        return vk[np.clip(np.searchsorted(tk, times, side="right") - 1, 0, len(tk) - 1)]

    return (routes, times, *(np.array([on_grid(k, col, step) for k in routes])
                     for col, step in (("cwnd_pkts", False), ("ssthresh_pkts", False), ("retrans", True),
                                       ("srtt_s", True))))


def oscillation_ds(cwnd: np.ndarray, ssthresh: np.ndarray, retrans: np.ndarray | None = None,
                   srtt_s: np.ndarray | None = None, time_s: np.ndarray | None = None) -> float:
    """Empirical D_s (Peng et al. eq. 13 with equal RTTs): over loss events, the mean of
    Σ_r D_r / Σ_r w_r, where D_r = w_r (previous sample) − the new ssthresh (the kernel calls
    ssthresh() once per loss event: ssthresh = w_r − D_r) and Σ_r w_r is the aggregate window at
    the previous sample. A loss event on route r is a sample at which its ssthresh changes to below
    the previous window — or, with ``retrans`` (the retransmission counter), ``srtt_s`` and
    ``time_s``, at which the counter grows after two round-trip times without retransmissions,
    the new ssthresh again below the previous window: a Reno flow alone on a link keeps hitting
    the same window, so its ssthresh is often set to the value it already has. (Losses within
    one RTT are one loss event, and its recovery retransmits for up to one more RTT.) ``cwnd``, ``ssthresh``, ``retrans``, ``srtt_s``: arrays [route, sample]
    on the common time grid ``time_s``."""
    ds = []
    total = cwnd.sum(axis=0)
    by_retrans = retrans is not None and srtt_s is not None and time_s is not None
    last_retrans = np.full(cwnd.shape[0], -np.inf)
    for i in range(1, cwnd.shape[1]):
        dec = 0.0
        for r in range(cwnd.shape[0]):
            below = ssthresh[r, i] < cwnd[r, i - 1]
            event = ssthresh[r, i] != ssthresh[r, i - 1] and below
            if by_retrans and retrans[r, i] > retrans[r, i - 1]:
                event = event or (below and time_s[i] - last_retrans[r] > 2 * srtt_s[r, i])
                last_retrans[r] = time_s[i]
            if event:
                dec += cwnd[r, i - 1] - ssthresh[r, i]
        if dec > 0 and total[i - 1] > 0:
            ds.append(dec / total[i - 1])
    return float(np.mean(ds)) if ds else math.nan


def reproduce(algorithms=ALGORITHMS, budget=None, seed: int = 1, out: Path | None = None,
              progress: bool = True) -> dict:
    """Everything ``mpcc reproduce peng2016 --engine testbed`` shows, in its format:
    table3/table4 {algo: {"mp"/"sp": (mean, ci95)}}, table5 {algo: {"convergence_s": (longest,
    None) or (None, None), "sp_mbps": (value, None)}}, fig3 {algo | "reno (single path)":
    {"oscillation": (D_s, None)}}, and "traces" (Fig. 3 and Table V windows). Lengths: ``budget``
    (:mod:`.budget`, default :data:`~.budget.QUICK`)."""
    from .budget import QUICK

    b = budget or QUICK
    algorithms = [a for a in algorithms]
    with engine.Testbed() as bed:   # one network per table, every program loaded once
        t3 = table3(algorithms, runs=b.table3.runs, duration_s=b.table3.duration_s, warmup_s=b.table3.warmup_s,
                    out=out, progress=progress, bed=bed)
        t4 = table4(algorithms, runs=b.table4.runs, duration_s=b.table4.duration_s, warmup_s=b.table4.warmup_s,
                    out=out, progress=progress, bed=bed)
        t5 = table5(algorithms, runs=b.table5.runs, tail_s=b.table5.tail_s, sp_s=b.table5.sp_s,
                    reference_s=b.table5.reference_s, out=out, progress=progress, bed=bed)
        f3 = _cells([*algorithms, "reno"], lambda a: fig3(a, duration_s=b.fig3.duration_s, warmup_s=b.fig3.warmup_s,
                                                          out=out, progress=progress, seed=seed, bed=bed))
    conv = lambda v: (None if math.isnan(v) else v, None)  # noqa: E731
    label = lambda a: "reno (single path)" if a == "reno" else a  # noqa: E731
    ok = lambda cells: [a for a in cells if a != "setup" and not failed(cells[a])]  # noqa: E731
    keep = lambda cells, fn: {a: ({"failed": failed(c)} if failed(c) else fn(c))  # noqa: E731
                              for a, c in cells.items() if a != "setup"}
    return {
        "table3": keep(t3, lambda c: {"mp": c["mp"], "sp": c["sp"]}),
        "table4": keep(t4, lambda c: {"mp": c["mp"]}),
        "table5": keep(t5, lambda c: {"convergence_s": conv(c["convergence_s"]), "sp_mbps": (c["sp_total_mbps"], None)}),
        "fig3": {label(a): v for a, v in keep(f3, lambda c: {"oscillation": (c["ds"], None)}).items()},
        "traces": {"fig3": {label(a): f3[a]["trace"] for a in ok(f3)},
                   "table5": {a: t5[a]["trace"] for a in ok(t5)}},
        "runs": b.table3.runs,
        # each kernel cell's health (mpcc.testbed.health.aggregate; None for a failed cell)
        "health": {t: {label(a): (c.get("health") if isinstance(c, dict) else None)
                       for a, c in cells.items() if a != "setup"}
                   for t, cells in (("table3", t3), ("table4", t4), ("table5", t5), ("fig3", f3))},
        "notes": (f"Linux {__import__('os').uname().release} MPTCP + BPF struct_ops, linkem ({b.name} budget); "
                  f"Tables III/IV: {b.table3.runs}/{b.table4.runs} runs × {b.table3.duration_s:g}/"
                  f"{b.table4.duration_s:g} s ({b.table3.warmup_s:g}/{b.table4.warmup_s:g} s warm-up); Table V: "
                  f"{b.table5.runs} run(s), {b.table5.duration_s:g} s, SP flows {b.table5.sp_s[0]:g}–{b.table5.sp_s[1]:g} s; "
                  f"Fig. 3: {b.fig3.duration_s:g} s, D_s from ssthresh changes sampled every 10 ms; 95 % CIs over "
                  f"runs (over flows for a single run); the runs of a table share one network, run back to back"),
        "detail": {"table3": t3, "table4": t4, "table5": t5, "fig3": f3},
    }


@contextlib.contextmanager
def _session(bed: engine.Testbed | None):
    """``bed``, or a :class:`~mpcc.testbed.engine.Testbed` for this table alone: its cells share
    one network and the loaded programs."""
    if bed is not None:
        yield bed
        return
    with engine.Testbed() as tb:
        yield tb


def _sub(out: Path | None, name: str) -> Path | None:
    return Path(out) / name if out else None
