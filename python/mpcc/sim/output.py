"""Files of a simulation: ``result.json`` (output contract), ``subflows.parquet`` and
``links.parquet`` (time series; with several runs a ``seed`` column), ``cwnd.png`` (window
trajectories like Peng et al. Figs. 3–4) and ``queues.png``. Everything is written to a
temporary directory next to the target and moved into place only once complete, so a failed
run leaves no partial output."""

from __future__ import annotations

from pathlib import Path

from ..outdir import mark_partial, staged
from ..results import RunResult


def _concat(runs, key: str):
    """One pyarrow table of the runs' time series (with several runs, a ``seed`` column)."""
    import numpy as np
    import pyarrow as pa

    if len(runs) == 1:
        return runs[0].timeseries[key].to_arrow()
    tables = [r.timeseries[key].to_arrow({"seed": np.full(r.timeseries[key].num_rows, r.seed, dtype=np.int64)})
              for r in runs]
    return pa.concat_tables(tables, promote_options="permissive")


def write_outputs(out_dir: str | Path, runs, result: RunResult, *, plots: bool = True,
                  partial: tuple[int, int, str] | None = None) -> list[Path]:
    """Write the files of ``runs`` into ``out_dir`` through :func:`mpcc.outdir.staged`.
    ``partial`` = (completed, requested, reason) marks an interrupted ``--runs`` (PARTIAL.json
    and ``"partial": true`` in result.json)."""
    import pyarrow.parquet as pq

    out = Path(out_dir)
    with staged(out) as tmp:
        if partial is not None:
            result.extra.update(partial=True, runs_completed=partial[0], runs_requested=partial[1])
            mark_partial(tmp, *partial)
        (tmp / "result.json").write_text(result.to_json() + "\n")
        pq.write_table(_concat(runs, "subflows"), tmp / "subflows.parquet")
        pq.write_table(_concat(runs, "links"), tmp / "links.parquet")
        if plots:
            plot_cwnd(runs[0], tmp / "cwnd.png")
            plot_queues(runs[0], tmp / "queues.png")
        names = sorted(p.name for p in tmp.iterdir())
    return [out / n for n in names]


def plot_cwnd(run, path: Path, max_flows: int = 2) -> None:
    """Window of every route of the first ``max_flows`` flows of each group over time."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    t = run.timeseries["subflows"]
    groups = [g for g in run.scenario.groups]
    fig, axes = plt.subplots(len(groups), 1, figsize=(8, 2.6 * len(groups)), squeeze=False, sharex=True)
    gcol, time_s, flow, route, cwnd = (t[k] for k in ("group", "time_s", "flow", "route", "cwnd_pkts"))
    for ax, g in zip(axes[:, 0], groups):
        for f in range(min(g.count, max_flows)):
            total = {}
            for r in range(len(g.paths)):
                sel = (gcol == g.name) & (flow == f) & (route == r)
                if sel.any():
                    ax.plot(time_s[sel], cwnd[sel], lw=0.8, label=f"flow {f} route {r + 1} ({'→'.join(g.paths[r])})")
                    for t, w in zip(time_s[sel], cwnd[sel]):
                        total[t] = total.get(t, 0.0) + w
            if len(g.paths) > 1 and total:  # the aggregate window, red as in Peng et al. Fig. 3
                ts = np.array(sorted(total))
                ax.plot(ts, [total[t] for t in ts], lw=0.8, color="red", label=f"flow {f} total")
        ax.set_ylabel("cwnd (pkts)")
        ax.set_title(f"{g.name}: {g.algorithm.describe()}", fontsize=9)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="upper right")
    axes[-1, 0].set_xlabel("time (s)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_queues(run, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = run.timeseries["links"]
    lcol, time_s, q = t["link"], t["time_s"], t["queue_pkts"]
    fig, ax = plt.subplots(figsize=(8, 3))
    for l in run.scenario.links:
        sel = lcol == l.name
        ax.plot(time_s[sel], q[sel], lw=0.8, label=f"{l.name} (buffer {l.buffer_pkts})")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("queue (pkts)")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
