"""Examples 1 and 2 of Tang et al. at packet level, on the project simulator through
:mod:`mpcc.hetero.packet`: one seed of one scenario per job (:func:`packet_job`), jobs on a
process pool, the scenario edits (Algorithm 2's w, longer runs) and the Fig. 11–13/17-style plots
both examples share."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...plotting import save_figure
from ...progress import bar, run_jobs

EXAMPLE1_MEASURE = (1800.0, 5400.0)
EXAMPLE1_ALPHA0 = 50.0  # Algorithm 2's α₀ = FAST's initial α in the Example 1b files
EXAMPLE2_MEASURE = {"example2a": (1800.0, 3600.0), "example2b": (5400.0, 10800.0)}
PPS_PER_MBPS = 1e6 / (8.0 * 1500) / 1e3  # packets/ms per Mb/s for 1500-byte packets


def packet_job(args):
    """One seed of one scenario: per-group mean flow rate (packets/ms) in the window, α log,
    binned rates/queues for the plots, link loads and mean queues."""
    path, duration_s, seed, measure, bin_s, *rest = args
    adapt_w, label = rest if rest else (None, None)
    from ... import scenario as sc
    from ...hetero import packet

    s = sc.load(path)
    if duration_s is not None:
        s = stretch(s, duration_s)
    if adapt_w is not None:
        s = with_adapt_w(s, adapt_w)
    fr = packet.run(s, seed=seed, measure=measure, sample_interval_s=1.0)
    t0, t1 = fr.result.extra["measure_s"]
    ppm = 1e6 / (8.0 * s.packet_bytes) / 1e3
    out = {"name": label or Path(path).stem, "seed": seed, "wall_s": fr.wall_s, "measure_s": [t0, t1],
           "adapt_w": {g.name: float(g.algorithm.params["adapt_w"]) for g in s.groups if adapts(g)},
           "alpha0": {g.name: float(g.algorithm.alpha) for g in s.groups if adapts(g)},
           "rates": {g: r.rate_mbps * ppm for g, r in fr.result.groups.items()},
           # per-packet rate of drops + ECN marks of each group's own packets in the window
           "loss_rate": {g: r.extra["losses"] / r.extra["sent_pkts"]
                         for g, r in fr.result.groups.items() if r.extra.get("sent_pkts")},
           "utilization": {l: r.extra["utilization"] for l, r in fr.result.links.items()},
           "mark_or_drop_rate": {l: r.price for l, r in fr.result.links.items()},
           "mean_queue": packet.mean_queues(fr, t0, t1), "alpha": {}, "alpha_end": {},
           "series": {"rates": {}, "queues": None, "alpha": {}}}
    tb, qb = packet.binned_queues(fr, bin_s)
    out["series"]["queues"] = {"t": tb.tolist(), **{k: v.tolist() for k, v in qb.items()}}
    for g in s.groups:
        tr, rr = packet.binned_rates(fr, g.name, bin_s)
        out["series"]["rates"][g.name] = {"t": tr.tolist(), "rate": rr.tolist()}
        if adapts(g):  # FAST with Algorithm 2 (a fixed α has no trajectory)
            ta, aa = packet.alpha_trajectory(fr, g.name)
            out["series"]["alpha"][g.name] = {"t": [g.start_s] + ta.tolist(),
                                              "alpha": [g.algorithm.alpha] + aa.tolist()}
            sel = (ta >= t0) & (ta <= t1)
            if sel.any():
                out["alpha"][g.name] = float(aa[sel].mean())
            if aa.size:
                out["alpha_end"][g.name] = float(aa[-1])
            gi = packet.group_index(s, g.name)
            al = fr.alpha_log
            m = (al["group"] == gi) & (al["time_s"] >= t0) & (al["time_s"] <= t1)
            if m.any():  # Algorithm 2's inputs over the window: mean q (s) and l
                out.setdefault("alg2_q_s", {})[g.name] = float(al["q_s"][m].mean())
                out.setdefault("alg2_l", {})[g.name] = float(al["l"][m].mean())
    return out


def adapts(g) -> bool:
    """Whether group ``g`` is FAST with Algorithm 2 on."""
    return g.algorithm.name == "fast" and float(g.algorithm.params.get("adapt_interval_s", 0.0)) > 0


def run_packet_jobs(jobs, workers, progress, label):
    """:func:`packet_job` over ``jobs`` on ``workers`` processes, in job order."""
    with bar(label, len(jobs), enabled=progress, stderr=False, transient=False) as b:
        return list(run_jobs(packet_job, jobs, workers=max(1, int(workers or 1)), ordered=True, progress=b))


def mean_over_runs(rs, key, group):
    vals = [r[key][group] for r in rs if group in r.get(key, {})]
    return float(np.mean(vals)) if vals else None


def with_adapt_w(s, w: float):
    """The scenario with Algorithm 2's w (``adapt_w``, seconds) set to ``w`` in every FAST group
    that runs Algorithm 2 (``adapt_interval_s`` > 0); other groups are unchanged."""
    from dataclasses import replace

    from ... import algorithms

    groups = []
    for g in s.groups:
        if adapts(g):
            algo = algorithms.get({"name": "fast", **g.algorithm.params, "adapt_w": float(w)})
            g = replace(g, algorithm=algo, algorithm_spec={"name": "fast", **algo.params})
        groups.append(g)
    return s.with_changes(groups=tuple(groups))


def plot_packet(out_dir: Path, res, names, stem, labels):
    """Per configuration: per-flow rates over time (one sample seed thin, mean over seeds thick)
    and α(t) of the FAST groups (Figs. 11–16 (a)/(b)), plus queues of the first seed (Fig. 17)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = []
    fig, axes = plt.subplots(len(names), 3, figsize=(15, 3.0 * len(names)), squeeze=False)
    for row, name in zip(axes, names):
        rs = [r for r in res if r["name"] == name]
        if not rs:
            continue
        ax_r, ax_a, ax_q = row
        for i, (g, lab) in enumerate(labels.items()):
            ser = [r["series"]["rates"][g] for r in rs if g in r["series"]["rates"]]
            if not ser:
                continue
            t = np.asarray(ser[0]["t"])
            mean = np.mean([s["rate"] for s in ser], axis=0)
            ax_r.plot(t, ser[0]["rate"], color=f"C{i}", lw=0.6, alpha=0.5)
            ax_r.plot(t, mean, color=f"C{i}", lw=1.6, label=f"{lab} (mean of {len(ser)})")
            al = [r["series"]["alpha"][g] for r in rs if g in r["series"]["alpha"]]
            for k, a in enumerate(al):
                ax_a.step(a["t"], a["alpha"], where="post", color=f"C{i}", lw=0.8, alpha=0.6,
                          label=lab if k == 0 else None)
        if not any(r["series"]["alpha"] for r in rs):
            ax_a.text(0.5, 0.5, "α fixed (no Algorithm 2)", ha="center", va="center", transform=ax_a.transAxes)
        ax_r.set_title(f"{name}: rate per flow")
        ax_r.set_ylabel("packets/ms")
        ax_a.set_title(f"{name}: FAST α (every seed)")
        ax_a.set_ylabel("α (packets)")
        qs = rs[0]["series"]["queues"]
        for l in ("l12", "l23", "l34", "bottleneck"):
            if l in qs:
                ax_q.plot(qs["t"], qs[l], lw=1.0, label=l)
        ax_q.set_title(f"{name}: mean queue (seed {rs[0]['seed']})")
        ax_q.set_ylabel("packets")
        for ax in row:
            ax.set_xlabel("time (s)")
            ax.grid(alpha=0.3)
            if ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=7)
    fig.tight_layout()
    files += [str(f) for f in save_figure(fig, out_dir, stem)]
    return files


def stretch(s, duration_s):
    from dataclasses import replace
    return s.with_changes(duration_s=duration_s,
                          groups=tuple(replace(g, stop_s=duration_s) for g in s.groups),
                          background=tuple(replace(b, stop_s=duration_s) for b in s.background))
