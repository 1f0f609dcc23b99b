"""Fluid engine: the model (3)–(4) of Peng, Walid, Hwang, Low, its equilibrium (8)–(9),
trajectories, and the analyses of §III (C0–C5, Theorem III.4/III.5, D_s, the (β, η, n) design
space).

>>> from mpcc import scenario, fluid
>>> sc = scenario.load("scenarios/peng2016/table3.toml")
>>> eq = fluid.equilibrium(sc)          # x per route, p per link, residuals, unique flag, ranges
>>> fluid.to_result(sc, eq).print()     # the engine-independent RunResult (engine "fluid")
>>> traj = fluid.dynamics(sc)           # (t, x per route, p per link)

RTT model (``[fluid] rtt``): "propagation" (default) uses τ_r = 2 Σ_l delay_l; with
"propagation+queue" every link that is priced at equilibrium (p_l > 0) adds the queueing delay
of half its buffer (RED: the mid-point of its thresholds) drained at capacity; the equilibrium is
re-solved until the set of priced links stops changing. See docs/fluid.md.
"""

from __future__ import annotations

from . import analysis, design
from .dynamics import Trajectory, integrate
from .engine import FluidSolverError, default_gamma, dynamics, equilibrium, to_result
from .network import FluidSettings, Network, NoFluidModel, from_scenario, random_network, settings  # noqa: F401
from .solver import Equilibrium, SolverFailure, kkt_residuals, solve  # noqa: F401

__all__ = ["equilibrium", "integrate", "from_scenario", "SolverFailure", "to_result", "dynamics", "Equilibrium", "Trajectory", "Network",
           "solve", "analysis", "design", "random_network", "settings", "FluidSettings", "NoFluidModel",
           "kkt_residuals", "default_gamma", "FluidSolverError"]
