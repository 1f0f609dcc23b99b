"""The ``[sim]`` table of a scenario: the simulator's options, validated by
:func:`mpcc.scenario.engine_options` (ranges in :data:`mpcc.ranges.R`, docs/scenario.md)."""

from ..errors import ScenarioError
from ..scenario import Option, Scenario, engine_options

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


#: Shortest measurement window: a rate over a shorter window is dominated by one packet.
MIN_WINDOW_S = 1e-3


def sim_options(scenario: Scenario) -> dict:
    return engine_options(scenario, "sim")


def measurement_window(scenario: Scenario, measure: tuple[float, float] | None = None) -> tuple[float, float]:
    """[t0, t1]: the argument, else ``[sim] measure_from_s``/``measure_to_s``, else
    [duration/5, duration]."""
    opts = sim_options(scenario)
    if measure is None:
        t0 = opts["measure_from_s"] if opts["measure_from_s"] is not None else scenario.duration_s / 5.0
        t1 = opts["measure_to_s"] if opts["measure_to_s"] is not None else scenario.duration_s
    else:
        t0, t1 = float(measure[0]), float(measure[1])
    if not (0 <= t0 < t1 <= scenario.duration_s) or t1 - t0 < MIN_WINDOW_S:
        fld = "--measure" if measure is not None else "sim.measure_from_s/measure_to_s"
        raise ScenarioError(scenario.source, fld, f"measurement window [{t0:g}, {t1:g}] is not inside [0, {scenario.duration_s:g}] "
                            f"with t1 − t0 ≥ {MIN_WINDOW_S:g} s",
                            f"choose 0 ≤ t0 < t1 ≤ duration_s with t1 − t0 ≥ {MIN_WINDOW_S:g} s")
    return t0, t1


def cross_check(scenario, opts) -> None:
    """Checks that involve other fields of the scenario (run by mpcc.scenario at load time)."""
    measurement_window(scenario)
