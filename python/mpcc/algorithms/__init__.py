"""Algorithm registry: one definition of each congestion-control algorithm.

>>> from mpcc.algorithms import get
>>> balia = get("balia")
>>> balia.on_ack([10.0, 5.0], [0.01, 0.01])          # per-ACK increase of each route
>>> get({"name": "generalized", "beta": 0.2, "eta": 0.5, "n": "inf"})

Names accepted in scenarios: see :data:`NAMES` (``max`` is an alias of ``lia``;
``coupled-decrease``, ``coupled-increase``, ``fully-coupled`` are MTCP(α, β) presets).
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .. import ranges
from .base import Algorithm
from .mtcp import MTCP_VARIANTS

if TYPE_CHECKING:
    from .balia import Balia
    from .coupled import Coupled
    from .epsilon import Epsilon
    from .ewtcp import Ewtcp
    from .fast import Fast
    from .generalized import Generalized
    from .lia import Lia
    from .mtcp import Mstcp, Mtcp
    from .olia import Olia
    from .reno import Reno
    from .scalable import Scalable
    from .semicoupled import Semicoupled


class _Registry(Mapping):
    """name → (class, schema). Entries name the class as ``"module.Class"`` (one file per
    algorithm); a module is imported when its class is first used (``REGISTRY[name]``,
    ``get(name)``, ``algorithms.Lia``), so validating a scenario loads only the algorithms it
    names (``mpcc check`` and ``mpcc sim`` start-up, tests/test_lean_cli.py)."""

    def __init__(self, entries: dict[str, tuple[str, dict[str, tuple[Any, tuple]]]]):
        self._entries = entries
        self.modules = {where.split(".")[1]: where.split(".")[0] for where, _ in entries.values()}

    def __getitem__(self, name: str) -> tuple[type[Algorithm], dict[str, tuple[Any, tuple]]]:
        where, schema = self._entries[name]
        return __getattr__(where.split(".")[1]), schema

    def __iter__(self):
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)


#: name → ("module.Class", {parameter: (default, (check, description))}); REGISTRY[name] gives the class
_POSITIVE = (lambda v: v > 0, "a number > 0")
_UNIT = (lambda v: 0 <= v <= 1, "a number in [0, 1]")
_NONNEG = (lambda v: v >= 0, "a number ≥ 0")

REGISTRY = _Registry({
    "reno": ("reno.Reno", {}),
    "ewtcp": ("ewtcp.Ewtcp", {"a": (1.0, _POSITIVE)}),
    "scalable": ("scalable.Scalable", {"a": (0.01, _POSITIVE), "b": (0.125, (lambda v: 0 < v < 1, "a number in (0, 1)"))}),
    "coupled": ("coupled.Coupled", {}),
    "semicoupled": ("semicoupled.Semicoupled", {}),
    "lia": ("lia.Lia", {}),
    # per_ack = 1: mptcp_olia.c's per-ACK update (the BPF program's parameter of the same name)
    "olia": ("olia.Olia", {"per_ack": (0.0, (lambda v: v in (0, 1), "0 or 1"))}),
    "balia": ("balia.Balia", {}),
    "generalized": ("generalized.Generalized", {"beta": (0.2, _NONNEG), "eta": (0.5, _NONNEG),
                                                "n": (math.inf, (lambda v: v >= 1, "a positive integer or \"inf\""))}),
    "mstcp": ("mtcp.Mstcp", {"a": (0.03, _POSITIVE), "b": (0.5, (lambda v: 0 < v <= 1, "a number in (0, 1]"))}),
    "mtcp": ("mtcp.Mtcp", {"alpha": (0.0, _UNIT), "beta": (0.0, _UNIT), "a": (1.0, _POSITIVE),
                           "b": (0.5, (lambda v: 0 < v <= 1, "a number in (0, 1]"))}),
    "fast": ("fast.Fast", {"alpha": (50.0, _POSITIVE), "gamma": (0.5, (lambda v: 0 < v <= 1, "a number in (0, 1]")),
                           "update_interval_s": (0.02, _POSITIVE),
                           # Tang et al. Algorithm 2 (α adaptation); adapt_interval_s = 0 turns it off
                           "adapt_interval_s": (0.0, _NONNEG), "adapt_w": (125.0, _POSITIVE),
                           "adapt_delta": (0.1, (lambda v: 0 < v < 1, "a number in (0, 1)"))}),
    "epsilon": ("epsilon.Epsilon", {"epsilon": (1.0, (lambda v: 0 <= v <= 2, "a number in [0, 2]"))}),
})


def __getattr__(name: str):
    """The algorithm classes (``algorithms.Lia``), imported on first use."""
    module = REGISTRY.modules.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)


ALIASES = {"max": ("lia", {})}
ALIASES.update({k: ("mtcp", {"alpha": a, "beta": b}) for k, (a, b) in MTCP_VARIANTS.items()})

#: Every name a scenario may use.
NAMES = tuple(sorted(set(REGISTRY) | set(ALIASES)))

#: The six multipath algorithms of Peng et al. (Tables III–V), in the paper's column order.
PENG_ALGORITHMS = ("ewtcp", "semicoupled", "lia", "balia", "coupled", "olia")


class AlgorithmSpecError(ValueError):
    """Raised for an unknown name or bad parameter; ``field`` is the offending key."""

    def __init__(self, field: str, problem: str, fix: str):
        self.field, self.problem, self.fix = field, problem, fix
        super().__init__(f"{field}: {problem} (fix: {fix})")


def _number(name: str, value: Any) -> float:
    if isinstance(value, str) and value.strip().lower() in ("inf", "infinity", "∞"):
        return math.inf
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise AlgorithmSpecError(name, f"expected a number, got {ranges._show(value)}", f"write {name} = 0.5 (a number)")
    try:
        v = float(value)
    except OverflowError:
        raise AlgorithmSpecError(name, f"{ranges._show(value)} is too large", f"write {name} = 0.5 (a number)") from None
    if math.isnan(v):
        raise AlgorithmSpecError(name, "nan is not a number", f"write {name} = 0.5 (a number)")
    return v


def get(spec: str | Mapping[str, Any] | Algorithm) -> Algorithm:
    """Build an algorithm from a name (``"balia"``) or a table (``{name=..., param=...}``)."""
    if isinstance(spec, Algorithm):
        return spec
    if isinstance(spec, str):
        name, given = spec, {}
    elif isinstance(spec, Mapping):
        if "name" not in spec:
            raise AlgorithmSpecError("algorithm.name", "missing", 'write algorithm = {name = "balia"}')
        name, given = spec["name"], {k: v for k, v in spec.items() if k != "name"}
        if not isinstance(name, str):
            raise AlgorithmSpecError("algorithm.name", f"expected a string, got {ranges._show(name)}", 'write name = "balia"')
    else:
        raise AlgorithmSpecError("algorithm", f"expected a name or a table, got {ranges._show(spec)}",
                                 'write algorithm = "balia" or algorithm = {name = "generalized", beta = 0.2}')
    key = name.strip().lower()
    preset: dict[str, Any] = {}
    if key in ALIASES:
        key, preset = ALIASES[key]
    if key not in REGISTRY:
        raise AlgorithmSpecError("algorithm", f"unknown algorithm {ranges._show(name)}", f"use one of: {', '.join(NAMES)}")
    cls, schema = REGISTRY[key]
    params: dict[str, Any] = {}
    for pname, value in given.items():
        if pname not in schema:
            allowed = ", ".join(schema) or "none"
            raise AlgorithmSpecError(f"algorithm.{ranges.escape(str(pname))[:40]}", f"unknown parameter for {key}",
                                     f"parameters of {key}: {allowed}")
        v = _number(f"algorithm.{pname}", value)
        check, what = schema[pname][1]
        if not check(v) or (pname == "n" and not math.isinf(v) and v != int(v)):
            raise AlgorithmSpecError(f"algorithm.{pname}", f"{ranges._show(value)} is out of range", f"use {what}")
        bounds = ranges.R.get(f"{key}.{pname}")   # the physical range (docs/scenario.md "Ranges")
        if bounds is not None and not (pname == "n" and math.isinf(v)):
            _, problem = bounds.check(v)
            if problem:
                raise AlgorithmSpecError(f"algorithm.{pname}", problem,
                                         f"use a value in {bounds.describe()}, e.g. {pname} = {bounds.example}")
        params[pname] = v
    merged = {**preset, **params}
    return cls(params=merged)


__all__ = ["Algorithm", "get", "NAMES", "REGISTRY", "PENG_ALGORITHMS", "AlgorithmSpecError",
           "Reno", "Ewtcp", "Coupled", "Semicoupled", "Lia", "Olia", "Balia", "Generalized",
           "Mstcp", "Mtcp", "Fast", "Scalable", "Epsilon"]
