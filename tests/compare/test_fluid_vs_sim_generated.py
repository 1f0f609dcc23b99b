"""Fluid model vs simulator on generated RED networks (mpcc.scenario_gen, seeds 1–3, RED
thresholds scaled to the bandwidth-delay product, 30 s runs, 2 seeds each).

What is asserted is what bench/compare/RESULTS.md measured on 30 scenarios: every group and
multipath route either agrees within 10 % (the done-when of issue 11), or the diagnosis names a
cause from the quantities the sim reports (an under-used link, a different RTT, windows of a few
packets or timeouts, a boundary equilibrium, a window off eq. (7) at the measured price, a
different price). An unexplained miss fails. The 10 % target itself is not met everywhere: see
docs/compare.md for the causes and their counts.
"""

import functools
import math
from dataclasses import replace

import numpy as np
import pytest

from mpcc import compare, scenario_gen

RANGES = replace(scenario_gen.Ranges(), duration_s=30.0, red_min_th_bdp=(0.2, 0.5))


@functools.lru_cache(maxsize=None)
def _compare(seed):
    s = scenario_gen.generate(seed, aqm="red", algorithms_=scenario_gen.FLUID_ALGORITHMS, ranges=RANGES)
    return s, compare.compare(s, engines=("fluid", "sim"), runs=2, seed=1)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_disagreement_is_explained(seed):
    s, c = _compare(seed)
    assert c.runs["fluid"].ok and c.runs["sim"].ok
    agree = 0
    for g in s.groups:
        d = c.differences["groups"][g.name]
        rows = c.routes["sim"][g.name]
        checks = [(d["rel"]["sim vs fluid"], {t for r in rows for t in r["causes"]})]
        if len(g.paths) > 1:
            checks += [(p["rel"]["sim vs fluid"], set(r["causes"])) for p, r in zip(d["paths"], rows)]
        for rel, causes in checks:
            if math.isfinite(rel) and abs(rel) <= 0.10:
                agree += 1
                continue
            assert causes, f"{s.name} {g.name} ({g.algorithm.describe()}): sim vs fluid {rel:+.0%} with no cause named"
            assert causes <= set(compare.diagnosis.CAUSES)
            assert any(g.name in line for line in c.diagnosis)
    assert agree > 0


def test_fluid_rtt_is_the_sims():
    """The fluid RTT (propagation + RED's inverse at the price, docs/fluid.md) against the sim's mean
    RTT on every route of the three networks: within 20 % everywhere, 10 % in the median (the claim
    bench/compare/RESULTS.md measures on 30 networks). With the former midpoint of RED's thresholds
    the sim's RTT was 0.65–0.90 of the fluid one on these 16 routes (median 0.75). The sim's queue
    sits below RED's inverse by the few flows' sawtooth (RESULTS.md), so not closer."""
    ratios = []
    for seed in (1, 2, 3):
        s, c = _compare(seed)
        ratios += [r["mean_rtt_ms"] / f["mean_rtt_ms"] for g in s.groups
                   for r, f in zip(c.routes["sim"][g.name], c.routes["fluid"][g.name])]
    assert len(ratios) == 16
    assert all(abs(x - 1) <= 0.20 for x in ratios), ratios
    assert abs(float(np.median(ratios)) - 1) <= 0.10, ratios


def test_generated_networks_do_not_change_when_an_algorithm_is_added(monkeypatch):
    """A seed names the same network whatever the registry holds (the default draw list is
    scenario_gen.ALGORITHMS, fixed): with a new name in the registry, seed 3 gives the same
    scenario; every registry algorithm can still be drawn through scenario_gen.ALL."""
    from mpcc import algorithms, scenario_gen
    assert set(scenario_gen.ALGORITHMS) <= set(scenario_gen.ALL) == set(algorithms.REGISTRY)
    before = scenario_gen.generate(3, aqm="red")
    monkeypatch.setattr(algorithms.REGISTRY, "_entries", {**algorithms.REGISTRY._entries,
                                                          "added": ("reno.Reno", {})})
    assert "added" in algorithms.REGISTRY
    assert scenario_gen.generate(3, aqm="red") == before
