"""The ``[testbed]`` table of a scenario (declared in :mod:`mpcc.options`, validated by
:func:`mpcc.scenario.engine_options`)."""

from ..options import TESTBED_OPTIONS, testbed_cross_check as cross_check  # noqa: F401
