"""The ``[sim]`` table of a scenario (declared in :mod:`mpcc.options`, validated by
:func:`mpcc.scenario.engine_options`)."""

from ..options import MIN_WINDOW_S, SIM_OPTIONS, measurement_window, sim_cross_check as cross_check  # noqa: F401
