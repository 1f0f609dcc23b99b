"""Cost estimates before a run: events, memory and wall time from the inputs alone.

Every engine entry point that can run for long (``mpcc sim`` and ``sim --runs``, ``mpcc fluid
dynamics``, ``mpcc hetero`` Algorithm 1 and dynamics, ``mpcc mtc flappiness``) estimates its cost
first and stops, before starting, when the estimate exceeds :data:`MAX_WALL_S` or
:data:`MAX_MEMORY_BYTES`, with one line giving the estimate and naming ``--force`` (which runs
anyway). The estimates are upper bounds of the order of magnitude, calibrated on the machine of
bench/sim/RESULTS.md (2 cores): the point is to catch "duration 1e6 s at 1 Tb/s" before it
starts, not to predict a run to the second. docs/scenario.md "Cost estimate" explains them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from .errors import MpccError

#: A run estimated above either limit stops before starting unless --force is given.
MAX_WALL_S = 600.0
MAX_MEMORY_BYTES = 2 * 1024**3

#: Calibration (bench/sim/RESULTS.md, 2026-11-22, AMD EPYC 2 cores): ≈ 8 M data packets/s per
#: core with ≈ 1 event per packet; we assume half of that to stay an upper bound.
SIM_EVENTS_PER_S = 4e6
SIM_BYTES_PER_SAMPLE_ROW = 120      # Rust column + numpy + pyarrow copies of one time-series row
SIM_BYTES_PER_SUBFLOW = 4096        # TCP state, counters, result columns
SIM_BYTES_PER_QUEUED_PKT = 64       # one packet in a queue or in flight
#: Fluid dynamics (RK45 on (3)–(4)): table3 (100 s, τ_min 10 ms) takes ≈ 3.3 s.
FLUID_S_PER_TAU = 4e-4
#: Tang et al. Algorithm 1 / dynamics: one implicit price step of a small network (measured
#: 0.64 ms under a load average of 8 on the 2-core machine, 2026-11-23; ≈ 0.15 ms idle).
HETERO_S_PER_STEP = 2e-4
#: Jiang et al. per-RTT window model: one round (numpy over replicas × subflows).
WINDOW_S_PER_ROUND = 2e-5
WINDOW_S_PER_SUBFLOW_ROUND = 1.2e-5
WINDOW_S_PER_CELL = 1e-7


class CostTooHigh(MpccError):
    """The estimated cost of a run exceeds the limit; ``--force`` runs it anyway."""


@dataclass(frozen=True)
class Cost:
    """An estimate: ``events`` (packets/steps/rounds), ``memory_bytes`` peak, ``wall_s``."""

    what: str
    events: float
    memory_bytes: float
    wall_s: float

    def describe(self) -> str:
        return (f"≈ {self.events:.3g} {self.what}, {_bytes(self.memory_bytes)} memory, "
                f"{_duration(self.wall_s)} wall time")

    @property
    def too_high(self) -> bool:
        return self.wall_s > MAX_WALL_S or self.memory_bytes > MAX_MEMORY_BYTES


def _bytes(b: float) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if b >= size:
            return f"{b / size:.3g} {unit}"
    return f"{b:.0f} B"


def _duration(s: float) -> str:
    if s >= 86400:
        return f"{s / 86400:.3g} days"
    if s >= 3600:
        return f"{s / 3600:.3g} h"
    if s >= 60:
        return f"{s / 60:.3g} min"
    return f"{s:.2g} s"


def guard(cost: Cost, where: str, force: bool, fix: str) -> Cost:
    """Raise :class:`CostTooHigh` (one line) when ``cost`` exceeds the limits and not ``force``."""
    if cost.too_high and not force:
        limit = f"limits {_duration(MAX_WALL_S)} and {_bytes(MAX_MEMORY_BYTES)}"
        raise CostTooHigh(f"{where}: estimated cost {cost.describe()} exceeds the {limit} "
                          f"(fix: {fix}, or pass --force to run anyway)")
    return cost


# --- per engine --------------------------------------------------------------------------------
def sim(scenario, *, runs: int = 1, sample_interval_s: float = 0.1, workers: int | None = None) -> Cost:
    """Packet simulation: every link carries at most its capacity, so the packets (and events)
    of a run are at most Σ_l capacity_pps · duration, plus timers (FAST updates, on/off
    switches, samples). Memory: time-series rows (kept for every run), subflow state, and the
    packets that fit in the queues and pipes."""
    d = scenario.duration_s
    link_pkts = sum(scenario.capacity_pps(l) for l in scenario.links) * d
    subflows = sum(g.count * len(g.paths) for g in scenario.groups)
    timers = 0.0
    for g in scenario.groups:
        if g.algorithm.name == "fast":   # its update timers (by name: the class need not be imported)
            upd = float(g.algorithm.params.get("update_interval_s", 0.02))
            adapt = float(g.algorithm.params.get("adapt_interval_s", 0.0))
            timers += g.count * len(g.paths) * d * (1.0 / upd + (1.0 / adapt if adapt > 0 else 0.0))
    for b in scenario.background:
        timers += 2.0 * d / max(b.mean_on_s + b.mean_off_s, 1e-3)
    opts = scenario.engine.get("sim", {}) or {}
    si = opts.get("sample_interval_s", sample_interval_s) or 0.0
    samples = d / si if si > 0 else 0.0
    rows = samples * (subflows + len(scenario.links))
    events_run = link_pkts + timers + samples
    in_flight = sum(l.buffer_pkts + scenario.capacity_pps(l) * 2 * l.delay_ms / 1e3 for l in scenario.links)
    engine_mem = subflows * SIM_BYTES_PER_SUBFLOW + in_flight * SIM_BYTES_PER_QUEUED_PKT
    cores = max(1, min(runs, workers or os.cpu_count() or 1))
    memory = runs * rows * SIM_BYTES_PER_SAMPLE_ROW + cores * engine_mem
    wall = runs * events_run / SIM_EVENTS_PER_S / cores
    return Cost("packet events", runs * events_run, memory, wall)


def fluid_dynamics(scenario, t_end: float, gamma: float | None = None, p_max: float = 1.0) -> Cost:
    """RK45 on (3)–(4): the step follows the fastest time constant — a route's window relaxes at
    rate ≈ x·p, i.e. τ/√(2p) near an equilibrium with price p (Reno-like rules); with a given
    price gain γ also the price loop 1/(γ·c_max) — so the work grows with t_end over it and with
    the number of routes. (The default γ sets a 0.1 s price time constant.)"""
    taus = [scenario.path_delay_s(p) for g in scenario.groups for p in g.paths]
    tau_min = max(min(taus), 1e-4) / max(1.0, (2.0 * max(p_max, 0.0)) ** 0.5)
    if gamma is not None:
        c_max = max(scenario.capacity_pps(l) for l in scenario.links)
        tau_min = min(tau_min, 1.0 / (gamma * c_max))
    routes = len(taus)
    steps = t_end / tau_min
    return Cost("integration steps", steps, 600 * (routes + len(scenario.links)) * 8 * 4 + routes * 1e4,
                steps * FLUID_S_PER_TAU * (1.0 + routes / 100.0))


def hetero(n_links: int, steps: float) -> Cost:
    """Tang et al.: ``steps`` implicit price steps of an ``n_links``-link network."""
    per = HETERO_S_PER_STEP * (1.0 + (n_links / 20.0) ** 3)
    return Cost("price steps", steps, 8.0 * n_links * n_links * 4 + 1e6, steps * per)


def window_model(rounds: int, replicas: int, subflows: int) -> Cost:
    """Jiang et al. per-RTT window model: ``rounds`` steps over replicas × subflows; the trace
    (and its smoothed copies) is kept in memory."""
    cells = replicas * subflows
    wall = rounds * (WINDOW_S_PER_ROUND + subflows * WINDOW_S_PER_SUBFLOW_ROUND + cells * WINDOW_S_PER_CELL)
    return Cost("window rounds", float(rounds) * replicas, rounds * cells * 8.0 * 4, wall)
