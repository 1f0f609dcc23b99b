"""Peng, Walid, Hwang, Low (ToN 2016) §V experiments on the packet-level simulator (:mod:`mpcc.sim`).

Every function runs ``runs`` independent seeds (``seed, seed+1, …``; local cores or a Dask
``scheduler``) and returns plain dicts ``{algorithm: {"mp": (mean, ci95), "sp": (mean, ci95),
…, "paper": {...}}}`` for ``mpcc reproduce peng2016 --engine sim``.

Testbed emulation. The paper's testbed is Linux hosts behind a Dummynet emulator, whose clock
ticks every 1 ms (HZ = 1000): packet timings carry up to a tick of jitter. A perfectly
deterministic simulation of N identical Reno flows on a drop-tail queue instead locks into phase
patterns (Floyd & Jacobson 1992) where some flows are starved for the whole run. We therefore
run the paper's scenarios with ``[sim] host_jitter_s = 0.001`` (uniform 0–1 ms per ACK).

Linux 3.11 hosts (``linux_3_11``). The paper's hosts run Linux 3.11.8 with MPTCP v0.88. Three
of its TCP behaviours set how fast windows grow, and :data:`LINUX_3_11` turns them on:
``delayed_ack`` (receivers acknowledge every second full-sized segment, else after the 40 ms
timer), ``per_ack_increase`` (before Linux 3.18/4.0 slow start/congestion avoidance add one
increment per ACK, not per acknowledged packet: with delayed ACKs a route gains about half a
packet per RTT) and ``slow_start_at_ssthresh`` (slow start while cwnd ≤ ssthresh: one packet back
on the first ACK after a loss). mptcp_olia.c does the last two in every kernel version, so the
paper's OLIA runs as ``olia(per_ack=1)`` (:func:`.paper.paper_algorithm`; the default ``olia`` updates per
acknowledged packet, as the BPF program's default does). Table V (responsiveness: how fast route 2's window grows back) is
run with them, :func:`table5` ``linux_3_11=True``; without them every convergence time comes out
about half the paper's. Tables III, IV and Fig. 3 keep the simulator's defaults (modern Linux),
``linux_3_11=False``: at Table III's windows of one to three packets per route the ≤ test makes
Balia and Coupled indistinguishable (both sit at the window floor), which the paper's numbers do
not show (bench/sim/PENG2016.md has both settings). A scenario's own ``[sim]`` values win.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from ...algorithms import PENG_ALGORITHMS
from ...results import ci95
from ...scenario import Scenario, load
from ...sim import run_many, with_algorithm
from ..common import SCENARIO_DIR
from .paper import PENG_TABLE3, PENG_TABLE4, PENG_TABLE5, paper_algorithm

SCENARIOS = SCENARIO_DIR / "peng2016"

#: Dummynet's 1 ms clock tick (see the module docstring).
TESTBED_JITTER_S = 0.001

#: ``[sim]`` values emulating the paper's Linux 3.11.8 hosts (see the module docstring).
LINUX_3_11 = {"delayed_ack": True, "per_ack_increase": True, "slow_start_at_ssthresh": True}


def _paper(table: str, algo: str) -> dict | None:
    """Published values (one source: :mod:`.paper`), as plain numbers."""
    if table == "table3" and algo in PENG_TABLE3["mp"]:
        return {"mp": PENG_TABLE3["mp"][algo][0], "sp": PENG_TABLE3["sp"][algo][0]}
    if table == "table4" and algo in PENG_TABLE4:
        return {"mp": PENG_TABLE4[algo][0]}
    if table == "table5" and algo in PENG_TABLE5["sp_mbps"]:
        return {"convergence_s": PENG_TABLE5["convergence_s"][algo], "sp": PENG_TABLE5["sp_mbps"][algo]}
    return None


def testbed(scenario: Scenario, linux_3_11: bool = False) -> Scenario:
    """The scenario with the Dummynet tick jitter (and with ``linux_3_11`` the Linux 3.11 host
    behaviour :data:`LINUX_3_11`) added to its ``[sim]`` table where unset."""
    sim_table = dict(scenario.engine.get("sim", {}))
    sim_table.setdefault("host_jitter_s", TESTBED_JITTER_S)
    for key, value in (LINUX_3_11.items() if linux_3_11 else ()):
        sim_table.setdefault(key, value)
    engine = dict(scenario.engine)
    engine["sim"] = sim_table
    return scenario.with_changes(engine=engine)


def _scenario(name: str, algorithm: str, scenario: Scenario | None, linux_3_11: bool = False) -> Scenario:
    base = scenario if scenario is not None else load(SCENARIOS / f"{name}.toml")
    return testbed(with_algorithm(base, paper_algorithm(algorithm)), linux_3_11)


def _mci(values) -> tuple[float, float]:
    v = [x for x in values if not (isinstance(x, float) and math.isnan(x))]
    return (float(np.mean(v)) if v else math.nan, ci95(v) if v else math.nan)


def table3(algorithms: Iterable[str] = PENG_ALGORITHMS, runs: int = 20, seed: int = 1, scheduler: Any = None,
           progress: bool = True, scenario: Scenario | None = None, linux_3_11: bool = False) -> dict[str, dict]:
    """TCP friendliness, Fig. 2 network (N1 = N2 = 30, 60 Mb/s, 5 ms): mean per-flow rate of
    the multipath and single-path users."""
    out = {}
    for algo in algorithms:
        s = _scenario("table3", algo, scenario, linux_3_11)
        rs = run_many(s, runs, seed, scheduler=scheduler, progress=progress, sample_interval_s=0)
        g = lambda name: [r.result.groups[name] for r in rs]
        out[algo] = {
            "mp": _mci([x.rate_mbps for x in g("mp")]),
            "sp": _mci([x.rate_mbps for x in g("sp")]),
            "mp_paths": [_mci([x.path_rate_mbps[k] for x in g("mp")]) for k in range(2)],
            "link_price": {l: _mci([r.result.links[l].price for r in rs]) for l in ("link1", "link2")},
            "runs": runs,
            "paper": _paper("table3", algo),
        }
    return out


def table4(algorithms: Iterable[str] = PENG_ALGORITHMS, runs: int = 20, seed: int = 1, scheduler: Any = None,
           progress: bool = True, scenario: Scenario | None = None, linux_3_11: bool = False) -> dict[str, dict]:
    """WiFi (8 Mb/s, 10 ms) + 3G (2 Mb/s, 100 ms), one multipath flow: its throughput and the
    split over the two paths."""
    out = {}
    for algo in algorithms:
        s = _scenario("table4", algo, scenario, linux_3_11)
        rs = run_many(s, runs, seed, scheduler=scheduler, progress=progress, sample_interval_s=0)
        mp = [r.result.groups["mp"] for r in rs]
        out[algo] = {"mp": _mci([x.rate_mbps for x in mp]),
                     "paths": [_mci([x.path_rate_mbps[k] for x in mp]) for k in range(2)],
                     "runs": runs, "paper": _paper("table4", algo)}
    return out


def convergence_time(run, *, route: int = 1, warmup_s: float = 10.0, sp_start_s: float = 40.0,
                     sp_stop_s: float = 80.0) -> tuple[float, float]:
    """Footnote 2 of Peng et al.: the reference is the mean window of the multipath flow's
    route on link 2 over [warmup_s, sp_start_s) (single-flow period, slow start skipped); the
    convergence time is the first time after ``sp_stop_s`` that this route's window reaches the
    reference, minus ``sp_stop_s`` (NaN if it never does). Returns (time, reference)."""
    t = run.timeseries["subflows"]
    group = np.asarray(t["group"], dtype=object)
    sel = (group == "mp") & (t["flow"] == 0) & (t["route"] == route)
    time_s = t["time_s"][sel]
    cwnd = t["cwnd_pkts"][sel]
    ref = float(cwnd[(time_s >= warmup_s) & (time_s < sp_start_s)].mean())
    after = (time_s > sp_stop_s) & (cwnd >= ref)
    if not after.any():
        return math.nan, ref
    return float(time_s[after][0] - sp_stop_s), ref


def table5(algorithms: Iterable[str] = PENG_ALGORITHMS, runs: int = 20, seed: int = 1, scheduler: Any = None,
           progress: bool = True, scenario: Scenario | None = None, sample_interval_s: float = 0.01,
           linux_3_11: bool = True) -> dict[str, dict]:
    """Responsiveness (20 Mb/s, 10 ms; 1 MP flow, 5 SP flows on link 2 from 40 s to 80 s):
    convergence time of the MP flow's route on link 2 after the SP flows leave (mean ± CI and
    the longest, which is what the paper reports) and the SP flows' aggregate throughput over
    40–80 s. Hosts behave as Linux 3.11 unless ``linux_3_11=False`` (module docstring)."""
    out = {}
    for algo in algorithms:
        s = _scenario("table5", algo, scenario, linux_3_11)
        sp = next(g for g in s.groups if g.name == "sp")
        rs = run_many(s, runs, seed, scheduler=scheduler, progress=progress, sample_interval_s=sample_interval_s,
                      measure=(sp.start_s, sp.stop_s))
        conv = [convergence_time(r, sp_start_s=sp.start_s, sp_stop_s=sp.stop_s) for r in rs]
        sf = rs[0].timeseries["subflows"]
        m = (sf["group"] == "mp") & (sf["flow"] == 0) & (sf["route"] == 1)
        grid = np.arange(0.0, s.duration_s, 0.1)
        times = [c[0] for c in conv]
        finite = [x for x in times if not math.isnan(x)]
        out[algo] = {"convergence_s": _mci(times), "convergence_max_s": max(finite) if finite else math.nan,
                     "not_converged": sum(math.isnan(x) for x in times),
                     "reference_cwnd": float(np.mean([c[1] for c in conv])),
                     "sp": _mci([r.result.groups["sp"].extra["total_mbps"] for r in rs]),
                     "runs": runs, "paper": _paper("table5", algo),
                     "trace": {"time_s": grid.round(3).tolist(),
                               "cwnd": [np.interp(grid, sf["time_s"][m], sf["cwnd_pkts"][m]).round(2).tolist()]}}
    return out


def fig3(algorithms: Iterable[str] = PENG_ALGORITHMS, runs: int = 5, seed: int = 1, scheduler: Any = None,
         progress: bool = True, trace_s: tuple[float, float] = (20.0, 40.0), linux_3_11: bool = False) -> dict[str, dict]:
    """Window oscillation (one link, 10 Mb/s, 10 ms, 50 packets): a multipath flow with two
    routes through the link vs. one Reno flow ("reno"). Per algorithm: the empirical D_s (mean
    relative decrease of the total window per loss, 0.5 for NewReno), the coefficient of
    variation of the total window, and a cwnd trace of the first run over ``trace_s``."""
    out = {}
    for algo in list(algorithms) + ["reno"]:
        base = load(SCENARIOS / ("fig3-reno.toml" if algo == "reno" else "fig3-multipath.toml"))
        s = testbed(base if algo == "reno" else with_algorithm(base, paper_algorithm(algo)), linux_3_11)
        rs = run_many(s, runs, seed, scheduler=scheduler, progress=progress, sample_interval_s=0.01)
        cvs = []
        trace = None
        for i, r in enumerate(rs):
            t = r.timeseries["subflows"]
            time_s = t["time_s"]
            route = t["route"]
            cwnd = t["cwnd_pkts"]
            t0, t1 = r.result.extra["measure_s"]
            n_routes = int(route.max()) + 1
            per = [cwnd[route == k] for k in range(n_routes)]
            ts = time_s[route == 0]
            total = np.sum(per, axis=0)
            m = (ts >= t0) & (ts <= t1)
            cvs.append(float(total[m].std() / total[m].mean()))
            if i == 0:
                w = (ts >= trace_s[0]) & (ts <= trace_s[1])
                trace = {"time_s": ts[w].tolist(), "cwnd": [p[w].tolist() for p in per]}
        out[algo] = {"ds": _mci([r.result.groups[s.groups[0].name].extra["ds"] for r in rs]),
                     "total_cwnd_cv": _mci(cvs),
                     "rate_mbps": _mci([r.result.groups[s.groups[0].name].rate_mbps for r in rs]),
                     "trace": trace, "runs": runs}
    return out


def reproduce(algorithms: Iterable[str] = PENG_ALGORITHMS, runs: int = 20, seed: int = 1,
              out: Path | None = None, progress: bool = True, scheduler: Any = None, fig3_runs: int = 5) -> dict:
    """Everything ``mpcc reproduce peng2016 --engine sim`` shows: table3/table4 {algo: {"mp"/"sp":
    (mean, ci95)}}, table5 {algo: {"convergence_s": (mean, ci95), "sp_mbps": (mean, ci95)}},
    fig3 {algo | "reno (single path)": {"oscillation": (D_s mean, ci95)}}, "traces" (Fig. 3 and
    Table V windows of the first run), plus "detail" (the full dicts of :func:`table3` …
    :func:`fig3`). ``runs`` seeds per cell (Fig. 3: ``fig3_runs``). With ``out``, writes
    ``peng2016-sim.json``."""
    algorithms = list(algorithms)
    fig3_runs = min(runs, fig3_runs)
    t3 = table3(algorithms, runs=runs, seed=seed, scheduler=scheduler, progress=progress)
    t4 = table4(algorithms, runs=runs, seed=seed, scheduler=scheduler, progress=progress)
    t5 = table5(algorithms, runs=runs, seed=seed, scheduler=scheduler, progress=progress)
    f3 = fig3(algorithms, runs=fig3_runs, seed=seed, scheduler=scheduler, progress=progress)
    nan_none = lambda mc: tuple(None if (v is None or math.isnan(v)) else v for v in mc)  # noqa: E731
    longest = ", ".join(f"{a} {t5[a]['convergence_max_s']:.3g}" for a in algorithms)
    summary = {
        "table3": {a: {"mp": t3[a]["mp"], "sp": t3[a]["sp"]} for a in algorithms},
        "table4": {a: {"mp": t4[a]["mp"]} for a in algorithms},
        "table5": {a: {"convergence_s": nan_none(t5[a]["convergence_s"]), "sp_mbps": t5[a]["sp"]} for a in algorithms},
        "fig3": {("reno (single path)" if a == "reno" else a): {"oscillation": v["ds"]} for a, v in f3.items()},
        "traces": {"fig3": {("reno (single path)" if a == "reno" else a): v["trace"] for a, v in f3.items()},
                   "table5": {a: t5[a]["trace"] for a in algorithms}},
        "runs": runs,
        "notes": (f"packet-level simulator, {runs} runs (Fig. 3: {fig3_runs}), seeds {seed}…; 1 ms host "
                  f"jitter (Dummynet tick); throughput counts 1500-byte wire packets; Table V: Linux 3.11 hosts "
                  f"(delayed ACKs, per-ACK window increase), mean ± CI of "
                  f"convergence (longest: {longest}); Fig. 3: empirical D_s (relative decrease of the total "
                  f"window per loss)"),
        "detail": {"table3": t3, "table4": t4, "table5": t5, "fig3": f3},
    }
    if out is not None:
        _write(Path(out), summary)
    return summary


def _write(out: Path, summary: dict) -> None:
    from ...results import dumps

    out.mkdir(parents=True, exist_ok=True)
    (out / "peng2016-sim.json").write_text(dumps(summary) + "\n")
