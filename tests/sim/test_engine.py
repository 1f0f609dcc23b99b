"""TCP behaviour of the packet-level simulator against closed forms and textbook facts."""

import math

import numpy as np
import pytest

from mpcc import algorithms, scenario, sim

from sim_helpers import group, single_link


def test_single_reno_flow_fills_a_link_with_a_bdp_buffer():
    # 10 Mb/s, RTT 20 ms: BDP = 833 pkt/s × 0.02 s ≈ 17 packets ≤ 50-packet buffer, so the
    # queue never drains after a halving and the link stays busy (≥ 90 % utilisation).
    s = single_link(groups=group("a"), duration=40.0)
    r = sim.run(s, seed=1).result
    assert r.links["l"].extra["utilization"] >= 0.9
    assert r.groups["a"].rate_mbps >= 9.0
    assert r.groups["a"].extra["loss_events"] > 0  # it did probe the buffer


def test_two_equal_rtt_reno_flows_share_equally():
    s = single_link(groups=group("a") + group("b"), duration=60.0, sim="[sim]\nhost_jitter_s = 0.0005")
    rates = np.array([[sim.run(s, seed=k).result.groups[g].rate_mbps for g in "ab"] for k in range(3)]).mean(axis=0)
    assert abs(rates[0] - rates[1]) / rates.sum() < 0.1, rates


def test_rtt_unfairness_favours_the_short_rtt_flow():
    # Reno's rate ∝ 1/(RTT √p): with the same loss rate the 5 ms one-way flow gets more than the
    # flow whose access link adds 40 ms one-way.
    s = scenario.loads("""
name = "rtt"
duration_s = 60.0
[[links]]
name = "l"
capacity_mbps = 10.0
delay_ms = 5.0
buffer_pkts = 30
[[links]]
name = "far"
capacity_mbps = 1000.0
delay_ms = 40.0
buffer_pkts = 1000
[[groups]]
name = "near"
count = 1
algorithm = "reno"
paths = [["l"]]
[[groups]]
name = "far"
count = 1
algorithm = "reno"
paths = [["far", "l"]]
""")
    res = [sim.run(s, seed=k).result for k in range(2)]
    near = np.mean([r.groups["near"].rate_mbps for r in res])
    far = np.mean([r.groups["far"].rate_mbps for r in res])
    assert near > 1.5 * far, (near, far)
    assert near + far > 9.0


def test_droptail_buffer_is_never_exceeded():
    s = single_link(buffer=20, groups=group("a", count=5), duration=20.0)
    run = sim.run(s, seed=3, sample_interval_s=0.01)
    assert run.result.links["l"].extra["max_queue_pkts"] == 20  # filled, never beyond
    q = run.timeseries["links"]["queue_pkts"]
    assert q.max() <= 20
    assert run.result.links["l"].extra["drops"] > 0


RED = 'aqm = "red"\nred = {min_th = 10, max_th = 30, max_p = 0.1, ecn = %s}'


def _mean_queue(run, t0):
    t = run.timeseries["links"]
    time_s = t["time_s"]
    return t["queue_pkts"][time_s >= t0].mean()


def test_red_drops_between_thresholds_without_ecn():
    s = single_link(buffer=200, aqm=RED % "false", groups=group("a", count=4), duration=40.0)
    run = sim.run(s, seed=1, sample_interval_s=0.01)
    link = run.result.links["l"]
    assert link.extra["drops"] > 0 and link.extra["marks"] == 0
    assert link.extra["max_queue_pkts"] < 200  # RED acted before the buffer overflowed
    # the queue settles where the drop probability balances the flows: between min_th and the
    # gentle region's end 2·max_th
    assert 10 <= _mean_queue(run, 8.0) <= 60
    assert link.extra["utilization"] > 0.9


def test_red_marks_instead_of_dropping_with_ecn():
    s = single_link(buffer=200, aqm=RED % "true", groups=group("a", count=4), duration=40.0)
    run = sim.run(s, seed=1, sample_interval_s=0.01)
    link = run.result.links["l"]
    assert link.extra["marks"] > 0
    assert link.extra["drops"] == 0
    assert run.result.groups["a"].extra["retransmits"] == 0
    assert run.result.groups["a"].extra["loss_events"] > 0  # marks reduce the window
    assert 10 <= _mean_queue(run, 8.0) <= 60


def test_random_loss_rate_is_the_configured_probability():
    # With 1 % random loss on an uncongested link, the measured price is the Bernoulli rate.
    s = scenario.loads("""
name = "lossy"
duration_s = 30.0
[[links]]
name = "l"
capacity_mbps = 100.0
delay_ms = 5.0
buffer_pkts = 1000
loss = 0.01
[[groups]]
name = "a"
count = 2
algorithm = "reno"
paths = [["l"]]
""")
    r = sim.run(s, seed=2).result
    n = r.links["l"].extra["arrivals"]
    p = r.links["l"].price
    assert abs(p - 0.01) < 4 * math.sqrt(0.01 * 0.99 / n) + 1e-4, (p, n)
    # Reno under random loss p: rate ≈ 1.22·MSS/(RTT √p) (Mathis et al.) per flow
    mathis = 1.22 * 1500 * 8 / (0.01 * math.sqrt(0.01)) / 1e6
    assert 0.6 * mathis < r.groups["a"].rate_mbps < 1.4 * mathis


def test_fast_keeps_alpha_packets_queued():
    # FAST's equilibrium (Tang et al. eq. (1)): w = baseRTT·x + α, i.e. α packets in the queue.
    s = single_link(buffer=200, groups=group("a", algo="fast", extra="") .replace(
        'algorithm = "fast"', 'algorithm = {name = "fast", alpha = 20, gamma = 0.5}'), duration=30.0)
    run = sim.run(s, seed=1, sample_interval_s=0.01)
    assert run.result.links["l"].extra["drops"] == 0
    assert abs(_mean_queue(run, 10.0) - 20) < 3
    assert run.result.links["l"].extra["utilization"] > 0.95


def test_fast_holds_alpha_on_a_long_rtt_path_with_sub_rtt_updates():
    # 200 ms RTT, eq. (1) every 20 ms (10 updates per RTT): the window in eq. (1) is the one the
    # RTT samples' packets were sent under. With the current window there, the 10 updates per RTT
    # each move towards α·RTT/q of a one-RTT-old q and the queue swung between 0 and ≈ 200
    # packets (std ≈ 54, utilization 0.94).
    s = scenario.loads("""
name = "fast-long-rtt"
duration_s = 40.0
[[links]]
name = "l"
capacity_mbps = 100.0
delay_ms = 100.0
buffer_pkts = 2000
[[groups]]
name = "a"
count = 1
algorithm = {name = "fast", alpha = 50, update_interval_s = 0.02}
paths = [["l"]]
""")
    run = sim.run(s, seed=1, sample_interval_s=0.01)
    t = run.timeseries["links"]
    q = t["queue_pkts"][t["time_s"] >= 20.0]
    assert q.std() < 5.0, q.std()
    assert abs(q.mean() - 50) < 7.5, q.mean()
    assert run.result.links["l"].extra["utilization"] > 0.99


def test_background_on_off_traffic_takes_its_mean_rate():
    # on-off UDP at 4 Mb/s with mean on = mean off = 0.5 s: mean 2 Mb/s over 60 s; the Reno flow
    # takes the rest of the 10 Mb/s link.
    s = scenario.loads("""
name = "bg"
duration_s = 80.0
[[links]]
name = "l"
capacity_mbps = 10.0
delay_ms = 10.0
buffer_pkts = 50
[[groups]]
name = "a"
count = 1
algorithm = "reno"
paths = [["l"]]
[[background]]
name = "udp"
path = ["l"]
rate_mbps = 4.0
mean_on_s = 0.5
mean_off_s = 0.5
""")
    r = sim.run(s, seed=4).result
    udp = r.links["l"].load_mbps - r.groups["a"].rate_mbps
    assert 1.5 < udp < 2.5, udp
    assert r.links["l"].extra["utilization"] > 0.9


@pytest.mark.parametrize("name", sorted(algorithms.NAMES))
def test_every_algorithm_runs_on_two_paths(name):
    s = scenario.loads(f"""
name = "two"
duration_s = 10.0
[[links]]
name = "a"
capacity_mbps = 8.0
delay_ms = 10.0
buffer_pkts = 50
[[links]]
name = "b"
capacity_mbps = 2.0
delay_ms = 50.0
buffer_pkts = 50
[[groups]]
name = "mp"
count = 1
algorithm = "{name}"
paths = [["a"], ["b"]]
""")
    g = sim.run(s, seed=0, sample_interval_s=0).result.groups["mp"]
    assert all(v > 0.2 for v in g.path_rate_mbps), g.path_rate_mbps
    # rates count packets ACKed inside [2 s, 10 s]: at most a window (≤ buffer + BDP ≈ 75
    # packets on each path) more than the links carried in that span
    assert g.rate_mbps <= 10.0 + 2 * 75 * 1500 * 8 / 8.0 / 1e6


@pytest.mark.parametrize("algo", algorithms.PENG_ALGORITHMS)
def test_table4_like_multipath_flow_uses_both_paths(algo):
    # Peng et al. Table IV network (WiFi 8 Mb/s 10 ms + 3G 2 Mb/s 100 ms), one MP flow: it
    # should take ≥ 90 % of the 10 Mb/s and use both paths.
    s = sim.with_algorithm(scenario.load("scenarios/peng2016/table4.toml").with_changes(duration_s=40.0), algo)
    g = sim.run(s, seed=1, sample_interval_s=0).result.groups["mp"]
    assert g.rate_mbps >= 9.0
    assert g.path_rate_mbps[0] > 6.0 and g.path_rate_mbps[1] > 1.0, g.path_rate_mbps


def test_delayed_acks_still_fill_the_link():
    s = single_link(groups=group("a"), duration=30.0, sim="[sim]\ndelayed_ack = true")
    r = sim.run(s, seed=1).result
    assert r.links["l"].extra["utilization"] >= 0.9


def test_flows_only_send_between_start_and_stop():
    s = single_link(groups=group("a") + group("late", extra="start_s = 10.0\nstop_s = 20.0"), duration=30.0)
    run = sim.run(s, seed=1, sample_interval_s=0.1)
    t = run.timeseries["subflows"]
    g = np.asarray(t["group"])
    time_s = t["time_s"]
    late = time_s[g == "late"]
    assert late.min() >= 10.0 and late.max() <= 20.0 + 1e-9
    # after the late flow stops, the first flow has the link again
    r = sim.run(s, seed=1, measure=(24.0, 30.0)).result
    assert r.groups["late"].rate_mbps == 0.0
    assert r.groups["a"].rate_mbps > 8.5


def test_a_group_active_for_part_of_the_window_is_measured_over_its_own_interval():
    """A Reno flow alone on a 10 Mb/s link for 10–20 s of a 30 s run (window 6–30 s): its rate
    is that of a flow filling the link while it exists (≈ 9–10 Mb/s, as the testbed reports it),
    not its bytes spread over the 24 s window (≈ 4 Mb/s, what the sim reported until 2026-11-24)."""
    s = single_link(groups=group("late", extra="start_s = 10.0\nstop_s = 20.0"), duration=30.0)
    r = sim.run(s, seed=1).result
    assert r.extra["measure_s"] == [6.0, 30.0]
    assert 8.0 < r.groups["late"].rate_mbps <= 10.0
    # the link's load stays the window's mean: 10 of its 24 s busy
    assert r.links["l"].load_mbps == pytest.approx(r.groups["late"].rate_mbps * 10 / 24, rel=0.05)
