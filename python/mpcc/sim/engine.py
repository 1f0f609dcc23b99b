"""Run one scenario on the packet-level simulator (Rust core, :mod:`mpcc._core`).

``run(scenario, seed=0)`` → :class:`SimRun` with ``result`` (the output contract,
:class:`mpcc.results.RunResult`, engine ``"sim"``) and ``timeseries`` (numpy column
frames ``"subflows"`` and ``"links"``, :mod:`.timeseries`); ``SimRun.write(dir)`` writes Parquet files and PNG plots.

Time series: ``subflows`` (time_s, group, flow, route, cwnd_pkts, srtt_s, rate_mbps over the
last interval, loss_events cumulative) for flows active at the sample time; ``links`` (time_s,
link, queue_pkts, drops cumulative).

Measurement. A flow's rate is the number of its packets delivered (cumulatively ACKed or
SACKed, first copy only) in the measurement window [t0, t1] × packet size / the time its group
is active in the window, |[t0, t1] ∩ [start_s, stop_s]| (as the testbed measures each group over
its own interval; 0 for a group not active in the window); a group's ``rate_mbps`` is the mean
over its flows, ``path_rate_mbps[r]`` the mean rate of the
flows' route r. A link's ``price`` is the fraction of arriving packets dropped or ECN-marked in
the window, its ``load_mbps`` the accepted traffic.
"""

from __future__ import annotations

import json
import re
import math
import os
import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

from .. import algorithms
from ..errors import MpccError, ScenarioError
from ..results import GroupResult, LinkResult, RunResult
from ..scenario import Group, Scenario, engine_options
from .columns import Columns, as_list, column_means, mean, pairwise_sum

from .options import MIN_WINDOW_S, SIM_OPTIONS, measurement_window  # noqa: F401  (the [sim] table)

if TYPE_CHECKING:
    from pathlib import Path

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
            "options": {k: opts[k] for k in _CORE_OPTIONS} | _linux_options(opts)
            | {k: opts[k] for k in ("receiver", "tlp") if opts[k] != "auto"},
            "max_memory_mb": float(max_memory_mb if max_memory_mb is not None else _default_max_memory_mb()),
            **({"max_events": int(max_events)} if max_events is not None else {})}


def _linux_options(opts: Mapping[str, Any]) -> dict[str, Any]:
    """The linux connection level's options for the core (none for the ideal one: its run
    description is what it was before the linux mode existed)."""
    if opts["mptcp"] != "linux":
        return {}
    return {"mptcp": "linux",
            "tcp_wmem": [float(opts[f"tcp_wmem_{k}"]) for k in ("min", "default", "max")],
            "tcp_rmem": [float(opts[f"tcp_rmem_{k}"]) for k in ("min", "default", "max")],
            "sndbuf_expand": opts["sndbuf_expand"], "sndbuf_per_mss": float(opts["sndbuf_per_mss"]),
            "writer_wait_s": float(opts["writer_wait_s"])}


_RUST_FIELD = re.compile(r"^([A-Za-z_][\w\[\]\.]*): (.*)$", re.S)


def _engine_error(scenario: Scenario, message: str) -> MpccError:
    """A Rust core error as the one-line error of the scenario field it names (the core writes
    ``field: problem; fix``); run budgets (max_events, max_memory_mb) are not scenario fields."""
    m = _RUST_FIELD.match(message.replace("\n", " "))
    if not m:
        return MpccError(f"{scenario.source}: simulator rejected the scenario: {message} (fix: check the scenario "
                         f"with `mpcc check`; ranges in docs/scenario.md)")
    fld, rest = m.groups()
    problem, _, fix = rest.rpartition("; ")
    if not problem:
        problem, fix = rest, "see docs/sim.md (limits of a run)"
    if fld in ("max_events", "max_memory_mb"):
        return MpccError(f"{scenario.source}: {fld}: {problem} (fix: {fix})")
    return ScenarioError(scenario.source, {"measure": "sim.measure"}.get(fld, fld), problem, fix)


#: Columns the summary reads (:func:`summarize`).
_SUMMARY_COLUMNS = ("sf_group", "sf_flow", "sf_route", "sf_delivered", "sf_sent", "sf_retrans", "sf_drops", "sf_marks",
                    "sf_loss_events", "sf_timeouts", "sf_loss_probes", "sf_srtt", "sf_ds_sum", "sf_ds_n", "sf_acks_sent", "sf_segs_in",
                    "link_arrivals", "link_drops", "link_marks", "link_accepted", "link_max_queue")


class LazyTimeseries(Mapping):
    """``{"subflows": Frame, "links": Frame}`` (:func:`.timeseries.from_core`), built on first
    access: a run whose time series nobody reads (``mpcc sim --json``) never loads numpy."""

    def __init__(self, group_names: list[str], link_names: list[str], columns: Mapping[str, Any]):
        self._args = (group_names, link_names, columns)
        self._frames: dict | None = None

    def _load(self) -> dict:
        if self._frames is None:
            from .timeseries import from_core
            self._frames = from_core(*self._args)
        return self._frames

    def __getitem__(self, key):
        return self._load()[key]

    def __iter__(self):
        return iter(("subflows", "links"))

    def __len__(self) -> int:
        return 2


@dataclass
class SimRun:
    """One simulation: the summary (output contract), the time series and run statistics."""

    scenario: Scenario
    seed: int
    result: RunResult
    timeseries: Mapping[str, Any]   # {"subflows": Frame, "links": Frame} (.timeseries), built on first access
    stats: dict[str, Any] = field(default_factory=dict)

    def write(self, out_dir: str | Path, *, plots: bool = True) -> list[Path]:
        """Write ``result.json``, ``subflows.parquet``, ``links.parquet`` and PNG plots into
        ``out_dir``; files appear only when all of them were written (temp dir + rename)."""
        from .output import write_outputs
        return write_outputs(out_dir, [self], self.result, plots=plots)


@dataclass
class CoreRun:
    """What the Rust core returns for one run: the configuration it ran (:func:`core_config`),
    its output ``columns`` (:class:`~.columns.Columns`, numpy arrays on access: per-subflow totals ``sf_*``, per-link totals ``link_*``,
    time series ``ts_*``, FAST Algorithm-2 log ``fa_*``), run ``stats`` and the summary ``result``."""

    config: dict[str, Any]
    columns: Columns
    stats: dict[str, Any]
    result: RunResult


def _connection_limits(cols: Mapping[str, Any], gi: int, sel: list[int], routes: list[int],
                       n_paths: int) -> dict[str, Any]:
    """The testbed's ``connection_limits`` (mpcc.testbed.engine.connection_limits) from the linux
    connection level's samples of group ``gi`` (every 100 ms in the measurement window):
    ``idle`` = share of subflow samples with packets out < cwnd; of those, ``idle_no_data`` = the
    connection had no unsent data, ``idle_rwnd_full`` = its data in flight within 2 packets of the
    peer's window; ``sndbuf_kb``/``queued_kb`` = mean send buffer and data in it;
    ``sf_queued_kb`` = mean data queued per subflow (write + retransmission queue);
    ``sf_notsent_kb`` = mean over connection samples of the data queued on its subflows and not
    yet sent (Σ over them: the testbed's ``mean_sub_queued_kb``, Σ tcpi_notsent_bytes);
    ``mean_wnd_kb`` = mean window the receiver advertises (the testbed's, mean tcpi_snd_wnd);
    ``reinjected_pkts``, ``stale_subflows``: the connection-level retransmission timer's work
    over the whole run; per route r (over the group's flows) ``path_idle`` (share of samples with
    packets out < cwnd: 1 − the testbed's ``route_limits`` cwnd_limited) and ``path_queued_kb``."""
    def v(name):
        return as_list(cols, name)[gi]
    n, idle, conn = v("msk_sf_samples"), v("msk_idle"), v("msk_conn_samples")
    nan = math.nan
    return {"idle": idle / n if n else nan,
            "idle_no_data": v("msk_idle_no_data") / idle if idle else nan,
            "idle_rwnd_full": v("msk_idle_rwnd_full") / idle if idle else nan,
            "sndbuf_kb": v("msk_sndbuf_bytes") / conn / 1024 if conn else nan,
            "queued_kb": v("msk_queued_bytes") / conn / 1024 if conn else nan,
            "sf_queued_kb": v("msk_sf_queued_bytes") / n / 1024 if n else nan,
            # Σ over the subflows of the bytes queued but not yet sent (the testbed's sub_notsent)
            "sf_notsent_kb": v("msk_sf_notsent_bytes") / conn / 1024 if conn else nan,
            # the window the receiver advertises (the testbed's mean_wnd_kb: mean tcpi_snd_wnd)
            "mean_wnd_kb": v("msk_wnd_bytes") / conn / 1024 if conn else nan,
            # over the whole run: packets the connection-level timer re-injected, subflows marked stale
            "reinjected_pkts": float(v("msk_reinjected")), "stale_subflows": float(v("msk_stale")),
            **_path_limits(cols, sel, routes, n_paths)}


def _path_limits(cols: Mapping[str, Any], sel: list[int], routes: list[int], n_paths: int) -> dict[str, list]:
    if "msk_path_samples" not in cols:
        return {}
    ns, idle, q = (as_list(cols, k) for k in ("msk_path_samples", "msk_path_idle", "msk_path_queued_bytes"))
    out: dict[str, list] = {"path_idle": [], "path_queued_kb": []}
    for r in range(n_paths):
        mine = [i for i, ri in zip(sel, routes) if ri == r]
        n = sum(ns[i] for i in mine)
        out["path_idle"].append(sum(idle[i] for i in mine) / n if n else math.nan)
        out["path_queued_kb"].append(sum(q[i] for i in mine) / n / 1024 if n else math.nan)
    return out


def summarize(scenario: Scenario, seed: int, cols: Mapping[str, Any], t0: float, t1: float,
              receiver: str | None = None) -> RunResult:
    """The output contract (:class:`~mpcc.results.RunResult`) from the core's columns over the
    measurement window [t0, t1] (module docstring); ``receiver``: the ``[sim] receiver`` the run
    was given, recorded where set (the core's options hold it only when not "auto"). ``cols``: :class:`~.columns.Columns` or numpy
    arrays. Plain Python: sums and means are numpy's (:func:`~.columns.pairwise_sum`), so the
    numbers are those of the numpy expressions (``per_route.sum(axis=1)``, ``.mean()``) bit for bit."""
    bits = scenario.packet_bytes * 8.0
    span = t1 - t0
    col = {name: as_list(cols, name) for name in _SUMMARY_COLUMNS}
    # each flow over the part of the window its group is active in (a group that starts late or
    # stops early is not diluted by the time it does not exist)
    active = [min(t1, g.stop_s) - max(t0, g.start_s) for g in scenario.groups]
    sf_rate = [d * bits / active[gi] / 1e6 if active[gi] > 0 else 0.0
               for d, gi in zip(col["sf_delivered"], col["sf_group"])]
    members: dict[int, list[int]] = {}   # group index → its subflows, in column order (one pass: fat trees
    for i, gi in enumerate(col["sf_group"]):   # have thousands of groups)
        members.setdefault(gi, []).append(i)
    groups: dict[str, GroupResult] = {}
    for gi, g in enumerate(scenario.groups):
        sel = members.get(gi, [])
        routes = [col["sf_route"][i] for i in sel]
        n_paths = len(g.paths)
        per_route = [[0.0] * n_paths for _ in range(g.count)]
        for i in sel:
            per_route[col["sf_flow"][i]][col["sf_route"][i]] = sf_rate[i]
        per_flow = [pairwise_sum(row) for row in per_route]

        def total(name):
            return sum(col[name][i] for i in sel)

        def by_route(name, r):
            return [col[name][i] for i, ri in zip(sel, routes) if ri == r]

        extra = {"per_flow_mbps": per_flow, "per_flow_path_mbps": per_route,
                 "total_mbps": pairwise_sum(per_flow),
                 "losses": total("sf_drops") + total("sf_marks"), "drops": total("sf_drops"),
                 "marks": total("sf_marks"), "loss_events": total("sf_loss_events"),
                 "timeouts": total("sf_timeouts"), "loss_probes": total("sf_loss_probes"),
                 "retransmits": total("sf_retrans"),
                 "sent_pkts": total("sf_sent"),
                 # empirical D_s (Peng et al. §III-F): mean relative decrease of the flow's total
                 # window per loss event in the window; 0.5 for NewReno
                 "ds": pairwise_sum([col["sf_ds_sum"][i] for i in sel]) / max(total("sf_ds_n"), 1),
                 "mean_srtt_s": [mean(by_route("sf_srtt", r)) for r in range(n_paths)]}
        # per route r, summed over the group's flows (diagnosis in ``mpcc compare``)
        for key, name in (("sent", "sf_sent"), ("delivered", "sf_delivered"), ("drops", "sf_drops"),
                          ("marks", "sf_marks"), ("loss_events", "sf_loss_events"),
                          ("retransmits", "sf_retrans"), ("timeouts", "sf_timeouts"), ("loss_probes", "sf_loss_probes"),
                          ("acks", "sf_acks_sent"), ("segs_in", "sf_segs_in")):
            extra[f"path_{key}"] = [sum(by_route(name, r)) for r in range(n_paths)]
        if "msk_sf_samples" in cols and len(g.paths) > 1:
            extra["connection_limits"] = _connection_limits(cols, gi, sel, routes, n_paths)
        groups[g.name] = GroupResult(algorithm=g.algorithm.describe(), count=g.count, rate_mbps=mean(per_flow),
                                     path_rate_mbps=column_means(per_route), extra=extra)
    links: dict[str, LinkResult] = {}
    for li, l in enumerate(scenario.links):
        arr = col["link_arrivals"][li]
        drops, marks, acc = col["link_drops"][li], col["link_marks"][li], col["link_accepted"][li]
        load = acc * bits / span / 1e6
        links[l.name] = LinkResult(load_mbps=load, price=(drops + marks) / arr if arr else 0.0,
                                   extra={"utilization": load / l.capacity_mbps, "drops": drops, "marks": marks,
                                          "arrivals": arr, "max_queue_pkts": col["link_max_queue"][li]})
    return RunResult(engine="sim", scenario=scenario.name, groups=groups, links=links,
                     extra={"seed": int(seed), "measure_s": [t0, t1],
                            # (the ideal connection level's summary is what it was before)
                            **({"mptcp": "linux"} if "msk_sf_samples" in cols else {}),
                            # a receiver set, not "auto" (mpcc compare's sim-linux for quickack receivers)
                            **({"receiver": receiver} if receiver else {})})


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
    cols = Columns(raw["columns"])
    t0, t1 = cfg["measure"]
    stats = {"events": int(raw["events"]), "data_packets": int(raw["data_packets"]), "wall_s": wall}
    return CoreRun(cfg, cols, stats, summarize(scenario, seed, cols, t0, t1, cfg["options"].get("receiver")))


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
    return SimRun(scenario, int(seed), cr.result, LazyTimeseries([g.name for g in scenario.groups],
                                                                  [l.name for l in scenario.links], cr.columns), cr.stats)


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
