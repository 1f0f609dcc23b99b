"""Jiang, Cai, Towsley §5 on the real kernel (:mod:`mpcc.testbed`): the MTCP presets and MSTCP as
BPF struct_ops on upstream MPTCP, linkem links. Two measurements, both on the scenarios the
simulator runs (:mod:`.scenarios`, :func:`mpcc.mtc.flappiness.random_loss_scenario`):

  utilisation() -> {(algorithm, n, buffer): {"U": (mean, ci95), "per_run": [...], "health": …}}
      Figs. 9–10: one MTC flow, one subflow on each of n paths (5 Mb/s, D = 100 ms, buffer B
      packets); U = Σ link load / (n · 5 Mb/s) after the warm-up.
  flappiness() -> {(algorithm, n): {metric: value, metric_se: …, "trace": …}}
      Fig. 13 / §4.2: n uncongested paths with random loss p per packet; the metric of
      :func:`mpcc.mtc.flappiness.flappiness` (20-RTT smoothing, as the model and the simulator)
      on the kernel's per-subflow cwnd (tcp_info, every 100 ms), one value per run.

Each cell carries its runs' health (``"health"``: :func:`mpcc.testbed.health.aggregate`'s record).

A cell whose run fails twice is ``{"failed": reason}`` (:func:`..common.kernel_cells`). With
``lock`` (a file), each cell holds an exclusive flock on it while it runs (``common.kernel_lock_held``), so that on a
shared testbed other users' runs interleave between cells instead of disturbing them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ... import scenario as scen
from ...mtc import flappiness as fl
from ...results import ci95
from ...testbed import engine
from ..common import kernel_cells, kernel_lock_held as held
from ..peng2016.budget import KernelRun
from .scenarios import fig9_scenario

CAPACITY_MBPS, RTT_S = 5.0, 0.1  # §5.1 paths (fig9_scenario's defaults)


def _run(text: str, run: KernelRun, out: Path | None, progress: bool, sample_ms: float = 100.0):
    s = scen.loads(text, "<jiang2011 kernel>")
    st = engine.settings_from(s, runs=run.runs, duration_s=run.duration_s, warmup_s=run.warmup_s, sample_ms=sample_ms)
    return s, engine.run_detailed(s, st, out, progress)


def utilisation(algorithms, cells, run: KernelRun, out: Path | None = None, progress: bool = True,
                lock: Path | None = None) -> dict:
    """U of one MTC flow for each algorithm and (n, buffer) cell (mean and 95 % CI over runs)."""
    def measure(key):
        alg, n, buf = key
        text = fig9_scenario(alg, n, buf, duration_s=run.duration_s, measure_from_s=run.warmup_s)
        with held(lock):
            s, (res, sms) = _run(text, run, _sub(out, f"util-{alg}-n{n}-b{buf}"), progress)
        per_run = [sum(sm.link[lk.name]["load_mbps"] for lk in s.links) / (n * CAPACITY_MBPS) for sm in sms]
        return {"U": (float(np.mean(per_run)), ci95(per_run) if len(per_run) > 1 else None), "per_run": per_run,
                "health": res.extra.get("health")}

    return kernel_cells([(a, n, b) for a in algorithms for (n, b) in cells], measure)


def flappiness(algorithms, ns, loss: float, run: KernelRun, out: Path | None = None, progress: bool = True,
               smooth_rtts: float = 20.0, lock: Path | None = None) -> dict:
    """The flappiness metric of one MTC flow on n random-loss paths, per algorithm and n."""
    def measure(key):
        alg, n = key
        text = fl.random_loss_scenario(alg, n, loss, run.duration_s, RTT_S)
        with held(lock):
            _, (res, sms) = _run(text, run, _sub(out, f"flap-{alg}-n{n}"), progress)
        traces = [window_grid(sm.subflows, run.warmup_s, RTT_S) for sm in sms]
        size = min(t.size for t, _ in traces)
        t, w = traces[0][0][:size], np.stack([w[:size] for _, w in traces])
        row = fl.flappiness_of_replicas(t, w, smooth_s=smooth_rtts * RTT_S)
        sm = fl.moving_average(t, w[0], smooth_rtts * RTT_S)
        row["trace"] = {"time_s": t.round(2).tolist(), "cwnd": sm.T.round(2).tolist()}
        row["mean_total_window"] = float(w.sum(axis=2).mean())
        row["health"] = res.extra.get("health")
        return row

    return kernel_cells([(a, n) for a in algorithms for n in ns], measure)


def window_grid(subflows: dict, from_s: float, step_s: float, group: str = "mtc", flow: int = 0):
    """(t[T], cwnd[T, n]) of one flow's subflows on a common uniform grid from ``from_s`` (the
    kernel samples each subflow with its own timestamp; linear interpolation between samples)."""
    t = np.asarray(subflows["time_s"], float)
    route = np.asarray(subflows["route"], int)
    w = np.asarray(subflows["cwnd_pkts"], float)
    m = (np.asarray(subflows["group"]) == group) & (np.asarray(subflows["flow"]) == flow)
    routes = sorted(set(route[m]))
    if len(routes) < 2:
        raise engine.RunFailed(f"flappiness needs ≥ 2 subflows; the kernel opened {len(routes)}")
    start = max(from_s, max(t[m & (route == k)].min() for k in routes))
    end = min(t[m & (route == k)].max() for k in routes)
    grid = np.arange(start, end, step_s)
    return grid - grid[0], np.stack([np.interp(grid, t[m & (route == k)], w[m & (route == k)]) for k in routes], axis=1)


def _sub(out: Path | None, name: str) -> Path | None:
    return Path(out) / name if out else None
