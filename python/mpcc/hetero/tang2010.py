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
EXAMPLE1_ALPHA0 = 50.0  # Algorithm 2's α₀ = FAST's initial α in the Example 1b files
EXAMPLE2_MEASURE = {"example2a": (1800.0, 3600.0), "example2b": (5400.0, 10800.0)}
PPS_PER_MBPS = 1e6 / (8.0 * 1500) / 1e3  # packets/ms per Mb/s for 1500-byte packets


def _packet_job(args):
    """One seed of one scenario: per-group mean flow rate (packets/ms) in the window, α log,
    binned rates/queues for the plots, link loads and mean queues."""
    path, duration_s, seed, measure, bin_s, *rest = args
    adapt_w, label = rest if rest else (None, None)
    from .. import scenario as sc
    from . import packet

    s = sc.load(path)
    if duration_s is not None:
        s = _stretch(s, duration_s)
    if adapt_w is not None:
        s = with_adapt_w(s, adapt_w)
    fr = packet.run(s, seed=seed, measure=measure, sample_interval_s=1.0)
    t0, t1 = fr.result.extra["measure_s"]
    ppm = 1e6 / (8.0 * s.packet_bytes) / 1e3
    out = {"name": label or Path(path).stem, "seed": seed, "wall_s": fr.wall_s, "measure_s": [t0, t1],
           "adapt_w": {g.name: float(g.algorithm.params["adapt_w"]) for g in s.groups if _adapts(g)},
           "alpha0": {g.name: float(g.algorithm.alpha) for g in s.groups if _adapts(g)},
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
        if _adapts(g):  # FAST with Algorithm 2 (a fixed α has no trajectory)
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


def _adapts(g) -> bool:
    """Whether group ``g`` is FAST with Algorithm 2 on."""
    return g.algorithm.name == "fast" and float(g.algorithm.params.get("adapt_interval_s", 0.0)) > 0


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


def with_adapt_w(s, w: float):
    """The scenario with Algorithm 2's w (``adapt_w``, seconds) set to ``w`` in every FAST group
    that runs Algorithm 2 (``adapt_interval_s`` > 0); other groups are unchanged."""
    from dataclasses import replace

    from .. import algorithms

    groups = []
    for g in s.groups:
        if _adapts(g):
            algo = algorithms.get({"name": "fast", **g.algorithm.params, "adapt_w": float(w)})
            g = replace(g, algorithm=algo, algorithm_spec={"name": "fast", **algo.params})
        groups.append(g)
    return s.with_changes(groups=tuple(groups))


def calibrate_w(reno: float, fast: float, w_cal: float, alpha0: float = EXAMPLE1_ALPHA0) -> dict:
    """Algorithm 2's w that gives Reno and FAST equal rates (footnote 6), from one calibration
    measurement: the mean rates ``reno``, ``fast`` (packets/ms) of a run with Algorithm 2 at
    w = ``w_cal`` (s). Returns the w (s) and the intermediate quantities.

    At Algorithm 2's fixed point FAST's rate is x_F = α₀/(l·w) (from α = α* = q/(l·w)·α₀ and
    x_F = α/q), so equal rates x* need w = α₀/(l*·x*), with l* the loss rate *at the equal-rate
    point*:

    * l_cal = α₀/(w_cal·x_F): the loss rate Algorithm 2's fixed point acts on in the calibration
      run (the l for which x_F = α₀/(l·w) holds; Algorithm 2 moves α by ≤ δ towards a noisy
      per-interval α*, so this is below the mean of the per-interval l);
    * x* = (x_R + x_F)/2: the two flows share what they got together in the calibration run;
    * l* = l_cal·(x_R/x*)²: Reno's response function x_R = √(3/2)/(T√l) — the m = p price of
      Reno in §VII — at the same buffer (same RTT T). Giving Reno more bandwidth lowers the loss
      rate, so l* < l_cal when Reno got less than x* (using l_cal itself, ``w_fixed_l``, ignores
      that and undershoots);
    * w = α₀/(l*·x*) = w_cal·x_F·x*/x_R².
    """
    if min(reno, fast, w_cal, alpha0) <= 0:
        raise ValueError("calibrate_w needs positive rates, w_cal and alpha0")
    x_r, x_f = 1e3 * reno, 1e3 * fast  # packets/s, so that l·w·x is dimensionless
    l_cal = alpha0 / (w_cal * x_f)
    x_star = 0.5 * (x_r + x_f)
    l_star = l_cal * (x_r / x_star) ** 2
    return {"w_s": alpha0 / (l_star * x_star), "w_cal_s": w_cal, "alpha0": alpha0,
            "reno_cal": reno, "fast_cal": fast, "target_rate": x_star / 1e3,
            "l_cal": l_cal, "l_target": l_star, "w_fixed_l_s": alpha0 / (l_cal * x_star)}


def example1(scenario_dir: str | Path, *, runs: int = 20, seed: int = 1, duration_s: float | None = None,
             measure: tuple[float, float] | None = EXAMPLE1_MEASURE, workers: int = 1, progress: bool = False,
             out_dir: str | Path | None = None, w: str | float | None = "calibrate") -> dict:
    """Table I: Reno vs FAST on one 100 Mbps link, buffer 400 and 80 packets, without (1a) and with
    (1b) Algorithm 2, packet-level. Rates are averaged over ``runs`` seeds in the ``measure`` window
    and given in packets per ms (1500-byte packets) like the paper; with Algorithm 2 also the mean α
    and Algorithm 2's own q and l in the window. ``out_dir``: Fig. 11–13-style plots.

    The 1b rows use the files' w = 125 s (the paper's). ``w`` adds two more 1b rows, both buffers at
    one other w: ``"calibrate"`` derives it by :func:`calibrate_w` from the B = 400, w = 125 s rows
    (the calibration set; B = 80 is held out), a number is used as given, ``None`` adds nothing."""
    jobs = [(str(Path(scenario_dir) / f"{name}.toml"), duration_s, seed + k, measure, 60.0)
            for name in PAPER_TABLE1 for k in range(runs)]
    res = _run_packet_jobs(jobs, workers, progress, "Example 1 runs")
    out = {"runs": runs, "measure_s": res[0]["measure_s"], "rows": {}}
    for name, (paper_reno, paper_fast) in PAPER_TABLE1.items():
        out["rows"][name] = _example1_row([r for r in res if r["name"] == name], name, paper_reno, paper_fast)
    if w is not None:
        if w == "calibrate":
            cal_name = "example1b-b400"
            cal_rows = [r for r in res if r["name"] == cal_name]
            cal = calibrate_w(out["rows"][cal_name]["reno"], out["rows"][cal_name]["fast"],
                              cal_rows[0]["adapt_w"]["fast"], cal_rows[0]["alpha0"]["fast"])
            cal.update(calibration_rows=cal_name, calibration_seeds=[r["seed"] for r in cal_rows],
                       l_alg2_mean=out["rows"][cal_name]["alg2_l"],
                       l_fast_pooled=_mean(cal_rows, "loss_rate", "fast"))
            out["calibration"] = cal
            w_new = cal["w_s"]
        else:
            w_new = float(w)
            if not w_new > 0:
                raise ValueError(f"w must be > 0 seconds or 'calibrate', got {w!r}")
        extra = {f"{name}-w{w_new:.0f}": name for name in PAPER_TABLE1 if name.startswith("example1b")}
        jobs = [(str(Path(scenario_dir) / f"{name}.toml"), duration_s, seed + k, measure, 60.0, w_new, label)
                for label, name in extra.items() for k in range(runs)]
        res2 = _run_packet_jobs(jobs, workers, progress, f"Example 1b runs at w = {w_new:.0f} s")
        for label in extra:
            out["rows"][label] = _example1_row([r for r in res2 if r["name"] == label], label, None, None)
        out["w_s"] = w_new
        res += res2
    if out_dir is not None:
        out["plots"] = _plot_packet(Path(out_dir), res, list(out["rows"]), "tang2010_example1",
                                    {"reno": "Reno", "fast": "FAST"})
    return out


def _example1_row(rs, name, paper_reno, paper_fast):
    rn, fs = _mean(rs, "rates", "reno"), _mean(rs, "rates", "fast")
    per_seed = [r["rates"]["reno"] / r["rates"]["fast"] for r in rs]
    row = {"paper_reno": paper_reno, "paper_fast": paper_fast,
           "paper_ratio": round(paper_reno / paper_fast, 2) if paper_reno is not None else None,
           "reno": rn, "fast": fs, "ratio": rn / fs, "ratio_per_seed": per_seed,
           "ratio_range": [min(per_seed), max(per_seed)],
           "utilization": _mean(rs, "utilization", "bottleneck"),
           "wall_s_per_run": float(np.mean([r["wall_s"] for r in rs]))}
    if name.startswith("example1b"):
        row.update(w_s=_mean(rs, "adapt_w", "fast"), alpha=_mean(rs, "alpha", "fast"),
                   alpha_end=_mean(rs, "alpha_end", "fast"),
                   alg2_q_ms=1e3 * _mean(rs, "alg2_q_s", "fast"), alg2_l=_mean(rs, "alg2_l", "fast"),
                   fast_loss_rate=_mean(rs, "loss_rate", "fast"))
    return row


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


# --- Example 2 in the analytic model (Fig. 4 network, RED eq. (2), price = queue) ------------------
# File scenarios/tang2010/example2-model.toml (units there: packets/ms, packets, ms). FAST's α enters
# as μ = α/α₀ on the FAST sources (x = α₀μ/q = α/q), Reno's utility U'(x) = β/x² with β = 2/T².
EXAMPLE2_MODEL_FILE = "example2-model.toml"
EXAMPLE2_ALPHA0 = 50.0        # packets (the file's FAST utility_weight)
EXAMPLE2_W_MS = 1.82e6        # Algorithm 2's w of Example 2b, 1820 s, in ms (q in ms, l dimensionless)
EXAMPLE2_STATES = {("l23",): "fast", ("l12", "l34"): "reno", ("l12", "l23", "l34"): "mixed"}
EXAMPLE2_MODEL_ALPHAS = (0.25, 0.5, 1, 2, 4, 8, 8.2, 16, 20, 30, 50, 75, 100, 150, 200, 300, 400)


def example2_model_network(path: str | Path, *, reno_beta: float | None = None,
                           capacity_scale: float = 1.0) -> Network:
    """The model file, optionally with Reno's β = const²/T² and the capacities changed (e.g. 0.9 for
    the packet runs' 10 % noise)."""
    from dataclasses import replace

    from .model import load
    net = load(path)
    links = tuple(replace(l, capacity=l.capacity * capacity_scale) for l in net.links)
    if capacity_scale != 1.0:  # FAST's delay b/c follows the capacity
        protos = tuple(replace(p, mapping={k: (replace(m, scale=m.scale / capacity_scale) if m.kind != "red" else m)
                                           for k, m in p.mapping.items()}) for p in net.protocols)
        net = replace(net, protocols=protos)
    srcs = tuple(replace(s, utility_weight=reno_beta) if (reno_beta is not None and s.protocol == "reno") else s
                 for s in net.sources)
    return replace(net, links=links, sources=srcs)


def _fast_mu(net: Network, alpha) -> np.ndarray:
    """μ per source: α/α₀ for FAST (α scalar or per FAST source), 1 for Reno."""
    fast = np.array([s.protocol == "fast" for s in net.sources])
    mu = np.ones(len(net.sources))
    mu[fast] = np.asarray(alpha, float) / EXAMPLE2_ALPHA0
    return mu


def _ex2_summary(net: Network, p, x, mu=None) -> dict:
    a = net.arrays()
    fast = [i for i, s in enumerate(net.sources) if s.protocol == "fast"]
    reno = [i for i, s in enumerate(net.sources) if s.protocol == "reno"]
    from .model import aggregate_prices
    q, m, _ = aggregate_prices(a, p)
    return {"queues": {ln: float(v) for ln, v in zip(net.link_names, p)},
            "reno": float(np.mean(x[reno])), "fast": float(np.mean(x[fast])),
            "reno_marking": float(q[reno[0]]), "fast_delay_ms": float(np.mean(q[fast])),
            "fast_loss": float(np.mean([sum(float(m[reno[0], l]) for l in range(len(p)) if a.R[l, i] > 0)
                                        for i in fast]))}


def example2_model_equilibria(net: Network, alpha: float = EXAMPLE2_ALPHA0) -> list[dict]:
    """All equilibria at FAST parameter α: state (reno / fast / mixed), queues, per-flow rates,
    stability (eigenvalues of ∂y_B/∂p_B, slack), Theorem 6 (22), residual of (7), index."""
    from .dynamics import residual
    mu = _fast_mu(net, alpha)
    search = find_equilibria(net, mu=mu)
    out = []
    for e in search.equilibria:
        b = tuple(net.link_names[l] for l in e.bottlenecks)
        d = {"state": EXAMPLE2_STATES.get(b, "other"), "bottlenecks": list(b), "stable": bool(e.stable),
             "max_re_eig": float(np.max(e.eigenvalues.real)), "theorem6": e.theorem6, "index": int(e.index),
             "residual": float(residual(net.arrays(), e.prices, mu)), "loads": [float(v) for v in e.loads]}
        d.update(_ex2_summary(net, e.prices, e.rates))
        out.append(d)
    return out


def _states_at(net, alpha):
    return {e["state"]: e for e in example2_model_equilibria(net, alpha)}


def _boundary(net, state, a_in, a_out, rel=0.005):
    """Bisect (geometrically) the α at which ``state`` stops existing between a_in (exists) and
    a_out (does not)."""
    while abs(math.log(a_out / a_in)) > rel:
        mid = math.sqrt(a_in * a_out)
        if state in _states_at(net, mid):
            a_in = mid
        else:
            a_out = mid
    return math.sqrt(a_in * a_out)


def example2_model_sweep(net: Network, alphas=EXAMPLE2_MODEL_ALPHAS, refine: bool = True) -> dict:
    """Equilibria over a grid of α and the α range of each state (edges refined by bisection)."""
    grid = []
    for al in alphas:
        eqs = example2_model_equilibria(net, al)
        grid.append({"alpha": float(al), "equilibria": eqs})
    ranges = {}
    for st in ("fast", "reno", "mixed"):
        have = [g["alpha"] for g in grid if any(e["state"] == st for e in g["equilibria"])]
        stab = [g["alpha"] for g in grid if any(e["state"] == st and e["stable"] for e in g["equilibria"])]
        if not have:
            ranges[st] = None
            continue
        lo, hi = min(have), max(have)
        r = {"grid_min": lo, "grid_max": hi, "stable_on_grid": stab, "min": lo, "max": hi,
             "below_grid": lo == grid[0]["alpha"], "above_grid": hi == grid[-1]["alpha"]}
        if refine and lo > grid[0]["alpha"]:
            below = max(g["alpha"] for g in grid if g["alpha"] < lo)
            r["min"] = _boundary(net, st, lo, below)
        if refine and hi < grid[-1]["alpha"]:
            above = min(g["alpha"] for g in grid if g["alpha"] > hi)
            r["max"] = _boundary(net, st, hi, above)
        ranges[st] = r
    return {"grid": grid, "ranges": ranges}


def example2_model_basin(net: Network, alpha: float, *, dips=(1.0, 0.0), l23_kick: float = 5.0,
                         period_ms: float = 30_000.0, dt: float = 10.0) -> dict:
    """How large an l23 queue pushes the Reno state into the FAST state under the dual dynamics (5):
    start at l12 = l34 = dip × (the Reno state's queue) and l23 = b, run ``period_ms``, bisect the
    smallest b that ends in the FAST state; and with l23 = ``l23_kick`` packets the largest l12 = l34
    queue from which the FAST state is reached. Also the mixed (saddle) equilibrium's queues.
    ``dt`` is the integration step (near the saddle the integrator caps it at 0.5/λ⁺ itself)."""
    from .dynamics import integrate
    eqs = _states_at(net, alpha)
    out = {"alpha": alpha, "reno_queues": eqs.get("reno", {}).get("queues"),
           "saddle_queues": eqs.get("mixed", {}).get("queues"), "critical_l23": {}}
    if "reno" not in eqs or "fast" not in eqs:
        return out
    a, mu = net.arrays(), _fast_mu(net, alpha)
    b_reno, b_fast = eqs["reno"]["queues"]["l12"], eqs["fast"]["queues"]["l23"]

    def goes_fast(b12, b23):
        p = integrate(a, np.array([b12, b23, b12]), period_ms, mu=mu, dt=dt)[0]
        return p[1] > 0.5 * b_fast

    for dip in dips:
        b12 = dip * b_reno
        lo, hi = 0.0, 1500.0
        if not goes_fast(b12, hi):
            out["critical_l23"][f"{dip:g}"] = None
            continue
        while hi - lo > 0.05 * max(lo, 1.0):
            mid = 0.5 * (lo + hi)
            lo, hi = (lo, mid) if goes_fast(b12, mid) else (mid, hi)
        out["critical_l23"][f"{dip:g}"] = 0.5 * (lo + hi)
    # the other way round: with l23_kick packets at l23, how low must l12 = l34 be for FAST to win
    lo, hi = 0.0, b_reno
    if goes_fast(lo, l23_kick):
        while hi - lo > 0.5:
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if goes_fast(mid, l23_kick) else (lo, mid)
        out["critical_l12"] = 0.5 * (lo + hi)
    else:
        out["critical_l12"] = None
    out["l23_kick"] = l23_kick
    return out


def _follow_branch(net: Network, B: tuple, p0, mu):
    """Newton on the bottleneck set B from p0; the root if it is a stable equilibrium, else None."""
    from .equilibria import _newton, analyze
    a = net.arrays()
    Bi = np.array([net.link_names.index(ln) for ln in B])
    p, res = _newton(a, a.c, Bi, np.where(np.isin(np.arange(len(p0)), Bi), np.maximum(p0, 1e-9), 0.0), mu)
    if res > 1e-9 or np.any(p[Bi] <= 0):
        return None
    e = analyze(net, p, mu=mu, bottlenecks=tuple(int(l) for l in Bi))
    return e if e.stable else None


def example2_model_alg2(net: Network, start: str, *, alpha0: float = EXAMPLE2_ALPHA0, w_ms: float = EXAMPLE2_W_MS,
                        delta: float = 0.1, interval_s: float = 120.0, max_updates: int = 400,
                        tol: float = 1e-6) -> dict:
    """Algorithm 2 in the model (Algorithm 1 with Reno's marking probability as the common price,
    Reno unchanged), quasi-static: the fast timescale is at equilibrium at every α update (the "T
    large enough" of Algorithm 1). Start in the ``start`` equilibrium ("reno" or "fast") at α = α₀;
    each update every FAST flow computes α* = α₀ q/(l w) (q its queueing delay in ms, l the RED
    marking probability on its path) and moves α by at most a factor 1 ± δ towards it; the network
    then stays on the branch of stable equilibria it is on (Newton on the same bottleneck set) and
    jumps to the other stable equilibrium when that branch ends. Stops when every |α*/α − 1| < tol."""
    from .model import aggregate_prices
    a = net.arrays()
    fast = np.array([s.protocol == "fast" for s in net.sources])
    reno = np.flatnonzero(~fast)
    st = _states_at(net, alpha0)[start]
    B = tuple(st["bottlenecks"])
    p = np.array([st["queues"][ln] for ln in net.link_names])
    alpha = np.full(int(fast.sum()), float(alpha0))
    Rf = a.R[:, fast]
    trace, converged = [], False
    for k in range(max_updates):
        q, m, _ = aggregate_prices(a, p)
        loss = np.einsum("li,l->i", Rf, m[reno[0]])          # Reno's price on each FAST path
        with np.errstate(divide="ignore"):
            target = np.where(loss > 0, alpha0 * q[fast] / (loss * w_ms), np.inf)
        trace.append({"update": k, "t_s": k * interval_s, "alpha": float(alpha.mean()),
                      "alpha_star": float(np.mean(target)), "state": EXAMPLE2_STATES.get(B, "other"),
                      "queues": [float(v) for v in p]})
        if np.all(np.abs(target / alpha - 1) < tol):
            converged = True
            break
        alpha = np.where(alpha < target, np.minimum((1 + delta) * alpha, target),
                         np.maximum((1 - delta) * alpha, target))
        mu = _fast_mu(net, alpha)
        e = _follow_branch(net, B, p, mu)
        if e is None:  # the branch ended: go to the other stable equilibrium
            others = [x for x in find_equilibria(net, mu=mu).equilibria
                      if x.stable and tuple(net.link_names[l] for l in x.bottlenecks) != B]
            if len(others) != 1:
                break
            e = others[0]
        B, p = tuple(net.link_names[l] for l in e.bottlenecks), e.prices
    mu = _fast_mu(net, alpha)
    x = _evaluate_rates(a, p, mu)
    out = {"start": start, "converged": converged, "updates": len(trace) - 1, "alpha": float(alpha.mean()),
           "state": EXAMPLE2_STATES.get(B, "other"), "trace": trace}
    out.update(_ex2_summary(net, p, x))
    out["switches"] = [{"t_s": t["t_s"], "to": t["state"], "alpha": t["alpha"]}
                       for t0, t in zip(trace, trace[1:]) if t["state"] != t0["state"]]
    return out


def _evaluate_rates(a, p, mu):
    from .model import evaluate
    return evaluate(a, p, mu)[0]


def example2_model_optimum(net: Network) -> dict:
    """Theorem-11 target of Example 2b: max Σ U_Reno + Σ (α₀/w) log x_FAST s.t. Rx ≤ c (the file's
    fairness weights), solved directly; its dual prices are Reno's marking probabilities, mapped back
    to queues through eq. (2), and the FAST α that yields it is α = x_FAST · q_FAST."""
    opt = optimum(net)
    fast = [i for i, s in enumerate(net.sources) if s.protocol == "fast"]
    reno = [i for i, s in enumerate(net.sources) if s.protocol == "reno"]
    queues = {}
    for l, ln in enumerate(net.link_names):
        m = net.mapping("reno", ln)
        pl = float(opt.prices[l])
        queues[ln] = (m.min_th + (m.max_th - m.min_th) * pl / m.max_p) if pl > 0 else 0.0
    delay = [sum(queues[ln] * net.mapping("fast", ln).scale for ln in net.sources[i].links) for i in fast]
    return {"reno": float(np.mean(opt.rates[reno])), "fast": float(np.mean(opt.rates[fast])),
            "marking": [float(v) for v in opt.prices], "queues": queues, "kkt": opt.kkt,
            "alpha": float(np.mean([opt.rates[i] * d for i, d in zip(fast, delay)]))}


def example2_model(path: str | Path, *, alphas=EXAMPLE2_MODEL_ALPHAS, reno_beta: float | None = None,
                   capacity_scale: float = 1.0, basin_alphas=(8.2, 20.0, 30.0, 50.0), alg2: bool = True) -> dict:
    """Example 2 in the analytic model: equilibria at α = 50 (2a), their α ranges, the Reno state's
    basin against a dip of the l12/l34 queues, Algorithm 2 in the model from both states (2b) and the
    Theorem-11 optimum it should reach."""
    net = example2_model_network(path, reno_beta=reno_beta, capacity_scale=capacity_scale)
    out = {"file": str(path), "reno_beta": float(net.sources[0].utility_weight), "capacity_scale": capacity_scale,
           "alpha50": example2_model_equilibria(net, EXAMPLE2_ALPHA0),
           "sweep": example2_model_sweep(net, alphas),
           "basin": [example2_model_basin(net, al) for al in basin_alphas],
           "optimum": example2_model_optimum(net)}
    if alg2:
        out["alg2"] = {s: example2_model_alg2(net, s) for s in ("reno", "fast")}
    return out
