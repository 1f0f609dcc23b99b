"""The ``[testbed]`` table of a scenario (merged with ``mpcc testbed`` flags), validated by
:func:`mpcc.scenario.engine_options` (ranges in :data:`mpcc.ranges.R`, docs/scenario.md)."""

from ..scenario import Option

TESTBED_OPTIONS = {
    "runs": Option(1, example="1"),
    "duration_s": Option(None, example="60.0"),   # default: the scenario's duration_s
    "warmup_s": Option(None, example="10.0"),     # default: min(10 s, 20 % of the duration)
    "sample_ms": Option(100.0, example="100"),
    "algorithm": Option(None, "string", example="balia"),
    "seed": Option(1, example="1"),
    "spin_us": Option(30, example="30"),
}


def cross_check(scenario, opts) -> None:
    """Checks that involve other fields of the scenario (run by mpcc.scenario at load time)."""
    from ..errors import ScenarioError
    dur = opts["duration_s"] or scenario.duration_s
    if opts["warmup_s"] is not None and opts["warmup_s"] >= dur:
        raise ScenarioError(scenario.source, "testbed.warmup_s",
                            f"warm-up {opts['warmup_s']:g} s is not shorter than the run ({dur:g} s)",
                            "lower warmup_s or raise duration_s")
