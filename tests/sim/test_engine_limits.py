"""The Rust core's guards seen from Python: its registry matches the Python one, its run budgets
end a run with one line naming the limit, and its field errors become the usual ScenarioError."""
import math

import pytest

from mpcc import _core, algorithms, sim
from mpcc.errors import MpccError, ScenarioError

from sim_helpers import group, single_link


def test_rust_registry_has_the_python_defaults():
    reg, aliases = _core.registry()
    assert set(reg) == set(algorithms.REGISTRY)
    for name, (_cls, schema) in algorithms.REGISTRY.items():
        want = {k: float(v[0]) for k, v in schema.items()}
        got = reg[name]
        assert set(got) == set(want), name
        for k, v in want.items():
            assert got[k] == v or (math.isinf(v) and math.isinf(got[k])), (name, k, got[k], v)
    assert set(aliases) == set(algorithms.ALIASES)
    for alias, (target, preset) in algorithms.ALIASES.items():
        assert aliases[alias][0] == target
        assert aliases[alias][1] == {k: float(v) for k, v in preset.items()}


def test_event_budget_is_one_line_naming_it():
    s = single_link(groups=group("a", count=2), duration=10.0)
    with pytest.raises(MpccError) as e:
        sim.run(s, seed=1, sample_interval_s=0, max_events=1000)
    msg = str(e.value)
    assert "max_events:" in msg and "\n" not in msg
    # the same run within a sufficient budget completes
    assert sim.run(s, seed=1, sample_interval_s=0, max_events=10**7).stats["events"] < 10**7


def test_time_series_that_cannot_fit_name_the_field():
    s = single_link(groups=group("a", count=2), duration=10.0)
    with pytest.raises(ScenarioError) as e:
        sim.run(s, seed=1, sample_interval_s=1e-9)
    assert e.value.field == "sample_interval_s" and "\n" not in str(e.value)
    with pytest.raises(ScenarioError) as e:
        sim.run(s, seed=1, sample_interval_s=1e-4, max_memory_mb=1)
    assert e.value.field == "sample_interval_s"
    assert "raise max_memory_mb" in e.value.fix
