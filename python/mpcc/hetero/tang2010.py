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


# --- Examples 1a/1b at packet level (needs the simulator, mpcc.sim) ---------------------------------
PAPER_TABLE1 = {"example1a-b400": (5.4, 2.1), "example1a-b80": (0.6, 3.4),
                "example1b-b400": (4.2, 3.1), "example1b-b80": (4.1, 3.2)}  # (Reno, FAST) packets/ms


def example1(scenario_dir: str | Path, *, runs: int = 20, seed: int = 1, duration_s: float | None = None,
             measure: tuple[float, float] | None = (600.0, 1800.0), progress: bool = False) -> dict:
    """Table I: Reno vs FAST on one 100 Mbps link, buffer 400 and 80 packets, without (1a) and with
    (1b) Algorithm 2, packet-level. Rates are averaged over ``runs`` seeds in the ``measure`` window
    and given in packets per ms (1500-byte packets) like the paper."""
    from .. import scenario as sc
    from .. import sim

    out = {"runs": runs, "measure_s": list(measure) if measure else None, "rows": {}}
    for name, (paper_reno, paper_fast) in PAPER_TABLE1.items():
        s = sc.load(Path(scenario_dir) / f"{name}.toml")
        if duration_s is not None:
            s = _stretch(s, duration_s)
        pps_per_mbps = 1e6 / (8.0 * s.packet_bytes) / 1e3
        cap = s.links[0].capacity_mbps * pps_per_mbps
        reno, fast = [], []
        for k in range(runs):
            r = sim.run(s, seed=seed + k, sample_interval_s=0, measure=measure)
            reno.append(r.result.groups["reno"].rate_mbps * pps_per_mbps)
            fast.append(r.result.groups["fast"].rate_mbps * pps_per_mbps)
            if progress:
                print(f"{name}: run {k + 1}/{runs}", flush=True)
        rn, fs = float(np.mean(reno)), float(np.mean(fast))
        out["rows"][name] = {"paper_reno": paper_reno, "paper_fast": paper_fast,
                             "paper_ratio": round(paper_reno / paper_fast, 2),
                             "reno": rn, "fast": fs, "ratio": rn / fs, "utilization": (rn + fs) / cap}
    return out


def _stretch(s, duration_s):
    from dataclasses import replace
    return s.with_changes(duration_s=duration_s,
                          groups=tuple(replace(g, stop_s=duration_s) for g in s.groups),
                          background=tuple(replace(b, stop_s=duration_s) for b in s.background))
