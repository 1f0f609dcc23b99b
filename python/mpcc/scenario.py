"""Scenario files (TOML): the one input all three engines run.

Contract (see ``docs/scenario.md`` for the full reference)::

    name = "fig2-table3"
    duration_s = 100.0
    packet_bytes = 1500            # optional, default 1500 (MSS + headers on the wire)

    [[links]]
    name = "link1"
    capacity_mbps = 60.0
    delay_ms = 5.0                 # one-way propagation delay
    buffer_pkts = 50
    aqm = "droptail"               # or "red", then:
    red = { min_th = 5, max_th = 15, max_p = 0.1, ecn = false }
    loss = 0.0                     # optional random loss probability

    [[groups]]
    name = "mp"
    count = 30                     # identical flows
    algorithm = "balia"            # or a table {name = "generalized", beta = 0.2, eta = 0.5, n = "inf"}
    paths = [["link1"], ["link2"]] # one route per path, each a list of link names
    start_s = 0.0
    stop_s = 100.0                 # optional, default duration_s

    [[background]]                 # optional open-loop on-off UDP traffic (Jiang et al. Fig. 12)
    name = "udp1"
    path = ["link2"]
    rate_mbps = 2.0                # sending rate while on
    mean_on_s = 1.0                # exponential on/off periods
    mean_off_s = 1.0
    start_s = 400.0
    stop_s = 800.0

Optional engine tables ``[fluid]``, ``[sim]`` and ``[testbed]`` hold engine settings and are
validated by their engine. Every error is a :class:`~mpcc.errors.ScenarioError` naming the file,
the field and the fix.
"""

from __future__ import annotations

import math
import os
import tomllib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

from . import algorithms, ranges
from .errors import ScenarioError

if TYPE_CHECKING:   # os.path below: pathlib (with urllib.parse, ipaddress) is not needed to read a file
    from pathlib import Path

ENGINE_TABLES = ("fluid", "sim", "testbed")
AQMS = ("droptail", "red")


@dataclass(frozen=True)
class Red:
    """RED parameters (Floyd & Jacobson), thresholds in packets of average queue."""

    min_th: float
    max_th: float
    max_p: float
    ecn: bool = False
    weight: float = 0.002  # EWMA weight w_q of the average queue
    gentle: bool = True


@dataclass(frozen=True)
class Link:
    name: str
    capacity_mbps: float
    delay_ms: float
    buffer_pkts: int
    aqm: str = "droptail"
    red: Red | None = None
    loss: float = 0.0


@dataclass(frozen=True)
class Group:
    name: str
    count: int
    algorithm: algorithms.Algorithm
    paths: tuple[tuple[str, ...], ...]
    start_s: float = 0.0
    stop_s: float = math.inf
    algorithm_spec: Any = None  # as written in the file (name or table), for output

    @property
    def multipath(self) -> bool:
        return len(self.paths) > 1


@dataclass(frozen=True)
class Background:
    """Open-loop on-off UDP traffic along one path (Jiang et al. Fig. 12): while on, it sends
    at ``rate_mbps``; on and off periods are exponential with the given means."""

    name: str
    path: tuple[str, ...]
    rate_mbps: float
    mean_on_s: float
    mean_off_s: float
    start_s: float = 0.0
    stop_s: float = math.inf


@dataclass(frozen=True)
class Scenario:
    name: str
    duration_s: float
    links: tuple[Link, ...]
    groups: tuple[Group, ...]
    packet_bytes: int = 1500
    background: tuple[Background, ...] = ()
    engine: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    source: str = "<scenario>"

    # --- lookups --------------------------------------------------------------------------
    def link(self, name: str) -> Link:
        for l in self.links:
            if l.name == name:
                return l
        raise KeyError(name)

    @property
    def link_index(self) -> dict[str, int]:
        return {l.name: i for i, l in enumerate(self.links)}

    def path_delay_s(self, path: tuple[str, ...]) -> float:
        """Round-trip propagation delay of a path: 2 × Σ one-way delays (the reverse path
        mirrors the forward delays and is never congested)."""
        return 2.0 * sum(self.link(n).delay_ms for n in path) / 1e3

    def capacity_pps(self, link: Link) -> float:
        """Link capacity in packets per second of ``packet_bytes``."""
        return link.capacity_mbps * 1e6 / (8.0 * self.packet_bytes)

    def pps_to_mbps(self, pps: float) -> float:
        return pps * 8.0 * self.packet_bytes / 1e6

    def with_changes(self, **changes) -> "Scenario":
        from dataclasses import replace
        return replace(self, **changes)


# --- loading and validation -------------------------------------------------------------------
class _Check:
    """Field-by-field validation that raises one ScenarioError naming file, field and fix."""

    def __init__(self, source: str):
        self.source = source

    def fail(self, fld: str, problem: str, fix: str):
        raise ScenarioError(self.source, fld, problem, fix)

    def require(self, table: Mapping, key: str, where: str, example: str):
        if key not in table:
            self.fail(f"{where}{key}", "missing required field", f"add {key} = {example}")
        return table[key]

    def number(self, value: Any, fld: str, example: str, *, minimum: float | None = None,
               exclusive: bool = False, integer: bool = False, rng: str | None = None) -> float:
        """A finite number; with ``rng`` it must also lie in ``ranges.R[rng]`` (the physical
        range of the quantity, docs/scenario.md "Ranges")."""
        key = fld.split('.')[-1]
        if rng is not None:
            r = ranges.R[rng]
            v, problem = r.check(value)
            if problem:
                self.fail(fld, problem, f"use a value in {r.describe()}, e.g. {key} = {r.example}")
            return v
        ok_type = isinstance(value, int) if integer else isinstance(value, (int, float))
        if isinstance(value, bool) or not ok_type:
            kind = "an integer" if integer else "a number"
            self.fail(fld, f"expected {kind}, got {type(value).__name__} {ranges._show(value)}", f"write {key} = {example}")
        try:
            v = float(value)
        except OverflowError:
            self.fail(fld, f"{ranges._show(value)} is too large", f"write {key} = {example}")
        if math.isnan(v) or math.isinf(v):
            self.fail(fld, f"{value!r} is not finite", f"write {key} = {example}")
        if minimum is not None and (v <= minimum if exclusive else v < minimum):
            rel = ">" if exclusive else "≥"
            self.fail(fld, f"must be {rel} {minimum:g}, got {ranges._show(value)}", f"use a value {rel} {minimum:g}, e.g. {example}")
        return int(value) if integer else v

    def string(self, value: Any, fld: str, example: str) -> str:
        if not isinstance(value, str) or not value.strip():
            self.fail(fld, f"expected a non-empty string, got {ranges._show(value)}", f'write {fld.split(".")[-1]} = "{example}"')
        if ranges.has_control(value) or len(value) > 200:
            self.fail(fld, f"{ranges._show(value)} contains control characters (newline, tab, …) or is over 200 characters",
                      f'use printable text, e.g. {fld.split(".")[-1]} = "{example}"')
        return value

    def table(self, value: Any, fld: str, example: str) -> Mapping:
        if not isinstance(value, Mapping):
            self.fail(fld, f"expected a table, got {type(value).__name__}", f"write {example}")
        return value

    def known_keys(self, table: Mapping, allowed: tuple[str, ...], where: str):
        for key in table:
            if key not in allowed:
                self.fail(f"{where}{ranges.escape(str(key))[:60]}", "unknown field", f"remove it or use one of: {', '.join(allowed)}")

    def named_tables(self, data: Mapping, key: str, allowed: tuple[str, ...], example: str, fields: str):
        """The array of tables ``[[key]]``: at least one, each a table with only ``allowed``
        fields and a ``name`` no other has. Yields (field prefix such as ``links[2].``, the
        table, its name); ``fields`` names what a table needs, for the fix of an empty array."""
        items = self.require(data, key, "", f"[[{key}]] tables")
        if not isinstance(items, list) or not items:
            self.fail(key, f"expected at least one [[{key}]] table", f"add [[{key}]] with {fields}")
        kind = key[:-1] if key.endswith("s") else key
        seen: set[str] = set()
        for i, raw in enumerate(items):
            w = f"{key}[{i}]."
            raw = self.table(raw, f"{key}[{i}]", f"[[{key}]] name = ...")
            self.known_keys(raw, allowed, w)
            name = self.string(self.require(raw, "name", w, f'"{example}"'), w + "name", example)
            if name in seen:
                self.fail(w + "name", f"duplicate {kind} name {name!r}", f"give every {kind} a unique name")
            seen.add(name)
            yield w, raw, name


#: The field-by-field validator, public for the other file formats (hetero network files).
Check = _Check

_TOP = ("name", "duration_s", "packet_bytes", "links", "groups", "background", "description") + ENGINE_TABLES
_BACKGROUND = ("name", "path", "rate_mbps", "mean_on_s", "mean_off_s", "start_s", "stop_s")
_LINK = ("name", "capacity_mbps", "delay_ms", "buffer_pkts", "aqm", "red", "loss")
_RED = ("min_th", "max_th", "max_p", "ecn", "weight", "gentle")
_GROUP = ("name", "count", "algorithm", "paths", "start_s", "stop_s")


def parse(data: Mapping[str, Any], source: str = "<scenario>") -> Scenario:
    """Validate a decoded TOML document and build a :class:`Scenario`."""
    c = _Check(source)
    c.known_keys(data, _TOP, "")
    name = c.string(c.require(data, "name", "", '"my-scenario"'), "name", "my-scenario")
    duration = c.number(c.require(data, "duration_s", "", "100.0"), "duration_s", "100.0", rng="duration_s")
    packet_bytes = c.number(data.get("packet_bytes", 1500), "packet_bytes", "1500", rng="packet_bytes")

    links: list[Link] = []
    for w, raw, lname in c.named_tables(data, "links", _LINK, "link1", "name, capacity_mbps, delay_ms, buffer_pkts"):
        cap = c.number(c.require(raw, "capacity_mbps", w, "60.0"), w + "capacity_mbps", "60.0", rng="capacity_mbps")
        delay = c.number(c.require(raw, "delay_ms", w, "5.0"), w + "delay_ms", "5.0", rng="delay_ms")
        buf = c.number(c.require(raw, "buffer_pkts", w, "50"), w + "buffer_pkts", "50", rng="buffer_pkts")
        aqm = c.string(raw.get("aqm", "droptail"), w + "aqm", "droptail")
        if aqm not in AQMS:
            c.fail(w + "aqm", f"unknown AQM {aqm!r}", 'use aqm = "droptail" or aqm = "red"')
        loss = c.number(raw.get("loss", 0.0), w + "loss", "0.0", rng="loss")
        if loss >= 1:
            c.fail(w + "loss", f"loss probability must be < 1, got {loss}", "use a probability in [0, 1), e.g. 0.001")
        red = None
        if aqm == "red":
            rraw = c.table(c.require(raw, "red", w, "{min_th = 5, max_th = 15, max_p = 0.1}"), w + "red",
                           "red = {min_th = 5, max_th = 15, max_p = 0.1}")
            c.known_keys(rraw, _RED, w + "red.")
            mn = c.number(c.require(rraw, "min_th", w + "red.", "5"), w + "red.min_th", "5", rng="red.min_th")
            mx = c.number(c.require(rraw, "max_th", w + "red.", "15"), w + "red.max_th", "15", rng="red.max_th")
            mp = c.number(c.require(rraw, "max_p", w + "red.", "0.1"), w + "red.max_p", "0.1", rng="red.max_p")
            if mx <= mn:
                c.fail(w + "red.max_th", f"max_th ({mx:g}) must exceed min_th ({mn:g})", "choose min_th < max_th")
            if mp > 1:
                c.fail(w + "red.max_p", f"max_p must be ≤ 1, got {mp:g}", "use a probability such as 0.1")
            if mx > buf:
                c.fail(w + "red.max_th", f"max_th ({mx:g}) exceeds buffer_pkts ({buf})", "lower max_th or raise buffer_pkts")
            ecn = rraw.get("ecn", False)
            if not isinstance(ecn, bool):
                c.fail(w + "red.ecn", f"expected true or false, got {ecn!r}", "write ecn = false")
            wq = c.number(rraw.get("weight", 0.002), w + "red.weight", "0.002", rng="red.weight")
            gentle = rraw.get("gentle", True)
            if not isinstance(gentle, bool):
                c.fail(w + "red.gentle", f"expected true or false, got {gentle!r}", "write gentle = true")
            red = Red(mn, mx, mp, ecn, wq, gentle)
        elif "red" in raw:
            c.fail(w + "red", 'red parameters given but aqm is not "red"', 'set aqm = "red" or remove the red table')
        links.append(Link(lname, cap, delay, buf, aqm, red, loss))
    link_names = {l.name for l in links}

    groups: list[Group] = []
    for w, raw, gname in c.named_tables(data, "groups", _GROUP, "mp", "name, count, algorithm, paths"):
        count = c.number(c.require(raw, "count", w, "1"), w + "count", "1", rng="count")
        spec = c.require(raw, "algorithm", w, '"balia"')
        try:
            algo = algorithms.get(spec)
        except algorithms.AlgorithmSpecError as e:
            c.fail(w + e.field, e.problem, e.fix)
        paths = c.require(raw, "paths", w, '[["link1"], ["link2"]]')
        if not isinstance(paths, list) or not paths:
            c.fail(w + "paths", "expected a non-empty list of paths", 'write paths = [["link1"], ["link2"]]')
        parsed: list[tuple[str, ...]] = []
        for j, path in enumerate(paths):
            pf = f"{w}paths[{j}]"
            if isinstance(path, str):
                path = [path]
            if not isinstance(path, list) or not path or not all(isinstance(n, str) for n in path):
                c.fail(pf, f"expected a non-empty list of link names, got {path!r}", 'write ["link1", "link2"]')
            for n in path:
                if n not in link_names:
                    c.fail(pf, f"unknown link {n!r} (defined: {', '.join(sorted(link_names))})",
                           f"add a [[links]] table named {n!r} or correct the path")
            if len(set(path)) != len(path):
                c.fail(pf, f"path visits a link twice: {path!r}", "list each link of a path once")
            parsed.append(tuple(path))
        if len(parsed) > 8:
            c.fail(w + "paths", f"{len(parsed)} paths; at most 8 routes per connection are supported",
                   "use at most 8 paths (MPTCP subflow limit used by the kernel and BPF code)")
        start = c.number(raw.get("start_s", 0.0), w + "start_s", "0.0", rng="time_s")
        stop = c.number(raw.get("stop_s", duration), w + "stop_s", str(duration), rng="time_s")
        if stop <= start:
            c.fail(w + "stop_s", f"stop_s ({stop:g}) is not after start_s ({start:g})", "make stop_s > start_s")
        if start >= duration:
            c.fail(w + "start_s", f"start_s ({start:g}) is not before duration_s ({duration:g})",
                   "start the group before the scenario ends")
        groups.append(Group(gname, count, algo, tuple(parsed), start, min(stop, duration), spec))

    background: list[Background] = []
    raw_bg = data.get("background", [])
    if not isinstance(raw_bg, list):
        c.fail("background", "expected [[background]] tables", "write [[background]] name = ...")
    for i, raw in enumerate(raw_bg):
        w = f"background[{i}]."
        raw = c.table(raw, f"background[{i}]", "[[background]] name = ...")
        c.known_keys(raw, _BACKGROUND, w)
        bname = c.string(c.require(raw, "name", w, '"udp1"'), w + "name", "udp1")
        path = c.require(raw, "path", w, '["link1"]')
        if isinstance(path, str):
            path = [path]
        if not isinstance(path, list) or not path or not all(isinstance(n, str) for n in path):
            c.fail(w + "path", f"expected a non-empty list of link names, got {path!r}", 'write path = ["link1"]')
        for n in path:
            if n not in link_names:
                c.fail(w + "path", f"unknown link {n!r} (defined: {', '.join(sorted(link_names))})",
                       f"add a [[links]] table named {n!r} or correct the path")
        rate = c.number(c.require(raw, "rate_mbps", w, "1.0"), w + "rate_mbps", "1.0", rng="rate_mbps")
        on = c.number(c.require(raw, "mean_on_s", w, "1.0"), w + "mean_on_s", "1.0", rng="mean_on_s")
        off = c.number(c.require(raw, "mean_off_s", w, "1.0"), w + "mean_off_s", "1.0", rng="mean_off_s")
        bstart = c.number(raw.get("start_s", 0.0), w + "start_s", "0.0", rng="time_s")
        bstop = c.number(raw.get("stop_s", duration), w + "stop_s", str(duration), rng="time_s")
        if bstop <= bstart:
            c.fail(w + "stop_s", f"stop_s ({bstop:g}) is not after start_s ({bstart:g})", "make stop_s > start_s")
        background.append(Background(bname, tuple(path), rate, on, off, bstart, min(bstop, duration)))

    subflows = sum(g.count * len(g.paths) for g in groups)
    if subflows > MAX_SUBFLOWS:
        c.fail("groups", f"{subflows} subflows in total (Σ count × paths); at most {MAX_SUBFLOWS} are supported",
               "lower the groups' count")
    for key, what, n in (("links", "links", len(links)), ("groups", "groups", len(groups)),
                         ("background", "background sources", len(background))):
        if n > MAX_TABLES:
            c.fail(key, f"{n} {what}; at most {MAX_TABLES} are supported", f"use at most {MAX_TABLES} {what}")

    engine = {}
    for key in ENGINE_TABLES:
        if key in data:
            engine[key] = c.table(data[key], key, f"[{key}] with engine settings")
    sc = Scenario(name, duration, tuple(links), tuple(groups), packet_bytes, tuple(background), engine, source)
    for key in engine:   # every [sim]/[fluid]/[testbed] field in range before any engine starts
        opts = engine_options(sc, key)
        cross = getattr(__import__(OPTION_TABLES[key][0], fromlist=["_"]), f"{key}_cross_check", None)
        if cross is not None:
            cross(sc, opts)
    return sc


# --- engine tables: one table-driven validator ----------------------------------------------------
#: Upper bounds on the size of a scenario (memory of every engine grows with them).
MAX_SUBFLOWS = 100_000
MAX_TABLES = 10_000


@dataclass(frozen=True)
class Option:
    """One field of an engine table (``[sim]``, ``[fluid]``, ``[testbed]``). ``kind`` is
    "number" (``range`` names its bounds in :data:`mpcc.ranges.R`), "bool", "choice" or
    "string"; ``default`` is used when the field is absent."""

    default: Any
    kind: str = "number"
    range: str | None = None
    choices: tuple[str, ...] = ()
    example: str = ""


#: Where the engines' option tables (name → :class:`Option`) and cross-field checks live:
#: :mod:`mpcc.options`, which imports no engine (each engine re-exports its own table).
OPTION_TABLES = {"sim": ("mpcc.options", "SIM_OPTIONS"),
                 "fluid": ("mpcc.options", "FLUID_OPTIONS"),
                 "testbed": ("mpcc.options", "TESTBED_OPTIONS")}


def option_table(table: str) -> Mapping[str, Option]:
    import importlib
    module, attr = OPTION_TABLES[table]
    return getattr(importlib.import_module(module), attr)


def engine_options(scenario: "Scenario", table: str, overrides: Mapping[str, Any] | None = None,
                   flags: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The scenario's ``[table]`` merged with ``overrides`` (command-line values; None = not
    given), validated against the engine's option table, defaults filled in. Every problem is
    one :class:`ScenarioError` naming the field (or, for an override, its flag from ``flags``,
    e.g. {"duration_s": "--duration"})."""
    options = option_table(table)
    c = _Check(scenario.source)
    raw = dict(scenario.engine.get(table, {}) or {})
    c.known_keys(raw, tuple(options), f"{table}.")
    given = {**raw, **{k: v for k, v in (overrides or {}).items() if v is not None}}
    out: dict[str, Any] = {}
    for key, opt in options.items():
        if key not in given:
            out[key] = opt.default
            continue
        value = given[key]
        fld = f"{table}.{key}" if (overrides or {}).get(key) is None else (flags or {}).get(key, f"{table}.{key}")
        if opt.kind == "bool":
            if not isinstance(value, bool):
                c.fail(fld, f"expected true or false, got {ranges._show(value)}", f"write {key} = {opt.example or 'true'}")
        elif opt.kind == "choice":
            if value not in opt.choices:
                c.fail(fld, f"unknown value {ranges._show(value)}", f"use one of: {', '.join(opt.choices)}")
        elif opt.kind == "string":
            value = c.string(value, fld, opt.example)
        else:
            value = c.number(value, fld, opt.example, rng=opt.range or f"{table}.{key}")
        out[key] = value
    return out


#: Largest TOML input file accepted, bytes. Scenario and network files are a few KiB (the largest
#: bundled one is under 10 KiB); the cap keeps a wrong or hostile file from being read whole.
MAX_TOML_BYTES = 1 << 20
#: Deepest nesting of arrays/tables accepted. A scenario needs 5 (document → groups → table →
#: paths → route); tomllib recurses per level and exhausts Python's stack near 300-500.
MAX_TOML_DEPTH = 32


def _too_large(source: str, n: int) -> ScenarioError:
    return ScenarioError(source, "(file)", f"too large for a TOML input: {n} bytes, the limit is {MAX_TOML_BYTES} "
                         f"({MAX_TOML_BYTES >> 20} MiB)", "give the scenario file itself; inputs are a few KiB")


def _too_deep(source: str) -> ScenarioError:
    return ScenarioError(source, "(syntax)", f"arrays or tables nested more than {MAX_TOML_DEPTH} levels deep",
                         "flatten the nesting; a scenario needs at most 5 levels (paths = [[\"link1\"]])")


def _depth(doc: Any) -> int:
    """Nesting depth of decoded TOML (iterative: a deep document must not exhaust the stack)."""
    deepest, todo = 0, [(doc, 1)]
    while todo:
        v, d = todo.pop()
        deepest = max(deepest, d)
        if d > MAX_TOML_DEPTH:
            break
        if isinstance(v, dict):
            todo += [(x, d + 1) for x in v.values()]
        elif isinstance(v, list):
            todo += [(x, d + 1) for x in v]
    return deepest


def _decode(text: str, source: str) -> dict[str, Any]:
    if len(text) > MAX_TOML_BYTES:
        raise _too_large(source, len(text.encode("utf-8", "surrogatepass")))
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(source, "(syntax)", f"invalid TOML: {e}", "fix the TOML syntax at the position shown") from None
    except RecursionError:       # tomllib recurses once per nested array / inline table
        raise _too_deep(source) from None
    if _depth(doc) > MAX_TOML_DEPTH:
        raise _too_deep(source)
    return doc


def read_toml(path: str | Path, where: str = "scenarios/") -> dict[str, Any]:
    """Decode a TOML input file; any problem is a one-line :class:`ScenarioError`. Shared by
    every TOML input of the project (scenarios, heterogeneous networks). Files over
    :data:`MAX_TOML_BYTES` or nested deeper than :data:`MAX_TOML_DEPTH` are refused."""
    p = os.fspath(path)
    if not os.path.isfile(p):
        if os.path.exists(p):      # a directory, device or FIFO (reading a FIFO would block)
            raise ScenarioError(p, "(file)", "not a regular file", "give the path of a TOML file")
        raise ScenarioError(p, "(file)", "no such file", f"check the path; bundled files live in {where}")
    try:
        with open(p, "rb") as f:
            data = f.read(MAX_TOML_BYTES + 1)     # never more than the cap, whatever stat says
            if len(data) > MAX_TOML_BYTES:
                raise _too_large(p, max(os.fstat(f.fileno()).st_size, len(data)))
        # TOML is UTF-8; newlines as text mode reads them (a lone CR is a newline too)
        text = data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    except PermissionError:
        raise ScenarioError(p, "(file)", "permission denied", "make the file readable (chmod a+r)") from None
    except UnicodeDecodeError:
        raise ScenarioError(p, "(file)", "not a UTF-8 text file", "save the file as UTF-8 TOML") from None
    return _decode(text, p)


def decode_toml(text: str, source: str = "<string>") -> dict[str, Any]:
    """Decode TOML text; a syntax error, a too-large or too-deep document is a one-line
    :class:`ScenarioError`."""
    return _decode(text, source)


def load(path: str | Path) -> Scenario:
    """Read and validate a scenario file. Raises :class:`ScenarioError` on any problem."""
    return parse(read_toml(path), str(path))


def loads(text: str, source: str = "<string>") -> Scenario:
    return parse(decode_toml(text, source), source)
