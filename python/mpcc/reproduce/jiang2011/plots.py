"""The figures of Jiang, Cai, Towsley from the dicts of :mod:`.model` and :mod:`.sim` (matplotlib,
``fig3.png`` …, one call per figure appending the written paths to ``files``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...mtc import equilibrium, flappiness, utilization as ut

ALG_LABEL = {"mstcp": "MSTCP", "coupled-decrease": "Coupled Decrease",
             "coupled-increase": "Coupled Increase", "fully-coupled": "Fully Coupled"}


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, out: Path, name: str, fmt: str, files: list):
    path = out / f"{name}.{fmt}"
    fig.savefig(path, dpi=120, bbox_inches="tight")
    _plt().close(fig)
    files.append(str(path))


def plot_fig3(d, out, fmt, files):
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, key, title in ((axes[0], "mimd", "(a) STCP / MSTCP, eq. (6)"), (axes[1], "aimd", "(b) TCP, eq. (10)")):
        for g, u in zip(d["gamma"], d[key]):
            ax.plot(d["f"], u, label=f"γ = {g:g}")
        ax.set(xlabel="f", ylabel="per-cycle utilization", title=title, ylim=(0, 1.02))
        ax.legend()
    _save(fig, out, "fig3", fmt, files)


def plot_fig4(d, out, fmt, files):
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 4))
    for alg in ut.ALGORITHMS:
        line, = ax.plot(d["n"], d["closed"][alg], marker=".", label=f"{ALG_LABEL[alg]} (closed form)")
        ax.plot(d["orbit"][alg]["n"], d["orbit"][alg]["U"], "o", mfc="none", color=line.get_color())
    ax.set(xlabel="number of subflows n", ylabel="link utilization U",
           title=f"Fig. 4: b = {d['b']:g}, W0 = {d['w0']:g} (circles: numerical orbit)", ylim=(0, 1))
    ax.legend(fontsize=8)
    _save(fig, out, "fig4", fmt, files)


def plot_fig6(d, out, fmt, files):
    plt = _plt()
    fig, axes = plt.subplots(2, 2, figsize=(10, 7), sharex=True, sharey=True, layout="constrained")
    for ax, alg, tag in zip(axes.ravel(), ut.ALGORITHMS, "abcd"):
        for n in d["n"]:
            ax.plot(d["m"], d["U"][alg][str(n)], marker=".", label=f"n = {n}")
        ax.set(title=f"({tag}) {ALG_LABEL[alg]}", xlabel="number of flows m", ylabel="U", ylim=(0, 1.02))
        ax.legend(fontsize=8)
    fig.suptitle(f"Fig. 6: Table 1, b = {d['b']:g}, W0 = {d['w0']:g}")
    _save(fig, out, "fig6", fmt, files)


def plot_fig7(out, fmt, files, tau=0.02, a=1.0, b=0.5, cases=((0.01, 0.02), (0.01, 0.01))):
    from scipy.integrate import solve_ivp

    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.6))
    for ax, p, tag in zip(axes, cases, "ab"):
        p = np.array(p)
        wmax = 1.3 * np.sqrt(a / b * (1 - p.min()) / p.min())
        g = np.linspace(0.0, wmax, 21)
        W1, W2 = np.meshgrid(g, g)
        W = np.stack([W1, W2], axis=-1)
        dW = equilibrium.rhs15(W, p, tau, 1.0, 1.0, a, b)
        ax.streamplot(W1, W2, dW[..., 0], dW[..., 1], color="0.6", density=1.0, linewidth=0.7)
        for frac in ((0.1, 0.95), (0.95, 0.1), (0.45, 0.5), (0.9, 0.95), (0.05, 0.05), (0.15, 0.6)):
            start = np.array(frac) * wmax
            sol = solve_ivp(lambda t, w: equilibrium.rhs15(w, p, tau, 1.0, 1.0, a, b), (0, 60),
                            np.array(start, float), rtol=1e-8, max_step=0.5)
            ax.plot(sol.y[0], sol.y[1], "b-", lw=1)
        e = equilibrium.closed_form(1.0, 1.0, p, a, b)
        if p[0] < p[1]:
            ax.plot([e.total_window], [0], "ro", ms=7)
            ax.plot([0], [np.sqrt(a / b * (1 - p[1]) / p[1])], "o", color="r", mfc="none", ms=7)
        else:
            ax.plot([e.total_window, 0], [0, e.total_window], "r-", lw=2)
        ax.set(xlim=(0, wmax), ylim=(0, wmax), xlabel="w1", ylabel="w2",
               title=f"({tag}) p1 = {p[0]:g}, p2 = {p[1]:g}")
    fig.suptitle("Fig. 7: Fully Coupled MTCP, τ = 0.02, a = 1, b = 1/2 (red: equilibria; filled = stable)")
    _save(fig, out, "fig7", fmt, files)


def plot_fig8(d, out, fmt, files):
    plt = _plt()
    fig, ax = plt.subplots(figsize=(5.5, 4.6))
    used = np.array(d["paths_used"])
    levels = np.arange(0.5, len(d["loss"]) + 1.0, 1.0)
    cs = ax.contourf(d["alpha"], d["beta"], used, levels=levels, cmap="viridis")
    cb = fig.colorbar(cs, ticks=range(1, len(d["loss"]) + 1))
    cb.set_label("paths used N")
    ax.set(xlabel="α", ylabel="β", title="Fig. 8: p = " + ", ".join(f"{p:g}" for p in d["loss"]))
    _save(fig, out, "fig8", fmt, files)


def plot_fig9_10(d, out, fmt, files, suffix="", what="deterministic-drop fluid"):
    plt = _plt()
    for name, xkey, ckey in (("fig9", "n", "gamma"), ("fig10", "gamma", "n")):
        fig, axes = plt.subplots(2, 2, figsize=(10, 7), sharey=True, layout="constrained")
        for ax, alg, tag in zip(axes.ravel(), ut.ALGORITHMS, "abcd"):
            sim, dash = np.array(d["sim"][alg]), np.array(d["dashed"][alg])
            if name == "fig10":
                sim, dash = sim.T, dash.T
            for k, cval in enumerate(d[ckey]):
                line, = ax.plot(d[xkey], sim[k], marker="o", label=f"{'γ' if ckey == 'gamma' else 'n'} = {cval:g}")
                if np.isfinite(dash[k]).any():
                    ax.plot(d[xkey], dash[k], "--", color=line.get_color())
            ax.set(title=f"({tag}) {ALG_LABEL[alg]}", xlabel="subflows n" if xkey == "n" else "buffer ratio γ",
                   ylabel="U", ylim=(0, 1.02))
            ax.legend(fontsize=7)
        fig.suptitle(f"{'Fig. 9' if name == 'fig9' else 'Fig. 10'} ({what}; "
                     "solid = simulation, dashed = (6)/(10) at measured f, TCP for Coupled Increase)")
        _save(fig, out, name + suffix, fmt, files)


def plot_flappiness(d, out, fmt, files):
    plt = _plt()
    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    for ax, key, lab in zip(axes, ("dominance", "mean_dwell_s", "concentration"),
                            ("fraction of time one subflow dominates", "mean dwell time (s)",
                             "normalized Herfindahl concentration")):
        for k, alg in enumerate(ut.ALGORITHMS):
            for engine in d.get("engines", ["window"]):
                rows = [r for r in d["rows"] if r["algorithm"] == alg and r.get("engine", "window") == engine]
                ax.errorbar([r["subflows"] for r in rows], [r[key] for r in rows],
                            yerr=[r[key + "_se"] for r in rows], marker="o" if engine == "window" else "s",
                            ls="-" if engine == "window" else "--", color=f"C{k}", capsize=3,
                            label=f"{ALG_LABEL[alg]} ({'window model' if engine == 'window' else 'packet sim'})")
        ax.set(xlabel="subflows n", ylabel=lab, xticks=sorted({r["subflows"] for r in d["rows"]}))
    axes[0].legend(fontsize=7)
    fig.suptitle(f"Flappiness (solid: window model, dashed: packet simulator): p = {d['loss']:g} on every "
                 f"path, τ = {d['rtt']:g} s, {d['rounds']} RTTs × {d['replicas']} replicas, "
                 f"{d['smooth_s']:g} s smoothing")
    _save(fig, out, "flappiness", fmt, files)


def plot_trace_example(out, fmt, files, loss=0.002, rtt=0.1, rounds=6000, seed=3):
    """Fig. 13-like sample paths of the window model (smoothed over 20 RTTs)."""
    plt = _plt()
    fig, axes = plt.subplots(4, 1, figsize=(10, 9), sharex=True)
    for ax, alg in zip(axes, ("fully-coupled", "mstcp", "coupled-increase", "coupled-decrease")):
        t, tr = flappiness.window_trace(alg, [loss, loss], rtt, rounds, 1, seed)
        w = flappiness.moving_average(t, tr[0], 20 * rtt)
        ax.plot(t, w[:, 0], lw=0.8)
        ax.plot(t, w[:, 1], lw=0.8)
        m = flappiness.flappiness(t, tr[0], smooth_s=20 * rtt)
        ax.set(ylabel="cwnd (pkts)", title=f"{ALG_LABEL[alg]}: dominance {m.dominance:.2f}, "
                                           f"dwell {m.mean_dwell_s:.1f} s")
    axes[-1].set_xlabel("time (s)")
    _save(fig, out, "fig13_window_model", fmt, files)


def plot_fig11_packet(d, out, fmt, files):
    plt = _plt()
    fig, axes = plt.subplots(2, 2, figsize=(10, 7), sharex=True, sharey=True, layout="constrained")
    for ax, alg, tag in zip(axes.ravel(), ut.ALGORITHMS, "abcd"):
        for k, n in enumerate(d["n"]):
            ax.plot(d["m"], d["sim"][alg][k], "o-", color=f"C{k}", label=f"n = {n} (packet sim)")
            ax.plot(d["m"], d["table1"][alg][k], "--", color=f"C{k}")
        ax.set(title=f"({tag}) {ALG_LABEL[alg]}", xlabel="flows m", ylabel="U", ylim=(0, 1.02), xscale="log")
        ax.legend(fontsize=7)
    fig.suptitle("Fig. 11 (packet simulator; dashed: Table 1, W0 = 100)")
    _save(fig, out, "fig11_packet", fmt, files)


def plot_fig12_packet(d, out, fmt, files):
    plt = _plt()
    fig, axes = plt.subplots(4, 1, figsize=(9, 10), sharex=True, sharey=True, layout="constrained")
    for ax, alg in zip(axes, ut.ALGORITHMS):
        run = d["runs"][alg]
        for i, series in enumerate(run["rate_mbps"]):
            ax.plot(run["t"], series, marker=".", label=f"subflow {i + 1}")
        ax.axvspan(400, 800, color="0.9")
        ax.set(title=f"{ALG_LABEL[alg]} (total {run['total_mbps']:.2f} Mb/s)", ylabel="Mb/s")
        ax.legend(fontsize=7)
    axes[-1].set_xlabel("time (s)")
    fig.suptitle(f"Fig. 12 (packet simulator): rate averaged over {d['interval_s']:g} s; surge on path 2 in 400–800 s")
    _save(fig, out, "fig12_packet", fmt, files)


def plot_fig13(d, out, fmt, files):
    plt = _plt()
    fig, axes = plt.subplots(len(d["n"]), len(d["loss"]), figsize=(13, 6), sharex=True, layout="constrained")
    axes = np.atleast_2d(axes)
    for j, p in enumerate(d["loss"]):
        for i, n in enumerate(d["n"]):
            ax = axes[i, j]
            smp = d["samples"][f"{p}/{n}"]
            for k, w in enumerate(smp["cwnd"]):
                ax.plot(smp["t"], w, lw=0.8, label=f"subflow {k + 1}")
            row = next(r for r in d["rows"] if r["loss"] == p and r["subflows"] == n and r["engine"] == smp["engine"])
            ax.set(title=f"p = {p:g}, n = {n}: dominance {row['dominance']:.2f}", ylabel="cwnd (pkts)")
            if i == len(d["n"]) - 1:
                ax.set_xlabel("time (s)")
    fig.suptitle("Fig. 13: Fully Coupled MTCP, windows smoothed over 20 s "
                 f"({'packet simulator' if smp['engine'] == 'sim' else 'window model'}, random loss p per packet)")
    _save(fig, out, "fig13", fmt, files)
