"""PNG + SVG figures of the fluid engine (matplotlib, Agg backend)."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ..plotting import save_figure  # noqa: E402


def _save(fig, out: Path, stem: str) -> list[Path]:
    return save_figure(fig, out, stem, dpi=130, tight=True)


def equilibrium_bars(scenario, eq, out: Path) -> list[Path]:
    net, groups = eq.network, eq.groups
    fig, ax = plt.subplots(figsize=(7, 3.5))
    labels, vals, lo, hi = [], [], [], []
    for s, g in enumerate(groups):
        r = np.flatnonzero(net.source_of_route == s)
        for i, ri in enumerate(r):
            labels.append(f"{g.name}\npath {i + 1}")
            vals.append(scenario.pps_to_mbps(eq.x[ri]))
            lo.append(scenario.pps_to_mbps(eq.x_min[ri]))
            hi.append(scenario.pps_to_mbps(eq.x_max[ri]))
    xs = np.arange(len(vals))
    ax.bar(xs, vals, color="tab:blue")
    err = np.array([np.array(vals) - np.array(lo), np.array(hi) - np.array(vals)])
    if np.any(err > 1e-9):
        ax.errorbar(xs, vals, yerr=err, fmt="none", ecolor="k", capsize=4, label="equilibrium set")
        ax.legend()
    ax.set_xticks(xs, labels, fontsize=8)
    ax.set_ylabel("rate per flow (Mb/s)")
    ax.set_title(f"fluid equilibrium — {scenario.name}")
    return _save(fig, out, "equilibrium")


def trajectories(scenario, tr, out: Path) -> list[Path]:
    net, groups = tr.network, tr.groups
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    for s, g in enumerate(groups):
        for i, r in enumerate(np.flatnonzero(net.source_of_route == s)):
            a1.plot(tr.t, scenario.pps_to_mbps(1.0) * tr.x[:, r], label=f"{g.name} path {i + 1}")
    a1.set_ylabel("rate per flow (Mb/s)")
    a1.legend(fontsize=8)
    for l, name in enumerate(net.link_names):
        if np.any(tr.p[:, l] > 0):
            a2.plot(tr.t, tr.p[:, l], label=name)
    a2.set_ylabel("price p_l")
    a2.set_xlabel("time (s)")
    a2.legend(fontsize=8)
    a1.set_title(f"fluid dynamics (3)–(4) — {scenario.name}")
    return _save(fig, out, "dynamics")


def sweep(points, out: Path) -> list[Path]:
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    metrics = (("mp_share", "multipath share (friendliness, ↓ friendlier)"),
               ("max_real", "max Re λ(J*) (responsiveness, ↓ faster)"),
               ("oscillation", "D_s (oscillation, ↓ smoother)"))
    ns = sorted({p.n for p in points})
    etas = sorted({p.eta for p in points})
    for ax, (key, title) in zip(axes, metrics):
        for n in ns:
            for eta in etas:
                pts = sorted((p for p in points if p.n == n and p.eta == eta), key=lambda p: p.beta)
                lab = f"n={'∞' if math.isinf(n) else int(n)}, η={eta:g}"
                ax.plot([p.beta for p in pts], [getattr(p, key) for p in pts], marker="o", label=lab)
        ax.set_xlabel("β")
        ax.set_title(title, fontsize=9)
    axes[0].legend(fontsize=7)
    fig.suptitle("generalized (β, η, n) design space, Peng et al. eq. (16) / Table II")
    return _save(fig, out, "sweep")


def friendliness(rows, out: Path) -> list[Path]:
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.bar([r.algorithm for r in rows], [r.mp_mbps for r in rows], label="multipath flow")
    ax.bar([r.algorithm for r in rows], [r.sp_mbps for r in rows], bottom=[r.mp_mbps for r in rows],
           label="single-path Reno")
    ax.set_ylabel("throughput (Mb/s)")
    ax.set_title("friendliness on the Fig. 1 network (Theorem III.4)")
    ax.legend(fontsize=8)
    return _save(fig, out, "friendliness")
