"""The ``[fluid]`` table of a scenario (declared in :mod:`mpcc.options`, validated by
:func:`mpcc.scenario.engine_options`)."""

from ..options import FLUID_OPTIONS, RTT_MODES, check_at, fluid_cross_check as cross_check  # noqa: F401
