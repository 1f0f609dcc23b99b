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
import math
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..errors import EnvironmentProblem, MpccError, ScenarioError
from ..results import GroupResult, LinkResult, RunResult
from ..scenario import Scenario
from . import netns, topology

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



#: The ``mpcc testbed`` flag that overrides each [testbed] field (for error messages).
_FLAGS = {"runs": "--runs", "duration_s": "--duration", "warmup_s": "--warmup", "sample_ms": "--sample-ms",
          "algorithm": "--algorithm"}


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
        from . import bpf  # written by the BPF helper; optional until it lands
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
        raise EnvironmentProblem(f"algorithm {name!r} needs the BPF struct_ops loader (mpcc.testbed.bpf), "
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


def _read_csv(path: Path, dtype: list[tuple[str, Any]]) -> np.ndarray:
    if not path.exists() or path.stat().st_size == 0:
        return np.zeros(0, dtype=dtype)
    with open(path) as f:
        next(f, None)
        rows = [tuple(line.rstrip("\n").split(",")) for line in f if line.count(",") == len(dtype) - 1]
    if not rows:
        return np.zeros(0, dtype=dtype)
    return np.array(rows, dtype=[(n, object) for n, _ in dtype]).astype(dtype)


SENDER_DT = [("t", "f8"), ("group", "i4"), ("flow", "i4"), ("local", "U16"), ("route", "i4"), ("cwnd", "i8"),
             ("srtt_us", "i8"), ("bytes_acked", "i8"), ("ssthresh", "i8"), ("total_retrans", "i8"), ("unacked", "i8"),
             ("busy_us", "i8"), ("rwnd_limited_us", "i8"), ("sndbuf_limited_us", "i8")]
MSK_DT = [("t", "f8"), ("group", "i4"), ("flow", "i4"), ("outq", "i8"), ("notsent", "i8"), ("sndbuf", "i8"),
          ("snd_wnd", "i8"), ("bytes_retrans", "i8"), ("sub_notsent", "i8")]
RECEIVER_DT = [("t", "f8"), ("group", "i4"), ("flow", "i4"), ("bytes", "i8")]
LINK_DT = [("t", "f8"), ("dir", "U4"), ("queue_pkts", "i8"), ("arrivals", "i8"), ("forwarded", "i8"),
           ("drops_tail", "i8"), ("drops_red", "i8"), ("drops_loss", "i8"), ("marks", "i8"), ("bytes_out", "i8"),
           ("tx_errors", "i8")]


class RunFailed(EnvironmentProblem):
    """One run of the traffic failed (a flow could not connect, a sender error) after its retry.
    Callers that run many cells catch this per cell and keep the others."""


def run_once(s: Scenario, ccs: list[str], st: Settings, run_dir: Path,
             tick: Callable[[float], None] | None = None,
             on_built: Callable[[topology.Topology], None] | None = None) -> RawRun:
    """Build the topology, run the traffic for s.duration_s, tear everything down.
    ``on_built(topo)`` runs after the network is up, before traffic (tests inject faults there)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    with netns.Run() as r:
        topo = topology.build(s, r, run_dir, seed=st.seed, spin_us=st.spin_us)
        if on_built:
            on_built(topo)
        from . import diag

        def client_mib() -> dict[str, int]:  # summed over the hosts (one namespace per group)
            out: dict[str, int] = {}
            for ns in topo.hosts.values():
                for k, v in diag.mib(ns).items():
                    out[k] = out.get(k, 0) + v
            return out

        mib0, chrono = {"client": client_mib(), "server": diag.mib(topo.server_ns)}, {}
        plan = {"duration_s": s.duration_s, "sample_s": st.sample_ms / 1e3,
                "sender_csv": str(run_dir / "sender.csv"), "receiver_csv": str(run_dir / "receiver.csv"),
                "msk_csv": str(run_dir / "msk.csv"),
                "groups": [topo.group_plan(gi, cc) for gi, cc in enumerate(ccs)], "background": []}
        for bi, b in enumerate(s.background):
            plan["background"].append({"name": b.name, **topo.background_plan(bi), "rate_mbps": b.rate_mbps,
                                       "mean_on_s": b.mean_on_s, "mean_off_s": b.mean_off_s, "start_s": b.start_s,
                                       "stop_s": b.stop_s, "packet_bytes": s.packet_bytes, "seed": st.seed * 1000 + bi})
        py = [sys.executable, "-m", "mpcc.testbed.traffic"]
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
        recv_log = open(run_dir / "receiver.log", "w")
        send_log = open(run_dir / "sender.log", "w")
        # both processes start before t0 (Python start-up takes a few hundred ms). Not shorter: with
        # t0 1 s ahead, the first SYNs of up to half the flows of Peng's Table III were lost (they
        # connected at the 1 s retry, and 1–3 runs in 6 lost a flow altogether; 2026-11-24)
        t0 = time.monotonic() + 2.0
        plan["t0"] = t0
        _write_plan(run_dir, plan)
        rp = r.spawn([*py, "recv", str(run_dir / "plan.json")], topo.server_ns, stdout=subprocess.PIPE, stderr=recv_log, env=env)
        line = rp.stdout.readline()
        if b"ready" not in line:
            raise EnvironmentProblem(f"testbed receiver failed to start (fix: read {run_dir / 'receiver.log'}, "
                                     f"then run `mpcc testbed --cleanup` and retry)")
        sp = r.spawn([*py, "send", str(run_dir / "plan.json")], topo.client_ns, stderr=send_log, env=env)
        end = t0 + s.duration_s
        while time.monotonic() < end + 1.0:
            time.sleep(0.2)
            if tick:
                tick(max(0.0, min(s.duration_s, time.monotonic() - t0)))
            if not chrono and time.monotonic() >= end - 1.0:
                chrono = {k: v for ns in topo.hosts.values()
                          for k, v in diag.chrono(ns, topo.routes, topology.BASE_PORT).items()} or {"none": {}}
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
        diag_out = {"chrono": chrono, "mib_client": diag.mib_delta(mib0["client"], client_mib()),
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
            raise RunFailed(f"testbed: group {g.name} flow {missing[0]} never connected "
                            f"({len(missing)} of {g.count} flows) (fix: read {run_dir / 'sender.log'})")
    return RawRun(t0, sender, _read_csv(run_dir / "receiver.csv", RECEIVER_DT), links, errors, diag_out,
                  _read_csv(run_dir / "msk.csv", MSK_DT))


def run_with_retry(s: Scenario, ccs: list[str], st: Settings, run_dir: Path,
                   tick: Callable[[float], None] | None = None,
                   on_built: Callable[[topology.Topology], None] | None = None) -> RawRun:
    """:func:`run_once`, repeated once (in ``run_dir``/retry) if it fails with :class:`RunFailed`;
    a second failure is raised, naming both."""
    try:
        return run_once(s, ccs, st, run_dir, tick, on_built)
    except RunFailed as first:
        print(f"mpcc testbed: {first}; retrying the run once", file=sys.stderr)
        try:
            return run_once(s, ccs, st, run_dir / "retry", tick, on_built)
        except RunFailed as second:
            raise RunFailed(f"{second} (failed twice; first: {first})") from None  # (fix: …) in both


def _write_plan(run_dir: Path, plan: dict) -> None:
    tmp = run_dir / "plan.json.tmp"
    tmp.write_text(json.dumps(plan, indent=1))
    tmp.replace(run_dir / "plan.json")


# --- summaries -------------------------------------------------------------------------------------
def _interp(t: np.ndarray, v: np.ndarray, at: float) -> float:
    """Cumulative counter at time ``at`` (linear between samples, clamped at the ends)."""
    if len(t) == 0:
        return math.nan
    return float(np.interp(at, t, v))


@dataclass
class Summary:
    flow_rate: dict[int, list[float]]  # group -> per-flow rate (Σ routes of bytes acked), Mb/s
    goodput: dict[int, list[float]]  # group -> per-flow application goodput at the receiver, Mb/s
    path_rate: dict[int, list[list[float]]]  # group -> flow -> route -> Mb/s
    link: dict[str, dict[str, float]]
    subflows: dict[str, list] = field(default_factory=dict)  # time series columns
    links_ts: dict[str, list] = field(default_factory=dict)
    diag: dict = field(default_factory=dict)  # RawRun.diag
    # group -> route -> {cwnd_limited, rwnd_limited, sndbuf_limited}: shares in the window, mean over flows
    limits: dict[int, list[dict[str, float]]] = field(default_factory=dict)
    # multipath group -> connection_limits(): why its subflows sat idle (MPTCP connection level)
    connection: dict[int, dict[str, float]] = field(default_factory=dict)


def route_limits(rows: np.ndarray, a: float, b: float) -> dict[str, float]:
    """What limited one subflow in [a, b]: the share of samples with a full window in flight
    (unacked ≥ cwnd), and tcp_info's receive-window- and send-buffer-limited time ÷ busy time."""
    w = (rows["t"] >= a) & (rows["t"] <= b)
    if not w.any():
        return {"cwnd_limited": math.nan, "rwnd_limited": math.nan, "sndbuf_limited": math.nan}
    r = rows[w]
    busy = float(r["busy_us"][-1] - r["busy_us"][0])
    share = (lambda k: float(r[k][-1] - r[k][0]) / busy if busy > 0 else 0.0)  # noqa: E731
    return {"cwnd_limited": float(np.mean(r["unacked"] >= r["cwnd"])),
            "rwnd_limited": share("rwnd_limited_us"), "sndbuf_limited": share("sndbuf_limited_us")}


CONNECTION_KEYS = ("idle", "idle_no_data", "idle_rwnd_full", "sndbuf_kb", "queued_kb")


def connection_limits(sender: np.ndarray, msk: np.ndarray, a: float, b: float, mss: int) -> dict[str, float]:
    """Why a multipath group's subflows sat idle in [a, b]: the MPTCP connection-level samples
    (``msk``) joined, sample by sample, with the subflows' (``sender``, same group). ``idle`` =
    share of subflow samples with window room and nothing in flight beyond it (unacked < cwnd);
    of those, ``idle_no_data`` = the connection had no data left to hand to any subflow (the
    writer waits for connection-level send-buffer space: a connection's send buffer holds every
    byte until the *connection-level* ACK, i.e. until the slowest subflow delivered what came
    before it), ``idle_rwnd_full`` = connection-level bytes in flight within 2 MSS of the peer's
    shared receive window. ``sndbuf_kb``/``queued_kb``: mean send buffer and bytes in it (SIOCOUTQ)."""
    nan = {k: math.nan for k in CONNECTION_KEYS}
    if msk is None or len(msk) == 0 or len(sender) == 0:
        return nan
    m = msk[(msk["t"] >= a) & (msk["t"] <= b)]
    sd = sender[(sender["t"] >= a) & (sender["t"] <= b)]
    if len(m) == 0 or len(sd) == 0:
        return nan
    at = {(round(float(t), 6), int(f)): i for i, (t, f) in enumerate(zip(m["t"], m["flow"]))}
    idx = np.array([at.get((round(float(t), 6), int(f)), -1) for t, f in zip(sd["t"], sd["flow"])])
    sd, idx = sd[idx >= 0], idx[idx >= 0]
    idle = sd["unacked"] < sd["cwnd"]
    mi = m[idx[idle]]
    inflight = mi["outq"] - mi["notsent"]
    share = (lambda x: float(np.mean(x)) if len(x) else math.nan)  # noqa: E731
    return {"idle": share(idle), "idle_no_data": share(mi["notsent"] <= 0),
            "idle_rwnd_full": share(inflight >= mi["snd_wnd"] - 2 * mss),
            "sndbuf_kb": float(np.mean(m["sndbuf"])) / 1024, "queued_kb": float(np.mean(m["outq"])) / 1024}


def summarise(s: Scenario, raw: RawRun, warmup_s: float) -> Summary:
    t0 = raw.t0
    flow_rate: dict[int, list[float]] = {}
    goodput: dict[int, list[float]] = {}
    path_rate: dict[int, list[list[float]]] = {}
    limits: dict[int, list[dict[str, float]]] = {}
    conn: dict[int, dict[str, float]] = {}
    rc, sd = raw.receiver, raw.sender
    for gi, g in enumerate(s.groups):
        a, b = t0 + g.start_s + warmup_s, t0 + g.stop_s
        if b - a <= 0:
            a = t0 + g.start_s
        rates, paths = [], []
        for k in range(g.count):
            m = (rc["group"] == gi) & (rc["flow"] == k)
            t, v = rc["t"][m], rc["bytes"][m]
            got = (_interp(t, v, b) - _interp(t, v, a)) if len(t) else 0.0
            rates.append(8 * got / (b - a) / 1e6)
            pr = []
            for j in range(len(g.paths)):
                m2 = (sd["group"] == gi) & (sd["flow"] == k) & (sd["route"] == j)
                t2, v2 = sd["t"][m2], sd["bytes_acked"][m2]
                d = (_interp(t2, v2, b) - _interp(t2, v2, a)) if len(t2) else 0.0
                pr.append(8 * d / (b - a) / 1e6)
            paths.append(pr)
        goodput[gi], path_rate[gi] = rates, paths
        flow_rate[gi] = [float(sum(p)) for p in paths]
        limits[gi] = []
        for j in range(len(g.paths)):
            per_flow = [route_limits(sd[(sd["group"] == gi) & (sd["flow"] == k) & (sd["route"] == j)], a, b)
                        for k in range(g.count)]
            limits[gi].append({key: float(np.nanmean([x[key] for x in per_flow])) if per_flow else math.nan
                               for key in ("cwnd_limited", "rwnd_limited", "sndbuf_limited")})
        if g.multipath and raw.msk is not None:
            conn[gi] = connection_limits(sd[sd["group"] == gi], raw.msk[raw.msk["group"] == gi], a, b,
                                         s.packet_bytes - 52)
    # windows of the links: the union of the groups' windows
    a = t0 + min(g.start_s for g in s.groups) + warmup_s
    b = t0 + max(g.stop_s for g in s.groups)
    link: dict[str, dict[str, float]] = {}
    links_ts = {"time_s": [], "link": [], "queue_pkts": [], "drops": [], "marks": [], "load_mbps": []}
    for name, rows in raw.links.items():
        f = rows[rows["dir"] == "fwd"]
        if len(f) == 0:
            link[name] = {"load_mbps": math.nan, "price": math.nan}
            continue
        t = f["t"]
        drops = f["drops_tail"] + f["drops_red"] + f["drops_loss"]
        ip_bytes = f["bytes_out"] - 14 * f["forwarded"]
        arr = _interp(t, f["arrivals"], b) - _interp(t, f["arrivals"], a)
        dd = _interp(t, drops, b) - _interp(t, drops, a)
        mk = _interp(t, f["marks"], b) - _interp(t, f["marks"], a)
        load = 8 * (_interp(t, ip_bytes, b) - _interp(t, ip_bytes, a)) / (b - a) / 1e6
        w = (t >= a) & (t <= b)
        link[name] = {"load_mbps": load, "price": (dd + mk) / arr if arr > 0 else 0.0,
                      "queue_mean_pkts": float(f["queue_pkts"][w].mean()) if w.any() else math.nan,
                      "queue_max_pkts": int(f["queue_pkts"].max()),
                      "drops_tail": int(f["drops_tail"][-1]), "drops_red": int(f["drops_red"][-1]),
                      "drops_loss": int(f["drops_loss"][-1]),
                      "drops": int(dd), "marks": int(mk), "arrivals": int(arr)}
        dt = np.diff(t, prepend=t[0])
        inc = np.diff(ip_bytes, prepend=ip_bytes[0])
        links_ts["time_s"] += list(t - t0)
        links_ts["link"] += [name] * len(t)
        links_ts["queue_pkts"] += list(f["queue_pkts"])
        links_ts["drops"] += list(np.diff(drops, prepend=drops[0]))
        links_ts["marks"] += list(np.diff(f["marks"], prepend=f["marks"][0]))
        links_ts["load_mbps"] += list(np.where(dt > 0, 8 * inc / np.where(dt > 0, dt, 1) / 1e6, 0.0))
    sub = {"time_s": [], "group": [], "flow": [], "route": [], "cwnd_pkts": [], "srtt_s": [], "rate_mbps": [],
           "ssthresh_pkts": [], "retrans": []}
    if len(sd):
        keys = np.unique(sd[["group", "flow", "route"]])
        for key in keys:
            m = (sd["group"] == key["group"]) & (sd["flow"] == key["flow"]) & (sd["route"] == key["route"])
            rows = sd[m]
            t = rows["t"]
            dt = np.diff(t, prepend=t[0])
            inc = np.diff(rows["bytes_acked"], prepend=rows["bytes_acked"][0])
            n = len(rows)
            sub["time_s"] += list(t - t0)
            sub["group"] += [s.groups[int(key["group"])].name] * n
            sub["flow"] += [int(key["flow"])] * n
            sub["route"] += [int(key["route"])] * n
            sub["cwnd_pkts"] += list(rows["cwnd"])
            sub["srtt_s"] += list(rows["srtt_us"] / 1e6)
            sub["rate_mbps"] += list(np.where(dt > 0, 8 * inc / np.where(dt > 0, dt, 1) / 1e6, 0.0))
            sub["ssthresh_pkts"] += list(np.minimum(rows["ssthresh"], 2**31 - 1))
            sub["retrans"] += list(rows["total_retrans"])
    return Summary(flow_rate, goodput, path_rate, link, sub, links_ts, raw.diag, limits, conn)


def _nanmean(values) -> float:
    """Mean of the non-NaN values, NaN (without numpy's empty-slice warning) when there are none."""
    v = [float(x) for x in values if not math.isnan(float(x))]
    return sum(v) / len(v) if v else float("nan")


def _ci95(xs: list[float]) -> float | None:
    xs = [x for x in xs if not math.isnan(x)]
    if len(xs) < 2:
        return None
    from scipy import stats
    return float(stats.t.ppf(0.975, len(xs) - 1) * np.std(xs, ddof=1) / math.sqrt(len(xs)))


def result(s: Scenario, ccs: list[str], summaries: list[Summary], st: Settings, warmup_s: float) -> RunResult:
    groups = {}
    for gi, g in enumerate(s.groups):
        per_run = [float(np.mean(sm.flow_rate[gi])) for sm in summaries]
        flows = [x for sm in summaries for x in sm.flow_rate[gi]]
        paths = np.array([np.mean(sm.path_rate[gi], axis=0) for sm in summaries])
        ci = _ci95(per_run) if len(summaries) > 1 else _ci95(flows)
        groups[g.name] = GroupResult(
            algorithm=ccs[gi], count=g.count, rate_mbps=float(np.mean(per_run)),
            path_rate_mbps=[float(x) for x in paths.mean(axis=0)],
            extra={"ci95_mbps": ci, "goodput_mbps": float(np.mean([x for sm in summaries for x in sm.goodput[gi]])), "ci95_over": "runs" if len(summaries) > 1 else "flows",
                   "rate_per_run_mbps": per_run, "min_flow_mbps": float(np.min(flows)),
                   "route_limits": [{k: _nanmean([sm.limits[gi][j][k] for sm in summaries if sm.limits])
                                     for k in ("cwnd_limited", "rwnd_limited", "sndbuf_limited")}
                                    for j in range(len(g.paths))] if all(sm.limits for sm in summaries) else None,
                   "connection_limits": {k: _nanmean([sm.connection[gi][k] for sm in summaries])
                                         for k in CONNECTION_KEYS}
                   if all(gi in sm.connection for sm in summaries) else None,
                   "max_flow_mbps": float(np.max(flows))})
    links = {}
    for l in s.links:
        vals = [sm.link[l.name] for sm in summaries]
        mean = lambda k: _nanmean([v.get(k, math.nan) for v in vals])  # noqa: E731
        links[l.name] = LinkResult(load_mbps=mean("load_mbps"), price=mean("price"),
                                   extra={"queue_mean_pkts": mean("queue_mean_pkts"),
                                          "queue_max_pkts": int(max(v.get("queue_max_pkts", 0) for v in vals)),
                                          **{k: int(sum(v.get(k, 0) for v in vals))
                                             for k in ("drops", "marks", "arrivals", "drops_tail", "drops_red", "drops_loss")},
                                          "utilisation": mean("load_mbps") / l.capacity_mbps})
    return RunResult("testbed", s.name, groups, links,
                     extra={"runs": len(summaries), "duration_s": s.duration_s, "warmup_s": warmup_s,
                            "sample_ms": st.sample_ms, "kernel": os.uname().release})


def _kernel_names(ccs: list[str], stack: contextlib.ExitStack, builds: list[str] | None = None) -> list[str]:
    """Kernel names of the groups' congestion controls, loading (and holding in ``stack``) the BPF
    ones; ``builds`` collects each BPF registration's one-line build notice (bpf.Registration.notice)."""
    out = []
    bpf = None
    for a in ccs:
        name, needs_bpf = kernel_cc(a)
        if needs_bpf:
            bpf = _bpf()
            reg = stack.enter_context(bpf.load(a))
            if builds is not None and reg.notice() not in builds:
                builds.append(reg.notice())
        out.append(name)
    return out


def _bpf_build(notices: list[str]) -> str | None:
    """The build name of the BPF registrations a run used (RunResult.extra["bpf_build"]): one
    name, or the names joined with "+" if they differ; None without BPF."""
    names = sorted({n.split()[2] for n in notices})
    return "+".join(names) if names else None


def run_scenario(s: Scenario, st: Settings, out_dir: Path | None = None,
                 progress: bool = True) -> RunResult:
    """Run ``st.runs`` repetitions and write time series / plots to ``out_dir`` if given."""
    return run_detailed(s, st, out_dir, progress)[0]


def _labels(ccs: list[str], knames: list[str]) -> list[str]:
    """Each group's algorithm as the result names it: with the kernel name where they differ."""
    return [f"{a} ({k})" if a != k else a for a, k in zip(ccs, knames)]


def run_detailed(s: Scenario, st: Settings, out_dir: Path | None = None,
                 progress: bool = True, on_built: Callable[[topology.Topology], None] | None = None
                 ) -> tuple[RunResult, list[Summary]]:
    """As :func:`run_scenario`, also returning each run's :class:`Summary` (time series).
    A run that fails is retried once (:func:`run_with_retry`); ``on_built`` as in :func:`run_once`."""
    s = scaled(s, st.duration_s or s.duration_s)
    topology.check_supported(s)  # too large for this machine: say so before touching anything
    netns.check_environment()
    _terminate_cleanly()
    removed = netns.cleanup_stale()
    if removed:
        print(f"mpcc testbed: removed stale state of a crashed run: {', '.join(removed)}", file=sys.stderr)
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
            knames = _kernel_names(ccs, stack, notices)
            for line in notices:
                print(f"mpcc testbed: {line}", file=sys.stderr)
            bar = _progress(progress, st.runs * s.duration_s)
            with bar as pb:
                task = pb.add_task(f"testbed {s.name}", total=st.runs * s.duration_s) if pb else None
                for i in range(st.runs):
                    tick = (lambda x, i=i: pb.update(task, completed=i * s.duration_s + x)) if pb else None
                    raw = run_with_retry(s, knames, Settings(**{**st.__dict__, "seed": st.seed + i}),
                                         work / f"run{i}", tick, on_built)
                    summaries.append(summarise(s, raw, warmup))
        res = result(s, _labels(ccs, knames), summaries, st, warmup)
        if _bpf_build(notices):
            res.extra["bpf_build"] = _bpf_build(notices)
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
            if _bpf_build(notices):
                res.extra["bpf_build"] = _bpf_build(notices)
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
