"""Independent repetitions of a scenario: seeds ``seed, seed+1, …`` run in parallel on local
cores (threads: the Rust core releases the GIL while it simulates) or on a Dask distributed
cluster (``scheduler="tcp://host:8786"``, or a ``distributed.Client``). A run is a pure function
of (scenario, seed), so the results do not depend on the executor."""

from __future__ import annotations

from typing import Any, Callable

from ..errors import MpccError
from ..progress import bar, default_workers, run_jobs
from ..results import GroupResult, LinkResult, RunResult, ci95
from ..scenario import Scenario
from .engine import SimRun, run


class SimRuns(list):
    """The runs of :func:`run_many` (a list of :class:`SimRun`, in seed order) and their
    aggregate ``result`` (means over runs with 95 % confidence half-widths)."""

    @property
    def result(self) -> RunResult:
        return aggregate(list(self))


def aggregate(runs: list[SimRun]) -> RunResult:
    """Mean of every number over the runs; ``ci95_mbps`` per group (of the per-flow rate) and
    ``path_ci95_mbps``; ``runs`` and ``seeds`` in ``extra``."""
    if not runs:
        raise ValueError("no runs to aggregate")
    import numpy as np   # statistics over runs only (one run's summary needs no numpy)

    first = runs[0].result
    groups = {}
    for name, g in first.groups.items():
        rates = [r.result.groups[name].rate_mbps for r in runs]
        paths = np.array([r.result.groups[name].path_rate_mbps for r in runs])
        extra = {"ci95_mbps": ci95(rates), "path_ci95_mbps": [ci95(paths[:, k]) for k in range(paths.shape[1])],
                 "runs_mbps": rates}
        for key in ("losses", "drops", "marks", "loss_events", "timeouts", "retransmits", "total_mbps", "ds"):
            extra[key] = float(np.mean([r.result.groups[name].extra[key] for r in runs]))
        if "connection_limits" in g.extra:
            extra["connection_limits"] = {k: np.nanmean([r.result.groups[name].extra["connection_limits"][k]
                                                         for r in runs], axis=0).tolist()
                                          for k in g.extra["connection_limits"]}
        groups[name] = GroupResult(g.algorithm, g.count, float(np.mean(rates)), paths.mean(axis=0).tolist(), extra)
    links = {}
    for name, l in first.links.items():
        loads = [r.result.links[name].load_mbps for r in runs]
        prices = [r.result.links[name].price for r in runs]
        links[name] = LinkResult(float(np.mean(loads)), float(np.mean(prices)),
                                 {"ci95_load_mbps": ci95(loads), "ci95_price": ci95(prices),
                                  "utilization": float(np.mean([r.result.links[name].extra["utilization"] for r in runs]))})
    return RunResult("sim", first.scenario, groups, links,
                     {"runs": len(runs), "seeds": [r.seed for r in runs], "measure_s": first.extra["measure_s"],
                      **{k: first.extra[k] for k in ("mptcp", "receiver") if k in first.extra}})


def _one(scenario: Scenario, seed: int, sample_interval_s: float, measure) -> SimRun:
    return run(scenario, seed=seed, sample_interval_s=sample_interval_s, measure=measure, warn=False)


def run_many(scenario: Scenario, runs: int, seed: int = 0, scheduler: Any = None, progress: bool = True, *,
             sample_interval_s: float = 0.1, measure: tuple[float, float] | None = None,
             workers: int | None = None, on_done: Callable[[SimRun], None] | None = None) -> SimRuns:
    """Run seeds ``seed … seed+runs−1``. Local threads by default (``workers`` = CPU count);
    ``scheduler`` = a Dask scheduler address or ``distributed.Client`` sends them to Dask."""
    if runs < 1:
        raise MpccError(f"--runs must be ≥ 1, got {runs} (fix: use e.g. --runs 1)")
    seeds = [seed + i for i in range(runs)]
    results: dict[int, SimRun] = {}
    from .engine import warn_phase_lock
    warn_phase_lock(scenario)  # once, not per seed
    if runs == 1 and scheduler is None:  # one run: progress over simulated time
        one = run(scenario, seed=seed, sample_interval_s=sample_interval_s, measure=measure,
                  progress=True if progress else None, warn=False)
        if on_done:
            on_done(one)
        return SimRuns([one])
    with bar(f"sim {scenario.name}", runs, enabled=progress) as b:
        if scheduler is None:
            done = run_jobs(lambda s: _one(scenario, s, sample_interval_s, measure), seeds,
                            workers=workers or default_workers(), kind="thread", progress=b)
        else:
            done = _dask_runs(scheduler, scenario, seeds, sample_interval_s, measure, b)
        for r in done:
            results[r.seed] = r
            if on_done:
                on_done(r)
    return SimRuns(results[s] for s in seeds)


def _dask_runs(scheduler, scenario, seeds, sample_interval_s, measure, progress):
    try:
        from distributed import Client, as_completed as dask_completed
    except ImportError:  # pragma: no cover - dependency of the package
        raise MpccError("--scheduler needs dask[distributed] (fix: pip install 'dask[distributed]')") from None
    own = not isinstance(scheduler, Client)
    try:
        client = Client(scheduler, timeout=10) if own else scheduler
    except OSError as e:
        raise MpccError(f"cannot reach the Dask scheduler at {scheduler}: {e} (fix: start `dask scheduler` or check the address)") from None
    try:
        futs = [client.submit(_one, scenario, s, sample_interval_s, measure, pure=False) for s in seeds]
        for f in dask_completed(futs):
            progress.advance()
            yield f.result()
    finally:
        if own:
            client.close()
