"""The ``[fluid]`` table of a scenario, validated by :func:`mpcc.scenario.engine_options`
(ranges in :data:`mpcc.ranges.R`, docs/scenario.md)."""

from ..scenario import Option

RTT_MODES = ("propagation", "propagation+queue")

FLUID_OPTIONS = {
    "rtt": Option("propagation", "choice", choices=RTT_MODES, example='"propagation"'),
    "gamma": Option(None, example="1e-4"),     # price gain γ_l of (4), 1/packet (None: per-link default)
    "t_end": Option(None, example="100.0"),    # dynamics horizon (default: duration_s)
    "at_s": Option(None, example="50.0"),      # equilibrium of the groups active at this time
}


def check_at(scenario, at_s: float, fld: str) -> None:
    """``at_s`` must be a time at which some group is active."""
    from ..errors import ScenarioError
    if not any(g.start_s <= at_s < g.stop_s for g in scenario.groups):
        spans = ", ".join(f"{g.name} [{g.start_s:g}, {g.stop_s:g})" for g in scenario.groups[:4])
        raise ScenarioError(scenario.source, fld, f"no group is active at {at_s:g} s",
                            f"choose a time inside a group's [start_s, stop_s): {spans}")


def cross_check(scenario, opts) -> None:
    """Checks that involve other fields of the scenario (run by mpcc.scenario at load time)."""
    if opts["at_s"] is not None:
        check_at(scenario, opts["at_s"], "fluid.at_s")
