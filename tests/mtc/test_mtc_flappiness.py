"""The flappiness metric on traces with known answers, the window model's rules, and the §4.2
claims (Fully Coupled flappier than Coupled Increase/Decrease; less flappy with more subflows)."""

import numpy as np
import pytest

from mpcc.algorithms import get
from mpcc.mtc import flappiness as fl


def _square_wave(period=10.0, total=100.0, dt=0.1, share=0.9):
    t = np.arange(0.0, total, dt)
    first = (np.floor(t / period) % 2) == 0
    w = np.where(first[:, None], [share, 1 - share], [1 - share, share]) * 20.0
    return t, w


def test_metric_on_alternating_dominance():
    t, w = _square_wave()
    m = fl.flappiness(t, w)
    assert m.dominance == pytest.approx(1.0)
    assert m.episodes == 10
    assert m.mean_dwell_s == pytest.approx(10.0)
    assert m.handovers_per_ks == pytest.approx(9 / 100.0 * 1000.0)
    # normalized Herfindahl of shares (0.9, 0.1): (0.82 − 0.5)/0.5
    assert m.concentration == pytest.approx(0.64)


def test_metric_on_equal_split_and_permanent_dominance():
    t = np.arange(0, 50.0, 0.5)
    m = fl.flappiness(t, np.full((t.size, 3), 7.0))
    assert m.dominance == 0 and m.episodes == 0 and m.concentration == pytest.approx(0.0)
    m = fl.flappiness(t, np.column_stack([np.full(t.size, 95.0), np.full(t.size, 5.0)]))
    assert m.dominance == pytest.approx(1.0) and m.episodes == 1 and m.handovers_per_ks == 0


def test_hysteresis():
    # subflow 1 enters at share 0.85, dips to 0.6 (still a majority) and stays dominant; the episode
    # ends only when the share falls below 0.5.
    shares = np.array([0.85] * 10 + [0.6] * 10 + [0.85] * 10 + [0.4] * 10)
    t = np.arange(shares.size, dtype=float)
    m = fl.flappiness(t, np.column_stack([shares, 1 - shares]))
    assert m.episodes == 1 and m.mean_dwell_s == pytest.approx(30.0) and m.dominance == pytest.approx(0.75)


def test_smoothing_removes_short_spikes():
    t = np.arange(0, 100.0, 0.1)
    w = np.full((t.size, 2), 10.0)
    w[25::50, 0] = 200.0  # one-sample spikes
    assert fl.flappiness(t, w).episodes > 0
    assert fl.flappiness(t, w, smooth_s=2.0).episodes == 0


@pytest.mark.parametrize("kw", [dict(enter=0.4), dict(leave=0.9, enter=0.8)])
def test_bad_thresholds(kw):
    t, w = _square_wave()
    with pytest.raises(ValueError):
        fl.flappiness(t, w, **kw)


def test_bad_trace_shapes():
    with pytest.raises(ValueError):
        fl.flappiness(np.arange(5.0), np.ones((5, 1)))
    with pytest.raises(ValueError):
        fl.flappiness(np.arange(5.0), np.ones((4, 2)))


def test_window_model_uses_the_algorithm_rules_without_loss():
    # No loss: each round adds (packets sent) × I, with E[sent] = w. MSTCP (I = a = 0.03) therefore
    # grows by the factor 1 + a per round in expectation, Coupled Decrease (I = 1/w_i) by 1 packet.
    rounds = 20
    _, tr = fl.window_trace("mstcp", [0.0, 0.0], rounds=rounds, replicas=4000, seed=3, w_init=[10.0, 30.0])
    assert tr[:, -1].mean(axis=0) == pytest.approx(np.array([10.0, 30.0]) * 1.03 ** rounds, rel=5e-3)
    _, tr = fl.window_trace("coupled-decrease", [0.0, 0.0], rounds=rounds, replicas=4000, seed=3,
                            w_init=[10.0, 30.0])
    assert tr[:, -1].mean(axis=0) == pytest.approx([10.0 + rounds, 30.0 + rounds], rel=5e-3)


def test_window_model_decrease_matches_cwnd_after_loss():
    # loss probability ~1: every round each subflow that sent a packet loses; the first round's
    # outcome must be the algorithm's increase followed by its decrease (floored at 1 packet).
    alg = get("fully-coupled")
    _, tr = fl.window_trace("fully-coupled", [1.0 - 1e-12], rounds=1, replicas=3, seed=0, w_init=[8.0])
    w = np.array([8.0])
    expect = alg.cwnd_after_loss(w, np.array([0.1]))  # no ACK delivered, one decrease
    assert np.allclose(tr[:, 0, 0], expect)


def test_fully_coupled_is_flappier_and_more_subflows_reduce_it():
    kw = dict(smooth_s=2.0)
    res = {}
    runs = [("fully-coupled", 2), ("fully-coupled", 4), ("mstcp", 2), ("mstcp", 4),
            ("coupled-increase", 2), ("coupled-decrease", 2)]
    for name, n in runs:
        t, tr = fl.window_trace(name, [0.002] * n, 0.1, 6000, 2, seed=11 + n)
        res[name, n] = fl.flappiness_of_replicas(t, tr, **kw)
    fc = res["fully-coupled", 2]
    for other in ("coupled-increase", "coupled-decrease"):
        assert fc["dominance"] > 2 * res[other, 2]["dominance"]
        assert fc["concentration"] > 2 * res[other, 2]["concentration"]
    for name in ("fully-coupled", "mstcp"):
        assert res[name, 4]["dominance"] < 0.5 * res[name, 2]["dominance"]


def test_trace_from_subflows_table():
    from mpcc.sim.timeseries import Frame

    # two flows × two routes, rows in arbitrary order; flow 1's route 0 misses t = 0.2
    rows = [(0.1, 0, 0, 5.0), (0.1, 0, 1, 6.0), (0.2, 0, 1, 7.0), (0.2, 0, 0, 8.0), (0.1, 1, 0, 1.0),
            (0.3, 0, 0, 9.0), (0.3, 0, 1, 10.0), (0.1, 1, 1, 2.0), (0.2, 1, 1, 3.0)]
    tab = Frame({"time_s": np.array([r[0] for r in rows]), "group": np.array(["mtc"] * len(rows), dtype=object),
                 "flow": np.array([r[1] for r in rows]), "route": np.array([r[2] for r in rows]),
                 "cwnd_pkts": np.array([r[3] for r in rows])})
    t, w = fl.trace_from_subflows_table(tab, group="mtc", flow=0)
    assert np.allclose(t, [0.1, 0.2, 0.3]) and np.allclose(w, [[5, 6], [8, 7], [9, 10]])
    t, w = fl.trace_from_subflows_table(tab, flow=1)
    assert np.allclose(t, [0.1]) and np.allclose(w, [[1, 2]])


def _sim_available():
    from mpcc.mtc import flappiness

    return flappiness.sim_available()


@pytest.mark.skipif(not _sim_available(), reason="packet simulator (mpcc.sim) not built")
def test_packet_level_traces_show_the_same_ordering():
    """The metric applied unchanged to packet-simulator traces (random loss 0.002 per packet on
    every path, RTT 0.1 s, 1500 s): Fully Coupled dominates most of the time, Coupled Increase /
    Decrease less than half of it, with ≥ 2.5× lower concentration; 4 subflows halve it."""
    out = {}
    for name, n in (("fully-coupled", 2), ("coupled-increase", 2), ("coupled-decrease", 2), ("fully-coupled", 4)):
        t, w = fl.packet_trace(name, n, 0.002, 1500.0, seed=5)
        assert w.shape[1] == n and t.size > 10000
        out[name, n] = fl.flappiness(t, w, smooth_s=2.0)
    fc = out["fully-coupled", 2]
    assert fc.dominance > 0.6
    for other in ("coupled-increase", "coupled-decrease"):
        assert out[other, 2].dominance < 0.5
        assert fc.concentration > 2.5 * out[other, 2].concentration
    assert out["fully-coupled", 4].dominance < 0.5 * fc.dominance


def test_decrease_factor_sets_the_flip_rate():
    """§4.2: a smaller b makes the transitions between the scenarios slower and less frequent, a
    larger b makes the flips more frequent (Fully Coupled, n = 2)."""
    rate, dwell = [], []
    for b in (0.25, 0.5, 0.75):
        t, tr = fl.window_trace({"name": "mtcp", "alpha": 1.0, "beta": 1.0, "b": b}, [0.002, 0.002], 0.1,
                                8000, 2, seed=21)
        r = fl.flappiness_of_replicas(t, tr, smooth_s=2.0)
        rate.append(r["handovers_per_ks"])
        dwell.append(r["mean_dwell_s"])
    assert rate[0] < 0.6 * rate[1] and rate[1] < 0.8 * rate[2]
    assert dwell[0] > 1.5 * dwell[1] and dwell[1] > 1.5 * dwell[2]
