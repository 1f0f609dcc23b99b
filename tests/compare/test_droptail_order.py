"""Table-III-like drop-tail networks of other sizes than the paper's, written without a [sim]
table: the simulator's default host timing noise must keep the fluid model's order of the
multipath per-flow rates, EWTCP > Semicoupled > LIA > Balia > Coupled (Peng et al. Table III),
in the mean over 3 seeds. The order is also checked on the fluid model itself (the independent
reference). All four sizes: bench/compare/droptail_order.py and RESULTS.md."""

import pytest

from mpcc.compare import droptail_order as dto


@pytest.mark.parametrize("size", [dto.SIZES[1], dto.SIZES[2]], ids=lambda s: s[0])
def test_default_sim_keeps_the_fluid_order(size):
    assert "[sim]" not in dto.toml("lia", *size[1:])
    m = dto.measure(size, seeds=3, jitter=None)
    assert dto.in_order(m["fluid"]), m["fluid"]
    assert dto.in_order(m["sim"]), m["sim"]
