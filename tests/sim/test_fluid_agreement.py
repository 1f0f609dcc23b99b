"""Packet-level simulation vs. the fluid model of Peng et al. on the Fig. 2 network with RED
queues and large windows (1 Gb/s links, RTT ≈ 20 ms, N1 = N2 = 10 flows).

Closed forms (equal RTTs τ, u = c/N1 the rate of a multipath flow's route 1, link 1 carries
only those routes): at equilibrium φ_r(x) = p_l on every bottleneck (eq. 7–9).
* EWTCP (a = 1): every route is Reno, so route 2 and a single-path flow get the same rate on
  link 2: x1 = u, x2 = y = u/2.
* Semicoupled: φ_r = 2/(τ² x_r Σx), Reno φ = 2/(τ² y²); equal prices on link 2 give
  y² = x2 (x1 + x2) with x2 + y = u: x2 = u/3, y = 2u/3.
* Max (LIA) and Balia: the same condition φ_2(u, x2) = φ_Reno(u − x2), solved numerically
  with the Python reference definitions of φ (eq. 7), not with the simulator.
Coupled is left out: its fluid equilibrium is on the boundary (x2 = 0, Peng et al. §II-B),
which a packet-level flow never reaches (its second route keeps a window ≥ 1 packet).
"""

import pytest
from scipy.optimize import brentq

from mpcc import algorithms

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


def fluid_fig2(algo, tau=0.02):
    """(x1, x2, y) of the fluid equilibrium in Mb/s, from φ_2(u, x2) = φ_Reno(u − x2)."""
    a, reno = algorithms.get(algo), algorithms.get("reno")
    u = C / N
    gap = lambda x2: a.fluid_phi([u, x2], [tau, tau])[1] - reno.fluid_phi([u - x2], [tau])[0]
    x2 = brentq(gap, 1e-9 * u, (1 - 1e-9) * u, xtol=1e-12)
    return u, x2, u - x2


def test_numerical_fluid_solution_reproduces_the_closed_forms():
    for algo, (f1, f2, fy) in CLOSED.items():
        x1, x2, y = fluid_fig2(algo)
        assert (x1, x2, y) == pytest.approx((f1 * C / N, f2 * C / N, fy * C / N), rel=1e-6)


@pytest.mark.parametrize("algo", ["lia", "balia"])
def test_sim_matches_numerical_fluid_equilibrium_within_10_percent(algo):
    x1, x2, y = fluid_fig2(algo)
    r = sim.run(fig2(algo), seed=1, sample_interval_s=0).result
    got = {"mp": r.groups["mp"].rate_mbps, "route 1": r.groups["mp"].path_rate_mbps[0], "sp": r.groups["sp"].rate_mbps}
    want = {"mp": x1 + x2, "route 1": x1, "sp": y}
    for k in want:
        assert abs(got[k] - want[k]) <= 0.1 * want[k], (algo, got, want)


@pytest.mark.parametrize("algo", ["ewtcp", "semicoupled", "lia", "balia"])
def test_sim_matches_fluid_engine_within_10_percent(algo):
    import mpcc.fluid as fluid
    if not hasattr(fluid, "equilibrium") or not hasattr(fluid, "to_result"):
        pytest.skip("mpcc.fluid.equilibrium is not available")
    s = fig2(algo)
    f = fluid.to_result(s, fluid.equilibrium(s))
    r = sim.run(s, seed=1, sample_interval_s=0).result
    for name in ("mp", "sp"):  # equilibrium rate of every flow
        got, want = r.groups[name].rate_mbps, f.groups[name].rate_mbps
        assert abs(got - want) <= 0.1 * want, (algo, name, got, want)


@pytest.mark.parametrize("eps", [0.5, 1.5])
def test_sim_matches_fluid_epsilon_family_within_10_percent(eps):
    """The ε-family (Wischik et al. 2011): the fluid equilibrium from the Python reference's φ
    (eq. 7), as for LIA and Balia above; ε enters the scenario as an inline table."""
    spec = {"name": "epsilon", "epsilon": eps}
    a, reno, u, tau = algorithms.get(spec), algorithms.get("reno"), C / N, 0.02
    gap = lambda x2: a.fluid_phi([u, x2], [tau, tau])[1] - reno.fluid_phi([u - x2], [tau])[0]
    x2 = brentq(gap, 1e-9 * u, (1 - 1e-9) * u, xtol=1e-12)
    s = scenario.loads(FIG2.format(n=N, algo="epsilon").replace(
        'algorithm = "epsilon"', f'algorithm = {{name = "epsilon", epsilon = {eps}}}'))
    r = sim.run(s, seed=1, sample_interval_s=0).result
    got = {"mp": r.groups["mp"].rate_mbps, "route 1": r.groups["mp"].path_rate_mbps[0], "sp": r.groups["sp"].rate_mbps}
    want = {"mp": u + x2, "route 1": u, "sp": u - x2}
    for k in want:
        assert abs(got[k] - want[k]) <= 0.1 * want[k], (eps, got, want)
