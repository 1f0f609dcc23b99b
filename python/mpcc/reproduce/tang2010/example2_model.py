"""Example 2 of Tang et al. in the analytic model (:mod:`mpcc.hetero`; Fig. 4 network, RED eq.
(2), price = queue): equilibria and their α ranges, the Reno state's basin, Algorithm 2 in the
model from both states, and the Theorem-11 optimum."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ...hetero.dynamics import optimum
from ...hetero.equilibria import find_equilibria
from ...hetero.model import Network

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

    from ...hetero.model import load
    net = load(path)
    links = tuple(replace(l, capacity=l.capacity * capacity_scale) for l in net.links)
    if capacity_scale != 1.0:  # FAST's delay b/c follows the capacity
        protos = tuple(replace(p, mapping={k: (replace(m, scale=m.scale / capacity_scale) if m.kind != "red" else m)
                                           for k, m in p.mapping.items()}) for p in net.protocols)
        net = replace(net, protocols=protos)
    srcs = tuple(replace(s, utility_weight=reno_beta) if (reno_beta is not None and s.protocol == "reno") else s
                 for s in net.sources)
    return replace(net, links=links, sources=srcs)


def fast_mu(net: Network, alpha) -> np.ndarray:
    """μ per source: α/α₀ for FAST (α scalar or per FAST source), 1 for Reno."""
    fast = np.array([s.protocol == "fast" for s in net.sources])
    mu = np.ones(len(net.sources))
    mu[fast] = np.asarray(alpha, float) / EXAMPLE2_ALPHA0
    return mu


def _ex2_summary(net: Network, p, x, mu=None) -> dict:
    a = net.arrays()
    fast = [i for i, s in enumerate(net.sources) if s.protocol == "fast"]
    reno = [i for i, s in enumerate(net.sources) if s.protocol == "reno"]
    from ...hetero.model import aggregate_prices
    q, m, _ = aggregate_prices(a, p)
    return {"queues": {ln: float(v) for ln, v in zip(net.link_names, p)},
            "reno": float(np.mean(x[reno])), "fast": float(np.mean(x[fast])),
            "reno_marking": float(q[reno[0]]), "fast_delay_ms": float(np.mean(q[fast])),
            "fast_loss": float(np.mean([sum(float(m[reno[0], l]) for l in range(len(p)) if a.R[l, i] > 0)
                                        for i in fast]))}


def example2_model_equilibria(net: Network, alpha: float = EXAMPLE2_ALPHA0) -> list[dict]:
    """All equilibria at FAST parameter α: state (reno / fast / mixed), queues, per-flow rates,
    stability (eigenvalues of ∂y_B/∂p_B, slack), Theorem 6 (22), residual of (7), index."""
    from ...hetero.dynamics import residual
    mu = fast_mu(net, alpha)
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
    from ...hetero.dynamics import integrate
    eqs = _states_at(net, alpha)
    out = {"alpha": alpha, "reno_queues": eqs.get("reno", {}).get("queues"),
           "saddle_queues": eqs.get("mixed", {}).get("queues"), "critical_l23": {}}
    if "reno" not in eqs or "fast" not in eqs:
        return out
    a, mu = net.arrays(), fast_mu(net, alpha)
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
    from ...hetero.equilibria import polish_root, analyze
    a = net.arrays()
    Bi = np.array([net.link_names.index(ln) for ln in B])
    p, res = polish_root(a, a.c, Bi, np.where(np.isin(np.arange(len(p0)), Bi), np.maximum(p0, 1e-9), 0.0), mu)
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
    from ...hetero.model import aggregate_prices
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
        mu = fast_mu(net, alpha)
        e = _follow_branch(net, B, p, mu)
        if e is None:  # the branch ended: go to the other stable equilibrium
            others = [x for x in find_equilibria(net, mu=mu).equilibria
                      if x.stable and tuple(net.link_names[l] for l in x.bottlenecks) != B]
            if len(others) != 1:
                break
            e = others[0]
        B, p = tuple(net.link_names[l] for l in e.bottlenecks), e.prices
    mu = fast_mu(net, alpha)
    x = _evaluate_rates(a, p, mu)
    out = {"start": start, "converged": converged, "updates": len(trace) - 1, "alpha": float(alpha.mean()),
           "state": EXAMPLE2_STATES.get(B, "other"), "trace": trace}
    out.update(_ex2_summary(net, p, x))
    out["switches"] = [{"t_s": t["t_s"], "to": t["state"], "alpha": t["alpha"]}
                       for t0, t in zip(trace, trace[1:]) if t["state"] != t0["state"]]
    return out


def _evaluate_rates(a, p, mu):
    from ...hetero.model import evaluate
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
