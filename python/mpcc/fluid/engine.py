"""The fluid engine on a scenario: equilibrium (8)–(9) (with the ``[fluid] rtt`` model), the
engine-independent summary :class:`~mpcc.results.RunResult` (engine "fluid"), trajectories of
(3)–(4) and the default price gain."""

from __future__ import annotations

import numpy as np

from ..algorithms import Algorithm
from ..errors import MpccError
from ..results import GroupResult, LinkResult, RunResult
from ..scenario import Scenario
from .analysis import oscillation
from .dynamics import GAMMA_TIME_S, Trajectory, integrate
from .network import Network, check_at, from_scenario, settings
from .queueing import target_backlog
from .solver import Equilibrium, SolverFailure, solve


class FluidSolverError(MpccError):
    """The equilibrium solver did not converge."""


def _solve_or_explain(net: Network, where: str) -> Equilibrium:
    try:
        return solve(net)
    except SolverFailure as e:
        raise FluidSolverError(
            f"{where}: the fluid equilibrium solver did not converge ({e}); the algorithms' φ may "
            f"violate C2 here (e.g. Balia with very different route RTTs) (fix: inspect the "
            f"trajectories with `mpcc fluid dynamics`, or check the scenario)") from None


def equilibrium(scenario: Scenario, *, algorithm: Algorithm | None = None, at_s: float | None = None,
                rtt: str | None = None) -> Equilibrium:
    """Equilibrium (8)–(9) of a scenario (every group present, or those active at ``at_s``)."""
    st = settings(scenario)
    if at_s is not None:
        check_at(scenario, at_s, "--at")
    at_s = st.at_s if at_s is None else at_s
    rtt = st.rtt if rtt is None else rtt
    net, groups = from_scenario(scenario, at_s=at_s, algorithm=algorithm)
    eq = _solve_or_explain(net, scenario.source)
    if rtt == "propagation+queue":
        eq, groups = _queue_fixed_point(scenario, eq, groups, at_s, algorithm)
    eq.groups = groups
    _check_prices(scenario, eq)
    return eq


#: Fixed point backlog ↔ equilibrium of rtt = "propagation+queue": tolerance (packets, times
#: 1 + backlog), most iterations, smallest damping factor.
QUEUE_TOL_PKTS = 1e-6
QUEUE_MAX_ITER = 200
QUEUE_MIN_DAMPING = 1.0 / 64


def _queue_fixed_point(scenario: Scenario, eq: Equilibrium, groups, at_s, algorithm):
    """τ_r = propagation + Σ_l b_l/c_l with b_l the mean backlog at the equilibrium price
    (:mod:`.queueing`): iteration b ← b + α (T(b) − b) from the propagation-only equilibrium,
    re-solving (8)–(9) with the new RTTs each time, until |T(b) − b| ≤ tol. α starts at 1 (the
    map is a contraction when the price moves little with the RTT) and halves whenever the
    step does not shrink (a link flipping between priced and unpriced)."""
    c_full = np.array([scenario.capacity_pps(l) for l in scenario.links])
    b = np.zeros(len(scenario.links))
    alpha, prev, worst = 1.0, np.inf, np.inf
    for it in range(QUEUE_MAX_ITER):
        net = eq.network
        load = net.Hm @ (eq.x * net.tau)
        tau_bar = np.divide(load, eq.y, out=np.zeros_like(load), where=eq.y > 0)
        t = target_backlog(scenario, b, eq.p, eq.y, net.capacity, tau_bar)
        step = t - b
        worst = float(np.max(np.abs(step) - QUEUE_TOL_PKTS * (1.0 + b))) if b.size else -1.0
        if worst <= 0:
            eq.queue_pkts, eq.queue_iterations = b, it
            return eq, groups
        norm = float(np.max(np.abs(step)))
        if norm > 0.9 * prev:
            alpha = max(alpha / 2.0, QUEUE_MIN_DAMPING)
        prev = norm
        b = np.maximum(b + alpha * step, 0.0)
        net, groups = from_scenario(scenario, at_s=at_s, algorithm=algorithm, extra_delay_s=b / c_full)
        eq = _solve_or_explain(net, scenario.source)
    raise FluidSolverError(
        f"{scenario.source}: [fluid] rtt = \"propagation+queue\": the queueing delays and the equilibrium "
        f"did not reach a fixed point in {QUEUE_MAX_ITER} iterations (backlog still moving by "
        f"{worst:.3g} packets) (fix: use rtt = \"propagation\", or check the scenario with `mpcc fluid dynamics`)")


#: Largest equilibrium price accepted: p_l is (Peng et al.) the loss probability, and above 1 the
#: model is already stretched (Table III's EWTCP reaches 2.9 on link2, whose per-flow
#: bandwidth-delay product is 0.8 packets); p = 100 means Reno windows of √(2/p) = 0.14 packets,
#: where no packet network behaves like the fluid model — and (3)–(4) get stiff as τ/√(2p).
MAX_PRICE = 100.0


def _check_prices(scenario: Scenario, eq: Equilibrium) -> None:
    bad = np.flatnonzero(~(eq.p <= MAX_PRICE))
    if bad.size:
        l = int(bad[0])
        link = scenario.links[l]
        raise MpccError(f"{scenario.source}: links[{l}] ({link.name}): the fluid equilibrium needs a loss probability "
                        f"p = {float(eq.p[l]):.3g} (> {MAX_PRICE:g}: windows far below one packet at this capacity and "
                        f"delay), outside the fluid model (fix: raise capacity_mbps or delay_ms, or use `mpcc sim`)")


def to_result(scenario: Scenario, eq: Equilibrium) -> RunResult:
    """The output contract (engine "fluid"): per-flow rates in Mb/s, link load and price p_l (plus
    the link's random ``loss``, when it has one)."""
    net = eq.network
    groups = eq.groups or []
    D = oscillation(eq)
    mb = scenario.pps_to_mbps
    out = {}
    for s, g in enumerate(groups):
        r = np.flatnonzero(net.source_of_route == s)
        extra = {"rtt_ms": [float(1e3 * t) for t in net.tau[r]],
                 "price_route": [float(v) for v in eq.q[r]],
                 "oscillation_D": float(D[s]),
                 "unique": bool(np.allclose(eq.x_min[r], eq.x_max[r], rtol=1e-7, atol=1e-9))}
        if not extra["unique"]:
            extra["path_rate_range_mbps"] = [[mb(a), mb(b)] for a, b in zip(eq.x_min[r], eq.x_max[r])]
        out[g.name] = GroupResult(g.algorithm.describe(), g.count, mb(float(eq.x[r].sum())),
                                  [mb(float(v)) for v in eq.x[r]], extra)
    links = {}
    for l, link in enumerate(scenario.links):
        # the link's load as sim and testbed count it: the flows plus the mean of the open-loop
        # background the model took off its capacity (net.capacity = c_l − background)
        c_full = scenario.capacity_pps(link)
        bg = c_full - float(net.capacity[l])
        load = float(eq.y[l]) + bg
        ex = {"utilization": load / c_full}
        if bg > 0:
            ex["background_mbps"] = mb(bg)
        if eq.queue_pkts is not None:
            ex["queue_pkts"] = float(eq.queue_pkts[l])
        # price = the link's loss probability, as the sim and the testbed count it (their drops
        # include the random ones): congestion price p_l plus the random loss
        if link.loss:
            ex["congestion_price"] = float(eq.p[l])
            ex["random_loss"] = float(link.loss)
        links[link.name] = LinkResult(mb(load), float(eq.p[l]) + link.loss, ex)
    rtt = settings(scenario).rtt
    return RunResult("fluid", scenario.name, out, links,
                     {"unique": eq.unique, "residuals": eq.residuals, "rtt_model": rtt, "queue_iterations": eq.queue_iterations,
                      "newton_steps": eq.iterations})


def dynamics(scenario: Scenario, t_end: float | None = None, gamma=None, *,
             algorithm: Algorithm | None = None, n_points: int = 600, progress=None) -> Trajectory:
    """Integrate (3)–(4) for the scenario from x_r = 1/τ_r, p = 0; groups are present in
    [start_s, stop_s). ``gamma``: a number (1/packet) for every link, or None for
    :func:`default_gamma`."""
    st = settings(scenario)
    t_end = t_end if t_end is not None else (st.t_end if st.t_end is not None else scenario.duration_s)
    g = default_gamma(scenario, algorithm) if gamma is None else gamma
    net, groups = from_scenario(scenario, algorithm=algorithm)
    starts = np.concatenate([np.full(len(gr.paths), gr.start_s) for gr in groups])
    stops = np.concatenate([np.full(len(gr.paths), gr.stop_s) for gr in groups])
    tr = integrate(net, g, t_end, starts=starts, stops=stops, n_points=n_points, progress=progress)
    tr.groups = groups
    return tr


def default_gamma(scenario, algorithm=None) -> np.ndarray:
    """Per-link γ_l in 1/packet (price increase per packet of excess traffic).

    ``[fluid] gamma`` sets every link. Otherwise γ_l = p*_l / (c_l · 0.1 s) from the equilibrium
    prices p* of the scenario: relative to its equilibrium level the price integrates the relative
    overload with a 0.1 s time constant, so the trajectories of Peng et al.'s scenarios settle in
    about a second whatever the link speed (a fixed physical slope such as RED's max_p/(max_th −
    min_th) gives lightly damped oscillations at tens of Mb/s). Links unpriced at equilibrium get
    the median γ of the priced ones."""
    g = settings(scenario).gamma
    if g is not None:
        return np.full(len(scenario.links), g)
    eq = equilibrium(scenario, algorithm=algorithm)
    c = eq.network.capacity
    gam = eq.p / (c * GAMMA_TIME_S)
    pos = gam[gam > 0]
    fill = float(np.median(pos)) if pos.size else 1.0 / (c.max() * GAMMA_TIME_S)
    return np.where(gam > 0, gam, fill)
