"""The summary of a run is computed without numpy (``mpcc sim --json`` loads none) and must equal,
bit for bit, the numpy computation it replaced: numpy is the reference here."""

import pickle
import random

import numpy as np
import pytest

from mpcc import scenario, sim
from mpcc.results import GroupResult, LinkResult, RunResult
from mpcc import scenario_gen, topo
from mpcc.sim.columns import Columns, column_means, mean, pairwise_sum


def _values(rng, n):
    # magnitudes over nine decades, so that the order of additions changes the rounding
    return [rng.random() * 10.0 ** rng.randint(-3, 6) for _ in range(n)]


@pytest.mark.parametrize("n", [*range(0, 140), 255, 256, 257, 1000, 4097, 100_003])
def test_pairwise_sum_and_mean_are_numpys_bit_for_bit(n):
    rng = random.Random(n)
    for _ in range(3):
        v = _values(rng, n)
        assert pairwise_sum(v) == float(np.sum(np.array(v, dtype=float)))
        if n:
            assert mean(v) == float(np.mean(np.array(v)))


def test_mean_of_nothing_is_nan_like_numpys():
    assert np.isnan(mean([]))


@pytest.mark.parametrize("width", range(1, 11))
def test_column_means_and_row_sums_are_numpys_bit_for_bit(width):
    rng = random.Random(width)
    for count in [*range(1, 40), 64, 129, 300, 5000]:
        rows = [_values(rng, width) for _ in range(count)]
        a = np.array(rows)
        assert column_means(rows) == a.mean(axis=0).tolist(), (count, width)
        assert [pairwise_sum(r) for r in rows] == a.sum(axis=1).tolist(), (count, width)


def test_columns_read_each_dtype_as_numpy_does_and_pickle():
    raw = {"f": ("<f8", np.array([0.1, -2.5e300, 3.0]).astype("<f8").tobytes()),
           "q": ("<u8", np.array([0, 2**64 - 1, 7], dtype="<u8").tobytes()),
           "i": ("<u4", np.array([4, 2**32 - 1], dtype="<u4").tobytes()),
           "e": ("<f8", b"")}
    cols = Columns(raw)
    for name, (dt, buf) in raw.items():
        ref = np.frombuffer(buf, dtype=dt)
        assert cols.tolist(name) == ref.tolist()
        assert cols[name].dtype == ref.dtype and cols[name].tolist() == ref.tolist()
    back = pickle.loads(pickle.dumps(cols))
    assert sorted(back) == sorted(raw) and back.tolist("q") == [0, 2**64 - 1, 7]
    with pytest.raises(ValueError, match="dtype"):
        Columns({"x": ("<f4", b"\0" * 4)}).tolist("x")


def _numpy_summary(sc, seed, cols, t0, t1) -> RunResult:
    """The sim summary written with numpy (what ``mpcc.sim.engine.summarize`` computed before
    it dropped numpy): the reference for the plain-Python one."""
    bits = sc.packet_bytes * 8.0
    span = t1 - t0
    sf_rate = cols["sf_delivered"] * bits / span / 1e6
    groups = {}
    for gi, g in enumerate(sc.groups):
        sel = cols["sf_group"] == gi
        flows, routes = cols["sf_flow"][sel], cols["sf_route"][sel]
        n = len(g.paths)
        per_route = np.zeros((g.count, n))
        per_route[flows, routes] = sf_rate[sel]
        per_flow = per_route.sum(axis=1)

        def total(name):
            return int(cols[name][sel].sum())

        extra = {"per_flow_mbps": per_flow.tolist(), "per_flow_path_mbps": per_route.tolist(),
                 "total_mbps": float(per_flow.sum()), "losses": total("sf_drops") + total("sf_marks"),
                 "drops": total("sf_drops"), "marks": total("sf_marks"), "loss_events": total("sf_loss_events"),
                 "timeouts": total("sf_timeouts"), "loss_probes": total("sf_loss_probes"),
                 "retransmits": total("sf_retrans"), "sent_pkts": total("sf_sent"),
                 "ds": float(cols["sf_ds_sum"][sel].sum() / max(int(cols["sf_ds_n"][sel].sum()), 1)),
                 "mean_srtt_s": [float(np.mean(cols["sf_srtt"][sel][routes == r])) for r in range(n)]}
        for key, col in (("sent", "sf_sent"), ("delivered", "sf_delivered"), ("drops", "sf_drops"),
                         ("marks", "sf_marks"), ("loss_events", "sf_loss_events"),
                         ("retransmits", "sf_retrans"), ("timeouts", "sf_timeouts"), ("loss_probes", "sf_loss_probes"),
                         ("acks", "sf_acks_sent"), ("segs_in", "sf_segs_in")):
            extra[f"path_{key}"] = [int(cols[col][sel][routes == r].sum()) for r in range(n)]
        groups[g.name] = GroupResult(g.algorithm.describe(), g.count, float(per_flow.mean()),
                                     per_route.mean(axis=0).tolist(), extra)
    links = {}
    for li, l in enumerate(sc.links):
        arr = int(cols["link_arrivals"][li])
        drops, marks, acc = int(cols["link_drops"][li]), int(cols["link_marks"][li]), int(cols["link_accepted"][li])
        load = acc * bits / span / 1e6
        links[l.name] = LinkResult(load, (drops + marks) / arr if arr else 0.0,
                                   {"utilization": load / l.capacity_mbps, "drops": drops, "marks": marks,
                                    "arrivals": arr, "max_queue_pkts": int(cols["link_max_queue"][li])})
    return RunResult("sim", sc.name, groups, links, {"seed": int(seed), "measure_s": [t0, t1]})


def _scenarios():
    yield scenario.load("scenarios/peng2016/table4.toml").with_changes(duration_s=20.0)      # 2 paths + TCP
    yield scenario.load("scenarios/peng2016/table3.toml").with_changes(duration_s=10.0)      # 5 groups, 10 flows
    yield scenario.load("scenarios/jiang2011/fig9-mstcp-n4-b20.toml").with_changes(duration_s=10.0)
    yield topo.scenario(topo.fattree(4, subflows=8, duration_s=0.05))                          # 8 subflows, 16 hosts
    for seed in range(6):  # random: RED/ECN and drop-tail, all algorithms, 3–20 flows a group
        yield scenario_gen.generate(seed).with_changes(duration_s=5.0)


@pytest.mark.parametrize("sc", list(_scenarios()), ids=lambda s: s.source.rsplit("/", 1)[-1])
def test_summary_without_numpy_equals_the_numpy_summary(sc):
    for seed in (0, 3):
        cr = sim.simulate(sc, seed=seed, sample_interval_s=0.0, measure=(sc.duration_s / 4, sc.duration_s))
        assert isinstance(cr.columns, Columns)
        t0, t1 = cr.config["measure"]
        ref = _numpy_summary(sc, seed, {k: cr.columns[k] for k in cr.columns}, t0, t1)
        assert cr.result.to_json() == ref.to_json()
        assert cr.result.to_dict() == ref.to_dict()
        assert sum(g.rate_mbps for g in cr.result.groups.values()) > 0   # the runs carried traffic
