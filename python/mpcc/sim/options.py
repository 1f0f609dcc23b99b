"""The ``[sim]`` table of a scenario: the simulator's options, validated by
:func:`mpcc.scenario.engine_options` (ranges in :data:`mpcc.ranges.R`, docs/scenario.md)."""

from ..scenario import Option

SIM_OPTIONS = {
    "measure_from_s": Option(None, example="20.0"),
    "measure_to_s": Option(None, example="100.0"),
    "sample_interval_s": Option(None, example="0.1"),
    "start_jitter_s": Option(1.0, example="1.0"),
    "initial_cwnd": Option(10.0, example="10"),
    "rto_min_s": Option(0.2, example="0.2"),
    "delayed_ack": Option(False, "bool", example="false"),
    "delayed_ack_s": Option(0.04, example="0.04"),
    "per_ack_increase": Option(False, "bool", example="true"),
    "slow_start_at_ssthresh": Option(False, "bool", example="true"),
    "ecn": Option(True, "bool", example="true"),
    # 1 ms: a jiffy at HZ=1000 and Dummynet's tick (Peng et al.'s testbed); see docs/sim.md
    "host_jitter_s": Option(0.001, example="0.001"),
}


def cross_check(scenario, opts) -> None:
    """Checks that involve other fields of the scenario (run by mpcc.scenario at load time)."""
    from .engine import measurement_window
    measurement_window(scenario)
