"""Run one scenario on several engines and say why their numbers differ.

>>> from mpcc import scenario, compare
>>> s = scenario.load("scenarios/peng2016/table3.toml")
>>> c = compare.compare(s, engines=("fluid", "sim"), runs=3)
>>> c.differences["groups"]["mp"]["rel"]["sim vs fluid"]      # relative difference of the per-flow rate
>>> c.diagnosis                                               # lines explaining each disagreement
>>> c.print(); c.to_dict(); c.write("out/")                   # table, JSON, figure + Parquet

Differences are relative: (a − b)/b for every pair "a vs b" of engines that ran, in the order
fluid, sim, testbed (b the earlier one). Where the fluid equilibrium's path split is not unique
(``path_rate_range_mbps``), a path's difference is measured to the nearest end of its range (0
inside it). A path that one engine leaves empty (rate 0, e.g. Coupled's boundary equilibrium) and
the later one uses differs by +∞ (null in JSON). See docs/compare.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..results import RunResult
from ..scenario import Scenario
from . import diagnosis
from .engines import ENGINES, EngineRun, parse_engines, run_engine

__all__ = ["compare", "Comparison", "differences", "ENGINES", "parse_engines", "DISAGREE"]

#: A relative difference above this is a disagreement the diagnosis explains.
DISAGREE = 0.10


def _rel(a: float, b: float) -> float:
    """(a − b)/b; against b = 0 (a route the fluid model leaves empty): 0 if a = 0 too, else
    +∞ — a disagreement the diagnosis explains, not a missing value."""
    if not (math.isfinite(a) and math.isfinite(b)):
        return math.nan
    if b == 0:
        return 0.0 if a == 0 else math.copysign(math.inf, a)
    return (a - b) / b


def _path_rel(a: float, b_group: dict[str, Any], k: int, b: float) -> float:
    rng = b_group.get("path_rate_range_mbps") if isinstance(b_group, dict) else None
    if rng:
        lo, hi = rng[k]
        if lo <= a <= hi:
            return 0.0
        near = lo if a < lo else hi
        return _rel(a, near) if near > 0 else _rel(a, (lo + hi) / 2)
    return _rel(a, b)


def differences(results: dict[str, RunResult]) -> dict[str, Any]:
    """Per group and per path: each engine's per-flow rate and the relative difference of every
    pair "a vs b" (b before a in fluid, sim, sim-linux, testbed order). With both
    simulator modes, ``connection_cost_mbps`` (and per path ``path_connection_cost_mbps``) = ideal
    minus linux per-flow rate, ``connection_cost_rel`` = (linux − ideal)/ideal: what upstream
    Linux's MPTCP connection level costs the group."""
    names = [e for e in ENGINES if e in results]
    pairs = [(a, b) for i, a in enumerate(names) for b in names[:i]]
    first = results[names[0]] if names else None
    out: dict[str, Any] = {"pairs": [f"{a} vs {b}" for a, b in pairs], "groups": {}}
    if first is None:
        return out
    for gname, g0 in first.groups.items():
        rates = {e: results[e].groups[gname].rate_mbps for e in names}
        rel = {f"{a} vs {b}": _rel(rates[a], rates[b]) for a, b in pairs}
        paths = []
        for k in range(len(g0.path_rate_mbps)):
            pr = {e: results[e].groups[gname].path_rate_mbps[k] for e in names}
            prel = {f"{a} vs {b}": _path_rel(pr[a], results[b].groups[gname].to_dict(), k, pr[b]) for a, b in pairs}
            paths.append({"rate_mbps": pr, "rel": prel})
        out["groups"][gname] = {"rate_mbps": rates, "rel": rel, "paths": paths}
        if "sim" in names and "sim-linux" in names:
            # the cost of upstream Linux's MPTCP connection level: ideal minus linux, per flow
            cost = [rates["sim"] - rates["sim-linux"]]
            cost += [p["rate_mbps"]["sim"] - p["rate_mbps"]["sim-linux"] for p in paths]
            out["groups"][gname]["connection_cost_mbps"] = cost[0]
            out["groups"][gname]["connection_cost_rel"] = _rel(rates["sim-linux"], rates["sim"])
            out["groups"][gname]["path_connection_cost_mbps"] = cost[1:]
    worst = [abs(v) for g in out["groups"].values() for v in [*g["rel"].values(),
             *(x for p in g["paths"] for x in p["rel"].values())] if not math.isnan(v)]
    out["max_abs_rel"] = max(worst) if worst else None
    return out


@dataclass
class Comparison:
    scenario: Scenario
    runs: dict[str, EngineRun]
    differences: dict[str, Any]
    routes: dict[str, Any] = field(default_factory=dict)      # engine → group → [per-route quantities]
    diagnosis: list[str] = field(default_factory=list)

    @property
    def results(self) -> dict[str, RunResult]:
        return {e: r.result for e, r in self.runs.items() if r.ok}

    def to_dict(self) -> dict[str, Any]:
        return {"scenario": self.scenario.name, "source": self.scenario.source,
                "engines": {e: (r.result.to_dict() if r.ok else {"engine": e, "error": r.error})
                            for e, r in self.runs.items()},
                "differences": self.differences,
                "routes": self.routes, "diagnosis": self.diagnosis}

    def print(self, console=None) -> None:
        from .report import print_comparison
        print_comparison(self, console)

    def write(self, out_dir: str | Path) -> list[Path]:
        from .figure import write_outputs
        return write_outputs(self, Path(out_dir))


def _diagnose(s: Scenario, diffs: dict[str, Any], routes: dict[str, Any], threshold: float) -> list[str]:
    lines = []
    for gname, g in diffs["groups"].items():
        group = next(x for x in s.groups if x.name == gname)
        for pair, v in g["rel"].items():
            a, b = pair.split(" vs ")
            bad_paths = [k for k, p in enumerate(g["paths"]) if abs(p["rel"][pair]) > threshold]
            if not abs(v) > threshold and not bad_paths:
                continue
            if a not in routes or routes[a] is None:
                continue
            lines.append(f"{gname} ({group.algorithm.describe()}): {a} {g['rate_mbps'][a]:.3g} vs {b} "
                         f"{g['rate_mbps'][b]:.3g} Mb/s per flow ({100 * v:+.0f}%)")
            for k in range(len(group.paths)) if len(group.paths) > 1 or bad_paths else [0]:
                ref_row = routes[b][gname][k] if routes.get(b) else None
                prel = g["paths"][k]["rel"][pair]
                if len(group.paths) > 1:
                    lines.append(f"  path {k + 1}: {a} {g['paths'][k]['rate_mbps'][a]:.3g} vs {b} "
                                 f"{g['paths'][k]['rate_mbps'][b]:.3g} Mb/s ({100 * prel:+.0f}%)")
                lines += ["  " + x for x in diagnosis.explain(a, b, gname, k, group.paths[k], routes[a][gname][k], ref_row)]
                tags = routes[a][gname][k].get("causes")
                if tags:
                    lines.append(f"  {a} {gname}/{k + 1} causes: {', '.join(tags)}")
    return lines


def compare(s: Scenario, *, engines=("fluid", "sim"), runs: int = 1, seed: int = 0,
            threshold: float = DISAGREE, progress=None) -> Comparison:
    """Run ``engines`` on ``s`` and build the comparison. ``progress(engine)`` is called before
    each engine starts."""
    eng_runs = {}
    for e in engines:
        if progress:
            progress(e)
        eng_runs[e] = run_engine(e, s, runs=runs, seed=seed)
    results = {e: r.result for e, r in eng_runs.items() if r.ok}
    diffs = differences(results)
    routes = {e: diagnosis.routes(s, r) for e, r in eng_runs.items() if r.ok}
    for e, per_group in routes.items():
        if e == "fluid":
            continue
        for gname, rows in per_group.items():
            for k, row in enumerate(rows):
                row["causes"] = diagnosis.causes(row, routes["fluid"][gname][k] if "fluid" in routes else None)
    lines = _diagnose(s, diffs, routes, threshold)
    if "testbed" in eng_runs and eng_runs["testbed"].ok:
        mib = diagnosis.mib_summary(eng_runs["testbed"])
        if mib:
            lines.append(mib)
    return Comparison(s, eng_runs, diffs, routes, lines)
