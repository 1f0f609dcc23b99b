"""Example 3 of Tang et al. (§VI-B): three links, three protocols with K^1 = I, K^2 = diag(5,1,5),
K^3 = diag(1,3,1) (Fig. 7). The paper takes its utilities from [36] without listing them; we use
α-fair utilities chosen so that the network (μ = 1) has three equilibria (``EXAMPLE3_UTILITIES``).
Reports all equilibria, the equilibrium the dual dynamics reach from the starts of Cases 1 and 2
(the state "after the first iteration"), Algorithm 1 with κ = 0.1 and 0.9 (μ updated every 20 time
units) from both starts, and the Theorem-11 optimum; plots p_1(t) like Figs. 8 and 9."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...hetero.dynamics import algorithm1, optimum, settle
from ...hetero.equilibria import find_equilibria
from ...hetero.model import Network, PriceMapping, Source, network
from ...plotting import save_figure
from .paper import EXAMPLE3_CASES, EXAMPLE3_K, PAPER_EXAMPLE3

# (alpha, beta) per source.  Not given in the paper (it cites [36]); chosen by us (least-squares
# fit of the paper's Case-1/Case-2 equilibria and p_1* = 0.222, then rounded) so that the network
# has three equilibria: two stable ones, reached from the Case-1 and Case-2 starts, and an
# unstable one between them.  Our Case-1 equilibrium and optimum are close to the paper's; our
# Case-2 equilibrium is not (bench/hetero/RESULTS.md, Example 3).
EXAMPLE3_UTILITIES = {
    "s1_1": (8.0, 6.483e-9), "s1_2": (2.0, 7.234e-4), "s1_3": (8.0, 6.483e-9),
    "s2_1": (0.5, 0.2307), "s2_2": (0.5, 0.2307),
    "s3_1": (8.0, 0.1845),
}


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
