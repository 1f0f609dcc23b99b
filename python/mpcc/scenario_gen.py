"""Random scenarios for tests and for trying the engines on networks from no paper.

>>> from mpcc import scenario_gen
>>> s = scenario_gen.generate(7)                      # a valid Scenario, same for the same seed
>>> text = scenario_gen.generate_toml(7)              # the same scenario as a TOML file
>>> s = scenario_gen.generate(7, aqm="red", algorithms_=scenario_gen.FLUID_ALGORITHMS)

Ranges (each a keyword argument, see :class:`Ranges`): 2–5 links of 10–100 Mb/s with one-way
delay 5–100 ms (log-uniform), RED or drop-tail queues, 1–3 paths per group (a path crosses one
link, or two with probability ``two_link_path_p``), 1–20 flows per group, RED thresholds of
5–20 packets (or a fraction of the bandwidth-delay product: ``red_min_th_bdp``), every algorithm of
:data:`ALGORITHMS` with random parameters where it has some. Every link is used by at
least one group. A scenario is a pure function of (seed, ranges): :func:`generate` builds the TOML
document, writes it with ``tomli_w`` and parses it back with :func:`mpcc.scenario.loads`, so what
it returns passed the same validation as a user's file.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import tomli_w

from . import algorithms, scenario
from .scenario import Scenario

#: The algorithms drawn by default, in a fixed list (aliases such as ``max`` = LIA left out;
#: MTCP's presets are drawn as random (α, β)). Fixed, not the registry: a seed names the same
#: network whatever algorithms are added later (the recorded results of generated networks stay
#: reproducible); a newer algorithm is drawn by passing ``algorithms_`` (e.g. :data:`ALL`).
ALGORITHMS = ("reno", "ewtcp", "scalable", "coupled", "semicoupled", "lia", "olia", "balia", "generalized",
              "mstcp", "mtcp", "fast")
#: Every algorithm of the registry.
ALL = tuple(algorithms.REGISTRY)
#: Those with a fluid model (3) of Peng et al. (``Algorithm.fluid_model``).
FLUID_ALGORITHMS = tuple(n for n in ALGORITHMS if algorithms.get(n).fluid_model)


@dataclass(frozen=True)
class Ranges:
    links: tuple[int, int] = (2, 5)
    capacity_mbps: tuple[float, float] = (10.0, 100.0)
    delay_ms: tuple[float, float] = (5.0, 100.0)     # one-way, log-uniform
    groups: tuple[int, int] = (2, 4)
    paths: tuple[int, int] = (1, 3)
    flows: tuple[int, int] = (1, 20)
    two_link_path_p: float = 0.25
    duration_s: float = 30.0
    #: RED min_th as a fraction of the link's bandwidth-delay product (max_th = 3 min_th,
    #: buffer = 2 max_th) instead of 5–20 packets; None: packets
    red_min_th_bdp: tuple[float, float] | None = None


def _algorithm_spec(rng: np.random.Generator, name: str) -> Any:
    """A name, or a table with random parameters for the parameterised algorithms."""
    if name == "generalized":
        n = "inf" if rng.random() < 0.5 else int(rng.integers(1, 4))
        return {"name": name, "beta": round(float(rng.uniform(0.0, 1.0)), 2),
                "eta": round(float(rng.uniform(0.0, 1.0)), 2), "n": n}
    if name == "ewtcp":
        return name if rng.random() < 0.5 else {"name": name, "a": float(rng.choice([0.25, 0.5, 1.0]))}
    if name == "mtcp":
        return {"name": name, "alpha": round(float(rng.uniform(0, 1)), 2), "beta": round(float(rng.uniform(0, 1)), 2)}
    return name


def generate_dict(seed: int, *, aqm: str = "mixed", algorithms_: Sequence[str] | None = None,
                  ranges: Ranges = Ranges(), name: str | None = None) -> dict[str, Any]:
    """The TOML document (a dict) of random scenario ``seed``. ``aqm``: "red", "droptail" or
    "mixed" (each link either). ``algorithms_``: names to draw from (default every name)."""
    if aqm not in ("red", "droptail", "mixed"):
        raise ValueError(f"aqm must be 'red', 'droptail' or 'mixed', got {aqm!r}")
    pool = tuple(algorithms_) if algorithms_ else ALGORITHMS
    rng = np.random.default_rng([int(seed), 0x5CE7])
    r = ranges
    n_links = int(rng.integers(r.links[0], r.links[1] + 1))
    links = []
    for i in range(n_links):
        cap = round(float(rng.uniform(*r.capacity_mbps)), 1)
        delay = round(float(math.exp(rng.uniform(math.log(r.delay_ms[0]), math.log(r.delay_ms[1])))), 1)
        kind = aqm if aqm != "mixed" else ("red" if rng.random() < 0.5 else "droptail")
        link: dict[str, Any] = {"name": f"l{i + 1}", "capacity_mbps": cap, "delay_ms": delay}
        if kind == "red":
            min_th = int(rng.integers(5, 21))
            max_th = int(min_th * rng.uniform(2.0, 4.0))
            buffer = int(max_th * 2 + rng.integers(0, 50))
            max_p = round(float(rng.uniform(0.05, 0.2)), 3)
            u = rng.random()  # always drawn, so both threshold modes give the same network otherwise
            if r.red_min_th_bdp is not None:
                lo, hi = r.red_min_th_bdp
                bdp = cap * 1e6 / (8.0 * 1500) * 2 * delay / 1e3
                min_th = max(5, int((lo + u * (hi - lo)) * bdp))
                max_th, buffer = 3 * min_th, 6 * min_th
            link.update(buffer_pkts=buffer, aqm="red", red={"min_th": min_th, "max_th": max_th, "max_p": max_p})
        else:
            link.update(buffer_pkts=int(rng.integers(20, 201)), aqm="droptail")
        links.append(link)
    names = [l["name"] for l in links]

    def random_path(first: str) -> list[str]:
        if n_links > 1 and rng.random() < r.two_link_path_p:
            other = str(rng.choice([n for n in names if n != first]))
            return [first, other]
        return [first]

    n_groups = int(rng.integers(r.groups[0], r.groups[1] + 1))
    groups = []
    unused = list(rng.permutation(names))
    for gi in range(n_groups):
        n_paths = int(rng.integers(r.paths[0], min(r.paths[1], n_links) + 1))
        # the first link of each path: distinct, preferring links no group uses yet
        firsts: list[str] = []
        while len(firsts) < n_paths:
            cand = unused.pop(0) if unused else str(rng.choice(names))
            if cand not in firsts:
                firsts.append(cand)
        paths = [random_path(f) for f in firsts]
        groups.append({"name": f"g{gi + 1}", "count": int(rng.integers(r.flows[0], r.flows[1] + 1)),
                       "algorithm": _algorithm_spec(rng, str(rng.choice(pool))), "paths": paths})
    # links still unused get a single-path group each
    for n in unused:
        groups.append({"name": f"g{len(groups) + 1}", "count": int(rng.integers(r.flows[0], r.flows[1] + 1)),
                       "algorithm": _algorithm_spec(rng, str(rng.choice(pool))), "paths": [[str(n)]]})
    doc: dict[str, Any] = {"name": name or f"generated-{seed}", "duration_s": float(r.duration_s),
                           "description": f"mpcc.scenario_gen.generate({seed}, aqm={aqm!r})",
                           "links": links, "groups": groups,
                           # queueing delay matters at 5 ms links: let the fluid model count it
                           "fluid": {"rtt": "propagation+queue"}}
    return doc


def generate_toml(seed: int, **kw) -> str:
    """The TOML text of :func:`generate_dict` (a file a user can edit and run)."""
    return tomli_w.dumps(generate_dict(seed, **kw))


def generate(seed: int, **kw) -> Scenario:
    """A validated :class:`~mpcc.scenario.Scenario` (see the module doc for the ranges)."""
    return scenario.loads(generate_toml(seed, **kw), source=f"<generated {seed}>")
