"""Fluid model vs simulator on generated RED networks (mpcc.scenario_gen, seeds 1–3, RED
thresholds scaled to the bandwidth-delay product, 30 s runs, 2 seeds each).

What is asserted is what bench/compare/RESULTS.md measured on 30 scenarios: every group and
multipath route either agrees within 10 % (the done-when of issue 11), or the diagnosis names a
cause from the quantities the sim reports (an under-used link, a different RTT, windows of a few
packets or timeouts, a boundary equilibrium, a window off eq. (7) at the measured price, a
different price). An unexplained miss fails. The 10 % target itself is not met everywhere: see
docs/compare.md for the causes and their counts.
"""

import math
from dataclasses import replace

import pytest

from mpcc import compare, scenario_gen

RANGES = replace(scenario_gen.Ranges(), duration_s=30.0, red_min_th_bdp=(0.2, 0.5))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_disagreement_is_explained(seed):
    s = scenario_gen.generate(seed, aqm="red", algorithms_=scenario_gen.FLUID_ALGORITHMS, ranges=RANGES)
    c = compare.compare(s, engines=("fluid", "sim"), runs=2, seed=1)
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
