from pathlib import Path

import numpy as np
import pytest

from mpcc import scenario

ROOT = Path(__file__).resolve().parents[2]
PENG = ROOT / "scenarios" / "peng2016"


@pytest.fixture
def load():  # noqa
    return lambda name: scenario.load(PENG / name)


def path_rates(eq):
    """{group: per-flow route rates (packets/s)} from an Equilibrium."""
    net = eq.network
    return {g.name: eq.x[net.source_of_route == s] for s, g in enumerate(eq.groups)}


def independent_kkt(net, x, p):
    """(8)–(9) evaluated directly from the algorithms' fluid_phi (not the solver's code)."""
    worst = 0.0
    H = net.H.toarray()
    q = H.T @ p
    y = (H * net.multiplicity[None, :]) @ x
    for c in net.classes:
        B, n = c.shape
        xs = x[c.routes].reshape(B, n)
        xe = np.where(xs > 0, xs, 1e-30)  # φ at x_r → 0 (limit; finite for Coupled)
        with np.errstate(all="ignore"):
            phi = c.algorithm.fluid_phi(xe, c.tau)
        qs = q[c.routes].reshape(B, n)
        rel = (phi - qs) / qs
        worst = max(worst, np.abs(rel[xs > 0]).max(initial=0), np.maximum(rel, 0).max(initial=0))
        assert np.all(xs >= 0)
    worst = max(worst, np.maximum((y - net.capacity) / net.capacity, 0).max(),
                np.abs((y - net.capacity) / net.capacity)[p > 0].max(initial=0))
    assert np.all(p >= 0)
    return worst
