"""Run a scenario on the real kernel: build the namespace topology, start linkem per link, run
MPTCP/TCP bulk traffic, sample every subflow, and summarise as a RunResult (engine "testbed").

Measured quantities (window = [start_s + warmup_s, stop_s] of each group):
  path_rate_mbps  per-flow payload bytes acked on each route's subflow (sender TCP_INFO
                  tcpi_bytes_acked), mean over flows
  rate_mbps       per-flow Σ of its path rates, mean over flows (goodput_mbps: application
                  bytes at the receiver; over short windows MPTCP's reordering buffer biases it)
  link load_mbps  IP bytes linkem forwarded on the shaped direction
  link price      (drops + CE marks) / arrivals at the link — the loss/marking probability p_l
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..errors import EnvironmentProblem, MpccError
from ..results import RunResult
from ..scenario import Scenario
from . import health, netns, startup, tcpmem, topology
# the summaries of runs (re-exported: callers use engine.summarise, engine.result, engine.Summary)
from .summary import (CONNECTION_KEYS, Summary, connection_limits, result, route_limits,  # noqa: F401
                      summarise)

BUILTIN_CC = ("reno", "cubic")  # kernel congestion controls usable without BPF


@dataclass(frozen=True)
class Settings:
    """The [testbed] table of a scenario (all optional) merged with CLI options."""

    runs: int = 1
    duration_s: float | None = None  # default: the scenario's duration_s
    warmup_s: float | None = None  # default: min(10 s, 20 % of the duration)
    sample_ms: float = 100.0
    algorithm: str | None = None  # override the algorithm of multipath groups
    seed: int = 1
    spin_us: int = 30
    receiver: str = "linux"  # "quickack": every data segment ACKed at once (topology.set_receiver)


#: The ``mpcc testbed`` flag that overrides each [testbed] field (for error messages).
_FLAGS = {"runs": "--runs", "duration_s": "--duration", "warmup_s": "--warmup", "sample_ms": "--sample-ms",
          "algorithm": "--algorithm", "receiver": "--receiver"}


def settings_from(s: Scenario, **overrides: Any) -> Settings:
    """The scenario's [testbed] table merged with ``overrides`` (CLI values), validated by
    :func:`mpcc.scenario.engine_options` against :data:`mpcc.testbed.options.TESTBED_OPTIONS`."""
    from ..scenario import engine_options
    from .options import cross_check
    opts = engine_options(s, "testbed", overrides, _FLAGS)
    cross_check(s, opts)
    return Settings(**opts)


def scaled(s: Scenario, duration_s: float) -> Scenario:
    """The scenario run for ``duration_s`` instead: group start/stop times scale with it. Stop
    times are clamped to the scenario's duration first, so a scenario built in code with the
    dataclass default ``stop_s = inf`` reaches the hosts with finite times."""
    f = duration_s / s.duration_s
    from dataclasses import replace
    groups = tuple(replace(g, start_s=g.start_s * f, stop_s=min(g.stop_s, s.duration_s) * f) for g in s.groups)
    bgs = tuple(replace(b, start_s=b.start_s * f, stop_s=min(b.stop_s, s.duration_s) * f) for b in s.background)
    return replace(s, duration_s=duration_s, groups=groups, background=bgs)


# --- congestion controls -----------------------------------------------------------------------
def _bpf():
    try:
        from ..kernel import bpf
    except Exception:
        return None
    return bpf if all(hasattr(bpf, n) for n in ("load", "kernel_name", "algorithms")) else None


def kernel_cc(name: str) -> tuple[str, bool]:
    """Kernel congestion-control name for an mpcc algorithm (``Algorithm.describe()``: a name, or
    ``ewtcp(a=0.25)`` with its parameters); bool = needs the BPF loader. ``reno`` (and ``cubic``)
    are the kernel's own: on a multipath group they run uncoupled on every subflow. An algorithm
    without a BPF program, or a parameter its program does not take: ``bpf.BpfUnsupported``."""
    if name in BUILTIN_CC:
        return name, False
    if name.startswith("kernel:"):
        return name.split(":", 1)[1], False
    bpf = _bpf()
    if bpf is None:
        raise EnvironmentProblem(f"algorithm {name!r} needs the BPF struct_ops loader (mpcc.kernel.bpf), "
                                 "which is not available (fix: run with --algorithm reno, or build bpf/ with "
                                 "`make setup`)")
    base = name.split("(")[0].strip()
    if base not in bpf.algorithms():
        from ..algorithms import NAMES
        if base not in NAMES:     # not an mpcc algorithm at all: the message of sim and fluid
            raise bpf.BpfUnsupported(f"--algorithm: unknown algorithm {base!r} (fix: use one of: "
                                     f"{', '.join(sorted(set(NAMES) | set(BUILTIN_CC)))})")
        raise bpf.BpfUnsupported(f"testbed: algorithm {name!r} has no BPF implementation yet (BPF: "
                                 f"{', '.join(bpf.algorithms())}, plus kernel reno/cubic) (fix: run it "
                                 "with the fluid or sim engine)")
    return bpf.kernel_name(name), True     # refuses parameters the BPF program does not take


def canonical(name: str) -> str:
    """An ``--algorithm`` value as the algorithm registry describes it, so that aliases and presets
    reach the kernel as their algorithm: ``max`` → ``lia``, ``coupled-decrease`` →
    ``mtcp(alpha=0.0, beta=1.0)``. Names with parameters (``ewtcp(a=0.3)``), the kernel's own
    (``reno``, ``cubic``, ``kernel:NAME``) and unknown names (refused by :func:`kernel_cc`) stay."""
    if "(" in name or name in BUILTIN_CC or name.startswith("kernel:"):
        return name
    from .. import algorithms
    try:
        return algorithms.get(name).describe()
    except algorithms.AlgorithmSpecError:
        return name


def group_ccs(s: Scenario, st: Settings) -> list[str]:
    """Each group's algorithm with its parameters (checked: see :func:`kernel_cc`)."""
    names = []
    for g in s.groups:
        a = canonical(st.algorithm) if (st.algorithm and g.multipath) else g.algorithm.describe()
        kernel_cc(a)
        names.append(a)
    return names


# --- one run ---------------------------------------------------------------------------------------
@dataclass
class RawRun:
    t0: float
    sender: np.ndarray  # structured rows of the sender CSV
    receiver: np.ndarray
    links: dict[str, np.ndarray]
    errors: str = ""
    diag: dict = field(default_factory=dict)  # testbed.diag: MIB deltas, chrono stats
    msk: np.ndarray | None = None  # structured rows of the MPTCP connection-level CSV (multipath flows)
    connect: dict = field(default_factory=dict)  # traffic.send's set-up record (connect.json)
    health: Any = None  # health.Health of the run


def _read_csv(path: Path, dtype: list[tuple[str, Any]]) -> np.ndarray:
    """The rows of a sampler CSV as ``dtype``, each field read from the column its header names
    (a line cut short by the run's end is skipped). Every field must be in the header, except
    those of :data:`ADDED_COLUMNS`, which a file written before they existed lacks (read as 0);
    a missing field is a ``ValueError`` naming the file and the column, never a silent 0."""
    if not path.exists() or path.stat().st_size == 0:
        return np.zeros(0, dtype=dtype)
    with open(path) as f:
        header = next(f, "").rstrip("\n").split(",")
        rows = [line.rstrip("\n").split(",") for line in f if line.count(",") == len(header) - 1]
    missing = [name for name, _ in dtype if name not in header and name not in ADDED_COLUMNS.get(path.name, ())]
    if missing:
        raise ValueError(f"{path}: no column {', '.join(missing)} in its header {','.join(header)!r}")
    out = np.zeros(len(rows), dtype=dtype)
    if rows:
        cols = list(zip(*rows))
        for name, _ in dtype:
            if name in header:
                out[name] = np.array(cols[header.index(name)], dtype=object)
    return out


# columns added to a sampler file after its first version, by file name
ADDED_COLUMNS = {"sender.csv": frozenset({"notsent"})}
# the field names are the files' header names: traffic.py writes sender, receiver and msk, linkem
# (crates/linkem/src/main.rs) the links' files
SENDER_DT = [("t", "f8"), ("group", "i4"), ("flow", "i4"), ("local", "U16"), ("route", "i4"), ("cwnd", "i8"),
             ("srtt_us", "i8"), ("bytes_acked", "i8"), ("ssthresh", "i8"), ("total_retrans", "i8"), ("unacked", "i8"),
             ("busy_us", "i8"), ("rwnd_limited_us", "i8"), ("sndbuf_limited_us", "i8"), ("notsent", "i8")]
MSK_DT = [("t", "f8"), ("group", "i4"), ("flow", "i4"), ("outq", "i8"), ("notsent", "i8"), ("sndbuf", "i8"),
          ("snd_wnd", "i8"), ("bytes_retrans", "i8"), ("sub_notsent", "i8")]
RECEIVER_DT = [("t", "f8"), ("group", "i4"), ("flow", "i4"), ("bytes", "i8")]
LINK_DT = [("t_mono_s", "f8"), ("dir", "U4"), ("queue_pkts", "i8"), ("arrivals", "i8"), ("forwarded", "i8"),
           ("drops_tail", "i8"), ("drops_red", "i8"), ("drops_loss", "i8"), ("marks", "i8"), ("bytes_out", "i8"),
           ("tx_errors", "i8")]


class RunFailed(EnvironmentProblem):
    """One run of the traffic failed (a flow could not connect, a sender error) after its retry.
    Callers that run many cells catch this per cell and keep the others."""


def run_once(s: Scenario, ccs: list[str], st: Settings, run_dir: Path,
             tick: Callable[[float], None] | None = None,
             on_built: Callable[[topology.Topology], None] | None = None,
             bed: "Testbed | None" = None) -> RawRun:
    """Run the traffic for s.duration_s on the network of ``bed`` (:class:`Testbed`: built on
    its first run, reused after), or without one on a network built for this run and torn down
    after it. ``on_built(topo)`` runs after the network is up, before traffic (tests inject
    faults there)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    with (bed.network(s, st, run_dir) if bed else _fresh_network(s, st, run_dir)) as (r, topo):
        topology.set_receiver(topo, st.receiver)
        if on_built:
            on_built(topo)
        from . import diag

        def host_mibs() -> dict[int, dict[str, int]]:  # one namespace per group
            return {gi: diag.mib(ns) for gi, ns in topo.hosts.items()}

        def summed(per_host: dict[int, dict[str, int]]) -> dict[str, int]:
            out: dict[str, int] = {}
            for m in per_host.values():
                for k, v in m.items():
                    out[k] = out.get(k, 0) + v
            return out

        mib0, chrono, acks = {"hosts": host_mibs(), "server": diag.mib(topo.server_ns)}, {}, {}
        plan = {"duration_s": s.duration_s, "sample_s": st.sample_ms / 1e3,
                "sender_csv": str(run_dir / "sender.csv"), "receiver_csv": str(run_dir / "receiver.csv"),
                "msk_csv": str(run_dir / "msk.csv"),
                "groups": [topo.group_plan(gi, cc) for gi, cc in enumerate(ccs)], "background": []}
        for gi, gp in enumerate(plan["groups"]):
            gp["start_offsets"] = startup.start_offsets(s, gi, st.seed)
        for bi, b in enumerate(s.background):
            plan["background"].append({"name": b.name, **topo.background_plan(bi), "rate_mbps": b.rate_mbps,
                                       "mean_on_s": b.mean_on_s, "mean_off_s": b.mean_off_s, "start_s": b.start_s,
                                       "stop_s": b.stop_s, "packet_bytes": s.packet_bytes, "seed": st.seed * 1000 + bi})
        bpf_before = health.bpf_counters()
        setup_budget = startup.budget_s(s)
        plan["connect_json"] = str(run_dir / "connect.json")
        plan["max_s"] = setup_budget + s.duration_s + 10.0
        py = [sys.executable, "-m", "mpcc.testbed.traffic"]
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
        recv_log = open(run_dir / "receiver.log", "w")
        send_log = open(run_dir / "sender.log", "w")
        _write_plan(run_dir, plan)
        rp = r.spawn([*py, "recv", str(run_dir / "plan.json")], topo.server_ns, stdout=subprocess.PIPE, stderr=recv_log, env=env)
        line = rp.stdout.readline()
        if b"ready" not in line:
            raise EnvironmentProblem(f"testbed receiver failed to start (fix: read {run_dir / 'receiver.log'}, "
                                     f"then run `mpcc testbed --cleanup` and retry)")
        # the sender sets up every connection and subflow on the idle network (traffic.establish),
        # then prints "t0 <CLOCK_MONOTONIC>": the run's clock starts there, set-up not counted
        sp = r.spawn([*py, "send", str(run_dir / "plan.json")], topo.client_ns, stdout=subprocess.PIPE,
                     stderr=send_log, env=env)
        t0 = startup.wait_t0(sp, time.monotonic() + setup_budget)
        if t0 is None:
            with contextlib.suppress(Exception):
                sp.wait(timeout=5)
            raise RunFailed(startup.setup_failure(run_dir, setup_budget))
        end = t0 + s.duration_s
        while time.monotonic() < end + 1.0:
            time.sleep(0.2)
            if tick:
                tick(max(0.0, min(s.duration_s, time.monotonic() - t0)))
            if not chrono and time.monotonic() >= end - 1.0:
                chrono = {k: v for ns in topo.hosts.values()
                          for k, v in diag.chrono(ns, topo.routes, topology.BASE_PORT).items()} or {"none": {}}
                acks = diag.acks(topo.server_ns, topo.routes, topology.BASE_PORT)
            # the sender exits after its last sample (end + 0.05 s) or early on an error; the
            # receiver's samples reach past end once it has run 0.3 s longer
            if sp.poll() is not None and (time.monotonic() < end or time.monotonic() >= end + 0.3):
                break
            for p in r.procs:
                if p.poll() is not None and p not in (sp, rp):
                    raise EnvironmentProblem(f"linkem exited early (code {p.returncode}) (fix: read "
                                             f"{run_dir}/linkem-*.log; rebuild it with `make setup`)")
        try:
            sp.wait(timeout=5)
        except Exception:
            pass
        rp.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        code = sp.returncode
        bpf_after = health.bpf_counters()
        mib1 = host_mibs()
        mib_groups = {s.groups[gi].name: diag.mib_delta(mib0["hosts"].get(gi, {}), m) for gi, m in mib1.items()}
        diag_out = {"chrono": chrono, "acks": acks,
                    "mib_client": diag.mib_delta(summed(mib0["hosts"]), summed(mib1)), "mib_groups": mib_groups,
                    "mib_server": diag.mib_delta(mib0["server"], diag.mib(topo.server_ns))}
    send_log.close()
    recv_log.close()
    errors = (run_dir / "sender.log").read_text().strip()
    if code not in (0, None) and errors:
        raise RunFailed(f"testbed traffic failed: {errors.splitlines()[-1]} (fix: read {run_dir / 'sender.log'})")
    links = {name: _read_csv(path, LINK_DT) for name, path in topo.linkem_stats.items()}
    sender = _read_csv(run_dir / "sender.csv", SENDER_DT)
    for gi, g in enumerate(s.groups):
        seen = set(sender["flow"][sender["group"] == gi].tolist())
        missing = [k for k in range(g.count) if k not in seen]
        if missing:
            raise RunFailed(f"testbed: group {g.name} flow {missing[0]} connected but was never sampled "
                            f"({len(missing)} of {g.count} flows) (fix: read {run_dir / 'sender.log'} and "
                            f"{run_dir / 'connect.json'})")
    raw = RawRun(t0, sender, _read_csv(run_dir / "receiver.csv", RECEIVER_DT), links, errors, diag_out,
                 _read_csv(run_dir / "msk.csv", MSK_DT), startup.read_json(run_dir / "connect.json"))
    # linkem writes its timing file when it exits (the namespaces are gone by now)
    raw.health = health.of_run(s, raw, bpf_before, bpf_after, sorted(run_dir.glob("linkem-*-timing.json")))
    return raw


def run_with_retry(s: Scenario, ccs: list[str], st: Settings, run_dir: Path,
                   tick: Callable[[float], None] | None = None,
                   on_built: Callable[[topology.Topology], None] | None = None,
                   bed: "Testbed | None" = None) -> RawRun:
    """:func:`run_once`, repeated once (in ``run_dir``/retry) if it fails with :class:`RunFailed`;
    a second failure is raised, naming both. The retry runs on a network built afresh (with a
    ``bed``, its network is dropped first), so no state of the failed run carries over."""
    try:
        return run_once(s, ccs, st, run_dir, tick, on_built, bed)
    except RunFailed as first:
        print(f"mpcc testbed: {first}; retrying the run once", file=sys.stderr)
        if bed:
            bed.drop_network()
        try:
            return run_once(s, ccs, st, run_dir / "retry", tick, on_built, bed)
        except RunFailed as second:
            raise RunFailed(f"{second} (failed twice; first: {first})") from None  # (fix: …) in both


@contextlib.contextmanager
def _fresh_network(s: Scenario, st: Settings, run_dir: Path):
    """``(r, topo)``: a network built for one run, torn down when the block ends."""
    with netns.Run() as r:
        yield r, topology.build(s, r, run_dir, seed=st.seed, spin_us=st.spin_us)


class Testbed:
    """The kernel state the runs of a table share, so that they run back to back: one network
    (namespaces, veths, routes, MPTCP endpoints; :func:`topology.build_network`), kept while
    the scenarios run on it have the same :func:`topology.network_key` and rebuilt when it
    changes, and every struct_ops program loaded once (:meth:`kernel_names`) — each group sets
    its algorithm per socket (TCP_CONGESTION), so the network does not depend on it.

    Per run (:meth:`network`): the TCP metrics cache is flushed and linkem restarted (empty
    queues, zeroed counters, the run's seed, stats in the run's directory); the run's
    processes (linkem, sender, receiver) are stopped when it ends. A run that raises drops the
    network (the next run builds a new one), and so does :meth:`drop_network` (a retry).
    :meth:`close` (``with Testbed() as bed:``; also on Ctrl-C and SIGTERM) removes the
    namespaces, then unregisters the struct_ops this session loaded.

    ``builds`` counts the networks built (a table on one network: 1)."""

    def __init__(self) -> None:
        self._loaded = contextlib.ExitStack()
        self._kernel: dict[str, str] = {}          # algorithm -> kernel name
        self._notice: dict[str, str] = {}          # algorithm -> its BPF build notice (BPF ones only)
        self._run: netns.Run | None = None
        self._topo: topology.Topology | None = None
        self._key: tuple | None = None
        self.builds = 0

    def __enter__(self) -> "Testbed":
        netns.check_environment()
        _terminate_cleanly()
        removed = netns.cleanup_stale()
        if removed:
            print(f"mpcc testbed: removed stale state of a crashed run: {', '.join(removed)}", file=sys.stderr)
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        try:
            self.drop_network()
        finally:
            self._kernel.clear()
            self._notice.clear()
            self._loaded.close()

    @property
    def namespaces(self) -> list[str]:
        """The namespaces of the current network (empty when none is built)."""
        return list(self._run.namespaces) if self._run else []

    def kernel_names(self, ccs: list[str]) -> list[str]:
        """Each algorithm's kernel name (:func:`kernel_cc`); a BPF program is loaded on first use
        and stays registered until :meth:`close`."""
        out = []
        for a in ccs:
            if a not in self._kernel:
                name, needs_bpf = kernel_cc(a)
                if needs_bpf:
                    self._notice[a] = self._loaded.enter_context(_bpf().load(a)).notice()
                self._kernel[a] = name
            out.append(self._kernel[a])
        return out

    def notices(self, ccs: list[str]) -> list[str]:
        """The distinct build notices (bpf.Registration.notice) of the BPF programs among ``ccs``
        (loaded by :meth:`kernel_names`), in order."""
        out: list[str] = []
        for a in ccs:
            if a in self._notice and self._notice[a] not in out:
                out.append(self._notice[a])
        return out

    def drop_network(self) -> None:
        run, self._run, self._topo, self._key = self._run, None, None, None
        if run:
            run.close()

    @contextlib.contextmanager
    def network(self, s: Scenario, st: Settings, run_dir: Path):
        """``(procs, topo)`` for one run of ``s``: ``procs.spawn`` starts the run's processes in
        the namespaces (stopped when the block ends), ``topo`` names them (``topo.scenario`` is
        ``s``, ``topo.linkem_stats`` in ``run_dir``)."""
        from dataclasses import replace
        key = topology.network_key(s)
        if self._key != key:
            self.drop_network()
            self._run = netns.Run().open()
            self._key = key
            try:
                self._topo = topology.build_network(s, self._run)
            except BaseException:
                self.drop_network()
                raise
            self.builds += 1
        topo = replace(self._topo, scenario=s, linkem_stats={})
        procs = netns.Procs(self._run)
        ok = False
        try:
            topology.reset_hosts(topo)
            topology.start_links(topo, procs.spawn, run_dir, seed=st.seed, spin_us=st.spin_us)
            yield procs, topo
            ok = True
        finally:
            procs.close()
            if not ok:
                self.drop_network()


def _write_plan(run_dir: Path, plan: dict) -> None:
    tmp = run_dir / "plan.json.tmp"
    tmp.write_text(json.dumps(plan, indent=1))
    tmp.replace(run_dir / "plan.json")


def _bpf_build(notices: list[str]) -> str | None:
    """The build name of the BPF registrations a run used (RunResult.extra["bpf_build"]): one
    name, or the names joined with "+" if they differ; None without BPF."""
    names = sorted({n.split()[2] for n in notices})
    return "+".join(names) if names else None


def _kernel_extra(res: RunResult, s: Scenario, notices: list[str]) -> None:
    """What a result records of the kernel it ran on: the BPF build, and tcp_sndbuf_expand's
    per_mss for ``[sim] sndbuf_per_mss`` (mpcc.testbed.tcpmem; absent where not measurable)."""
    if build := _bpf_build(notices):
        res.extra["bpf_build"] = build
    if (per_mss := tcpmem.sim_per_mss_or_none(s.packet_bytes)) is not None:
        res.extra["sndbuf_per_mss"] = per_mss


def run_scenario(s: Scenario, st: Settings, out_dir: Path | None = None,
                 progress: bool = True) -> RunResult:
    """Run ``st.runs`` repetitions and write time series / plots to ``out_dir`` if given."""
    return run_detailed(s, st, out_dir, progress)[0]


def _labels(ccs: list[str], knames: list[str]) -> list[str]:
    """Each group's algorithm as the result names it: with the kernel name where they differ."""
    return [f"{a} ({k})" if a != k else a for a, k in zip(ccs, knames)]


def run_detailed(s: Scenario, st: Settings, out_dir: Path | None = None,
                 progress: bool = True, on_built: Callable[[topology.Topology], None] | None = None,
                 bed: Testbed | None = None) -> tuple[RunResult, list[Summary]]:
    """As :func:`run_scenario`, also returning each run's :class:`Summary` (time series).
    A run that fails is retried once (:func:`run_with_retry`); ``on_built`` as in :func:`run_once`.
    The runs share one network and the loaded programs: those of ``bed`` (a :class:`Testbed`
    the caller keeps open across scenarios, e.g. the cells of a table), else of a session
    opened for these runs alone."""
    s = scaled(s, st.duration_s or s.duration_s)
    topology.check_supported(s)  # too large for this machine: say so before touching anything
    warmup = st.warmup_s if st.warmup_s is not None else min(10.0, 0.2 * s.duration_s)
    ccs = group_ccs(s, st)
    import tempfile
    work = Path(out_dir) if out_dir else Path(tempfile.mkdtemp(prefix="mpcc-testbed-"))
    summaries = []
    knames: list[str] = []
    notices: list[str] = []
    keep_work = False       # a failure whose message names a log in ``work`` keeps it
    try:
        with contextlib.ExitStack() as stack:
            if bed is None:
                bed = stack.enter_context(Testbed())
            knames = bed.kernel_names(ccs)
            notices = bed.notices(ccs)
            for line in notices:
                print(f"mpcc testbed: {line}", file=sys.stderr)
            bar = _progress(progress, st.runs * s.duration_s)
            with bar as pb:
                task = pb.add_task(f"testbed {s.name}", total=st.runs * s.duration_s) if pb else None
                for i in range(st.runs):
                    tick = (lambda x, i=i: pb.update(task, completed=i * s.duration_s + x)) if pb else None
                    raw, n = health.healthy_run(lambda d, i=i, tick=tick: run_with_retry(
                        s, knames, Settings(**{**st.__dict__, "seed": st.seed + i}), d, tick, on_built, bed),
                        work / f"run{i}")
                    summaries.append(summarise(s, raw, warmup))
                    summaries[-1].health["attempts"] = n
        res = result(s, _labels(ccs, knames), summaries, st, warmup)
        _kernel_extra(res, s, notices)
        if out_dir:
            from . import output
            output.write(res, summaries, Path(out_dir))
        return res, summaries
    except BaseException as e:
        keep_work = isinstance(e, MpccError)
        if out_dir and isinstance(e, KeyboardInterrupt):
            # the interrupted run's raw files are not a result: only completed runs are kept
            import shutil
            shutil.rmtree(work / f"run{len(summaries)}", ignore_errors=True)
        # interrupted or failed after some runs completed: their results (result.json, Parquet,
        # plot) are written too, marked partial, before the error goes on (docs/scenario.md)
        if out_dir and summaries and len(knames) == len(ccs):
            from ..outdir import mark_partial
            from . import output
            reason = "interrupted" if isinstance(e, KeyboardInterrupt) else f"failed: {type(e).__name__}"
            res = result(s, _labels(ccs, knames), summaries, st, warmup)
            _kernel_extra(res, s, notices)
            res.extra.update(partial=True, runs_completed=len(summaries), runs_requested=st.runs)
            with contextlib.suppress(Exception):
                output.write(res, summaries, Path(out_dir))
                mark_partial(Path(out_dir), len(summaries), st.runs, reason)
                e.mpcc_kept = (f"kept the {len(summaries)} completed of {st.runs} runs in {out_dir}/ "
                               f"(marked partial: PARTIAL.json)")
        raise
    finally:
        if not out_dir and not keep_work:
            import shutil
            shutil.rmtree(work, ignore_errors=True)


def _terminate_cleanly() -> None:
    """SIGTERM/SIGHUP unwind like Ctrl-C, so every ``finally`` removes namespaces/struct_ops."""
    import threading
    if threading.current_thread() is not threading.main_thread():
        return

    def handler(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) in (signal.SIG_DFL, None):
            signal.signal(sig, handler)


class _NoBar(contextlib.nullcontext):
    pass


def _progress(enabled: bool, total: float):
    if not enabled:
        return _NoBar(None)
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn
    return Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed:.0f}/{task.total:.0f} s"),
                    TimeRemainingColumn(), console=Console(stderr=True), transient=True)
