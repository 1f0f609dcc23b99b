"""Example 4 of Tang et al. (§VI-B): 5 links, 15 flows, random capacities U[1, 10], flows 1–5 on
links 1–5, flows 6–15 on random routes (each link with probability 1/2), each flow on protocol 1
(m = p) or 2 (m_l = p^{α_l}, α_l ~ U[0.5, 5]) with probability 1/2, asynchronous Algorithm 1
(every 5 time units each flow updates with probability 0.6 or 0.3). Counts the trials whose rates
end within 1 % of the directly solved optimum."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ...hetero.dynamics import algorithm1, optimum
from ...hetero.model import Network, PriceMapping, Source, network, stack
from ...plotting import save_figure
from ...progress import bar, default_workers, run_jobs

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
    workers = workers or default_workers()
    seeds = [seed * 100_000 + t for t in range(trials)]
    chunk = chunk or max(1, math.ceil(trials / (workers * 2)))
    jobs = [(seeds[k:k + chunk], tuple(probs), kappa, period, dt, max_iterations, tol, utility_alpha)
            for k in range(0, trials, chunk)]
    with bar("Example 4 trials", trials, enabled=progress, stderr=False, transient=False) as b:
        results = list(run_jobs(_example4_chunk, jobs, workers=workers, ordered=True, progress=b,
                                weight=lambda r: len(r[0])))
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
