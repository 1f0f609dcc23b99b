"""mpcc.scenario_gen: seeded, valid, and covering the ranges of the issue (2–5 links, RED and
drop-tail, 5–100 ms, 1–3 paths per group, every algorithm, 1–20 flows per group)."""

from dataclasses import replace

from mpcc import algorithms, scenario, scenario_gen

SEEDS = range(300)


def test_same_seed_same_scenario_and_toml_round_trips():
    assert scenario_gen.generate_toml(11) == scenario_gen.generate_toml(11)
    assert scenario_gen.generate_toml(11) != scenario_gen.generate_toml(12)
    s = scenario_gen.generate(11)
    again = scenario.loads(scenario_gen.generate_toml(11))
    assert s.links == again.links and [g.paths for g in s.groups] == [g.paths for g in again.groups]


def test_ranges_are_respected_and_covered():
    seen_algos, seen_aqm, seen_links, seen_paths, seen_counts = set(), set(), set(), set(), set()
    for seed in SEEDS:
        s = scenario_gen.generate(seed)
        assert 2 <= len(s.links) <= 5
        seen_links.add(len(s.links))
        used = {n for g in s.groups for p in g.paths for n in p}
        assert used == {l.name for l in s.links}, "every link carries a group"
        for l in s.links:
            assert 5.0 <= l.delay_ms <= 100.0 and 10.0 <= l.capacity_mbps <= 100.0
            seen_aqm.add(l.aqm)
        for g in s.groups:
            assert 1 <= len(g.paths) <= 3 and 1 <= g.count <= 20
            seen_paths.add(len(g.paths))
            seen_counts.add(g.count)
            seen_algos.add(g.algorithm.name)
    assert seen_links == {2, 3, 4, 5}
    assert seen_aqm == {"red", "droptail"}
    assert seen_paths == {1, 2, 3}
    assert {1, 20} <= seen_counts
    assert seen_algos == set(scenario_gen.ALGORITHMS)   # the default draw list (fixed; ALL adds newer ones)


def test_restrictions():
    for seed in range(50):
        s = scenario_gen.generate(seed, aqm="red", algorithms_=scenario_gen.FLUID_ALGORITHMS)
        assert all(l.aqm == "red" for l in s.links)
        assert all(g.algorithm.fluid_model for g in s.groups)
    assert "olia" not in scenario_gen.FLUID_ALGORITHMS and "fast" not in scenario_gen.FLUID_ALGORITHMS


def test_bdp_thresholds_change_only_red():
    r = replace(scenario_gen.Ranges(), red_min_th_bdp=(0.2, 0.5))
    a = scenario_gen.generate(5, aqm="red")
    b = scenario_gen.generate(5, aqm="red", ranges=r)
    assert [(l.capacity_mbps, l.delay_ms) for l in a.links] == [(l.capacity_mbps, l.delay_ms) for l in b.links]
    assert [g.paths for g in a.groups] == [g.paths for g in b.groups]
    for l in b.links:
        bdp = l.capacity_mbps * 1e6 / 12000 * 2 * l.delay_ms / 1e3
        assert max(5, int(0.2 * bdp)) <= l.red.min_th <= max(5, int(0.5 * bdp)) + 1
