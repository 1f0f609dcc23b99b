"""Example 1 of Tang et al. (Table I) on the real kernel: kernel Reno vs the BPF ``fast`` program
(eq. (1), and Algorithm 2 in the 1b rows) through the testbed (:mod:`mpcc.testbed`), one
bottleneck of linkem, buffer large and small, the paper's noise as on-off UDP.

**Scaling.** The paper runs 5,400 s on a 100 Mb/s link; the kernel runs in real time on a shared
2-core machine. The scenario files are scaled down by :data:`KERNEL_SCALE` = k = 10 in rate, with
the RTT (50 ms) unchanged (:func:`scaled_down`):

* capacity, buffer (400 → 40, 80 → 8 packets), noise rate and FAST's α₀ (50 → 5 packets) ÷ k:
  every window is k times smaller, so α/B (how much of the buffer FAST wants) and the ratio of
  the buffer to the bandwidth-delay product are the paper's, and so is the queueing delay
  q = B/C (both ÷ k);
* Reno's sawtooth period (w/2 RTTs) is k times shorter and its loss rate l k² times higher
  (l ∝ 1/w²), so Algorithm 2's interval ÷ k (120 → 12 s) keeps the same number of Reno loss
  cycles per α update (≈ 6), and w ÷ k² (125 → 1.25 s) keeps its fixed point x_F = α₀/(l·w)
  at the paper's share of the link — if l grows k²-fold; in the simulator it grows only 51–62×
  (docs/hetero.md), so at the paper's w FAST gets more than its share here;
* FAST's own update (every 20 ms, a few RTTs to converge) is unchanged: it stays ≥ 100 times
  faster than Algorithm 2, the separation of timescales the paper's analysis assumes;
* time ÷ k: the paper's 5,400 s (measured from 1,800 s) is 540 s (from 180 s) here, the
  :data:`FULL` budget (20 runs, as the paper's seeds) — 45 Algorithm 2 intervals, 15 of
  them before the window, as in the paper.

The four configurations run side by side, each on its own link with its own flows and noise
(:func:`side_by_side`): they share only the machine, so one real-time run measures all four and
the quick budget can afford 240 s per run (20 Algorithm 2 intervals) in the kernel time four
separate 60-s runs would take (5 intervals, too few for α to move from α₀).

Rates are reported ×k, in the paper's unit (packets/ms of the 100 Mb/s link); the ratio
Reno/FAST is scale-free. Rates are the mean over the budget's runs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from ... import algorithms
from ..common import SCENARIO_DIR, kernel_lock_held
from .packet import PPS_PER_MBPS
from .paper import PAPER_TABLE1

KERNEL_SCALE = 10


@dataclass(frozen=True)
class KernelBudget:
    """``runs`` × ``duration_s`` with the Table I cells side by side, the first ``warmup_s``
    not measured."""

    name: str
    runs: int
    duration_s: float
    warmup_s: float

    def kernel_seconds(self) -> float:
        return self.runs * self.duration_s

    def text(self) -> str:
        return (f"{self.runs} run{'s' if self.runs != 1 else ''} × {self.duration_s:g} s "
                f"(from {self.warmup_s:g} s), rates ÷ {KERNEL_SCALE}, all cells side by side")


#: default: 240 s (from 96 s) ≈ 4 min of kernel time; 20 Algorithm 2 intervals, 8 before the window
QUICK = KernelBudget("quick", 1, 240.0, 96.0)
#: the paper's 20 runs of 5,400 s (from 1,800 s), time scaled by 1/KERNEL_SCALE: 20 × 540 s = 3 h
FULL = KernelBudget("full", 20, 5400.0 / KERNEL_SCALE, 1800.0 / KERNEL_SCALE)


def scaled_down(s, k: float = KERNEL_SCALE):
    """The scenario with every rate ÷ k (link capacities, buffers, noise, FAST's α₀), RTTs kept,
    and Algorithm 2's interval ÷ k and w ÷ k² (the module's docstring says why)."""
    links = tuple(replace(l, capacity_mbps=l.capacity_mbps / k, buffer_pkts=max(1, round(l.buffer_pkts / k)))
                  for l in s.links)
    groups = []
    for g in s.groups:
        if g.algorithm.name == "fast":
            p = dict(g.algorithm.params)
            p["alpha"] = float(p.get("alpha", 50.0)) / k
            if float(p.get("adapt_interval_s", 0.0)) > 0:
                p["adapt_interval_s"] = float(p["adapt_interval_s"]) / k
                p["adapt_w"] = float(p.get("adapt_w", 125.0)) / k**2
            algo = algorithms.get({"name": "fast", **p})
            g = replace(g, algorithm=algo, algorithm_spec={"name": "fast", **algo.params})
        groups.append(g)
    bgs = tuple(replace(b, rate_mbps=b.rate_mbps / k) for b in s.background)
    return s.with_changes(name=f"{s.name}-kernel-div{k:g}", links=links, groups=tuple(groups), background=bgs)


def side_by_side(names, k: float = KERNEL_SCALE) -> "object":
    """One scenario holding every configuration of ``names`` on its own link (scaled down, each
    link, group and noise source prefixed ``<name>.``): the configurations share nothing but the
    machine, so one real-time run measures them all (a quarter of the kernel time for Table I)."""
    from ... import scenario as scen

    links, groups, bgs = [], [], []
    for name in names:
        s = scaled_down(scen.load(SCENARIO_DIR / "tang2010" / f"{name}.toml"), k)
        ren = {l.name: f"{name}.{l.name}" for l in s.links}
        links += [replace(l, name=ren[l.name]) for l in s.links]
        groups += [replace(g, name=f"{name}.{g.name}", paths=tuple(tuple(ren[x] for x in p) for p in g.paths))
                   for g in s.groups]
        bgs += [replace(b, name=f"{name}.{b.name}", path=tuple(ren[x] for x in b.path)) for b in s.background]
        duration = s.duration_s
    return s.with_changes(name="tang2010-table1-kernel", duration_s=duration, links=tuple(links),
                          groups=tuple(groups), background=tuple(bgs))


def _row(groups, links, prefix: str = "", k: float = KERNEL_SCALE) -> dict:
    ppm = PPS_PER_MBPS * k
    reno, fast = groups[prefix + "reno"].rate_mbps * ppm, groups[prefix + "fast"].rate_mbps * ppm
    link = links[prefix + "bottleneck"].extra
    return {"reno": reno, "fast": fast, "ratio": reno / fast if fast > 0 else float("inf"),
            "utilisation": link.get("utilisation"), "queue_mean_pkts": link.get("queue_mean_pkts"),
            "drops": link.get("drops"), "fast_algorithm": groups[prefix + "fast"].algorithm}


def table1_together(budget: KernelBudget, names=tuple(PAPER_TABLE1), out: Path | None = None,
                    progress: bool = False, adapt_w: float | None = None) -> dict:
    """Every configuration of ``names`` in one run (:func:`side_by_side`): ``{name: row}`` as
    :func:`table1_cell` gives them, and ``"setup"``; ``adapt_w``: Algorithm 2's w (s, at the
    kernel's scale) in every 1b configuration instead of the scaled paper value. A failed run
    raises engine.RunFailed."""
    from ...testbed import engine
    from .packet import with_adapt_w

    s = side_by_side(names)
    if adapt_w is not None:
        s = with_adapt_w(s, adapt_w)
    st = engine.settings_from(s, runs=budget.runs, duration_s=budget.duration_s, warmup_s=budget.warmup_s)
    r = engine.run_scenario(s, st, Path(out) / "together" if out else None, progress=progress)
    res = {n: {**_row(r.groups, r.links, f"{n}."),
               "buffer_pkts": next(l.buffer_pkts for l in s.links if l.name == f"{n}.bottleneck")} for n in names}
    res["setup"] = {"budget": budget.name, "runs": budget.runs, "duration_s": budget.duration_s,
                    "warmup_s": budget.warmup_s, "scale": KERNEL_SCALE, "text": budget.text()}
    res["health"] = r.extra.get("health")      # the one run's (mpcc.testbed.health.aggregate)
    return res


def table1_cell(name: str, budget: KernelBudget, out: Path | None = None, progress: bool = False) -> dict:
    """One Table I configuration (``example1a-b400`` …) on the kernel: Reno's and FAST's rates
    (packets/ms at the paper's scale), their ratio, link utilisation, mean queue and drops."""
    from ... import scenario as scen
    from ...testbed import engine

    s = scaled_down(scen.load(SCENARIO_DIR / "tang2010" / f"{name}.toml"))
    st = engine.settings_from(s, runs=budget.runs, duration_s=budget.duration_s, warmup_s=budget.warmup_s)
    r = engine.run_scenario(s, st, Path(out) / name if out else None, progress=progress)
    return {**_row(r.groups, r.links), "buffer_pkts": s.links[0].buffer_pkts}


def table1(budget: KernelBudget = QUICK, names=tuple(PAPER_TABLE1), out: Path | None = None,
           progress: bool = False, lock: Path | None = None) -> dict:
    """Every Table I configuration on the kernel, side by side (:func:`table1_together`):
    ``{name: row | {"failed": reason}}`` (a run that failed after the engine's retry fails every
    cell, as they share it), ``"setup"`` and ``"health"`` (None when the run failed). With ``lock`` (a file) the runs hold an flock on it
    (:func:`..common.kernel_lock_held`)."""
    from ...testbed import engine

    try:
        with kernel_lock_held(lock):
            return table1_together(budget, names, out, progress)
    except engine.RunFailed as e:
        res = {n: {"failed": str(e)} for n in names}
    res["setup"] = {"budget": budget.name, "runs": budget.runs, "duration_s": budget.duration_s,
                    "warmup_s": budget.warmup_s, "scale": KERNEL_SCALE, "text": budget.text()}
    return res
