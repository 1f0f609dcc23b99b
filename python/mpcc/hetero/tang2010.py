"""Examples 3 and 4 of Tang, Wei, Low, Chiang (ToN 2010), §VI-B.

``example3(out_dir)``  three links, three protocols with K^1 = I, K^2 = diag(5,1,5),
    K^3 = diag(1,3,1) (Fig. 7).  The paper takes its utilities from [36] without listing them;
    we use α-fair utilities chosen so that the network (μ = 1) has three equilibria (see
    ``EXAMPLE3_UTILITIES``).  Reports all equilibria, the equilibrium the dual dynamics reach from
    the starts of Cases 1 and 2 (the state "after the first iteration"), Algorithm 1 with
    κ = 0.1 and 0.9 (μ updated every 20 time units) from both starts, and the Theorem-11
    optimum; plots p_1(t) like Figs. 8 and 9.
``example4(trials, workers, progress)``  5 links, 15 flows, random capacities U[1, 10],
    flows 1–5 on links 1–5, flows 6–15 on random routes (each link with probability 1/2),
    each flow on protocol 1 (m = p) or 2 (m_l = p^{α_l}, α_l ~ U[0.5, 5]) with probability 1/2,
    asynchronous Algorithm 1 (every 5 time units each flow updates with probability 0.6 or 0.3).
    Counts the trials whose rates end within 1 % of the directly solved optimum.
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from ..plotting import save_figure

from .dynamics import algorithm1, optimum, settle
from .equilibria import find_equilibria
from .model import Network, PriceMapping, Source, network, stack

# --- Example 3 ------------------------------------------------------------------------------------
EXAMPLE3_K = {"p1": (1.0, 1.0, 1.0), "p2": (5.0, 1.0, 5.0), "p3": (1.0, 3.0, 1.0)}
# (alpha, beta) per source.  Not given in the paper (it cites [36]); chosen by us (least-squares
# fit of the paper's Case-1/Case-2 equilibria and p_1* = 0.222, then rounded) so that the network
# has three equilibria: two stable ones, reached from the Case-1 and Case-2 starts, and an
# unstable one between them.  Our Case-1 equilibrium and optimum are close to the paper's; our
# Case-2 equilibrium is not (see docs/hetero.md).
EXAMPLE3_UTILITIES = {
    "s1_1": (8.0, 6.483e-9), "s1_2": (2.0, 7.234e-4), "s1_3": (8.0, 6.483e-9),
    "s2_1": (0.5, 0.2307), "s2_2": (0.5, 0.2307),
    "s3_1": (8.0, 0.1845),
}
EXAMPLE3_CASES = {"case1": (0.3, 0.3, 0.3), "case2": (0.1, 0.3, 0.1)}
PAPER_EXAMPLE3 = {"case1": (0.165, 0.170, 0.165), "case2": (0.135, 0.230, 0.135), "p1_optimum": 0.222}


def example3_network(utilities=None) -> Network:
    u = dict(EXAMPLE3_UTILITIES if utilities is None else utilities)
    protos = {j: {f"l{l + 1}": PriceMapping("power", k[l], 1.0) for l in range(3)} for j, k in EXAMPLE3_K.items()}
    routes = {"s1_1": ("p1", ("l1",)), "s1_2": ("p1", ("l2",)), "s1_3": ("p1", ("l3",)),
              "s2_1": ("p2", ("l1", "l2")), "s2_2": ("p2", ("l2", "l3")),
              "s3_1": ("p3", ("l1", "l2", "l3"))}
    src = [Source(n, pr, r, *u[n]) for n, (pr, r) in routes.items()]
    return network({"l1": 1.0, "l2": 1.0, "l3": 1.0}, protos, src, "tang2010-example3")


def example3(out_dir: str | Path | None = None, *, kappas=(0.1, 0.5, 0.9), period: float = 20.0,
             dt: float = 0.2, max_iterations: int = 300, net: Network | None = None) -> dict:
    net = net or example3_network()
    a = net.arrays()
    opt = optimum(net)
    search = find_equilibria(net, optimum_rates=opt.rates)
    out: dict = {
        "network": net.describe(),
        "utilities": {s.name: {"alpha": s.utility_alpha, "beta": s.utility_weight} for s in net.sources},
        "equilibria": [e.to_dict(net) for e in search.equilibria],
        "index_sum": search.index_sum,
        "search_complete": search.complete,
        "optimum": {"prices": opt.prices.tolist(), "rates": dict(zip(net.source_names, opt.rates.tolist()))},
        "paper": PAPER_EXAMPLE3,
        "cases": {},
    }
    traces = {}
    for case, start in EXAMPLE3_CASES.items():
        p_first, _ = settle(a, np.array(start), dt=dt)
        nearest = int(np.argmin([np.linalg.norm(e.prices - p_first) for e in search.equilibria])) \
            if search.equilibria else None
        runs = {}
        for kappa in kappas:
            r = algorithm1(a, np.array(start), kappa=kappa, period=period, dt=dt, record=True,
                           max_iterations=max_iterations, tol=1e-6)
            runs[f"kappa={kappa:g}"] = {"prices": r.prices.tolist(),
                                        "rates": dict(zip(net.source_names, r.rates.tolist())),
                                        "mu": dict(zip(net.source_names, r.mu.tolist())),
                                        "iterations": int(r.iterations), "converged": bool(r.converged),
                                        "max_rate_error": float(np.max(np.abs(r.rates / opt.rates - 1)))}
            traces[(case, kappa)] = (r.times, r.trajectory)
        out["cases"][case] = {"start": list(start), "first_equilibrium": p_first.tolist(),
                              "first_equilibrium_index": nearest, "algorithm1": runs}
    if out_dir is not None:
        out["plots"] = _plot_example3(Path(out_dir), traces, opt.prices[0], kappas)
    return out


def _plot_example3(out_dir: Path, traces, p1_opt, kappas):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    out_dir.mkdir(parents=True, exist_ok=True)
    files = []
    for fig_no, case in ((8, "case1"), (9, "case2")):
        fig, axes = plt.subplots(1, len(kappas), figsize=(4.5 * len(kappas), 3.4), sharey=True)
        for ax, kappa in zip(np.atleast_1d(axes), kappas):
            t, p = traces[(case, kappa)]
            ax.plot(t, p[:, 0], lw=1.2, label="$p_1(t)$")
            ax.axhline(p1_opt, color="k", ls=":", lw=1, label=f"optimum $p_1^*$ = {p1_opt:.3f}")
            ax.set_title(f"{case.replace('case', 'Case ')}: stepsize κ = {kappa:g}")
            ax.set_xlabel("time")
            ax.grid(alpha=0.3)
        np.atleast_1d(axes)[0].set_ylabel("$p_1$")
        np.atleast_1d(axes)[0].legend()
        fig.tight_layout()
        files += [str(f) for f in save_figure(fig, out_dir, f"tang2010_fig{fig_no}_{case}")]
    return files


# --- Example 4 ------------------------------------------------------------------------------------
def random_network(rng: np.random.Generator, n_links: int = 5, n_flows: int = 15, *,
                   utility_alpha: float = 1.0, utility_weight: float = 1.0,
                   exponent_range=(0.5, 5.0), capacity_range=(1.0, 10.0), name="example4") -> Network:
    """A network of the Example-4 kind (see module docstring)."""
    links = {f"l{l + 1}": float(rng.uniform(*capacity_range)) for l in range(n_links)}
    expo = rng.uniform(*exponent_range, size=n_links)
    protos = {"p1": {}, "p2": {f"l{l + 1}": PriceMapping("power", 1.0, float(expo[l])) for l in range(n_links)}}
    src = []
    for i in range(n_flows):
        if i < n_links:
            route = (i,)
        else:
            while True:
                mask = rng.random(n_links) < 0.5
                if mask.any():
                    break
            route = tuple(int(l) for l in np.flatnonzero(mask))
        proto = "p1" if rng.random() < 0.5 else "p2"
        src.append(Source(f"f{i + 1}", proto, tuple(f"l{l + 1}" for l in route), utility_alpha, utility_weight))
    return network(links, protos, src, name)


def _example4_chunk(args):
    seeds, probs, kappa, period, dt, max_iterations, tol, utility_alpha = args
    nets = [random_network(np.random.default_rng(s), utility_alpha=utility_alpha) for s in seeds]
    a = stack([n.arrays() for n in nets])
    opts = [optimum(n) for n in nets]
    x_opt = np.array([o.rates for o in opts])
    res = {}
    for prob in probs:
        r = algorithm1(a, np.ones(a.c.shape), mode="async", kappa=kappa, prob=prob, period=period, dt=dt,
                       max_iterations=max_iterations, tol=tol,
                       rng=np.random.default_rng([int(seeds[0]), int(prob * 1000)]))
        err = np.max(np.abs(r.rates / x_opt - 1.0), axis=1)
        res[prob] = {"ok": (r.converged & (err < 0.01)).tolist(), "err": err.tolist(),
                     "iterations": r.iterations.tolist(), "converged": r.converged.tolist()}
    return seeds, res, [o.kkt for o in opts]


def example4(trials: int = 1000, workers: int | None = None, progress: bool = True, *, seed: int = 2010,
             probs=(0.6, 0.3), kappa: float = 0.5, period: float = 5.0, dt: float = 1.0,
             max_iterations: int = 4000, tol: float = 1e-6, utility_alpha: float = 1.0,
             out_dir: str | Path | None = None, chunk: int | None = None) -> dict:
    """Run the random trials of Example 4 in parallel; count convergence to the optimum."""
    workers = workers or os.cpu_count() or 1
    seeds = [seed * 100_000 + t for t in range(trials)]
    chunk = chunk or max(1, math.ceil(trials / (workers * 2)))
    jobs = [(seeds[k:k + chunk], tuple(probs), kappa, period, dt, max_iterations, tol, utility_alpha)
            for k in range(0, trials, chunk)]
    results = []
    if workers == 1:
        it = map(_example4_chunk, jobs)
        results = _progress(it, len(jobs), trials, chunk, progress)
    else:
        with ProcessPoolExecutor(max_workers=workers) as ex:
            results = _progress(ex.map(_example4_chunk, jobs), len(jobs), trials, chunk, progress)
    out = {"trials": trials, "workers": workers, "seed": seed, "kappa": kappa, "period": period,
           "utility": f"alpha={utility_alpha:g}, beta=1", "paper": "all 1000 trials converge", "by_prob": {}}
    for prob in probs:
        ok = [v for _, r, _ in results for v in r[prob]["ok"]]
        err = [v for _, r, _ in results for v in r[prob]["err"]]
        it = [v for _, r, _ in results for v in r[prob]["iterations"]]
        conv = [v for _, r, _ in results for v in r[prob]["converged"]]
        bad = [s for ss, r, _ in results for s, v in zip(ss, r[prob]["ok"]) if not v]
        out["by_prob"][str(prob)] = {"converged_to_optimum": int(sum(ok)), "trials": len(ok),
                                     "fixed_point_reached": int(sum(conv)),
                                     "max_rate_error": float(max(err)), "median_iterations": float(np.median(it)),
                                     "max_iterations": int(max(it)), "failed_seeds": bad[:20]}
    out["optimum_max_kkt_violation"] = float(max(k for _, _, ks in results for k in ks))
    if out_dir is not None:
        out["plots"] = plot_example4(Path(out_dir), seed=seeds[0], probs=probs, kappa=kappa, period=period,
                                     dt=dt, utility_alpha=utility_alpha)
    return out


def _progress(it, n_jobs, trials, chunk, show):
    if not show:
        return list(it)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn, TextColumn
    out = []
    with Progress(TextColumn("Example 4 trials"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  transient=False) as bar:
        task = bar.add_task("trials", total=trials)
        for r in it:
            out.append(r)
            bar.advance(task, len(r[0]))
    return out


def plot_example4(out_dir: Path, *, seed: int, probs=(0.6, 0.3), kappa=0.5, period=5.0, dt=0.5,
                  utility_alpha=1.0):
    """Fig. 10: p(t) of one trial under asynchronous updates with each probability."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    out_dir.mkdir(parents=True, exist_ok=True)
    net = random_network(np.random.default_rng(seed), utility_alpha=utility_alpha)
    a = net.arrays()
    opt = optimum(net)
    fig, axes = plt.subplots(1, len(probs), figsize=(5 * len(probs), 3.4), sharey=True)
    for ax, prob in zip(np.atleast_1d(axes), probs):
        r = algorithm1(a, np.ones(len(net.links)), mode="async", kappa=kappa, prob=prob, period=period, dt=dt,
                       record=True, rng=np.random.default_rng([seed, int(prob * 1000)]))
        for l in range(len(net.links)):
            ax.plot(r.times, r.trajectory[:, l], lw=1.1, label=f"$p_{l + 1}$")
            ax.axhline(opt.prices[l], color="k", ls=":", lw=0.8)
        ax.set_title(f"update probability {prob:g} ({int(r.iterations)} periods)")
        ax.set_xlabel("time")
        ax.set_yscale("log")
        ax.grid(alpha=0.3)
    np.atleast_1d(axes)[0].set_ylabel("link price p")
    np.atleast_1d(axes)[0].legend(ncol=5, fontsize=8)
    fig.tight_layout()
    return [str(f) for f in save_figure(fig, out_dir, "tang2010_fig10")]


# --- Examples 1 and 2 at packet level (the project simulator, mpcc.sim) ---------------------------
PAPER_TABLE1 = {"example1a-b400": (5.4, 2.1), "example1a-b80": (0.6, 3.4),
                "example1b-b400": (4.2, 3.1), "example1b-b80": (4.1, 3.2)}  # (Reno, FAST) packets/ms
# Example 2 (§II-B, §VII-B): the paper gives numbers only for 2b; 2a is described qualitatively.
PAPER_EXAMPLE2 = {
    "example2a-fast-first": {"text": "Reno starved (FAST fills link 2-3 first)"},
    "example2a-reno-first": {"text": "Reno keeps l12/l34 queues; FAST never fills link 2-3"},
    "example2b-fast-first": {"reno": 0.6, "fast": 1.5, "alpha": 96.0, "bottlenecks": "l12, l34",
                             "text": "switch from l23 to l12/l34 around 2000 s"},
    "example2b-reno-first": {"reno": 0.6, "fast": 1.5, "alpha": 96.0, "bottlenecks": "l12, l34",
                             "text": "alpha rises from 50 to ~96"},
}
EXAMPLE1_MEASURE = (1800.0, 5400.0)
EXAMPLE2_MEASURE = {"example2a": (1800.0, 3600.0), "example2b": (5400.0, 10800.0)}
PPS_PER_MBPS = 1e6 / (8.0 * 1500) / 1e3  # packets/ms per Mb/s for 1500-byte packets


def _packet_job(args):
    """One seed of one scenario: per-group mean flow rate (packets/ms) in the window, α log,
    binned rates/queues for the plots, link loads and mean queues."""
    path, duration_s, seed, measure, bin_s = args
    from .. import scenario as sc
    from . import packet

    s = sc.load(path)
    if duration_s is not None:
        s = _stretch(s, duration_s)
    fr = packet.run(s, seed=seed, measure=measure, sample_interval_s=1.0)
    t0, t1 = fr.result.extra["measure_s"]
    ppm = 1e6 / (8.0 * s.packet_bytes) / 1e3
    out = {"name": Path(path).stem, "seed": seed, "wall_s": fr.wall_s, "measure_s": [t0, t1],
           "rates": {g: r.rate_mbps * ppm for g, r in fr.result.groups.items()},
           "utilization": {l: r.extra["utilization"] for l, r in fr.result.links.items()},
           "mark_or_drop_rate": {l: r.price for l, r in fr.result.links.items()},
           "mean_queue": packet.mean_queues(fr, t0, t1), "alpha": {}, "alpha_end": {},
           "series": {"rates": {}, "queues": None, "alpha": {}}}
    tb, qb = packet.binned_queues(fr, bin_s)
    out["series"]["queues"] = {"t": tb.tolist(), **{k: v.tolist() for k, v in qb.items()}}
    for g in s.groups:
        tr, rr = packet.binned_rates(fr, g.name, bin_s)
        out["series"]["rates"][g.name] = {"t": tr.tolist(), "rate": rr.tolist()}
        if g.algorithm.name == "fast":
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


def _run_packet_jobs(jobs, workers, progress, label):
    workers = max(1, int(workers or 1))
    if workers == 1:
        it = map(_packet_job, jobs)
    else:
        ex = ProcessPoolExecutor(max_workers=workers)
        it = ex.map(_packet_job, jobs)
    out = []
    try:
        if progress:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
            with Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()) as bar:
                task = bar.add_task(label, total=len(jobs))
                for r in it:
                    out.append(r)
                    bar.advance(task)
        else:
            out = list(it)
    finally:
        if workers > 1:
            ex.shutdown()
    return out


def _mean(rs, key, group):
    vals = [r[key][group] for r in rs if group in r.get(key, {})]
    return float(np.mean(vals)) if vals else None


def example1(scenario_dir: str | Path, *, runs: int = 20, seed: int = 1, duration_s: float | None = None,
             measure: tuple[float, float] | None = EXAMPLE1_MEASURE, workers: int = 1, progress: bool = False,
             out_dir: str | Path | None = None) -> dict:
    """Table I: Reno vs FAST on one 100 Mbps link, buffer 400 and 80 packets, without (1a) and with
    (1b) Algorithm 2, packet-level. Rates are averaged over ``runs`` seeds in the ``measure`` window
    and given in packets per ms (1500-byte packets) like the paper; with Algorithm 2 also the mean α
    and Algorithm 2's own q and l in the window. ``out_dir``: Fig. 11–13-style plots."""
    jobs = [(str(Path(scenario_dir) / f"{name}.toml"), duration_s, seed + k, measure, 60.0)
            for name in PAPER_TABLE1 for k in range(runs)]
    res = _run_packet_jobs(jobs, workers, progress, "Example 1 runs")
    out = {"runs": runs, "measure_s": res[0]["measure_s"], "rows": {}}
    for name, (paper_reno, paper_fast) in PAPER_TABLE1.items():
        rs = [r for r in res if r["name"] == name]
        rn, fs = _mean(rs, "rates", "reno"), _mean(rs, "rates", "fast")
        row = {"paper_reno": paper_reno, "paper_fast": paper_fast, "paper_ratio": round(paper_reno / paper_fast, 2),
               "reno": rn, "fast": fs, "ratio": rn / fs,
               "ratio_per_seed": [r["rates"]["reno"] / r["rates"]["fast"] for r in rs],
               "utilization": _mean(rs, "utilization", "bottleneck"),
               "wall_s_per_run": float(np.mean([r["wall_s"] for r in rs]))}
        if name.startswith("example1b"):
            row.update(alpha=_mean(rs, "alpha", "fast"), alpha_end=_mean(rs, "alpha_end", "fast"),
                       alg2_q_ms=1e3 * _mean(rs, "alg2_q_s", "fast"), alg2_l=_mean(rs, "alg2_l", "fast"))
        out["rows"][name] = row
    if out_dir is not None:
        out["plots"] = _plot_packet(Path(out_dir), res, list(PAPER_TABLE1), "tang2010_example1",
                                    {"reno": "Reno", "fast": "FAST"})
    return out


def example2(scenario_dir: str | Path, *, runs: int = 5, seed: int = 1, duration_s: float | None = None,
             measure: dict | None = None, workers: int = 1, progress: bool = False,
             out_dir: str | Path | None = None) -> dict:
    """Examples 2a/2b (Fig. 4 network, RED with ECN marking): 8 Reno flows on l12–l23–l34, 2 FAST
    flows on l12–l23 and 2 on l23–l34, FAST first or Reno first (the other set starts at 100 s);
    2b with Algorithm 2 (w = 1820 s). Per configuration: mean per-flow rate of Reno and FAST
    (packets/ms), mean α, mean queues (bottlenecks = links with a mean queue ≥ 10 packets)."""
    measure = measure or EXAMPLE2_MEASURE
    names = list(PAPER_EXAMPLE2)
    jobs = [(str(Path(scenario_dir) / f"{name}.toml"), duration_s, seed + k, measure[name[:9]], 300.0)
            for name in names for k in range(runs)]
    res = _run_packet_jobs(jobs, workers, progress, "Example 2 runs")
    out = {"runs": runs, "rows": {}}
    for name in names:
        rs = [r for r in res if r["name"] == name]
        fast = [0.5 * (r["rates"]["fast-123"] + r["rates"]["fast-234"]) for r in rs]
        q = {l: float(np.mean([r["mean_queue"][l] for r in rs])) for l in ("l12", "l23", "l34")}
        util = {l: float(np.mean([r["utilization"][l] for r in rs])) for l in q}
        row = {"paper": PAPER_EXAMPLE2[name], "measure_s": rs[0]["measure_s"],
               "reno": _mean(rs, "rates", "reno"), "fast": float(np.mean(fast)),
               "reno_per_seed": [r["rates"]["reno"] for r in rs], "fast_per_seed": fast,
               "mean_queue": q, "utilization": util, "bottlenecks": [l for l, v in util.items() if v >= 0.95],
               "switches": [_switches(r) for r in rs], "reno_regime_fraction": float(np.mean(
                   [_reno_regime_fraction(r) for r in rs])),
               "mark_rate": {l: float(np.mean([r["mark_or_drop_rate"][l] for r in rs])) for l in q},
               "wall_s_per_run": float(np.mean([r["wall_s"] for r in rs]))}
        al = [0.5 * (r["alpha"]["fast-123"] + r["alpha"]["fast-234"]) for r in rs if "fast-123" in r["alpha"]]
        if al:
            row["alpha"] = float(np.mean(al))
            row["alg2_q_ms"] = 1e3 * _mean(rs, "alg2_q_s", "fast-123")
            row["alg2_l"] = _mean(rs, "alg2_l", "fast-123")
        out["rows"][name] = row
    if out_dir is not None:
        out["plots"] = _plot_packet(Path(out_dir), res, names, "tang2010_example2",
                                    {"reno": "Reno", "fast-123": "FAST 1-2-3", "fast-234": "FAST 2-3-4"})
    return out


# Regimes of the Fig. 4 network, from the 300-s mean queues: "reno" = Reno holds queues at l12 and
# l34 (the equilibrium of Theorem 11 / Reno-first), "fast" = FAST holds the queue at l23.
REGIME_QUEUE_PKTS = 100.0


def _regimes(r):
    qs = r["series"]["queues"]
    t = np.asarray(qs["t"])
    reno = (np.asarray(qs["l12"]) >= REGIME_QUEUE_PKTS) & (np.asarray(qs["l34"]) >= REGIME_QUEUE_PKTS)
    fast = np.asarray(qs["l23"]) >= 10.0
    return t, np.where(reno, "reno", np.where(fast, "fast", "none"))


def _switches(r):
    """Changes of regime (bin centre time, new regime, mean α of the FAST flows then)."""
    t, reg = _regimes(r)
    out, prev = [], None
    al = r["series"]["alpha"]
    for ti, g in zip(t, reg):
        if g == "none" or g == prev:
            continue
        if prev is not None:
            a = [float(np.asarray(v["alpha"])[np.searchsorted(v["t"], ti, side="right") - 1]) for v in al.values()]
            out.append({"t": float(ti), "to": str(g), "alpha": float(np.mean(a)) if a else None})
        prev = g
    return out


def _reno_regime_fraction(r):
    t, reg = _regimes(r)
    t0, t1 = r["measure_s"]
    sel = (t >= t0) & (t <= t1)
    return float(np.mean(reg[sel] == "reno")) if sel.any() else float("nan")


def _plot_packet(out_dir: Path, res, names, stem, labels):
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


def _stretch(s, duration_s):
    from dataclasses import replace
    return s.with_changes(duration_s=duration_s,
                          groups=tuple(replace(g, stop_s=duration_s) for g in s.groups),
                          background=tuple(replace(b, stop_s=duration_s) for b in s.background))
