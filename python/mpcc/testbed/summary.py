"""Summaries of kernel runs: one run's raw samples (:class:`engine.RawRun`) → a :class:`Summary`
(per-flow and per-route rates over each group's measurement window, what limited each subflow,
the MPTCP connection level, link loads and prices, time series), and the runs of a scenario →
a :class:`mpcc.results.RunResult` (engine "testbed"). ``RawRun`` and ``Settings`` are
:mod:`mpcc.testbed.engine`'s (annotations only: no import, so no cycle)."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
import numpy as np

from ..results import GroupResult, LinkResult, RunResult
from ..scenario import Scenario
from . import health

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
    health: dict = field(default_factory=dict)  # health.Health.record() of the run (+ "attempts")


ROUTE_KEYS = ("cwnd_limited", "rwnd_limited", "sndbuf_limited", "queued_kb")


def route_limits(rows: np.ndarray, a: float, b: float, mss: int) -> dict[str, float]:
    """What limited one subflow in [a, b]: the share of samples with a full window in flight
    (unacked ≥ cwnd), and tcp_info's receive-window- and send-buffer-limited time ÷ busy time;
    ``queued_kb``: the mean of the data the subflow holds, in flight (unacked · ``mss``) and not
    yet sent (tcpi_notsent_bytes), the simulator's ``path_queued_kb``."""
    w = (rows["t"] >= a) & (rows["t"] <= b)
    if not w.any():
        return {k: math.nan for k in ROUTE_KEYS}
    r = rows[w]
    busy = float(r["busy_us"][-1] - r["busy_us"][0])
    share = (lambda k: float(r[k][-1] - r[k][0]) / busy if busy > 0 else 0.0)  # noqa: E731
    return {"cwnd_limited": float(np.mean(r["unacked"] >= r["cwnd"])),
            "rwnd_limited": share("rwnd_limited_us"), "sndbuf_limited": share("sndbuf_limited_us"),
            "queued_kb": float(np.mean(r["unacked"] * mss + r["notsent"])) / 1024}


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
            per_flow = [route_limits(sd[(sd["group"] == gi) & (sd["flow"] == k) & (sd["route"] == j)], a, b,
                                     s.packet_bytes - 52) for k in range(g.count)]
            limits[gi].append({key: float(np.nanmean([x[key] for x in per_flow])) if per_flow else math.nan
                               for key in ROUTE_KEYS})
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
        t = f["t_mono_s"]
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
    hl = raw.health.record() if raw.health is not None else {}
    return Summary(flow_rate, goodput, path_rate, link, sub, links_ts, raw.diag, limits, conn, hl)


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
                                     for k in ROUTE_KEYS}
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
    hl = [sm.health for sm in summaries if sm.health]
    return RunResult("testbed", s.name, groups, links,
                     extra={"runs": len(summaries), "duration_s": s.duration_s, "warmup_s": warmup_s,
                            "sample_ms": st.sample_ms, "receiver": st.receiver, "kernel": os.uname().release,
                            "health": health.aggregate(hl, sum(h.get("attempts", 1) for h in hl))
                            if len(hl) == len(summaries) and hl else None})
