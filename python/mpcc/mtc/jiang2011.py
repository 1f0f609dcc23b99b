"""Reproduction of Jiang, Cai, Towsley (UM-CS-2011-005): functions returning plain dicts and
writing figures to a directory. ``mpcc mtc figures --out DIR`` and ``mpcc reproduce jiang2011``
call :func:`reproduce`.

Figures (file names ``fig3.png`` ...):
 3  per-cycle utilization (6) and (10) versus f, for several buffer ratios gamma;
 4  single-flow U versus n (b = 1/2, W0 = 42), closed forms, with the numerically found
    Assumption-2 orbits (:func:`mpcc.mtc.cycles.periodic_orbit`) as markers;
 6  U versus the number of flows m (Table 1; b = 1/2, W0 = 100), one panel per algorithm;
 7  direction fields of (15) for Fully Coupled MTCP, n = 2, tau = 0.02, a = 1, b = 1/2;
 8  number of paths used over the α–β square, n = 4, p = (0.01, 0.02, 0.03, 0.05);
 9, 10  U versus n and versus gamma from the deterministic-drop fluid simulation
    (:func:`mpcc.mtc.cycles.simulate`, solid) and (6)/(10) at the measured f (dashed) — the
    report's Figs. 9–10 method with a fluid instead of an ns-2 simulation;
 flappiness  the metric of :mod:`mpcc.mtc.flappiness` for the four variants versus n.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from . import cycles, equilibrium, flappiness, utilization as ut

ALG_LABEL = {"mstcp": "MSTCP", "coupled-decrease": "Coupled Decrease",
             "coupled-increase": "Coupled Increase", "fully-coupled": "Fully Coupled"}


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


# --- data (plain dicts) ----------------------------------------------------------------------------
def fig3_data(gammas=(0.0, 0.25, 0.5, 1.0), points: int = 200) -> dict:
    f = np.linspace(1e-4, 1.0, points)
    return {"f": f.tolist(), "gamma": list(gammas),
            "mimd": [[ut.cycle_utilization_mimd(x, 1 + g) for x in f] for g in gammas],
            "aimd": [[ut.cycle_utilization_aimd(x, 1 + g) for x in f] for g in gammas]}


def fig4_data(ns=range(1, 11), w0: float = 42.0, b: float = 0.5, orbit_ns=(1, 2, 3, 4, 6)) -> dict:
    out = {"n": list(ns), "w0": w0, "b": b, "closed": {}, "orbit": {}}
    for alg in ut.ALGORITHMS:
        out["closed"][alg] = [ut.utilization(alg, n, 1, w0, 0.0, b).utilization for n in ns]
        out["orbit"][alg] = {"n": list(orbit_ns),
                             "U": [cycles.periodic_orbit(alg, n, w0, 0.0).utilization for n in orbit_ns]}
    return out


def fig6_data(ms=range(1, 21), ns=(1, 2, 4, 8), w0: float = 100.0, b: float = 0.5) -> dict:
    return {"m": list(ms), "n": list(ns), "w0": w0, "b": b,
            "U": {alg: {str(n): [ut.utilization(alg, n, m, w0, 0.0, b).utilization for m in ms] for n in ns}
                  for alg in ut.ALGORITHMS}}


def fig8_data(loss=(0.01, 0.02, 0.03, 0.05), points: int = 101) -> dict:
    grid = np.linspace(0.0, 1.0, points)
    used = np.array([[equilibrium.closed_form(a, b, loss).paths_used for a in grid] for b in grid])
    return {"alpha": grid.tolist(), "beta": grid.tolist(), "loss": list(loss), "paths_used": used.tolist()}


def fig9_10_data(ns=(1, 2, 3, 4, 6, 8), gammas=(0.05, 0.5, 1.0, 2.0), w0: float = 42.0,
                 cycles_per_run: int = 40, warmup: int = 10, progress=None) -> dict:
    """Deterministic-drop fluid runs: U(n, gamma) for each algorithm, plus the dashed curves
    (6) (MSTCP) / (10) (Coupled Decrease) at the measured f; Coupled Increase's dashed curve is
    single-path TCP, (10) with f = 1/2 (as in the report's Fig. 9(c))."""
    out = {"n": list(ns), "gamma": list(gammas), "w0": w0, "sim": {}, "dashed": {}, "f_mean": {}}
    kinds = {"mstcp": "mimd", "coupled-decrease": "aimd"}
    for alg in ut.ALGORITHMS:
        sim = np.full((len(gammas), len(ns)), np.nan)
        dash = np.full_like(sim, np.nan)
        fmean = np.full_like(sim, np.nan)
        for gi, g in enumerate(gammas):
            for ni, n in enumerate(ns):
                r = cycles.simulate(alg, n, 1, w0, g, cycles=cycles_per_run, warmup_cycles=warmup)
                sim[gi, ni] = r.complete_cycle_utilization()
                fmean[gi, ni] = float(np.mean(r.f))
                if alg in kinds:
                    dash[gi, ni] = r.cycle_weighted_utilization(kinds[alg], 1 + g)
                elif alg == "coupled-increase":
                    dash[gi, ni] = ut.cycle_utilization_aimd(0.5, 1 + g)
                if progress:
                    progress()
        out["sim"][alg], out["dashed"][alg], out["f_mean"][alg] = sim.tolist(), dash.tolist(), fmean.tolist()
    return out


def flappiness_data(subflows=(2, 3, 4), loss: float = 0.002, rtt: float = 0.1, rounds: int = 20000,
                    replicas: int = 4, smooth_rtts: float = 20.0, engines=("window",)) -> dict:
    """The flappiness metric for the four variants on n equal paths (random loss ``loss``), from
    the window model and (engine "sim") the packet simulator with random link loss."""
    rows = []
    for engine in engines:
        rows += flappiness.compare(subflows, loss, rtt, rounds, replicas, engine=engine,
                                   smooth_s=smooth_rtts * rtt)
    return {"loss": loss, "rtt": rtt, "rounds": rounds, "replicas": replicas,
            "smooth_s": smooth_rtts * rtt, "engines": list(engines), "rows": rows}


def sim_available() -> bool:
    """True when the packet simulator (:mod:`mpcc.sim`, Rust core) can be imported."""
    try:
        from .. import sim  # noqa: F401

        return hasattr(sim, "run")
    except Exception:  # noqa: BLE001 - any import problem means "not available"
        return False


def _packet_run(text: str, seed: int, sample_interval_s: float):
    from .. import scenario, sim

    return sim.run(scenario.loads(text, "<jiang2011>"), seed=seed, sample_interval_s=sample_interval_s)


def packet_fig9_10_data(ns=(1, 2, 3, 4, 6, 8), buffers=(2, 10, 21, 42, 84), duration_s: float = 1200.0,
                        measure_from_s: float = 200.0, seed: int = 1, progress=None) -> dict:
    """§5.1 at packet level (:mod:`mpcc.sim`): U(n, B) from delivered packets (solid) and the dashed
    curves — (6) for MSTCP, (10) for Coupled Decrease at the f measured from the cwnd traces
    (:func:`mpcc.mtc.cycles.cycles_from_trace`), single-path TCP (10) at f = 1/2 for Coupled
    Increase; no dashed curve for Fully Coupled (as in the report)."""
    from . import scenarios

    c_mbps, d_s, pkt = 5.0, 0.1, 1500
    w0 = c_mbps * 1e6 * d_s / (8 * pkt)
    out = {"n": list(ns), "buffer_pkts": list(buffers), "gamma": [b / w0 for b in buffers], "w0": w0,
           "duration_s": duration_s, "seed": seed, "sim": {}, "dashed": {}, "f_mean": {}, "timeouts": {}}
    kinds = {"mstcp": "mimd", "coupled-decrease": "aimd"}
    for alg in ut.ALGORITHMS:
        sim_u = np.full((len(buffers), len(ns)), np.nan)
        dash, fmean, tos = sim_u.copy(), sim_u.copy(), sim_u.copy()
        for bi, buf in enumerate(buffers):
            kappa = 1.0 + buf / w0
            for ni, n in enumerate(ns):
                r = _packet_run(scenarios.fig9_scenario(alg, n, buf, duration_s, measure_from_s), seed, 0.01)
                g = r.result.groups["mtc"]
                sim_u[bi, ni] = sum(g.path_rate_mbps) / (n * c_mbps)
                tos[bi, ni] = g.extra.get("timeouts", np.nan)
                sf = r.timeseries["subflows"]
                tt = np.asarray(sf.column("time_s"))
                route = np.asarray(sf.column("route"))
                cw = np.asarray(sf.column("cwnd_pkts"))
                st, ff = [], []
                for i in range(n):
                    sel = (route == i) & (tt >= measure_from_s)
                    a, b = cycles.cycles_from_trace(tt[sel], cw[sel])
                    st.append(a)
                    ff.append(b)
                allf = np.concatenate(ff) if ff else np.array([])
                fmean[bi, ni] = float(allf.mean()) if allf.size else np.nan
                if alg in kinds:
                    dash[bi, ni] = cycles.trace_cycle_utilization(st, ff, kinds[alg], kappa)
                elif alg == "coupled-increase":
                    dash[bi, ni] = ut.cycle_utilization_aimd(0.5, kappa)
                if progress:
                    progress()
        out["sim"][alg], out["dashed"][alg] = sim_u.tolist(), dash.tolist()
        out["f_mean"][alg], out["timeouts"][alg] = fmean.tolist(), tos.tolist()
    return out


def packet_fig11_data(ms=(1, 2, 4, 8, 16), ns=(1, 2, 4), duration_s: float = 1200.0,
                      measure_from_s: float = 200.0, seed: int = 1, progress=None) -> dict:
    """§5.1, Fig. 11 at packet level: U versus the number m of identical MTC flows (10 Mb/s,
    80 ms, 1000-byte packets, buffer 5), with Table 1 (W0 = 100) for comparison."""
    from . import scenarios

    c_mbps = 10.0
    out = {"m": list(ms), "n": list(ns), "duration_s": duration_s, "seed": seed, "sim": {}, "table1": {}}
    for alg in ut.ALGORITHMS:
        sim_u = np.full((len(ns), len(ms)), np.nan)
        tab = sim_u.copy()
        for ni, n in enumerate(ns):
            for mi, m in enumerate(ms):
                r = _packet_run(scenarios.fig11_scenario(alg, n, m, duration_s).replace(
                    "measure_from_s = 200.0", f"measure_from_s = {measure_from_s}"), seed, 0.0)
                g = r.result.groups["mtc"]
                sim_u[ni, mi] = m * sum(g.path_rate_mbps) / (n * c_mbps)
                tab[ni, mi] = ut.utilization(alg, n, m, 100.0, 0.0, 0.5).utilization
                if progress:
                    progress()
        out["sim"][alg], out["table1"][alg] = sim_u.tolist(), tab.tolist()
    return out


def packet_fig12_data(duration_s: float = 1200.0, interval_s: float = 20.0, seed: int = 1) -> dict:
    """§5.2, Fig. 12 at packet level: each subflow's rate averaged over 20 s intervals, 3 paths with
    on-off UDP background and a surge on path 2 in 400–800 s."""
    from . import scenarios

    out = {"interval_s": interval_s, "duration_s": duration_s, "seed": seed, "runs": {}}
    for alg in ut.ALGORITHMS:
        text = scenarios.fig12_scenario(alg, duration_s)
        r = _packet_run(text, seed, 0.1)
        sf = r.timeseries["subflows"]
        tt = np.asarray(sf.column("time_s"))
        route = np.asarray(sf.column("route"))
        rate = np.asarray(sf.column("rate_mbps"))
        edges = np.arange(0.0, duration_s + 1e-9, interval_s)
        mid = 0.5 * (edges[1:] + edges[:-1])
        series = []
        for i in range(3):
            sel = route == i
            k = np.digitize(tt[sel], edges) - 1
            series.append([float(np.mean(rate[sel][k == j])) if np.any(k == j) else float("nan")
                           for j in range(len(mid))])
        s_arr = np.array(series)
        surge = (mid > 420) & (mid < 780)
        calm = (mid > 100) & ((mid < 380) | (mid > 820))

        def _mean(mask):
            return np.nanmean(s_arr[:, mask], axis=1).tolist() if mask.any() else [float("nan")] * 3

        out["runs"][alg] = {"t": mid.tolist(), "rate_mbps": s_arr.tolist(),
                            "mean_surge_mbps": _mean(surge), "mean_calm_mbps": _mean(calm),
                            "total_mbps": float(r.result.groups["mtc"].rate_mbps)}
    return out


def fig13_data(losses=(0.042, 0.005, 0.0005), ns=(2, 4), rtt: float = 0.1, duration_s: float = 2000.0,
               replicas: int = 2, smooth_rtts: float = 20.0, engines=("window",), seed: int = 5) -> dict:
    """§5.3 / Fig. 13: Fully Coupled flappiness at the report's three drop rates (4.2 %, 0.5 %,
    0.05 %, i.e. small to large windows) for 2 and 4 subflows, plus one smoothed (20 s) sample
    trajectory per cell for the plot (packet simulator when available, else the window model)."""
    rounds = int(round(duration_s / rtt))
    out = {"loss": list(losses), "n": list(ns), "rtt": rtt, "duration_s": duration_s, "replicas": replicas,
           "smooth_s": smooth_rtts * rtt, "rows": [], "samples": {}}
    for p in losses:
        for n in ns:
            for engine in engines:
                if engine == "window":
                    t, tr = flappiness.window_trace("fully-coupled", [p] * n, rtt, rounds, replicas, seed)
                else:
                    runs = [flappiness.packet_trace("fully-coupled", n, p, duration_s, rtt, seed + k)
                            for k in range(replicas)]
                    size = min(r[0].size for r in runs)
                    t, tr = runs[0][0][:size], np.stack([r[1][:size] for r in runs])
                row = flappiness.flappiness_of_replicas(t, tr, smooth_s=smooth_rtts * rtt)
                row.update(loss=p, subflows=n, engine=engine, mean_total_window=float(tr.sum(axis=2).mean()))
                out["rows"].append(row)
                if engine == engines[-1]:
                    k = max(1, int(round(1.0 / rtt)))  # one point per second for the plot
                    sm = flappiness._moving_average(t, tr[0], 20.0)  # the report's 20 s smoothing
                    out["samples"][f"{p}/{n}"] = {"engine": engine, "t": t[::k].tolist(),
                                                  "cwnd": sm[::k].T.tolist()}
    return out


# --- plots ------------------------------------------------------------------------------------------
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
        w = flappiness._moving_average(t, tr[0], 20 * rtt)
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


#: Sizes of the runs: "full" (the figures in docs/mtc.md), "quick" (--quick), "smoke" (tests).
LEVELS = {
    "full": dict(ns9=(1, 2, 3, 4, 6, 8), g9=(0.05, 0.5, 1.0, 2.0), cyc=40, warm=10, orbit=(1, 2, 3, 4, 6),
                 fig8=101, flap_n=(2, 3, 4), rounds=20000, replicas=4, trace_rounds=6000,
                 pn=(1, 2, 3, 4, 6, 8), pb=(2, 10, 21, 42, 84), pdur=1200.0, pfrom=200.0,
                 pm=(1, 2, 4, 8, 16), pmn=(1, 2, 4), f12dur=1200.0, f13dur=2000.0, f13rep=2),
    "quick": dict(ns9=(1, 2, 4), g9=(0.05, 1.0), cyc=20, warm=5, orbit=(1, 2, 4), fig8=41,
                  flap_n=(2, 3, 4), rounds=4000, replicas=2, trace_rounds=2000,
                  pn=(1, 2, 4), pb=(2, 42), pdur=300.0, pfrom=50.0, pm=(1, 4, 16), pmn=(1, 4), f12dur=1200.0,
                  f13dur=500.0, f13rep=1),
    "smoke": dict(ns9=(1, 2), g9=(0.05,), cyc=6, warm=2, orbit=(1, 2), fig8=11, flap_n=(2,), rounds=300,
                  replicas=1, trace_rounds=300, pn=(1, 2), pb=(2,), pdur=40.0, pfrom=10.0, pm=(1, 2), pmn=(1,),
                  f12dur=60.0, f13dur=60.0, f13rep=1),
}


def reproduce(out_dir, quick: bool = False, fmt: str = "png", level: str | None = None) -> dict:
    """Compute everything, write the figures and ``jiang2011.json`` to ``out_dir``; return the dict.

    ``level``: "full" (default), "quick" (= ``quick=True``) or "smoke" (tiny runs, for tests)."""
    import json

    from rich.progress import Progress

    z = LEVELS[level or ("quick" if quick else "full")]
    out = Path(out_dir)
    os.makedirs(out, exist_ok=True)
    files: list[str] = []
    res: dict = {"level": level or ("quick" if quick else "full")}
    with_sim = sim_available()
    steps = 8 + len(ut.ALGORITHMS) * len(z["ns9"]) * len(z["g9"])
    if with_sim:
        steps += len(ut.ALGORITHMS) * (len(z["pn"]) * len(z["pb"]) + len(z["pm"]) * len(z["pmn"])) + 1
    with Progress(transient=True) as prog:
        task = prog.add_task("jiang2011", total=steps)
        adv = lambda: prog.advance(task)  # noqa: E731
        res["fig3"] = fig3_data(); plot_fig3(res["fig3"], out, fmt, files); adv()
        res["fig4"] = fig4_data(orbit_ns=z["orbit"]); plot_fig4(res["fig4"], out, fmt, files); adv()
        res["fig6"] = fig6_data(); plot_fig6(res["fig6"], out, fmt, files); adv()
        plot_fig7(out, fmt, files); adv()
        res["fig8"] = fig8_data(points=z["fig8"]); plot_fig8(res["fig8"], out, fmt, files); adv()
        res["fig9_10"] = fig9_10_data(z["ns9"], z["g9"], cycles_per_run=z["cyc"], warmup=z["warm"], progress=adv)
        plot_fig9_10(res["fig9_10"], out, fmt, files)
        res["flappiness"] = flappiness_data(z["flap_n"], rounds=z["rounds"], replicas=z["replicas"],
                                            engines=("window", "sim") if with_sim else ("window",))
        plot_flappiness(res["flappiness"], out, fmt, files); adv()
        plot_trace_example(out, fmt, files, rounds=z["trace_rounds"]); adv()
        res["fig13"] = fig13_data(duration_s=z["f13dur"], replicas=z["f13rep"],
                                  engines=("window", "sim") if with_sim else ("window",))
        plot_fig13(res["fig13"], out, fmt, files); adv()
        if with_sim:
            res["packet_fig9_10"] = packet_fig9_10_data(z["pn"], z["pb"], z["pdur"], z["pfrom"], progress=adv)
            plot_fig9_10(res["packet_fig9_10"], out, fmt, files, "_packet", "packet simulator")
            res["packet_fig11"] = packet_fig11_data(z["pm"], z["pmn"], z["pdur"], z["pfrom"], progress=adv)
            plot_fig11_packet(res["packet_fig11"], out, fmt, files)
            res["packet_fig12"] = packet_fig12_data(z["f12dur"])
            plot_fig12_packet(res["packet_fig12"], out, fmt, files); adv()
        else:
            res["packet_fig9_10"] = "skipped: mpcc.sim is not available"
    res["comparison"] = comparison(res)
    res["files"] = files
    with open(out / "jiang2011.json", "w") as fh:
        json.dump(res, fh, indent=1, default=float)
    files.append(str(out / "jiang2011.json"))
    return res


def comparison(res: dict) -> list[dict]:
    """Paper | closed form | fluid (deterministic) | packet simulator, for the report's checkable
    statements, from a :func:`reproduce` result. Values the run did not compute are None."""
    import math

    def cell(d, alg, gi, ni):
        try:
            return d[alg][gi][ni]
        except (KeyError, IndexError, TypeError):
            return None

    rows = []
    orbit3 = cycles.periodic_orbit("mstcp", 3, 42.0, 0.0)
    rows.append({"quantity": "f, MSTCP, n = 3, b = 1/2 (§3.1)", "paper": 0.125,
                 "closed_form": ut.f_mstcp(3, 0.5, 42.0), "fluid": float(orbit3.f), "sim": None})
    fl9, pk = res.get("fig9_10", {}), res.get("packet_fig9_10")
    fluid_ci = packet_ci = None
    if fl9 and 2 in fl9.get("n", []):
        fluid_ci = cell(fl9["sim"], "coupled-increase", 0, fl9["n"].index(2))
    if isinstance(pk, dict) and 2 in pk["n"]:
        packet_ci = cell(pk["sim"], "coupled-increase", 0, pk["n"].index(2))
    rows.append({"quantity": "U, Coupled Increase, small buffer (§3.2.2; measured at n = 2)",
                 "paper": 0.75, "closed_form": ut.cycle_utilization_aimd(0.5, 1.0),
                 "fluid": fluid_ci, "sim": packet_ci})
    rows.append({"quantity": "U, Fully Coupled, n → ∞, W0 = 42 (§3.2.3)",
                 "paper": 41 / (42 * math.log(42)),
                 "closed_form": ut.utilization("fully-coupled", 400, 1, 42.0, 0.0).utilization,
                 "fluid": None, "sim": None})
    for alg in ("mstcp", "coupled-decrease"):
        for src, d in (("fluid", fl9), ("sim", pk)):
            if not isinstance(d, dict) or not d:
                continue
            s, dsh = np.array(d["sim"][alg], float), np.array(d["dashed"][alg], float)
            rows.append({"quantity": f"Fig. 9/10 {ALG_LABEL[alg]}: max |dashed − solid|",
                         "paper": "match well", "closed_form": None,
                         src: float(np.nanmax(np.abs(dsh - s)))})
    f12 = res.get("packet_fig12")
    if isinstance(f12, dict):
        tot = {a: r["total_mbps"] for a, r in f12["runs"].items()}
        rows.append({"quantity": "Fig. 12: throughput (Mb/s)",
                     "paper": "CI > CD > FC", "closed_form": None, "fluid": None,
                     "sim": " / ".join(f"{tot[a]:.2f}" for a in ("coupled-increase", "coupled-decrease",
                                                                  "fully-coupled", "mstcp")) + " (CI/CD/FC/MSTCP)"})
        fc = f12["runs"]["fully-coupled"]
        rows.append({"quantity": "Fig. 12: Fully Coupled on surged path 2 (Mb/s)",
                     "paper": "appreciable", "closed_form": 0.0, "fluid": None,
                     "sim": fc["mean_surge_mbps"][1]})
    fp = res.get("flappiness")
    if isinstance(fp, dict):
        for engine in fp.get("engines", ["window"]):
            r = {(x["algorithm"], x["subflows"]): x for x in fp["rows"] if x.get("engine", "window") == engine}
            order = ("fully-coupled", "coupled-increase", "coupled-decrease", "mstcp")
            col = "window_model" if engine == "window" else "sim"
            for key, what, fmt in (("dominance", "dominance", ".2f"), ("mean_dwell_s", "mean dwell (s)", ".1f")):
                if all((a, 2) in r for a in order):
                    rows.append({"quantity": f"flappiness n = 2, {what}: FC/CI/CD/MSTCP",
                                 "paper": "FC ≫ CI, CD; MSTCP < FC",
                                 col: " / ".join(format(r[(a, 2)][key], fmt) for a in order)})
            if ("fully-coupled", 2) in r and ("fully-coupled", 4) in r:
                rows.append({"quantity": "flappiness FC, dominance n = 2 → 4",
                             "paper": "decreases",
                             col: f"{r[('fully-coupled', 2)]['dominance']:.2f} → {r[('fully-coupled', 4)]['dominance']:.2f}"})
    f13 = res.get("fig13")
    if isinstance(f13, dict):
        for engine in [e for e in ("window", "sim") if any(r["engine"] == e for r in f13["rows"])]:
            col = "window_model" if engine == "window" else "sim"
            for n in f13["n"]:
                vals = [r["dominance"] for p in f13["loss"] for r in f13["rows"]
                        if r["engine"] == engine and r["subflows"] == n and r["loss"] == p]
                rows.append({"quantity": f"Fig. 13 FC n = {n}, dominance at p = "
                                         + " / ".join(f"{p:g}" for p in f13["loss"]),
                             "paper": "grows with window", col: " / ".join(f"{v:.2f}" for v in vals)})
    cols = ("paper", "closed_form", "fluid", "window_model", "sim")
    return [{"quantity": row["quantity"], **{c: row.get(c) for c in cols}} for row in rows]
