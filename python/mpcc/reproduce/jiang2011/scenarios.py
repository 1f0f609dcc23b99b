"""Scenario files (TOML text, :mod:`mpcc.scenario` contract) for the experiments of Jiang, Cai,
Towsley §5, so the packet simulator and the testbed can run them.

§5.1 (Figs. 9–10): one MTC flow, n disjoint paths of 5 Mb/s, 100 ms two-way propagation delay
(one-way 50 ms), 1500-byte packets (W0 ≈ 42 packets), buffer 2–84 packets, 1200 s, steady by 200 s.
§5.1 (Fig. 11): m flows, 10 Mb/s, 80 ms, 1000-byte packets (W0 = 100), buffer 5 packets.
§5.2 (Fig. 12): one flow of 3 subflows, 10 Mb/s, 80 ms, 1000-byte packets, buffer 20 packets;
40 on-off UDP sources (0.25 Mb/s peak, exponential 100 ms on / 100 ms off) on every path, plus 20
more on path 2 during 400–800 s.

The report's "propagation delay" is the two-way delay D of §3 (W0 = C·D): 5 Mb/s × 100 ms =
0.5 Mbit ≈ 42 × 1500-byte packets, so each link gets ``delay_ms = D/2``.
"""

from __future__ import annotations

VARIANT_TABLE = {
    "mstcp": '{ name = "mstcp" }',
    "coupled-decrease": '"coupled-decrease"',
    "coupled-increase": '"coupled-increase"',
    "fully-coupled": '"fully-coupled"',
}


def _links(n: int, capacity_mbps: float, one_way_ms: float, buffer_pkts: int) -> str:
    return "".join(f"""
[[links]]
name = "path{i}"
capacity_mbps = {capacity_mbps}
delay_ms = {one_way_ms}
buffer_pkts = {buffer_pkts}
""" for i in range(1, n + 1))


def fig9_scenario(algorithm: str, n: int, buffer_pkts: int, duration_s: float = 1200.0,
                  measure_from_s: float = 200.0, flows: int = 1, capacity_mbps: float = 5.0,
                  two_way_delay_ms: float = 100.0, packet_bytes: int = 1500, host_jitter_s: float | None = None) -> str:
    """§5.1: ``flows`` identical MTC flows with one subflow on each of ``n`` paths. ``host_jitter_s``
    (simulator only): the random delay added to every ACK; None keeps the simulator's default
    (1 ms, host timing noise), 0 is ns-2's exact timing."""
    jitter = "" if host_jitter_s is None else f"host_jitter_s = {host_jitter_s}\n"
    paths = ", ".join(f'["path{i}"]' for i in range(1, n + 1))
    return f"""# Jiang, Cai, Towsley §5.1: {algorithm}, n = {n} subflows, m = {flows} flow(s), buffer {buffer_pkts} pkts
name = "jiang2011-{algorithm}-n{n}-m{flows}-b{buffer_pkts}"
duration_s = {duration_s}
packet_bytes = {packet_bytes}
{_links(n, capacity_mbps, two_way_delay_ms / 2, buffer_pkts)}
[[groups]]
name = "mtc"
count = {flows}
algorithm = {VARIANT_TABLE[algorithm]}
paths = [{paths}]

[sim]
measure_from_s = {measure_from_s}
sample_interval_s = 0.1
{jitter}"""


def fig11_scenario(algorithm: str, n: int, flows: int, duration_s: float = 1200.0) -> str:
    """§5.1, Fig. 11: m flows, 10 Mb/s, 80 ms, 1000-byte packets (W0 = 100), 5-packet buffer."""
    return fig9_scenario(algorithm, n, 5, duration_s, 200.0, flows, 10.0, 80.0, 1000)


def fig12_scenario(algorithm: str, duration_s: float = 1200.0) -> str:
    """§5.2, Fig. 12: 3 subflows with on-off UDP background and a surge on path 2 in 400–800 s."""
    text = fig9_scenario(algorithm, 3, 20, duration_s, 0.0, 1, 10.0, 80.0, 1000)
    text = text.replace("§5.1", "§5.2 (Fig. 12)")
    bg = [_on_off_udp(f"udp-p{i}-{k}", i) for i in range(1, 4) for k in range(40)]
    bg += [_on_off_udp(f"surge-p2-{k}", 2, "start_s = 400.0\nstop_s = 800.0\n") for k in range(20)]
    head, sim = text.split("[sim]")
    return head + "".join(bg) + "\n[sim]" + sim


def _on_off_udp(name: str, path: int, extra: str = "") -> str:
    """One on-off UDP source of 0.25 Mb/s peak, exponential 100 ms on / 100 ms off, on path ``path``."""
    return f"""
[[background]]
name = "{name}"
path = ["path{path}"]
rate_mbps = 0.25
mean_on_s = 0.1
mean_off_s = 0.1
{extra}"""
