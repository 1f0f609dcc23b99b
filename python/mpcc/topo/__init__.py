"""Topology generators that write scenarios: datacenter networks for multipath studies.

:func:`fattree` builds the k-ary fat tree of Al-Fares et al. (SIGCOMM 2008) as used by Raiciu
et al., "Improving datacenter performance and robustness with Multipath TCP" (SIGCOMM 2011):
k pods, each with k/2 edge and k/2 aggregation switches, (k/2)² core switches and k³/4 hosts.
Between two hosts in different pods there are (k/2)² shortest paths (one per core switch), in
the same pod k/2 (one per aggregation switch), under the same edge switch one.

Every cable is two scenario links, one per direction (a scenario link is one-way; the ACK path
is uncongested in all engines), so a path host → host lists the up links, then the down links::

    h3.up → e0.1>a0.0 → a0.0>c2 → c2>a5.0 → a5.0>e5.1 → h45.down

A multipath connection gets ``subflows`` paths drawn independently and uniformly from the
shortest paths of its host pair, as ECMP hashing of the subflows' port numbers does (so two
subflows may collide on a path, as they do in the paper); single-path TCP is one draw.
Traffic ``permutation``: every host sends to one other host and receives from one (a random
derangement), the matrix of Raiciu et al. Fig. 2 — its optimum is every host at line rate,
since the fat tree has full bisection bandwidth.

>>> from mpcc import topo
>>> doc = topo.fattree(k=4, subflows=4, algorithm="lia")      # a scenario document (dict)
>>> s = topo.scenario(doc)                                     # validated Scenario
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from ..errors import MpccError

#: Defaults of the datacenter links (Raiciu et al. 2011 use 1 Gb/s links and shallow buffers;
#: 100 packets is htsim's default queue; a few µs of propagation per hop inside a datacenter).
LINK_DEFAULTS = {"capacity_mbps": 1000.0, "delay_ms": 0.005, "buffer_pkts": 100}


@dataclass(frozen=True)
class FatTree:
    """Switch and host numbering of a k-ary fat tree (k even)."""

    k: int

    @property
    def half(self) -> int:
        return self.k // 2

    @property
    def hosts(self) -> int:
        return self.k ** 3 // 4

    def locate(self, h: int) -> tuple[int, int]:
        """(pod, edge switch) of host h."""
        per_pod = self.half * self.half
        return h // per_pod, (h % per_pod) // self.half

    def paths(self, src: int, dst: int) -> list[list[str]]:
        """Every shortest path from host ``src`` to host ``dst`` as a list of link names."""
        (ps, es), (pd, ed) = self.locate(src), self.locate(dst)
        up, down = f"h{src}.up", f"h{dst}.down"
        if (ps, es) == (pd, ed):
            return [[up, down]]
        if ps == pd:
            return [[up, f"e{ps}.{es}>a{ps}.{a}", f"a{pd}.{a}>e{pd}.{ed}", down] for a in range(self.half)]
        out = []
        for a in range(self.half):
            for j in range(self.half):
                c = a * self.half + j
                out.append([up, f"e{ps}.{es}>a{ps}.{a}", f"a{ps}.{a}>c{c}", f"c{c}>a{pd}.{a}",
                            f"a{pd}.{a}>e{pd}.{ed}", down])
        return out

    def link_names(self) -> list[str]:
        """All one-way links: host up/down, edge↔aggregation and aggregation↔core, both ways."""
        names = []
        for h in range(self.hosts):
            names += [f"h{h}.up", f"h{h}.down"]
        for p in range(self.k):
            for e in range(self.half):
                for a in range(self.half):
                    names += [f"e{p}.{e}>a{p}.{a}", f"a{p}.{a}>e{p}.{e}"]
            for a in range(self.half):
                for j in range(self.half):
                    c = a * self.half + j
                    names += [f"a{p}.{a}>c{c}", f"c{c}>a{p}.{a}"]
        return names

    @staticmethod
    def is_core(link: str) -> bool:
        """Links between an aggregation and a core switch (Raiciu et al.'s "core links")."""
        return ">c" in link or link.startswith("c")


def permutation(n: int, rng: random.Random) -> list[int]:
    """A random derangement of range(n): dst[i] ≠ i, every host receives from exactly one."""
    if n < 2:
        raise MpccError(f"permutation traffic needs at least 2 hosts, got {n} (fix: use a larger --k)")
    while True:
        dst = list(range(n))
        rng.shuffle(dst)
        if all(d != i for i, d in enumerate(dst)):
            return dst


def fattree(k: int = 8, *, subflows: int = 8, algorithm: Any = "lia", traffic: str = "permutation",
            seed: int = 0, duration_s: float = 1.0, capacity_mbps: float = LINK_DEFAULTS["capacity_mbps"],
            delay_ms: float = LINK_DEFAULTS["delay_ms"], buffer_pkts: int = LINK_DEFAULTS["buffer_pkts"],
            name: str | None = None, sim: dict[str, Any] | None = None) -> dict[str, Any]:
    """A scenario document (the dict a TOML scenario decodes to) for a k-ary fat tree with
    ``traffic`` between its hosts; every connection uses ``algorithm`` over ``subflows`` ECMP
    paths (``subflows = 1``: single-path)."""
    if not isinstance(k, int) or k < 2 or k % 2 or k > 48:
        raise MpccError(f"--k must be an even integer in [2, 48], got {k!r} (fix: use e.g. --k 8)")
    if not 1 <= subflows <= 8:
        raise MpccError(f"--subflows must be in [1, 8] (MPTCP subflow limit of the engines), got {subflows} "
                        f"(fix: use e.g. --subflows 8)")
    if traffic != "permutation":
        raise MpccError(f"unknown traffic matrix {traffic!r} (fix: use --traffic permutation)")
    ft = FatTree(k)
    rng = random.Random(seed)
    dst = permutation(ft.hosts, rng)
    groups = []
    for src, d in enumerate(dst):
        choices = ft.paths(src, d)
        paths = [rng.choice(choices) for _ in range(subflows)]
        groups.append({"name": f"h{src}-h{d}", "count": 1, "algorithm": algorithm, "paths": paths})
    links = [{"name": n, "capacity_mbps": float(capacity_mbps), "delay_ms": float(delay_ms),
              "buffer_pkts": int(buffer_pkts)} for n in ft.link_names()]
    algo_name = algorithm if isinstance(algorithm, str) else algorithm.get("name", "custom")
    doc: dict[str, Any] = {
        "name": name or f"fattree-k{k}-{traffic}-{algo_name}-{subflows}sf",
        "description": (f"k={k} fat tree ({ft.hosts} hosts), {capacity_mbps:g} Mb/s links, {buffer_pkts}-packet "
                        f"buffers, {traffic} traffic, {algo_name} over {subflows} ECMP subflow(s), seed {seed}"),
        "duration_s": float(duration_s),
        "links": links,
        "groups": groups,
    }
    # Flows start within the first millisecond (thousands of RTTs of ~0.1 ms), not within the
    # simulator's default second, which is a WAN-scale choice and would leave some hosts idle for
    # most of a sub-second datacenter run.
    doc["sim"] = {"start_jitter_s": 1e-3, **(sim or {})}
    return doc


def scenario(doc: dict[str, Any], source: str = "<fattree>"):
    """Validate a generated document into a :class:`mpcc.scenario.Scenario`."""
    from .. import scenario as sc
    return sc.parse(doc, source)


def dumps(doc: dict[str, Any]) -> str:
    """The document as TOML text (``tomli_w``)."""
    import tomli_w
    return tomli_w.dumps(doc)
