"""Jiang, Cai, Towsley on the project's models of multipath transmission control
(:mod:`mpcc.mtc`): closed forms, the deterministic-drop fluid simulation, the §4.1 equilibria and
the per-RTT window model. Functions return plain dicts."""

from __future__ import annotations

import numpy as np

from ...mtc import cycles, equilibrium, flappiness, utilization as ut


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
                    sm = flappiness.moving_average(t, tr[0], 20.0)  # the report's 20 s smoothing
                    out["samples"][f"{p}/{n}"] = {"engine": engine, "t": t[::k].tolist(),
                                                  "cwnd": sm[::k].T.tolist()}
    return out
