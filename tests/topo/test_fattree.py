"""The fat-tree generator against the counts of Al-Fares et al. (k³/4 hosts, (k/2)² core
switches, (k/2)² inter-pod paths) and the permutation matrix of Raiciu et al."""

import random

import pytest

from mpcc import topo
from mpcc.cli import main
from mpcc.errors import MpccError
from mpcc.topo import FatTree, permutation


@pytest.mark.parametrize("k", [2, 4, 6, 8])
def test_counts(k):
    ft = FatTree(k)
    names = ft.link_names()
    assert len(set(names)) == len(names)
    # cables: k³/4 host-edge + k·(k/2)² edge-agg + k·(k/2)² agg-core, two directions each
    assert len(names) == 2 * (k ** 3 // 4 + 2 * k * (k // 2) ** 2)
    assert ft.hosts == k ** 3 // 4
    core = {n.split(">")[1] for n in names if ">c" in n}
    assert len(core) == (k // 2) ** 2


def test_paths_between_pods_edges_and_hosts():
    ft = FatTree(8)
    links = set(ft.link_names())
    # host 0: pod 0 edge 0; host 1: same edge; host 4: pod 0 edge 1; host 16: pod 1
    assert ft.paths(0, 1) == [["h0.up", "h1.down"]]
    same_pod = ft.paths(0, 4)
    assert len(same_pod) == 4 and all(len(p) == 4 for p in same_pod)
    other = ft.paths(0, 16)
    assert len(other) == 16 and len({tuple(p) for p in other}) == 16
    for p in same_pod + other:
        assert set(p) <= links
        assert p[0] == "h0.up" and p[-1].endswith(".down")
        # consecutive links meet at one switch: the head of one is the tail of the next
        for a, b in zip(p[1:-2], p[2:-1]):
            assert a.split(">")[1] == b.split(">")[0]


def test_permutation_is_a_derangement():
    for seed in range(20):
        d = permutation(16, random.Random(seed))
        assert sorted(d) == list(range(16)) and all(i != j for i, j in enumerate(d))
    with pytest.raises(MpccError):
        permutation(1, random.Random(0))


def test_document_is_a_valid_scenario_and_round_trips_through_toml():
    from mpcc import scenario
    doc = topo.fattree(4, subflows=3, algorithm="balia", seed=3)
    s = topo.scenario(doc)
    assert len(s.groups) == 16 and all(len(g.paths) == 3 for g in s.groups)
    again = scenario.loads(topo.dumps(doc))
    assert again.groups == s.groups and again.links == s.links


@pytest.mark.parametrize("args", [["--k", "5"], ["--k", "0"], ["--subflows", "9"], ["--algorithm", "nope"]])
def test_bad_flags_are_one_line(args, capsys):
    with pytest.raises(SystemExit) as e:
        main(["topo", "fattree", *args])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("mpcc: error:")


def test_small_fattree_simulates_and_multipath_beats_single_path():
    """k = 4 (16 hosts): 4 MPTCP subflows spread load over the core where one ECMP path per
    TCP flow collides (Raiciu et al. Fig. 2's direction)."""
    from mpcc import sim
    out = {}
    for algo, sf in (("reno", 1), ("lia", 4)):
        s = topo.scenario(topo.fattree(4, subflows=sf, algorithm=algo, seed=2, duration_s=0.3))
        r = sim.run(s, seed=1, sample_interval_s=0).result
        rates = [g.rate_mbps for g in r.groups.values()]
        assert all(0 < x <= 1000 * 1.01 for x in rates)      # every host sends (starts within 1 ms)
        for name, l in r.links.items():
            assert l.load_mbps <= 1000 * 1.01, name
        out[algo] = sum(rates) / len(rates)
    assert out["lia"] > out["reno"]
