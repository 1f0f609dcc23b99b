"""Files of ``mpcc compare --out DIR``: ``comparison.json`` (as ``--json``), ``comparison.png``
/ ``.svg`` (top: per-flow rate per group and per path, one bar per engine with its 95 % CI;
below: one panel per group with the window of the first flow's routes over time, sim solid and
testbed dashed on shared axes, fluid x_r τ_r as a dotted line), and the time series of every
engine that ran in ``subflows.parquet`` / ``links.parquet`` with an ``engine`` column."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import MpccError
from ..plotting import save_figure
from ..results import dumps

COLORS = {"fluid": "#4c72b0", "sim": "#dd8452", "sim-linux": "#c44e52", "testbed": "#55a868"}


SUBFLOW_COLUMNS = {"time_s": pa.float64(), "group": pa.string(), "flow": pa.int64(), "route": pa.int64(),
                   "cwnd_pkts": pa.float64(), "srtt_s": pa.float64(), "rate_mbps": pa.float64()}
LINK_COLUMNS = {"time_s": pa.float64(), "link": pa.string(), "queue_pkts": pa.float64()}


def _series(c, sim_key: str, testbed_attr: str, columns: dict) -> pa.Table | None:
    """One table of every run's time series (``columns`` with their types) with ``engine`` and
    ``seed`` columns: the simulator's ``timeseries[sim_key]`` and the testbed summaries'
    ``testbed_attr``, both mappings of column name → values."""
    parts = []
    for e, r in c.runs.items():
        if not r.ok or e == "fluid":
            continue
        if e in ("sim", "sim-linux"):
            runs = [(sr.seed, sr.timeseries[sim_key]) for sr in r.detail]
        else:
            runs = [(i, getattr(sm, testbed_attr)) for i, sm in enumerate(r.detail["summaries"])]
        for seed, cols in runs:
            n = len(cols["time_s"])
            parts.append(pa.table({"engine": [e] * n, "seed": [seed] * n,
                                   **{k: pa.array(cols[k], t) for k, t in columns.items()}}))
    return pa.concat_tables(parts) if parts else None


def subflow_table(c) -> pa.Table | None:
    return _series(c, "subflows", "subflows", SUBFLOW_COLUMNS)


def link_table(c) -> pa.Table | None:
    return _series(c, "links", "links_ts", LINK_COLUMNS)


def figure(c):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = c.scenario
    groups = list(s.groups)
    fig = plt.figure(figsize=(10, 3.2 + 2.2 * len(groups)))
    gs = fig.add_gridspec(1 + len(groups), 1, height_ratios=[1.4] + [1] * len(groups))
    ax = fig.add_subplot(gs[0])
    labels, cats = [], []
    for g in groups:
        labels.append(f"{g.name}\n{g.algorithm.describe()}")
        cats.append((g, None))
        if len(g.paths) > 1:
            for k, p in enumerate(g.paths):
                labels.append(f"{g.name} p{k + 1}\n{'→'.join(p)}")
                cats.append((g, k))
    ok = [e for e, r in c.runs.items() if r.ok]
    width = 0.8 / max(len(c.runs), 1)
    x = np.arange(len(cats))
    for i, e in enumerate(c.runs):
        r = c.runs[e]
        if not r.ok:
            ax.text(0.99, 0.95 - 0.08 * i, f"{e}: could not run", transform=ax.transAxes, ha="right", va="top",
                    fontsize=8, color=COLORS.get(e))
            continue
        vals, errs = [], []
        for g, k in cats:
            gr = r.result.groups[g.name]
            if k is None:
                vals.append(gr.rate_mbps)
                errs.append(gr.extra.get("ci95_mbps") or 0.0)
            else:
                vals.append(gr.path_rate_mbps[k])
                cis = gr.extra.get("path_ci95_mbps")
                errs.append(cis[k] if cis else 0.0)
        ax.bar(x + (i - (len(c.runs) - 1) / 2) * width, vals, width, yerr=errs if any(errs) else None, capsize=2,
               color=COLORS.get(e), label=e)
    ax.set_xticks(x, labels, fontsize=7)
    ax.set_ylabel("per-flow rate (Mb/s)")
    ax.set_title(f"{s.name}: engines compared (error bars: 95% CI over runs/flows)", fontsize=10)
    ax.legend(fontsize=8)
    ts = subflow_table(c)
    if ts is not None:  # flow 0 of the first run (seed) of each engine
        eng = np.asarray(ts.column("engine").to_pylist(), dtype=object)
        grp = np.asarray(ts.column("group").to_pylist(), dtype=object)
        flow, route, seed = (ts.column(n).to_numpy() for n in ("flow", "route", "seed"))
        from .diagnosis import MAX_PLAUSIBLE_CWND
        t_s, cwnd = ts.column("time_s").to_numpy(), ts.column("cwnd_pkts").to_numpy().copy()
        cwnd[cwnd > MAX_PLAUSIBLE_CWND] = np.nan  # corrupt tcp_info samples (see diagnosis)
        first_seed = {e: seed[eng == e][0] for e in set(eng)}
    first = None
    for gi, g in enumerate(groups):
        a = fig.add_subplot(gs[1 + gi], sharex=first)
        first = first or a
        for k, path in enumerate(g.paths):
            col = plt.cm.tab10(k % 10)
            if ts is not None:
                for e, style in (("sim", "-"), ("sim-linux", ":"), ("testbed", "--")):
                    m = (eng == e) & (grp == g.name) & (flow == 0) & (route == k) & (seed == first_seed.get(e))
                    if np.any(m):
                        a.plot(t_s[m], cwnd[m], style, lw=0.8, color=col, label=f"{e} route {k + 1} ({'→'.join(path)})")
            fl = c.routes.get("fluid")
            if fl:
                a.axhline(fl[g.name][k]["mean_cwnd_pkts"], ls=":", color=col, lw=1.2, label=f"fluid x·τ route {k + 1}")
        a.set_ylabel("cwnd (pkts)")
        a.set_title(f"{g.name} ({g.algorithm.describe()}), flow 0: sim solid, testbed dashed, fluid dotted", fontsize=8)
        if a.get_legend_handles_labels()[0]:
            a.legend(fontsize=6, loc="upper right", ncol=2)
    first and first.figure.axes[-1].set_xlabel("time (s)")
    fig.tight_layout()
    return fig


def write_outputs(c, out: Path) -> list[Path]:
    if out.exists() and not out.is_dir():
        raise MpccError(f"--out {out}: exists and is not a directory (fix: choose a directory path)")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise MpccError(f"--out {out}: cannot create it: {e.strerror} (fix: choose a writable directory)") from None
    paths = []
    (out / "comparison.json").write_text(dumps(c.to_dict()) + "\n")
    paths.append(out / "comparison.json")
    for name, table in (("subflows", subflow_table(c)), ("links", link_table(c))):
        if table is not None:
            pq.write_table(table, out / f"{name}.parquet")
            paths.append(out / f"{name}.parquet")
    paths += save_figure(figure(c), out, "comparison", tight=True)
    return paths
