"""The fluid network of Peng et al. §II-A as plain arrays.

* links l ∈ L with capacities c_l (packets/s);
* sources s ∈ S, each with a fixed set of routes r ∈ s (a route = a set of links), RTT τ_r;
* routing matrix H ∈ {0,1}^{|L|×|R|} (H_lr = 1 iff l ∈ r), q = Hᵀp + ℓ, y = H x, with ℓ_r the
  route's random (non-congestion) loss probability 1 − Π_{l∈r}(1 − loss_l) (0 without ``loss``).

Sources running the same algorithm with the same number of routes are stored together as one
:class:`SourceClass` with arrays of shape (B, n) (B sources × n routes), so φ_r and k_r of eq. (7)
are evaluated for all of them in one call (``algo.fluid_phi(x, tau)`` over the batch).
Routes are numbered class by class, source by source: route ``route0 + b·n + i`` is route i of
source b of a class. A scenario group of ``count`` identical flows is one source with
multiplicity ``count`` (its routes carry ``count`` identical flows: y = H diag(m) x).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from ..algorithms import Algorithm
from ..errors import MpccError, ScenarioError
from ..scenario import Scenario
from .options import RTT_MODES, check_at  # noqa: F401  (the [fluid] table, declared for mpcc.scenario)


class NoFluidModel(MpccError):
    """The algorithm has no fluid model of the form (3) (OLIA, FAST)."""


@dataclass(frozen=True)
class SourceClass:
    algorithm: Algorithm
    tau: np.ndarray            # (B, n) route RTTs, seconds
    route0: int                # global index of the first route of this class
    source0: int               # global index of the first source of this class

    @property
    def shape(self) -> tuple[int, int]:
        return self.tau.shape

    @property
    def routes(self) -> slice:
        return slice(self.route0, self.route0 + self.tau.size)


@dataclass(frozen=True)
class Network:
    capacity: np.ndarray                 # (L,) c_l, packets/s
    H: sp.csr_matrix                     # (L, R) routing matrix, 0/1
    multiplicity: np.ndarray             # (R,) flows carried by each route's source
    classes: tuple[SourceClass, ...]
    link_names: tuple[str, ...] = ()
    source_names: tuple[str, ...] = ()   # one per source (global source order)
    source_of_route: np.ndarray = field(default_factory=lambda: np.zeros(0, int))  # (R,)
    link_loss: np.ndarray | None = None  # (L,) random loss probability per packet (links' ``loss``)

    @property
    def n_links(self) -> int:
        return self.capacity.size

    @property
    def n_routes(self) -> int:
        return self.H.shape[1]

    @property
    def tau(self) -> np.ndarray:
        return np.concatenate([c.tau.ravel() for c in self.classes]) if self.classes else np.zeros(0)

    @cached_property
    def route_loss(self) -> np.ndarray:
        """ℓ_r = 1 − Π_{l∈r}(1 − loss_l): the probability that route r loses a packet at random,
        whatever the congestion prices (0 on every route without lossy links); computed once."""
        if self.link_loss is None or not np.any(self.link_loss):
            return np.zeros(self.n_routes)
        return -np.expm1(self.H.T @ np.log1p(-self.link_loss))

    def route_price(self, p: np.ndarray) -> np.ndarray:
        """q = Hᵀp + ℓ: the loss probability route r sees, the congestion prices of its links
        plus its random loss (prices add along a route, eq. (3))."""
        return self.H.T @ p + self.route_loss

    @property
    def Hm(self) -> sp.csr_matrix:
        """H diag(m): y = Hm x counts every flow of a group."""
        return (self.H @ sp.diags(self.multiplicity)).tocsr()


def build(capacity, sources, link_names=(), source_names=(), link_loss=None) -> Network:
    """Build a :class:`Network` from ``sources``: a list of (algorithm, [route link-index lists],
    [route RTTs], multiplicity). Sources are regrouped into classes by (algorithm, n routes);
    the returned ``source_names`` follow the class order. ``link_loss`` (per link, in [0, 1)):
    random loss added to the price of every route through the link."""
    capacity = np.asarray(capacity, dtype=float)
    buckets: dict[tuple, list[int]] = {}
    for i, (algo, routes, taus, _m) in enumerate(sources):
        if len(routes) != len(taus):
            raise ValueError("one RTT per route")
        key = (type(algo).__name__, algo.describe(), len(routes))
        buckets.setdefault(key, []).append(i)
    classes, rows, cols, mult, names, src_of_route = [], [], [], [], [], []
    r0 = s0 = 0
    for key, idx in buckets.items():
        algo = sources[idx[0]][0]
        n = key[2]
        tau = np.array([sources[i][2] for i in idx], dtype=float).reshape(len(idx), n)
        classes.append(SourceClass(algo, tau, r0, s0))
        for b, i in enumerate(idx):
            _, routes, _, m = sources[i]
            for k, links in enumerate(routes):
                r = r0 + b * n + k
                rows.extend(links)
                cols.extend([r] * len(links))
                mult.append(m)
                src_of_route.append(s0 + b)
            names.append(source_names[i] if source_names else str(i))
        r0 += len(idx) * n
        s0 += len(idx)
    H = sp.csr_matrix((np.ones(len(rows)), (np.asarray(rows, int), np.asarray(cols, int))),
                      shape=(capacity.size, r0))
    H.data[:] = 1.0  # a route lists each link once (validated by the scenario loader)
    loss = None if link_loss is None else np.asarray(link_loss, dtype=float)
    return Network(capacity, H, np.asarray(mult, float), tuple(classes), tuple(link_names),
                   tuple(names), np.asarray(src_of_route, int), loss)


# --- scenario → network ------------------------------------------------------------------------


@dataclass(frozen=True)
class FluidSettings:
    """The ``[fluid]`` table of a scenario."""

    rtt: str = "propagation"
    gamma: float | None = None     # price gain γ_l of (4), 1/packet (None: per-link default)
    t_end: float | None = None     # dynamics horizon (default: duration_s)
    at_s: float | None = None      # equilibrium of the groups active at this time (default: all)


def settings(scenario: Scenario) -> FluidSettings:
    """The validated ``[fluid]`` table (:func:`mpcc.scenario.engine_options`)."""
    from ..scenario import engine_options
    st = FluidSettings(**engine_options(scenario, "fluid"))
    return st


def check_fluid_model(scenario: Scenario, groups=None) -> None:
    for g in groups if groups is not None else scenario.groups:
        if not g.algorithm.fluid_model:
            raise NoFluidModel(f"{scenario.source}: group {g.name!r} uses {g.algorithm.name}, which has no "
                               f"fluid model of the form (3) (Peng et al. §II-B) (fix: run it with "
                               f"`mpcc sim`, or give the group an algorithm that has one, in the scenario or with "
                               f"`mpcc fluid --algorithm`)")


def active_groups(scenario: Scenario, at_s: float | None):
    if at_s is None:
        return list(scenario.groups)
    return [g for g in scenario.groups if g.start_s <= at_s < g.stop_s]


def background_load_pps(scenario: Scenario, at_s: float | None) -> np.ndarray:
    """Mean rate of the on-off UDP background (rate × on/(on+off)) per link, packets/s. It is
    open-loop, so in the fluid model it just removes capacity."""
    idx = scenario.link_index
    load = np.zeros(len(scenario.links))
    for b in scenario.background:
        if at_s is not None and not (b.start_s <= at_s < b.stop_s):
            continue
        mean = b.rate_mbps * b.mean_on_s / (b.mean_on_s + b.mean_off_s)
        for n in b.path:
            load[idx[n]] += mean * 1e6 / (8.0 * scenario.packet_bytes)
    return load


def from_scenario(scenario: Scenario, *, at_s: float | None = None, extra_delay_s=None,
                  algorithm: Algorithm | None = None) -> tuple[Network, list]:
    """Network of a scenario: one source per group (multiplicity = count). ``extra_delay_s``
    (per link, seconds) is added to the RTT of every route through the link (queueing delay).
    ``algorithm`` overrides the algorithm of every multipath group. Returns (network, groups)
    with groups in network source order."""
    groups = active_groups(scenario, at_s)
    if algorithm is not None:
        from dataclasses import replace
        groups = [replace(g, algorithm=algorithm) if g.multipath else g for g in groups]
    check_fluid_model(scenario, groups)
    idx = scenario.link_index
    cap = np.array([scenario.capacity_pps(l) for l in scenario.links]) - background_load_pps(scenario, at_s)
    if np.any(cap <= 0):
        bad = scenario.links[int(np.argmin(cap))].name
        raise ScenarioError(scenario.source, "background", f"background traffic saturates link {bad!r}",
                            "lower the background rate_mbps")
    extra = np.zeros(len(scenario.links)) if extra_delay_s is None else np.asarray(extra_delay_s)
    sources = []
    for g in groups:
        routes = [[idx[n] for n in path] for path in g.paths]
        taus = [scenario.path_delay_s(path) + sum(extra[idx[n]] for n in path) for path in g.paths]
        if min(taus) <= 0:
            raise ScenarioError(scenario.source, f"groups.{g.name}.paths",
                                "a route has zero round-trip time; the fluid model needs τ_r > 0",
                                "give the links on this path a delay_ms > 0")
        sources.append((g.algorithm, routes, taus, g.count))
    net = build(cap, sources, [l.name for l in scenario.links], [g.name for g in groups],
                [l.loss for l in scenario.links])
    order = {name: g for name, g in zip([g.name for g in groups], groups)}
    return net, [order[n] for n in net.source_names]


def random_network(n_links: int, n_sources: int, *, seed: int = 0, algorithms_=("balia",),
                   routes=(2, 3), hops=(3, 5), capacity_pps=(800.0, 80000.0), delay_s=(0.001, 0.05),
                   single_path_fraction: float = 0.0) -> Network:
    """A random network: capacities log-uniform, every route a random set of ``hops`` links,
    per-link one-way delays uniform in ``delay_s`` (τ_r = 2 Σ delay). ``algorithms_`` is cycled
    over the multipath sources; a fraction of single-path Reno sources can be mixed in."""
    from .. import algorithms as algs

    rng = np.random.default_rng(seed)
    cap = np.exp(rng.uniform(np.log(capacity_pps[0]), np.log(capacity_pps[1]), n_links))
    delay = rng.uniform(delay_s[0], delay_s[1], n_links)
    algos = [algs.get(a) for a in algorithms_]
    reno = algs.get("reno")
    sources = []
    for s in range(n_sources):
        single = rng.random() < single_path_fraction
        nr = 1 if single else int(rng.integers(routes[0], routes[1] + 1))
        rl, taus = [], []
        for _ in range(nr):
            h = int(rng.integers(hops[0], hops[1] + 1))
            links = rng.choice(n_links, size=h, replace=False)
            rl.append(links.tolist())
            taus.append(2.0 * float(delay[links].sum()))
        sources.append((reno if single else algos[s % len(algos)], rl, taus, 1))
    return build(cap, sources, [f"l{i}" for i in range(n_links)], [f"s{i}" for i in range(n_sources)])
