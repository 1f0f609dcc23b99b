"""Packet-level discrete-event simulator (Rust core ``mpcc._core``, see ``docs/sim.md``).

>>> from mpcc import scenario, sim
>>> s = scenario.load("scenarios/peng2016/table4.toml")
>>> r = sim.run(s, seed=1)               # SimRun: .result (RunResult), .timeseries, .write(dir)
>>> many = sim.run_many(s, runs=20, seed=1)   # list of SimRun; many.result has ci95_mbps
"""

from ..results import ci95
from .engine import CoreRun, SimRun, core_config, measurement_window, run, sim_options, simulate, summarize, with_algorithm
from .parallel import SimRuns, aggregate, run_many

__all__ = ["run", "run_many", "simulate", "summarize", "CoreRun", "SimRun", "SimRuns", "aggregate", "ci95", "core_config", "sim_options",
           "measurement_window", "with_algorithm"]
