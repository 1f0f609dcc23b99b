"""A link's random ``loss`` in the fluid model: it adds to the price every route through the link
sees (q_r = Σ p_l + ℓ_r, ℓ_r = 1 − Π(1 − loss_l)), so a Reno flow whose random loss alone holds it
below the capacity leaves the link unpriced and under-used. Expected values are Reno's eq. (7)
closed form φ = 2/(xτ)² solved by hand (until 2026-11-24 the fluid engine ignored ``loss``:
every link was filled as if it had none)."""

import math

import pytest

from mpcc import fluid, scenario

MB = 1500 * 8 / 1e6   # Mb per packet


def one_link(capacity_mbps, loss, delay_ms=10.0, extra=""):
    return scenario.loads(f"""
name = "loss"
duration_s = 60
[[links]]
name = "l"
capacity_mbps = {capacity_mbps}
delay_ms = {delay_ms}
buffer_pkts = 100
loss = {loss}
{extra}
[[groups]]
name = "tcp"
count = 1
algorithm = "reno"
paths = [["l"]]
""", "loss.toml")


def test_random_loss_alone_limits_a_reno_flow_below_the_capacity():
    # 2/(xτ)² = 0.01 at τ = 20 ms: x = √200 / 0.02 = 707.1 packets/s = 8.485 Mb/s < 100 Mb/s
    sc = one_link(100.0, 0.01)
    res = fluid.to_result(sc, fluid.equilibrium(sc))
    x = math.sqrt(2 / 0.01) / 0.020
    assert res.groups["tcp"].rate_mbps == pytest.approx(x * MB, rel=1e-9)
    assert res.links["l"].load_mbps == pytest.approx(x * MB, rel=1e-9)      # not the capacity
    assert res.links["l"].price == pytest.approx(0.01, rel=1e-9)            # the random loss only
    assert res.links["l"].extra["congestion_price"] == 0.0


def test_a_full_lossy_link_prices_the_rest_of_the_loss():
    # 5 Mb/s = 416.7 packets/s, τ = 20 ms: w = 8.33 packets, φ = 2/w² = 0.0288; random loss
    # 0.001 of it, the congestion price p = φ − 0.001
    sc = one_link(5.0, 0.001)
    eq = fluid.equilibrium(sc)
    res = fluid.to_result(sc, eq)
    c = 5.0 / MB
    phi = 2 / (c * 0.020) ** 2
    assert res.groups["tcp"].rate_mbps == pytest.approx(5.0, rel=1e-9)
    assert eq.p[0] == pytest.approx(phi - 0.001, rel=1e-9)
    assert res.links["l"].price == pytest.approx(phi, rel=1e-9)
    assert res.groups["tcp"].extra["price_route"][0] == pytest.approx(phi, rel=1e-9)


def test_random_losses_of_a_route_combine_as_independent_drops():
    sc = scenario.loads("""
name = "two"
duration_s = 60
[[links]]
name = "a"
capacity_mbps = 1000
delay_ms = 5
buffer_pkts = 100
loss = 0.02
[[links]]
name = "b"
capacity_mbps = 1000
delay_ms = 15
buffer_pkts = 100
loss = 0.03
[[groups]]
name = "tcp"
count = 2
algorithm = "reno"
paths = [["a", "b"]]
""", "two.toml")
    ell = 1 - (1 - 0.02) * (1 - 0.03)
    x = math.sqrt(2 / ell) / 0.040
    res = fluid.to_result(sc, fluid.equilibrium(sc))
    assert res.groups["tcp"].rate_mbps == pytest.approx(x * MB, rel=1e-9)
    assert res.links["a"].load_mbps == pytest.approx(2 * x * MB, rel=1e-9)


def test_a_multipath_flow_moves_traffic_away_from_a_lossy_path():
    # Coupled (φ_r = 2/(τ X)² on both routes, equal RTTs) uses only its cheapest routes. With
    # path b full alone: X = 833 packets/s, τ = 20 ms, φ = 2/16.7² = 0.0072 = q_b < 0.05 ≤ q_a,
    # so route a (random loss 5 %) carries nothing
    sc = scenario.loads("""
name = "mp"
duration_s = 60
[[links]]
name = "a"
capacity_mbps = 10
delay_ms = 10
buffer_pkts = 50
loss = 0.05
[[links]]
name = "b"
capacity_mbps = 10
delay_ms = 10
buffer_pkts = 50
[[groups]]
name = "mp"
count = 1
algorithm = "coupled"
paths = [["a"], ["b"]]
""", "mp.toml")
    res = fluid.to_result(sc, fluid.equilibrium(sc))
    assert res.groups["mp"].path_rate_mbps == pytest.approx([0.0, 10.0], abs=1e-9)
    # without the loss, both links would be filled (20 Mb/s)
    assert res.links["a"].load_mbps == pytest.approx(0.0, abs=1e-9)


def test_dynamics_settle_at_the_lossy_equilibrium():
    sc = one_link(100.0, 0.01)
    tr = fluid.dynamics(sc, t_end=30.0, gamma=1e-4)
    x = math.sqrt(2 / 0.01) / 0.020
    assert tr.x[-1, 0] == pytest.approx(x, rel=0.01)
    assert tr.p[-1, 0] == pytest.approx(0.0, abs=1e-6)


def test_a_link_with_background_reports_its_whole_load():
    """The fluid model takes the background's mean (5 Mb/s × on/(on+off) = 2.5) off the link's
    capacity; the link's reported load is what it carries — flows plus background, 10 Mb/s when
    full, as sim and testbed count it (it was 7.5, the flows alone, while sim said 7.3 of 10
    with the background in)."""
    sc = scenario.loads("""
name = "bg"
duration_s = 60
[[links]]
name = "l"
capacity_mbps = 10
delay_ms = 10
buffer_pkts = 50
[[groups]]
name = "tcp"
count = 1
algorithm = "reno"
paths = [["l"]]
[[background]]
name = "udp"
path = ["l"]
rate_mbps = 5.0
mean_on_s = 1.0
mean_off_s = 1.0
""", "bg.toml")
    res = fluid.to_result(sc, fluid.equilibrium(sc))
    assert res.groups["tcp"].rate_mbps == pytest.approx(7.5, rel=1e-9)
    assert res.links["l"].load_mbps == pytest.approx(10.0, rel=1e-9)
    assert res.links["l"].extra["utilization"] == pytest.approx(1.0, rel=1e-9)
    assert res.links["l"].extra["background_mbps"] == pytest.approx(2.5, rel=1e-9)
