"""Testbed output files, the same shapes as the simulator's:

  result.json        the RunResult (--json contract, engine "testbed")
  subflows.parquet   run, time_s, group, flow, route, cwnd_pkts, srtt_s, rate_mbps (+ ssthresh_pkts, retrans)
  links.parquet      run, time_s, link, queue_pkts, drops, marks, load_mbps  (drops/marks per sample interval)
  cwnd.png           congestion windows of flow 0 of every group, per route; queue of every link
"""

from __future__ import annotations

from pathlib import Path

from ..results import RunResult


def write(res: RunResult, summaries: list, out: Path) -> list[Path]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    out.mkdir(parents=True, exist_ok=True)
    files = [out / "result.json"]
    files[0].write_text(res.to_json())
    for name, attr in (("subflows", "subflows"), ("links", "links_ts")):
        cols: dict[str, list] = {}
        for i, sm in enumerate(summaries):
            d = getattr(sm, attr)
            n = len(next(iter(d.values()), []))
            cols.setdefault("run", []).extend([i] * n)
            for k, v in d.items():
                cols.setdefault(k, []).extend(v)
        table = pa.table({k: pa.array(v) for k, v in cols.items()}) if cols else pa.table({})
        path = out / f"{name}.parquet"
        pq.write_table(table, path)
        files.append(path)
    if summaries:
        files.append(plot(res, summaries[0], out / "cwnd.png"))
    return files


def plot(res: RunResult, sm, path: Path) -> Path:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    sub = sm.subflows
    groups = list(dict.fromkeys(sub["group"]))
    links = list(dict.fromkeys(sm.links_ts["link"]))
    rows = len(groups) + (1 if links else 0)
    fig, axes = plt.subplots(max(rows, 1), 1, figsize=(8, 2.6 * max(rows, 1)), sharex=True, squeeze=False)
    t = np.asarray(sub["time_s"])
    g_arr, f_arr, r_arr = np.asarray(sub["group"]), np.asarray(sub["flow"]), np.asarray(sub["route"])
    cw = np.asarray(sub["cwnd_pkts"])
    for ax, g in zip(axes[:, 0], groups):
        for r in sorted(set(r_arr[(g_arr == g) & (f_arr == 0)])):
            m = (g_arr == g) & (f_arr == 0) & (r_arr == r)
            ax.plot(t[m], cw[m], lw=0.8, label=f"route {r}")
        ax.set_ylabel("cwnd (pkts)")
        ax.set_title(f"{g}: {res.groups[g].algorithm}, flow 0", fontsize=9)
        ax.legend(fontsize=7, loc="upper right")
    if links:
        ax = axes[-1, 0]
        lt, ll, lq = (np.asarray(sm.links_ts[k]) for k in ("time_s", "link", "queue_pkts"))
        for name in links:
            ax.plot(lt[ll == name], lq[ll == name], lw=0.8, label=name)
        ax.set_ylabel("queue (pkts)")
        ax.legend(fontsize=7, loc="upper right")
    axes[-1, 0].set_xlabel("time (s)")
    fig.suptitle(f"testbed: {res.scenario}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
