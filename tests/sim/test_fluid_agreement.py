"""Packet-level simulation vs. the fluid model of Peng et al. on the Fig. 2 network with RED
queues and large windows (1 Gb/s links, RTT ≈ 20 ms, N1 = N2 = 10 flows).

Closed forms (equal RTTs τ, u = c/N1 the rate of a multipath flow's route 1, link 1 carries
only those routes): at equilibrium φ_r(x) = p_l on every bottleneck (eq. 7–9).
* EWTCP (a = 1): every route is Reno, so route 2 and a single-path flow get the same rate on
  link 2: x1 = u, x2 = y = u/2.
* Semicoupled: φ_r = 2/(τ² x_r Σx), Reno φ = 2/(τ² y²); equal prices on link 2 give
  y² = x2 (x1 + x2) with x2 + y = u: x2 = u/3, y = 2u/3.
"""

import pytest

from mpcc import scenario, sim

N = 10
C = 1000.0

FIG2 = """
name = "fig2-red-1g"
duration_s = 30.0
[[links]]
name = "link1"
capacity_mbps = 1000.0
delay_ms = 10.0
buffer_pkts = 4000
aqm = "red"
red = {{min_th = 300, max_th = 1500, max_p = 0.1, ecn = true}}
[[links]]
name = "link2"
capacity_mbps = 1000.0
delay_ms = 10.0
buffer_pkts = 4000
aqm = "red"
red = {{min_th = 300, max_th = 1500, max_p = 0.1, ecn = true}}
[[groups]]
name = "mp"
count = {n}
algorithm = "{algo}"
paths = [["link1"], ["link2"]]
[[groups]]
name = "sp"
count = {n}
algorithm = "reno"
paths = [["link2"]]
[sim]
measure_from_s = 10.0
"""


def fig2(algo):
    return scenario.loads(FIG2.format(n=N, algo=algo))


CLOSED = {"ewtcp": (1.0, 0.5, 0.5), "semicoupled": (1.0, 1.0 / 3.0, 2.0 / 3.0)}


@pytest.mark.parametrize("algo", sorted(CLOSED))
def test_sim_matches_closed_form_equilibrium_within_10_percent(algo):
    r = sim.run(fig2(algo), seed=1, sample_interval_s=0).result
    u = C / N
    want = [f * u for f in CLOSED[algo]]
    got = r.groups["mp"].path_rate_mbps + [r.groups["sp"].rate_mbps]
    for g, w in zip(got, want):
        assert abs(g - w) <= 0.1 * w, (algo, got, want)


@pytest.mark.parametrize("algo", ["ewtcp", "semicoupled", "lia", "balia", "coupled"])
def test_sim_matches_fluid_engine_within_10_percent(algo):
    import mpcc.fluid as fluid
    if not hasattr(fluid, "equilibrium") or not hasattr(fluid, "to_result"):
        pytest.skip("mpcc.fluid.equilibrium is not available")
    s = fig2(algo)
    f = fluid.to_result(s, fluid.equilibrium(s))
    r = sim.run(s, seed=1, sample_interval_s=0).result
    for name in ("mp", "sp"):
        for got, want in zip(r.groups[name].path_rate_mbps, f.groups[name].path_rate_mbps):
            assert abs(got - want) <= 0.1 * max(want, 0.05 * C / N), (algo, name, got, want)
