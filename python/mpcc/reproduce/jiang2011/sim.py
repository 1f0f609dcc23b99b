"""Jiang, Cai, Towsley §5 on the packet simulator (:mod:`mpcc.sim`): the scenarios of
:mod:`.scenarios` run through ``sim.run``, utilization from delivered packets (``RunResult``)
and f from the cwnd traces."""

from __future__ import annotations

import numpy as np

from ...mtc import cycles, utilization as ut
from . import scenarios


def packet_run(text: str, seed: int, sample_interval_s: float):
    from ... import scenario, sim

    return sim.run(scenario.loads(text, "<jiang2011>"), seed=seed, sample_interval_s=sample_interval_s)


def packet_fig9_10_data(ns=(1, 2, 3, 4, 6, 8), buffers=(2, 10, 21, 42, 84), duration_s: float = 1200.0,
                        measure_from_s: float = 200.0, seed: int = 1, progress=None) -> dict:
    """§5.1 at packet level (:mod:`mpcc.sim`): U(n, B) from delivered packets (solid) and the dashed
    curves — (6) for MSTCP, (10) for Coupled Decrease at the f measured from the cwnd traces
    (:func:`mpcc.mtc.cycles.cycles_from_trace`), single-path TCP (10) at f = 1/2 for Coupled
    Increase; no dashed curve for Fully Coupled (as in the report).

    The runs use ns-2's exact timing (``host_jitter_s = 0``), as the report's runs: with the
    simulator's default 1 ms of ACK jitter a 2-packet buffer (γ ≈ 0.05) starves the flow (U ≈ 0.07
    instead of the report's 0.75; 3 packets and more are unaffected), as it does on the kernel —
    ACK-clocked 2–3-packet bursts against one free slot."""
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
                r = packet_run(scenarios.fig9_scenario(alg, n, buf, duration_s, measure_from_s, host_jitter_s=0.0),
                               seed, 0.01)
                g = r.result.groups["mtc"]
                sim_u[bi, ni] = sum(g.path_rate_mbps) / (n * c_mbps)
                tos[bi, ni] = g.extra.get("timeouts", np.nan)
                sf = r.timeseries["subflows"]
                tt = np.asarray(sf["time_s"])
                route = np.asarray(sf["route"])
                cw = np.asarray(sf["cwnd_pkts"])
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
    c_mbps = 10.0
    out = {"m": list(ms), "n": list(ns), "duration_s": duration_s, "seed": seed, "sim": {}, "table1": {}}
    for alg in ut.ALGORITHMS:
        sim_u = np.full((len(ns), len(ms)), np.nan)
        tab = sim_u.copy()
        for ni, n in enumerate(ns):
            for mi, m in enumerate(ms):
                r = packet_run(scenarios.fig11_scenario(alg, n, m, duration_s).replace(
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
    out = {"interval_s": interval_s, "duration_s": duration_s, "seed": seed, "runs": {}}
    for alg in ut.ALGORITHMS:
        text = scenarios.fig12_scenario(alg, duration_s)
        r = packet_run(text, seed, 0.1)
        sf = r.timeseries["subflows"]
        tt = np.asarray(sf["time_s"])
        route = np.asarray(sf["route"])
        rate = np.asarray(sf["rate_mbps"])
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
