"""Run one scenario on the packet-level simulator (Rust core, :mod:`mpcc._core`).

``run(scenario, seed=0)`` → :class:`SimRun` with ``result`` (the output contract,
:class:`mpcc.results.RunResult`, engine ``"sim"``) and ``timeseries`` (numpy column
frames ``"subflows"`` and ``"links"``, :mod:`.timeseries`); ``SimRun.write(dir)`` writes Parquet files and PNG plots.

Time series: ``subflows`` (time_s, group, flow, route, cwnd_pkts, srtt_s, rate_mbps over the
last interval, loss_events cumulative) for flows active at the sample time; ``links`` (time_s,
link, queue_pkts, drops cumulative).

Measurement. A flow's rate is the number of its packets delivered (cumulatively ACKed or
SACKed, first copy only) in the measurement window [t0, t1] × packet size / (t1 − t0); a
group's ``rate_mbps`` is the mean over its flows, ``path_rate_mbps[r]`` the mean rate of the
flows' route r. A link's ``price`` is the fraction of arriving packets dropped or ECN-marked in
the window, its ``load_mbps`` the accepted traffic.
"""

from __future__ import annotations

import json
import re
import math
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from .. import algorithms
from ..errors import MpccError, ScenarioError
from ..results import GroupResult, LinkResult, RunResult
from ..scenario import Group, Scenario, engine_options
from .timeseries import Frame, from_core

from .options import MIN_WINDOW_S, SIM_OPTIONS, measurement_window  # noqa: F401  (the [sim] table)

#: Options passed to the Rust core (the others are handled here).
_CORE_OPTIONS = ("start_jitter_s", "initial_cwnd", "rto_min_s", "delayed_ack", "delayed_ack_s", "per_ack_increase",
                 "slow_start_at_ssthresh", "ecn", "host_jitter_s")


def sim_options(scenario: Scenario) -> dict[str, Any]:
    """The scenario's ``[sim]`` table, validated (:func:`mpcc.scenario.engine_options`) with
    defaults filled in."""
    return engine_options(scenario, "sim")


def phase_lock_warning(scenario: Scenario) -> str | None:
    """One line when the scenario sets ``[sim] host_jitter_s = 0`` on a drop-tail link carrying
    identical flows (a group of ≥ 2 flows): without timing noise such flows lock into phase
    patterns that real hosts do not show (Floyd & Jacobson 1992)."""
    if scenario.engine.get("sim", {}).get("host_jitter_s", None) != 0:
        return None
    droptail = {l.name for l in scenario.links if l.aqm == "droptail"}
    for g in scenario.groups:
        hit = sorted({n for p in g.paths for n in p} & droptail)
        if g.count >= 2 and hit:
            return (f"mpcc: warning: {scenario.source}: sim.host_jitter_s = 0 with {g.count} identical flows "
                    f"({g.name!r}) on drop-tail link {hit[0]!r}: the flows may phase-lock; remove the line "
                    f"for the default 0.001 unless you study phase effects")
    return None


def warn_phase_lock(scenario: Scenario) -> None:
    msg = phase_lock_warning(scenario)
    if msg:
        print(msg, file=sys.stderr)


def _algo_params(algo: algorithms.Algorithm) -> dict[str, Any]:
    return {k: ("inf" if isinstance(v, float) and math.isinf(v) else v) for k, v in algo.params.items()}


def _default_max_memory_mb() -> float:
    """Half the machine's physical memory (MiB): the Rust core's default memory budget."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**20 / 2
    except (ValueError, OSError, AttributeError):
        return 4096.0


def core_config(scenario: Scenario, *, seed: int = 0, sample_interval_s: float = 0.1,
                measure: tuple[float, float] | None = None, max_events: int | None = None,
                max_memory_mb: float | None = None) -> dict[str, Any]:
    """The JSON run description the Rust core reads (``crates/mpcc-core/src/config.rs``).
    ``max_events`` / ``max_memory_mb``: the run's budgets (docs/sim.md); default: events from
    the scenario (Rust: 20 × an upper estimate), memory half the machine's."""
    opts = sim_options(scenario)
    if opts["sample_interval_s"] is not None:
        sample_interval_s = opts["sample_interval_s"]
    t0, t1 = measurement_window(scenario, measure)
    idx = scenario.link_index
    links = []
    for l in scenario.links:
        d = {"capacity_mbps": l.capacity_mbps, "delay_ms": l.delay_ms, "buffer_pkts": l.buffer_pkts, "loss": l.loss}
        if l.aqm == "red" and l.red is not None:
            r = l.red
            d["red"] = {"min_th": r.min_th, "max_th": r.max_th, "max_p": r.max_p, "ecn": r.ecn,
                        "weight": r.weight, "gentle": r.gentle}
        links.append(d)
    groups = [{"algorithm": g.algorithm.name, "params": _algo_params(g.algorithm), "count": g.count,
               "paths": [[idx[n] for n in p] for p in g.paths], "start_s": g.start_s,
               "stop_s": min(g.stop_s, scenario.duration_s)} for g in scenario.groups]
    background = [{"path": [idx[n] for n in b.path], "rate_mbps": b.rate_mbps, "mean_on_s": b.mean_on_s,
                   "mean_off_s": b.mean_off_s, "start_s": b.start_s, "stop_s": min(b.stop_s, scenario.duration_s)}
                  for b in scenario.background]
    return {"duration_s": scenario.duration_s, "packet_bytes": scenario.packet_bytes, "seed": int(seed),
            "sample_interval_s": float(sample_interval_s or 0.0), "measure": [t0, t1], "links": links,
            "groups": groups, "background": background,
            "options": {k: opts[k] for k in _CORE_OPTIONS},
            "max_memory_mb": float(max_memory_mb if max_memory_mb is not None else _default_max_memory_mb()),
            **({"max_events": int(max_events)} if max_events is not None else {})}


_RUST_FIELD = re.compile(r"^([A-Za-z_][\w\[\]\.]*): (.*)$", re.S)


def _engine_error(scenario: Scenario, message: str) -> MpccError:
    """A Rust core error as the one-line error of the scenario field it names (the core writes
    ``field: problem; fix``); run budgets (max_events, max_memory_mb) are not scenario fields."""
    m = _RUST_FIELD.match(message.replace("\n", " "))
    if not m:
        return MpccError(f"{scenario.source}: simulator rejected the scenario: {message}")
    fld, rest = m.groups()
    problem, _, fix = rest.rpartition("; ")
    if not problem:
        problem, fix = rest, "see docs/sim.md (limits of a run)"
    if fld in ("max_events", "max_memory_mb"):
        return MpccError(f"{scenario.source}: {fld}: {problem} (fix: {fix})")
    return ScenarioError(scenario.source, {"measure": "sim.measure"}.get(fld, fld), problem, fix)


@dataclass
class SimRun:
    """One simulation: the summary (output contract), the time series and run statistics."""

    scenario: Scenario
    seed: int
    result: RunResult
    timeseries: dict[str, Frame]
    stats: dict[str, Any] = field(default_factory=dict)

    def write(self, out_dir: str | Path, *, plots: bool = True) -> list[Path]:
        """Write ``result.json``, ``subflows.parquet``, ``links.parquet`` and PNG plots into
        ``out_dir``; files appear only when all of them were written (temp dir + rename)."""
        from .output import write_outputs
        return write_outputs(out_dir, [self], self.result, plots=plots)


@dataclass
class CoreRun:
    """What the Rust core returns for one run: the configuration it ran (:func:`core_config`),
    its output ``columns`` (numpy arrays: per-subflow totals ``sf_*``, per-link totals ``link_*``,
    time series ``ts_*``, FAST Algorithm-2 log ``fa_*``), run ``stats`` and the summary ``result``."""

    config: dict[str, Any]
    columns: dict[str, np.ndarray]
    stats: dict[str, Any]
    result: RunResult


def summarize(scenario: Scenario, seed: int, cols: Mapping[str, np.ndarray], t0: float, t1: float) -> RunResult:
    """The output contract (:class:`~mpcc.results.RunResult`) from the core's columns over the
    measurement window [t0, t1] (module docstring)."""
    bits = scenario.packet_bytes * 8.0
    span = t1 - t0
    sf_rate = cols["sf_delivered"] * bits / span / 1e6
    groups: dict[str, GroupResult] = {}
    for gi, g in enumerate(scenario.groups):
        sel = cols["sf_group"] == gi
        flows = cols["sf_flow"][sel]
        routes = cols["sf_route"][sel]
        n_paths = len(g.paths)
        per_route = np.zeros((g.count, n_paths))
        per_route[flows, routes] = sf_rate[sel]
        per_flow = per_route.sum(axis=1)

        def total(name):
            return int(cols[name][sel].sum())

        extra = {"per_flow_mbps": per_flow.tolist(), "per_flow_path_mbps": per_route.tolist(),
                 "total_mbps": float(per_flow.sum()),
                 "losses": total("sf_drops") + total("sf_marks"), "drops": total("sf_drops"),
                 "marks": total("sf_marks"), "loss_events": total("sf_loss_events"),
                 "timeouts": total("sf_timeouts"), "retransmits": total("sf_retrans"),
                 "sent_pkts": total("sf_sent"),
                 # empirical D_s (Peng et al. §III-F): mean relative decrease of the flow's total
                 # window per loss event in the window; 0.5 for NewReno
                 "ds": float(cols["sf_ds_sum"][sel].sum() / max(int(cols["sf_ds_n"][sel].sum()), 1)),
                 "mean_srtt_s": [float(np.mean(cols["sf_srtt"][sel][routes == r])) for r in range(n_paths)]}
        # per route r, summed over the group's flows (diagnosis in ``mpcc compare``)
        for key, col in (("sent", "sf_sent"), ("delivered", "sf_delivered"), ("drops", "sf_drops"),
                         ("marks", "sf_marks"), ("loss_events", "sf_loss_events"),
                         ("retransmits", "sf_retrans"), ("timeouts", "sf_timeouts")):
            extra[f"path_{key}"] = [int(cols[col][sel][routes == r].sum()) for r in range(n_paths)]
        groups[g.name] = GroupResult(algorithm=g.algorithm.describe(), count=g.count, rate_mbps=float(per_flow.mean()),
                                     path_rate_mbps=per_route.mean(axis=0).tolist(), extra=extra)
    links: dict[str, LinkResult] = {}
    for li, l in enumerate(scenario.links):
        arr = int(cols["link_arrivals"][li])
        drops, marks, acc = int(cols["link_drops"][li]), int(cols["link_marks"][li]), int(cols["link_accepted"][li])
        load = acc * bits / span / 1e6
        links[l.name] = LinkResult(load_mbps=load, price=(drops + marks) / arr if arr else 0.0,
                                   extra={"utilization": load / l.capacity_mbps, "drops": drops, "marks": marks,
                                          "arrivals": arr, "max_queue_pkts": int(cols["link_max_queue"][li])})
    return RunResult(engine="sim", scenario=scenario.name, groups=groups, links=links,
                     extra={"seed": int(seed), "measure_s": [t0, t1]})


def simulate(scenario: Scenario, *, seed: int = 0, sample_interval_s: float = 0.1,
             measure: tuple[float, float] | None = None, progress: Any = None,
             max_events: int | None = None, max_memory_mb: float | None = None) -> CoreRun:
    """Run the Rust core once on ``scenario`` (arguments as :func:`run`) and return its raw
    columns with the summary, for callers that read more than :class:`SimRun` holds."""
    from .. import _core
    from ..progress import bar

    cfg = core_config(scenario, seed=seed, sample_interval_s=sample_interval_s, measure=measure,
                      max_events=max_events, max_memory_mb=max_memory_mb)
    start = time.perf_counter()
    try:
        if progress is True:
            with bar(f"sim {scenario.name}", scenario.duration_s, unit="simulated s") as b:
                raw = _core.simulate(json.dumps(cfg), b.update)
        elif callable(progress):
            raw = _core.simulate(json.dumps(cfg), progress)
        else:
            raw = _core.simulate(json.dumps(cfg))
    except ValueError as e:  # the scenario passed validation, so this names an engine limit
        if _RUST_FIELD.match(str(e).replace("\n", " ")):   # the core named the field
            raise _engine_error(scenario, str(e)) from None
        raise core_error(scenario, cfg, str(e)) from None   # e.g. a serde error: mapped by its JSON column
    wall = time.perf_counter() - start
    cols = {k: np.frombuffer(b, dtype=dt) for k, (dt, b) in raw["columns"].items()}
    t0, t1 = cfg["measure"]
    stats = {"events": int(raw["events"]), "data_packets": int(raw["data_packets"]), "wall_s": wall}
    return CoreRun(cfg, cols, stats, summarize(scenario, seed, cols, t0, t1))


def run(scenario: Scenario, *, seed: int = 0, sample_interval_s: float = 0.1,
        measure: tuple[float, float] | None = None, progress: Any = None, warn: bool = True,
        max_events: int | None = None, max_memory_mb: float | None = None) -> SimRun:
    """Simulate ``scenario`` once with ``seed``. ``sample_interval_s`` = 0 disables the time
    series; ``measure`` = (t0, t1) overrides the measurement window. ``progress``: True for a
    progress bar over simulated time (stderr), or a callable ``f(simulated_seconds_done)``.
    ``warn``: print :func:`phase_lock_warning` on stderr if it applies.
    ``max_events`` / ``max_memory_mb``: the run's budgets (docs/sim.md, "Limits of a run")."""
    if warn:
        warn_phase_lock(scenario)
    cr = simulate(scenario, seed=seed, sample_interval_s=sample_interval_s, measure=measure, progress=progress,
                  max_events=max_events, max_memory_mb=max_memory_mb)
    return SimRun(scenario, int(seed), cr.result, from_core([g.name for g in scenario.groups], [l.name for l in scenario.links], cr.columns), cr.stats)


#: Rust config keys (crates/mpcc-core/src/config.rs) → the scenario field they come from.
_CORE_FIELDS = {"duration_s": "duration_s", "packet_bytes": "packet_bytes", "seed": "--seed",
                "sample_interval_s": "sim.sample_interval_s", "measure": "sim.measure_from_s/measure_to_s",
                "capacity_mbps": "links[].capacity_mbps", "delay_ms": "links[].delay_ms",
                "buffer_pkts": "links[].buffer_pkts", "loss": "links[].loss", "red": "links[].red",
                "count": "groups[].count", "paths": "groups[].paths", "params": "groups[].algorithm",
                "algorithm": "groups[].algorithm", "start_s": "start_s", "stop_s": "stop_s",
                "rate_mbps": "background[].rate_mbps", "mean_on_s": "background[].mean_on_s",
                "mean_off_s": "background[].mean_off_s"}
_CORE_FIELDS.update({k: f"sim.{k}" for k in _CORE_OPTIONS})


def core_error(scenario: Scenario, cfg: Mapping[str, Any], message: str) -> MpccError:
    """A Rust core error as one line naming the scenario field: serde errors give a column of
    the JSON config, whose nearest key names the field; known engine messages are mapped."""
    import re
    text = " ".join(message.split())
    fld = None
    m = re.search(r"column (\d+)", text)
    if m:
        js = json.dumps(cfg)
        keys = re.findall(r'"(\w+)":', js[: int(m.group(1))])
        if keys:
            fld = _CORE_FIELDS.get(keys[-1], keys[-1])
    if fld is None and "measurement window" in text:
        fld = _CORE_FIELDS["measure"]
    for key, name in _CORE_FIELDS.items():
        if fld is None and key in text:
            fld = name
    return MpccError(f"{scenario.source}: {fld or '(scenario)'}: the simulator rejected the value: {text[:200]} "
                     f"(fix: use a value in the range of docs/scenario.md \"Ranges\")")


def with_algorithm(scenario: Scenario, spec: str | Mapping[str, Any], *, multipath_only: bool = True) -> Scenario:
    """The scenario with the algorithm of its multipath groups (or all groups) replaced."""
    try:
        algo = algorithms.get(spec)
    except algorithms.AlgorithmSpecError as e:
        raise ScenarioError("--algorithm", e.field, e.problem, e.fix) from None
    from dataclasses import replace
    groups = tuple(replace(g, algorithm=algo, algorithm_spec=spec) if (g.multipath or not multipath_only) else g
                   for g in scenario.groups)
    return scenario.with_changes(groups=groups)
