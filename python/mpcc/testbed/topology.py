"""The scenario's network built from namespaces and veth pairs.

::

    client ns (all senders)                relay ns per link (linkem)             server ns
    c<i>: 198.18.i.1[, .11, .12 …]/24 ──veth── lkc [linkem] lks ──veth── s<i>: 198.18.i.2/24

Link ``i`` (in scenario order) gets the subnet 198.18.i.0/24 (RFC 2544 benchmarking range).
Every path of the scenario is one link; a multipath group's route j leaves from its own client
address (the k-th use of a link by the group's routes gets 198.18.i.1 for k = 0, 198.18.i.(10+k)
after), chosen by source-based routing (one ip rule + table per address) — otherwise a second
subflow would leave by the first interface. MPTCP subflow endpoints (``ip mptcp endpoint add
ADDR dev c<i> subflow``) make the kernel path manager open one subflow per route; the initial
subflow is route 0.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import EnvironmentProblem, ScenarioError
from ..scenario import Link, Scenario
from .netns import Run, run

BASE_PORT = 5001
BG_PORT = 6001


@dataclass(frozen=True)
class LinkPlan:
    index: int
    link: Link
    relay_ns: str

    @property
    def subnet(self) -> str:
        return f"198.18.{self.index}"

    @property
    def server_addr(self) -> str:
        return f"{self.subnet}.2"

    def client_addr(self, k: int = 0) -> str:
        return f"{self.subnet}.1" if k == 0 else f"{self.subnet}.{10 + k}"


@dataclass
class Topology:
    scenario: Scenario
    client_ns: str
    server_ns: str
    links: dict[str, LinkPlan]
    # per group index: route j -> client address; address -> route
    routes: dict[int, dict[str, int]] = field(default_factory=dict)
    linkem_stats: dict[str, Path] = field(default_factory=dict)

    def group_plan(self, gi: int, cc: str) -> dict:
        g = self.scenario.groups[gi]
        first = self.links[g.paths[0][0]]
        return {"index": gi, "name": g.name, "count": g.count, "multipath": g.multipath, "cc": cc,
                "port": BASE_PORT + gi, "server_addr": first.server_addr,
                "bind_addr": None if g.multipath else first.client_addr(0),
                "start_s": g.start_s, "stop_s": g.stop_s, "routes": self.routes[gi]}


def route_addresses(paths: tuple[tuple[str, ...], ...], links: dict[str, LinkPlan]) -> list[str]:
    """Client address of each route: the k-th route over a link uses that link's k-th address."""
    seen: dict[str, int] = {}
    out = []
    for p in paths:
        k = seen.get(p[0], 0)
        seen[p[0]] = k + 1
        out.append(links[p[0]].client_addr(k))
    return out


def check_supported(s: Scenario) -> None:
    """The testbed supports every path being one link, and one set of multipath routes."""
    if len(s.links) > 250:
        raise ScenarioError(s.source, "links", f"{len(s.links)} links; the testbed supports at most 250",
                            "use fewer links")
    for gi, g in enumerate(s.groups):
        for j, p in enumerate(g.paths):
            if len(p) != 1:
                raise ScenarioError(s.source, f"groups[{gi}].paths[{j}]",
                                    f"path {list(p)} crosses {len(p)} links; the testbed supports one link per path",
                                    "run multi-link scenarios (e.g. Fig. 1) with `mpcc sim` or `mpcc fluid`")
    for bi, b in enumerate(s.background):
        if len(b.path) != 1:
            raise ScenarioError(s.source, f"background[{bi}].path", "the testbed supports one link per path",
                                "use a single-link path")
    mp = [g for g in s.groups if g.multipath]
    for g in mp[1:]:
        if g.paths != mp[0].paths:
            raise ScenarioError(s.source, f"groups.{g.name}.paths",
                                f"multipath groups use different routes ({list(g.paths)} vs {list(mp[0].paths)}); "
                                "MPTCP endpoints are per namespace, so the testbed needs one route set",
                                "give all multipath groups the same paths, or use `mpcc sim`")
    if sum(g.count for g in s.groups) > 400:
        raise ScenarioError(s.source, "groups", "more than 400 flows in total", "reduce the flow counts for the testbed")


def linkem_binary() -> str:
    env = os.environ.get("MPCC_LINKEM")
    if env:
        return env
    root = Path(__file__).resolve().parents[3]
    for cand in (root / "target" / "release" / "linkem", root / "target" / "debug" / "linkem"):
        if cand.is_file():
            return str(cand)
    found = shutil.which("linkem")
    if found:
        return found
    raise EnvironmentProblem("linkem (the link emulator) is not built; run `cargo build --release -p linkem` "
                             "(or `make setup`), or set MPCC_LINKEM=/path/to/linkem")


def _sysctl(ns: str, **kv) -> None:
    args = [f"{k.replace('__', '.')}={v}" for k, v in kv.items()]
    run(["sysctl", "-qw", *args], ns=ns)


def _mac(ns: str, dev: str) -> str:
    p = run(["ip", "-n", ns, "-j", "link", "show", "dev", dev])
    return json.loads(p.stdout)[0]["address"]


def _veth(ns_a: str, dev_a: str, ns_b: str, dev_b: str, mtu: int) -> None:
    run(["ip", "-n", ns_a, "link", "add", dev_a, "mtu", str(mtu), "type", "veth",
         "peer", "name", dev_b, "mtu", str(mtu), "netns", ns_b])
    for ns, dev in ((ns_a, dev_a), (ns_b, dev_b)):
        # queues must see packets: no TSO/GSO/GRO aggregation, no checksum offload
        run(["ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off", "tx", "off", "rx", "off"], ns=ns)
        run(["ip", "-n", ns, "link", "set", "dev", dev, "up"])


def build(s: Scenario, r: Run, out_dir: Path, *, seed: int = 1, spin_us: int = 30,
          linkem_args: tuple[str, ...] = ()) -> Topology:
    """Create namespaces, veths, addresses, routes, MPTCP endpoints and start one linkem per
    link (``linkem_args`` are appended to its command line, e.g. ``("--no-realtime",)``).
    Everything is registered in ``r`` so that ``r.close()`` removes it."""
    check_supported(s)
    linkem = linkem_binary()
    client, server = r.add_netns("c"), r.add_netns("s")
    links = {l.name: LinkPlan(i, l, r.add_netns(f"l{i}")) for i, l in enumerate(s.links)}
    ecn = any(l.red is not None and l.red.ecn for l in s.links)
    for ns in [client, server, *(lp.relay_ns for lp in links.values())]:
        run(["ip", "-n", ns, "link", "set", "dev", "lo", "up"])
        _sysctl(ns, net__ipv6__conf__all__disable_ipv6=1, net__ipv6__conf__default__disable_ipv6=1,
                net__ipv4__conf__all__rp_filter=0, net__ipv4__conf__default__rp_filter=0)
    for ns in (client, server):
        # the default here is bbr: set it explicitly; sockets override it with TCP_CONGESTION
        _sysctl(ns, net__ipv4__tcp_congestion_control="reno", net__mptcp__enabled=1,
                net__ipv4__tcp_ecn=1 if ecn else 0, net__ipv4__tcp_no_metrics_save=1,
                # room for the bandwidth-delay product of slow, long paths (3G: 2 Mb/s × 0.5 s
                # with a full queue) and for MPTCP's reordering across paths
                net__ipv4__tcp_wmem="4096 262144 33554432", net__ipv4__tcp_rmem="4096 262144 33554432")
        run(["ip", "-n", ns, "mptcp", "limits", "set", "subflows", "8", "add_addr_accepted", "8"])

    topo = Topology(s, client, server, links)
    # client addresses: every (link, k) any route or single-path group needs
    addrs: dict[str, set[str]] = {name: {lp.client_addr(0)} for name, lp in links.items()}
    for gi, g in enumerate(s.groups):
        ra = route_addresses(g.paths, links)
        topo.routes[gi] = {a: j for j, a in enumerate(ra)}
        for p, a in zip(g.paths, ra):
            addrs[p[0]].add(a)

    mtu = s.packet_bytes
    for name, lp in links.items():
        i = lp.index
        _veth(client, f"c{i}", lp.relay_ns, "lkc", mtu)
        _veth(server, f"s{i}", lp.relay_ns, "lks", mtu)
        for a in sorted(addrs[name]):
            run(["ip", "-n", client, "addr", "add", f"{a}/24", "dev", f"c{i}"])
        run(["ip", "-n", server, "addr", "add", f"{lp.server_addr}/24", "dev", f"s{i}"])
    for name, lp in links.items():
        i = lp.index
        cmac, smac = _mac(client, f"c{i}"), _mac(server, f"s{i}")
        # static neighbours: no ARP through the emulated queue
        run(["ip", "-n", client, "neigh", "replace", lp.server_addr, "lladdr", smac, "dev", f"c{i}", "nud", "permanent"])
        for a in sorted(addrs[name]):
            run(["ip", "-n", server, "neigh", "replace", a, "lladdr", cmac, "dev", f"s{i}", "nud", "permanent"])
            # source-based routing: a subflow from address a leaves by link i
            table = str(100 + i)
            run(["ip", "-n", client, "rule", "add", "from", a, "table", table, "priority", str(1000 + i)])
        run(["ip", "-n", client, "route", "replace", "default", "via", lp.server_addr, "dev", f"c{i}", "table", str(100 + i)])
    mp = [g for g in s.groups if g.multipath]
    if mp:
        ra = route_addresses(mp[0].paths, links)
        for j, (p, a) in enumerate(zip(mp[0].paths, ra)):
            if j == 0:
                continue  # route 0 is the initial subflow
            run(["ip", "-n", client, "mptcp", "endpoint", "add", a, "dev", f"c{links[p[0]].index}", "subflow"])

    out_dir.mkdir(parents=True, exist_ok=True)
    for name, lp in links.items():
        l = lp.link
        stats = out_dir / f"linkem-{lp.index}.csv"
        cmd = [linkem, "--in", "lkc", "--out", "lks", "--rate-mbps", repr(l.capacity_mbps),
               "--delay-ms", repr(l.delay_ms), "--buffer-pkts", str(l.buffer_pkts), "--loss", repr(l.loss),
               "--seed", str(seed + 7919 * lp.index), "--stats", str(stats), "--stats-interval-ms", "100",
               "--spin-us", str(spin_us), "--timing", str(out_dir / f"linkem-{lp.index}-timing.json")]
        if l.red is not None:
            cmd += ["--red-min-th", repr(l.red.min_th), "--red-max-th", repr(l.red.max_th),
                    "--red-max-p", repr(l.red.max_p), "--red-weight", repr(l.red.weight)]
            cmd += [] if l.red.gentle else ["--red-no-gentle"]
            cmd += ["--red-ecn"] if l.red.ecn else []
        cmd += list(linkem_args)
        log = open(out_dir / f"linkem-{lp.index}.log", "w")
        r.spawn(cmd, lp.relay_ns, stdout=log, stderr=log)
        topo.linkem_stats[name] = stats
    return topo
