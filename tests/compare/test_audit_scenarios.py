"""The audit scenarios (scenarios/audit/; RTTs from 2 ms to 400 ms, RED with random loss, a group
starting late and stopping early, a mix of algorithms on one bottleneck, 1 Mb/s and 1 Gb/s links,
a 1-packet buffer, a 1 Tb/s lossy link) on the fluid model and the simulator: every number is
finite and physical, the engines' outputs keep their own invariants, and each engine agrees with
a closed form where one exists. The testbed runs of the same files are in bench/audit/RESULTS.md."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from mpcc import fluid, scenario, sim
from mpcc.fluid.network import NoFluidModel

FILES = sorted((Path(__file__).resolve().parents[2] / "scenarios" / "audit").glob("*.toml"))


def _finite_nonnegative(res):
    for g in res.groups.values():
        assert math.isfinite(g.rate_mbps) and g.rate_mbps >= 0, g
        assert all(math.isfinite(v) and v >= 0 for v in g.path_rate_mbps), g
    for l in res.links.values():
        assert math.isfinite(l.load_mbps) and l.load_mbps >= 0 and 0 <= l.price, l


def test_there_are_audit_scenarios():
    assert len(FILES) >= 6


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_sim_numbers_are_physical(path):
    s = scenario.load(path)
    s = s.with_changes(duration_s=min(s.duration_s, 10.0)) if s.duration_s > 10.0 else s
    res = sim.run(s, seed=3).result
    _finite_nonnegative(res)
    for l in s.links:
        # a link forwards at most its capacity (plus one packet over the window)
        assert res.links[l.name].load_mbps <= l.capacity_mbps * 1.01 + 1e-9, l.name
        assert res.links[l.name].price <= 1.0
    for g in s.groups:
        # a flow's routes through a link cannot carry more than the link
        for r, path_ in enumerate(g.paths):
            cap = min(s.link(n).capacity_mbps for n in path_)
            assert res.groups[g.name].path_rate_mbps[r] <= cap * 1.01 + 1e-9, (g.name, r)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_fluid_equilibrium_is_physical_or_refused_in_one_line(path):
    s = scenario.load(path)
    try:
        eq = fluid.equilibrium(s)
    except NoFluidModel as e:           # OLIA and FAST: refused, one line
        assert "\n" not in str(e) and "mpcc sim" in str(e)
        return
    except Exception as e:               # a route with no delay: refused, one line
        assert "\n" not in str(e) and "(fix:" in str(e), e
        return
    res = fluid.to_result(s, eq)
    _finite_nonnegative(res)
    assert eq.residual < 1e-9
    for l in s.links:
        assert res.links[l.name].load_mbps <= l.capacity_mbps * (1 + 1e-9)
        # the reported price is at least the link's random loss
        assert res.links[l.name].price >= l.loss - 1e-15


def test_red_with_random_loss_reno_follows_eq7_at_the_random_loss():
    """a2: the RED link drops 1 % at random, more than its congestion needs: in the fluid model the
    Reno flows there take √(2/0.01)/20 ms (the link stays below capacity), and the simulator's
    Reno flows see that 1 % and stay below capacity too."""
    s = scenario.load(next(p for p in FILES if p.stem == "a2-red-loss"))
    res = fluid.to_result(s, fluid.equilibrium(s))
    x = math.sqrt(2 / 0.01) / 0.020 * 1500 * 8 / 1e6
    assert res.groups["reno"].rate_mbps == pytest.approx(x, rel=1e-9)
    assert res.links["red"].load_mbps < 30.0
    r = sim.run(s, seed=1).result
    assert r.links["red"].load_mbps < 0.95 * 30.0
    assert r.links["red"].price == pytest.approx(0.01, rel=0.3)
