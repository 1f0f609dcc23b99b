"""The scenario's network built from namespaces, veth pairs and one linkem per link.

::

    host ns per group g                  router ns r                       server ns s
    host<g>: 198.18.g.(j+1)/24 ─veth─ g<g> ─┐                     ┌─ srv ──veth── s0: 198.19.0.1/24
                                          │  t<i> ──veth── lkc [linkem l<i>] lks ──veth── h<i>  (one per link i)
    background ns b                       │
    bghost: 198.19.3.(k+1)/24 ─veth─ bg ───┘

Every link is a bump in the wire: relay namespace ``l<i>`` runs linkem between ``lkc`` (the
link's input side) and ``lks`` (its output side); both ends are interfaces of the one router
namespace ``r``, ``t<i>`` (tail) and ``h<i>`` (head). Hosts and the server hang off the router
by plain veth pairs. A packet of a route crossing links [a, b] goes host → r → a → r → b → r →
server and its ACKs back the same way: the router forwards by (source or destination address,
incoming interface) with one policy rule per hop, so any path — any number of links, any
order, groups with different routes — is a chain of rules, and the links are the only places
where packets queue. Route j of group g leaves from its own address 198.18.g.(j+1); a
multipath group's host namespace gets one MPTCP subflow endpoint per further route, so each
group has its own route set (endpoints are per namespace). Addresses are from the RFC 2544
benchmarking range 198.18.0.0/15 only, inside namespaces the testbed creates.
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
SERVER_ADDR = "198.19.0.1"
SERVER_DEV = "s0"  # the server namespace's device, on the router's network SERVER_PREFIX.0/24
SERVER_PREFIX = "198.19.0"
MAX_LINKS = 250
MAX_GROUPS = 250
MAX_BACKGROUND = 250
MAX_FLOWS = 400
MAX_HOPS = 60  # routers traversed per path stay well under the default TTL of 64
# CPU cost of one packet crossing one emulated link: linkem's forwarding thread (6 µs/packet at
# 1.2 Gb/s UDP, 60 % of a core) plus the router hop and the endpoints' share (TCP through one
# linkem: 1.46 Gb/s at 96 % of a core ≈ 8 µs/packet), bench/linkem/RESULTS.md
CPU_S_PER_PACKET_HOP = 10e-6
CPU_BUDGET = 0.8  # fraction of the machine's CPUs the offered packet rate may need


@dataclass
class LinkPlan:
    index: int
    link: Link
    relay_ns: str
    server_addr: str = SERVER_ADDR
    client_addrs: list[str] = field(default_factory=list)  # addresses whose routes start on this link

    def client_addr(self, k: int = 0) -> str:
        """The k-th client address whose route starts on this link."""
        return self.client_addrs[k]

    @property
    def fwd_gw(self) -> str:  # next hop on t<i> (never assigned: onlink, static neighbour)
        return f"198.19.1.{self.index + 1}"

    @property
    def rev_gw(self) -> str:
        return f"198.19.2.{self.index + 1}"


@dataclass
class Topology:
    scenario: Scenario
    router_ns: str
    server_ns: str
    hosts: dict[int, str]  # group index -> host namespace
    links: dict[str, LinkPlan]
    background_ns: str | None = None
    # per group index: client address -> route index
    routes: dict[int, dict[str, int]] = field(default_factory=dict)
    linkem_stats: dict[str, Path] = field(default_factory=dict)

    @property
    def client_ns(self) -> str:
        """The first group's host namespace."""
        return self.hosts[0]

    def group_plan(self, gi: int, cc: str) -> dict:
        g = self.scenario.groups[gi]
        return {"index": gi, "name": g.name, "count": g.count, "multipath": g.multipath, "cc": cc,
                "port": BASE_PORT + gi, "server_addr": SERVER_ADDR, "netns": self.hosts[gi],
                "bind_addr": None if g.multipath else group_addr(gi, 0),
                "start_s": g.start_s, "stop_s": g.stop_s, "routes": self.routes[gi]}

    def background_plan(self, bi: int) -> dict:
        return {"bind_addr": background_addr(bi), "server_addr": SERVER_ADDR, "port": BG_PORT,
                "netns": self.background_ns}


def group_addr(gi: int, j: int) -> str:
    """Client address of route j of group gi."""
    return f"198.18.{gi}.{j + 1}"


def background_addr(bi: int) -> str:
    return f"198.19.3.{bi + 1}"


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def link_load_bound_mbps(s: Scenario) -> dict[str, float]:
    """Upper bound of each link's carried rate: its capacity, or less when every route through
    it is limited by a slower link (Σ over routes of the route's tightest capacity, plus the
    background sources' rates)."""
    cap = {l.name: l.capacity_mbps for l in s.links}
    offered = {n: 0.0 for n in cap}
    for g in s.groups:
        for p in g.paths:
            tight = min(cap[n] for n in p)
            for n in p:
                offered[n] += tight
    for b in s.background:
        for n in b.path:
            offered[n] += b.rate_mbps
    return {n: min(cap[n], offered[n]) for n in cap}


def estimate_cpus(s: Scenario) -> float:
    """CPUs the offered packet rate needs: Σ over links of (load bound in packets/s) × the cost
    of one packet crossing one emulated link."""
    pps = sum(m * 1e6 / (8 * s.packet_bytes) for m in link_load_bound_mbps(s).values())
    return pps * CPU_S_PER_PACKET_HOP


def check_supported(s: Scenario, cpus: int | None = None) -> None:
    """Refuse, up front and in one line, what the address plan or this machine cannot run."""
    src = s.source
    if len(s.links) > MAX_LINKS:
        raise ScenarioError(src, "links", f"{len(s.links)} links; the testbed's address plan has room for {MAX_LINKS}",
                            "use fewer links, or `mpcc sim`")
    if len(s.groups) > MAX_GROUPS:
        raise ScenarioError(src, "groups", f"{len(s.groups)} groups; the testbed has room for {MAX_GROUPS} hosts",
                            "merge groups, or use `mpcc sim`")
    if len(s.background) > MAX_BACKGROUND:
        raise ScenarioError(src, "background", f"{len(s.background)} sources; the testbed has room for {MAX_BACKGROUND}",
                            "use fewer background sources")
    for gi, g in enumerate(s.groups):
        for j, p in enumerate(g.paths):
            if len(p) > MAX_HOPS:
                raise ScenarioError(src, f"groups[{gi}].paths[{j}]", f"{len(p)} links; the testbed routes at most "
                                    f"{MAX_HOPS} per path (IP TTL)", "shorten the path")
    for bi, b in enumerate(s.background):
        if len(set(b.path)) != len(b.path):
            raise ScenarioError(src, f"background[{bi}].path", f"path visits a link twice: {list(b.path)}",
                                "list each link of a path once")
    flows = sum(g.count for g in s.groups)
    if flows > MAX_FLOWS:
        raise ScenarioError(src, "groups", f"{flows} flows in total; the testbed runs at most {MAX_FLOWS} "
                            "(one sender thread each)", "reduce the flow counts, or use `mpcc sim`")
    n = cpus or _cpus()
    need = estimate_cpus(s)
    if need > CPU_BUDGET * n:
        bound = link_load_bound_mbps(s)
        raise ScenarioError(src, "links", f"too large for this machine: forwarding up to "
                            f"{sum(bound.values()):.0f} Mb/s over {len(s.links)} emulated links needs about "
                            f"{need:.1f} CPUs ({CPU_S_PER_PACKET_HOP * 1e6:.0f} µs per packet per link), "
                            f"this machine has {n}", "scale capacities down, use fewer links, or run `mpcc sim`")


def environment_problem() -> str | None:
    """Why this machine cannot run the testbed (root, tools, MPTCP, the linkem binary), as the
    one-line message, or None (as :func:`mpcc.kernel.bpf.environment_problem` for BPF)."""
    from .netns import check_environment
    try:
        check_environment()
        linkem_binary()
    except EnvironmentProblem as e:
        return str(e)
    return None


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
    raise EnvironmentProblem("linkem (the link emulator) is not built (fix: run `cargo build --release -p linkem` "
                             "or `make setup`, or set MPCC_LINKEM=/path/to/linkem)")


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


def _batch(ns: str, lines: list[str]) -> None:
    if lines:
        run(["ip", "-n", ns, "-batch", "-"], input="\n".join(lines) + "\n", timeout=120)


def hop_rules(addr: str, path: tuple[str, ...], links: dict[str, LinkPlan], entry_dev: str) -> list[str]:
    """Router policy rules (``ip -batch`` lines) that carry a route's packets from ``addr``
    through the links of ``path`` in order, and the packets to ``addr`` back in reverse.
    Table 1000+i sends out of t<i> (into link i), 2000+i out of h<i> (back through link i)."""
    idx = [links[n].index for n in path]
    out = [f"rule add from {addr} iif {entry_dev} table {1000 + idx[0]} priority 100"]
    out += [f"rule add from {addr} iif h{a} table {1000 + b} priority 100" for a, b in zip(idx, idx[1:])]
    out.append(f"rule add from {addr} iif h{idx[-1]} table main priority 100")
    out.append(f"rule add to {addr} iif srv table {2000 + idx[-1]} priority 100")
    out += [f"rule add to {addr} iif t{b} table {2000 + a} priority 100" for a, b in zip(idx, idx[1:])]
    out.append(f"rule add to {addr} iif t{idx[0]} table main priority 100")
    return out


def _host_sysctls(ns: str, ecn: bool) -> None:
    # the default here is bbr: set it explicitly; sockets override it with TCP_CONGESTION
    _sysctl(ns, net__ipv4__tcp_congestion_control="reno", net__mptcp__enabled=1,
            net__ipv4__tcp_ecn=1 if ecn else 0, net__ipv4__tcp_no_metrics_save=1,
            # room for the bandwidth-delay product of slow, long paths (3G: 2 Mb/s × 0.5 s
            # with a full queue) and for MPTCP's reordering across paths
            net__ipv4__tcp_wmem="4096 262144 33554432", net__ipv4__tcp_rmem="4096 262144 33554432")
    run(["ip", "-n", ns, "mptcp", "limits", "set", "subflows", "8", "add_addr_accepted", "8"])


def host_dev(gi: int) -> str:
    """The device of group gi's host namespace (unique names, so packet traces can tell hosts apart)."""
    return f"host{gi}"


def gateway(prefix: str) -> str:
    """The router's address on a stub network ``prefix``.0/24 (every host's default route)."""
    return f"{prefix}.254"


def _stub(r: Run, ns: str, router: str, rdev: str, dev: str, addrs: list[str], prefix: str, mtu: int) -> None:
    """A host namespace ``ns`` (device ``dev`` with ``addrs``) on the router's ``rdev``
    (address ``prefix``.254); static neighbours both ways."""
    _veth(ns, dev, router, rdev, mtu)
    gw = gateway(prefix)
    run(["ip", "-n", router, "addr", "add", f"{gw}/24", "dev", rdev])
    for a in addrs:
        run(["ip", "-n", ns, "addr", "add", f"{a}/24", "dev", dev])
    hmac, rmac = _mac(ns, dev), _mac(router, rdev)
    run(["ip", "-n", ns, "neigh", "replace", gw, "lladdr", rmac, "dev", dev, "nud", "permanent"])
    run(["ip", "-n", ns, "route", "replace", "default", "via", gw, "dev", dev, "src", addrs[0]])
    _batch(router, [f"neigh replace {a} lladdr {hmac} dev {rdev} nud permanent" for a in addrs])


def build(s: Scenario, r: Run, out_dir: Path, *, seed: int = 1, spin_us: int = 30,
          linkem_args: tuple[str, ...] = ()) -> Topology:
    """Create namespaces, veths, addresses, routes, MPTCP endpoints and start one linkem per
    link (``linkem_args`` are appended to its command line, e.g. ``("--no-realtime",)``).
    Everything is registered in ``r`` so that ``r.close()`` removes it."""
    topo = build_network(s, r)
    start_links(topo, r.spawn, out_dir, seed=seed, spin_us=spin_us, linkem_args=linkem_args)
    return topo


def build_network(s: Scenario, r: Run) -> Topology:
    """The network of :func:`build` without its emulators (:func:`start_links` starts them)."""
    check_supported(s)
    linkem_binary()       # missing: say so before creating anything
    mtu = s.packet_bytes
    router, server = r.add_netns("r"), r.add_netns("s")
    hosts = {gi: r.add_netns(f"h{gi}") for gi in range(len(s.groups))}
    bg = r.add_netns("b") if s.background else None
    links = {l.name: LinkPlan(i, l, r.add_netns(f"l{i}")) for i, l in enumerate(s.links)}
    ecn = any(l.red is not None and l.red.ecn for l in s.links)
    for ns in [router, server, *hosts.values(), *([bg] if bg else []), *(lp.relay_ns for lp in links.values())]:
        run(["ip", "-n", ns, "link", "set", "dev", "lo", "up"])
        _sysctl(ns, net__ipv6__conf__all__disable_ipv6=1, net__ipv6__conf__default__disable_ipv6=1,
                net__ipv4__conf__all__rp_filter=0, net__ipv4__conf__default__rp_filter=0)
    _sysctl(router, net__ipv4__ip_forward=1, net__ipv4__conf__all__send_redirects=0,
            net__ipv4__conf__default__send_redirects=0)
    for ns in (server, *hosts.values()):
        _host_sysctls(ns, ecn)

    topo = Topology(s, router, server, hosts, links, bg)
    _stub(r, server, router, "srv", SERVER_DEV, [SERVER_ADDR], SERVER_PREFIX, mtu)
    for gi, g in enumerate(s.groups):
        addrs = [group_addr(gi, j) for j in range(len(g.paths))]
        topo.routes[gi] = {a: j for j, a in enumerate(addrs)}
        _stub(r, hosts[gi], router, f"g{gi}", host_dev(gi), addrs, f"198.18.{gi}", mtu)
        for a, p in zip(addrs, g.paths):
            links[p[0]].client_addrs.append(a)
        # route 0 is the initial subflow; one endpoint per further route
        _batch(hosts[gi], [f"mptcp endpoint add {a} dev {host_dev(gi)} subflow" for a in addrs[1:]])
    if bg:
        _stub(r, bg, router, "bg", "bghost", [background_addr(bi) for bi in range(len(s.background))], "198.19.3", mtu)

    rules: list[str] = []
    for lp in links.values():
        i = lp.index
        _veth(router, f"t{i}", lp.relay_ns, "lkc", mtu)
        _veth(lp.relay_ns, "lks", router, f"h{i}", mtu)
        tmac, hmac = _mac(router, f"t{i}"), _mac(router, f"h{i}")
        # the link is a bump in the wire between t<i> and h<i>: frames into t<i> are addressed
        # to h<i> and the reverse; the next hops are onlink addresses with static neighbours
        rules += [f"neigh replace {lp.fwd_gw} lladdr {hmac} dev t{i} nud permanent",
                  f"neigh replace {lp.rev_gw} lladdr {tmac} dev h{i} nud permanent",
                  f"route replace default via {lp.fwd_gw} dev t{i} onlink table {1000 + i}",
                  f"route replace default via {lp.rev_gw} dev h{i} onlink table {2000 + i}"]
    for gi, g in enumerate(s.groups):
        for j, p in enumerate(g.paths):
            rules += hop_rules(group_addr(gi, j), p, links, f"g{gi}")
    for bi, b in enumerate(s.background):
        rules += hop_rules(background_addr(bi), b.path, links, "bg")
    _batch(router, rules)
    return topo


def network_key(s: Scenario) -> tuple:
    """What :func:`build_network` makes of a scenario: two scenarios with the same key run on
    the same namespaces (group counts, times and algorithms are the traffic's, not the network's;
    the link parameters are linkem's, started per run, but ECN is a host setting)."""
    return (s.packet_bytes, tuple(s.links), tuple((g.multipath, tuple(map(tuple, g.paths))) for g in s.groups),
            tuple(tuple(b.path) for b in s.background))


def start_links(topo: Topology, spawn, out_dir: Path, *, seed: int = 1, spin_us: int = 30,
                linkem_args: tuple[str, ...] = ()) -> None:
    """Start one linkem per link of ``topo.scenario`` in its relay namespace (``spawn(cmd, ns,
    stdout=, stderr=)`` starts and records it), with empty queues and counters; its stats CSV,
    timing and log go to ``out_dir`` (``topo.linkem_stats``)."""
    linkem = linkem_binary()
    out_dir.mkdir(parents=True, exist_ok=True)
    topo.linkem_stats = {}
    by_name = {l.name: l for l in topo.scenario.links}
    for name, lp in topo.links.items():
        l = by_name[name]
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
        with open(out_dir / f"linkem-{lp.index}.log", "w") as log:
            spawn(cmd, lp.relay_ns, stdout=log, stderr=log)
        topo.linkem_stats[name] = stats


def receiver_route(receiver: str) -> list[str]:
    """The server's default route (``ip route replace`` arguments) for ``[testbed] receiver``:
    with ``"quickack"`` it carries the route metric ``quickack 1`` (RTAX_QUICKACK), so that
    ``tcp_in_quickack_mode`` (net/ipv4/tcp_input.c) is true for every receiving socket and each
    data segment is ACKed at once instead of by ``__tcp_ack_snd_check``'s delayed-ACK rule."""
    route = ["default", "via", gateway(SERVER_PREFIX), "dev", SERVER_DEV, "src", SERVER_ADDR]
    return route + (["quickack", "1"] if receiver == "quickack" else [])


#: ``net.ipv4.tcp_backlog_ack_defer`` (Linux ≥ 6.8, per namespace, default 1): the segments a
#: socket's backlog holds while its reader owns the socket are processed at ``release_sock`` /
#: ``sk_flush_backlog`` and ACKed once between them (``__tcp_ack_snd_check`` sets
#: TCP_ACK_DEFERRED, ``tcp_release_cb`` sends the ACK), quickack route or not.
BACKLOG_ACK_DEFER = Path("/proc/sys/net/ipv4/tcp_backlog_ack_defer")


def receiver_sysctls(receiver: str) -> dict[str, int]:
    """The server namespace's sysctls for ``[testbed] receiver``, as :func:`_sysctl` keywords: a
    ``"quickack"`` receiver ACKs each data skb, so it turns the backlog's ACK deferral off;
    ``"linux"`` has the kernel's default. Empty on a kernel without the setting (before 6.8),
    which never defers."""
    if not BACKLOG_ACK_DEFER.exists():
        return {}
    return {"net__ipv4__tcp_backlog_ack_defer": 0 if receiver == "quickack" else 1}


def set_receiver(topo: Topology, receiver: str) -> None:
    """Set the server's default route and ACK sysctls for ``receiver`` before a run (on a
    network kept across runs too, so a run never inherits the last one's setting). Every
    connection's receiver is in the server namespace and reaches the hosts by this route."""
    run(["ip", "-n", topo.server_ns, "route", "replace", *receiver_route(receiver)])
    if sysctls := receiver_sysctls(receiver):
        _sysctl(topo.server_ns, **sysctls)


def reset_hosts(topo: Topology) -> None:
    """Make the next run on these namespaces independent of the last one: flush the kernel's
    TCP metrics cache (``ip tcp_metrics flush``: RTT, ssthresh and cwnd remembered per peer,
    which a new connection would start from) in the server and every host namespace."""
    for ns in (topo.server_ns, *topo.hosts.values()):
        run(["ip", "-n", ns, "tcp_metrics", "flush", "all"], check=False)
