"""The output contract shared by all engines, and its renderings (table, JSON).

``--json`` prints::

    {"engine": "fluid" | "sim" | "testbed", "scenario": NAME,
     "groups": {GROUP: {"algorithm": STR, "count": INT, "rate_mbps": FLOAT (per flow),
                        "path_rate_mbps": [FLOAT per path], ...extra}},
     "links": {LINK: {"load_mbps": FLOAT, "price": FLOAT, ...extra}},
     ...extra}

:class:`RunResult` is the one engine summary: ``fluid.to_result``, ``sim.run(…).result`` (and
``sim.run_many(…).result``, ``sim.simulate(…).result``), ``testbed.engine.run_scenario`` /
``run_detailed`` and ``hetero.packet.run(…).result`` all return it, and the reproductions
(:mod:`mpcc.reproduce`) read only its typed fields and the ``extra`` keys below. The typed fields
mean the same in every engine; ``extra`` holds what only some engines measure:

=========  ==========================================================================================
engine     ``extra`` keys (group / link / run)
=========  ==========================================================================================
fluid      rtt_ms, price_route, oscillation_D, unique[, path_rate_range_mbps] / utilization /
           unique, residuals, rtt_model, newton_steps
sim        per_flow_mbps, per_flow_path_mbps, total_mbps, losses, drops, marks, loss_events, timeouts,
           retransmits, sent_pkts, ds, mean_srtt_s (``run_many``: means, ci95_mbps, path_ci95_mbps,
           runs_mbps) / utilization, drops, marks, arrivals, max_queue_pkts / seed, measure_s
           (``run_many``: runs, seeds)
testbed    ci95_mbps, ci95_over, goodput_mbps, rate_per_run_mbps, min_flow_mbps, max_flow_mbps /
           utilisation, queue_mean_pkts, queue_max_pkts, drops, marks, arrivals, drops_* /
           runs, duration_s, warmup_s, sample_ms, kernel
=========  ==========================================================================================
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # rich is imported only when a table is printed (lean `mpcc sim --json`)
    from rich.console import Console
    from rich.table import Table


@dataclass
class GroupResult:
    algorithm: str
    count: int
    rate_mbps: float
    path_rate_mbps: list[float]
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"algorithm": self.algorithm, "count": self.count, "rate_mbps": self.rate_mbps,
                "path_rate_mbps": list(self.path_rate_mbps), **self.extra}


@dataclass
class LinkResult:
    load_mbps: float
    price: float
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"load_mbps": self.load_mbps, "price": self.price, **self.extra}


@dataclass
class RunResult:
    engine: str
    scenario: str
    groups: dict[str, GroupResult]
    links: dict[str, LinkResult]
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"engine": self.engine, "scenario": self.scenario,
                "groups": {k: g.to_dict() for k, g in self.groups.items()},
                "links": {k: l.to_dict() for k, l in self.links.items()}, **self.extra}

    def finite(self) -> bool:
        """True when every number of the result is finite (the JSON would hold no null)."""
        return not nonfinite(self.to_dict())

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(_finite(self.to_dict()), indent=indent)

    def table(self, title: str | None = None) -> list[Table]:
        from rich.table import Table

        gt = Table(title=title or f"{self.engine}: {self.scenario}")
        for col in ("group", "algorithm", "count", "rate/flow (Mb/s)", "per path (Mb/s)"):
            gt.add_column(col, justify="right" if col not in ("group", "algorithm") else "left")
        for name, g in self.groups.items():
            ci = g.extra.get("ci95_mbps")
            rate = f"{g.rate_mbps:.4g}" + (f" ± {ci:.2g}" if ci is not None else "")
            gt.add_row(name, g.algorithm, str(g.count), rate, ", ".join(f"{v:.4g}" for v in g.path_rate_mbps))
        lt = Table()
        for col in ("link", "load (Mb/s)", "price"):
            lt.add_column(col, justify="right" if col != "link" else "left")
        for name, l in self.links.items():
            lt.add_row(name, f"{l.load_mbps:.4g}", f"{l.price:.4g}")
        return [gt, lt]

    def print(self, console: Console | None = None) -> None:
        if console is None:
            from rich.console import Console
            console = Console()
        for t in self.table():
            console.print(t)


def ci95(values) -> float:
    """Half-width of the 95 % confidence interval of the mean (Student t); 0 for one value."""
    import numpy as np
    from scipy import stats

    v = np.asarray(values, dtype=float)
    if v.size < 2:
        return 0.0
    return float(stats.t.ppf(0.975, v.size - 1) * v.std(ddof=1) / np.sqrt(v.size))


def nonfinite(obj, path: str = "") -> list[str]:
    """Paths (``groups.mp.rate_mbps``) of the NaN/infinite numbers inside ``obj``."""
    if isinstance(obj, float):
        return [] if math.isfinite(obj) else [path or "(value)"]
    if hasattr(obj, "item") and not isinstance(obj, (str, bytes, dict, list, tuple)):
        return nonfinite(obj.item(), path)
    if isinstance(obj, dict):
        return [p for k, v in obj.items() for p in nonfinite(v, f"{path}.{k}" if path else str(k))]
    if isinstance(obj, (list, tuple)):
        return [p for i, v in enumerate(obj) for p in nonfinite(v, f"{path}[{i}]")]
    return []


def _finite(obj):
    """JSON has no NaN/Infinity: map them to null so every consumer can parse the output."""
    if isinstance(obj, float) and (math.isnan(obj) or math.isinf(obj)):
        return None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    if hasattr(obj, "item") and not isinstance(obj, (str, bytes)):  # numpy scalars
        return _finite(obj.item())
    return obj


def dumps(obj: Any, indent: int | None = 2) -> str:
    """JSON with numpy scalars converted and non-finite numbers as null."""
    return json.dumps(_finite(obj), indent=indent)
