"""Published Balia on random networks: how many equilibria (8)–(9) the fluid solver finds, and by
which route (barrier path directly, or the arc-length continuation from the generalized rule).

    .venv/bin/python bench/fluid/balia_random.py [--seeds 60] [--mixed-seeds 30] [--links 20 --sources 60]

By default 20 links, 60 sources with 2–3 routes of 3–5 links (heterogeneous RTTs); "mixed" cycles balia, lia,
ewtcp, generalized over the multipath sources and adds 30 % single-path Reno. (8)–(9) are checked
from the algorithms' fluid_phi, the routing matrix and the capacities, not the solver's residuals."""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from mpcc.fluid import network, solver


def kkt(net, x, p) -> float:
    H = net.H.toarray()
    q, y = H.T @ p, (H * net.multiplicity[None, :]) @ x
    worst = 0.0
    for c in net.classes:
        B, n = c.shape
        xs, qs = x[c.routes].reshape(B, n), q[c.routes].reshape(B, n)
        with np.errstate(all="ignore"):
            rel = (c.algorithm.fluid_phi(np.where(xs > 0, xs, 1e-30), c.tau) - qs) / qs
        worst = max(worst, np.abs(rel[xs > 0]).max(initial=0), np.maximum(rel, 0).max(initial=0))
    c = net.capacity
    return max(worst, np.maximum((y - c) / c, 0).max(), np.abs((y - c) / c)[p > 0].max(initial=0),
               np.maximum(-x, 0).max(), np.maximum(-p, 0).max())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=60)
    ap.add_argument("--mixed-seeds", type=int, default=30)
    ap.add_argument("--links", type=int, default=20)
    ap.add_argument("--sources", type=int, default=60)
    a = ap.parse_args()
    warnings.simplefilter("ignore")
    orig = solver.balia_continuation
    used = []

    def spy(*args, **kw):
        used.append(True)
        return orig(*args, **kw)

    solver.balia_continuation = spy
    for label, algos, spf, n in [("all-balia", ("balia",), 0.0, a.seeds),
                                 ("mixed", ("balia", "lia", "ewtcp", "generalized"), 0.3, a.mixed_seeds)]:
        direct = cont = fail = 0
        times, worst = [], 0.0
        for seed in range(n):
            used.clear()
            net = network.random_network(a.links, a.sources, seed=seed, algorithms_=algos, single_path_fraction=spf)
            t0 = time.perf_counter()
            try:
                eq = solver.solve(net, ranges=False)
                r = kkt(net, eq.x, eq.p)
                worst = max(worst, r)
                if r >= 1e-10:
                    fail += 1
                elif used:
                    cont += 1
                else:
                    direct += 1
            except solver.SolverFailure as e:
                fail += 1
                print(f"{label} seed {seed}: {e}")
            times.append(time.perf_counter() - t0)
        print(f"{label}: {direct + cont}/{n} solved ({direct} by the barrier path, {cont} by the continuation), "
              f"{fail} failed; worst (8)-(9) residual {worst:.1e}; median {np.median(times):.2f} s, "
              f"max {max(times):.2f} s")


if __name__ == "__main__":
    main()
