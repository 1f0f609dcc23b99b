"""Network model of Tang, Wei, Low, Chiang (ToN 2010), §III: a *network* (c, m, R, U).

* links l with capacities c_l and an intrinsic price p_l ≥ 0;
* protocols j, each with a price mapping m_l^j per link: the effective price a type-j source
  sees at link l is m_l^j(p_l).  Two kinds:
    - power:  m(p) = scale · p^exponent            (linear K^j of Example 3; p^α of Example 4)
    - RED (eq. 2), p = queue length b:
              m(b) = 0 for b ≤ b_lo, (1/K)(b − b_lo)/(b_hi − b_lo) between, 1/K for b ≥ b_hi;
* sources (j, i) with a route L(j, i) and an α-fair utility
    U(x) = β x^{1−α}/(1−α)   (β log x for α = 1),   U'(x) = β x^{−α};
  plus the Theorem-11 weight w (target max Σ U/w), default 1.

Equations implemented here (paper numbering):
  (3)  q_i = Σ_l R_li m_l^{j(i)}(p_l)
  (6)  x_i = U_i'^{-1}(q_i / μ_i) = (β_i μ_i / q_i)^{1/α_i}     (μ of (21)/(30); μ = 1 is (6))
  (4)  y(p) = R x(p)
  J = ∂y/∂p,  J_lk = Σ_i R_li R_ki x_i'(q_i) ṁ_k^{j(i)}(p_k),  x_i' = −x_i/(α_i q_i).

All functions work on numpy arrays with optional leading batch axes, so many networks (the
1000 random trials of Example 4) can be evaluated at once.  The rate of a source whose route
carries zero effective price is infinite in the model; it is capped at ``x_cap`` (1000 × the
largest capacity), which cannot change any equilibrium (an equilibrium rate never exceeds a
capacity) but keeps the dynamics finite when they start at p = 0.

The input file (TOML)::

    name = "example3"
    [[links]]
    name = "l1"
    capacity = 1.0
    [[protocols]]
    name = "p2"
    mapping = { l1 = {scale = 5, exponent = 1}, l3 = {scale = 5} }   # missing links: scale 1, exponent 1
    # RED (eq. 2): l2 = {kind = "red", min_th = 300, max_th = 1500, K = 10000}   (or max_p = 1/K)
    [[sources]]
    name = "s1"
    protocol = "p2"
    links = ["l1", "l2"]
    utility_alpha = 1.0
    utility_weight = 1.0
    fairness_weight = 1.0        # optional: w of Theorem 11
    [algorithm1]                 # optional defaults for Algorithm 1
    mode = "sync"; kappa = 0.5; prob = 1.0; period = 20.0; max_iterations = 2000; seed = 1
    [dynamics]                   # optional: starts of the dual dynamics to plot
    starts = [[0.3, 0.3, 0.3]]; duration = 200.0
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, NamedTuple

import numpy as np

from .. import ranges
from ..errors import ScenarioError
from ..scenario import Check, decode_toml, read_toml

KIND_POWER, KIND_RED = 0, 1


@dataclass(frozen=True)
class PriceMapping:
    """m_l^j: ``kind`` "power" (scale·p^exponent) or "red" (eq. 2 with b_lo, b_hi, 1/K)."""

    kind: str = "power"
    scale: float = 1.0
    exponent: float = 1.0
    min_th: float = 0.0
    max_th: float = 1.0
    max_p: float = 1.0  # = 1/K

    def __call__(self, p):
        return mapped_prices(np.asarray(p, float), *self._arrays())[0]

    def slope(self, p):
        return mapped_prices(np.asarray(p, float), *self._arrays())[1]

    def _arrays(self):
        return (self.kind == "red", self.scale, self.exponent, self.min_th, self.max_th, self.max_p)

    def describe(self) -> str:
        if self.kind == "red":
            return f"RED(b_lo={self.min_th:g}, b_hi={self.max_th:g}, 1/K={self.max_p:g})"
        if self.exponent == 1:
            return f"{self.scale:g}·p"
        return f"{self.scale:g}·p^{self.exponent:g}"


@dataclass(frozen=True)
class Protocol:
    name: str
    mapping: Mapping[str, PriceMapping]  # by link name; links not listed: identity


@dataclass(frozen=True)
class Source:
    name: str
    protocol: str
    links: tuple[str, ...]
    utility_alpha: float = 1.0
    utility_weight: float = 1.0
    fairness_weight: float = 1.0  # w of Theorem 11


@dataclass(frozen=True)
class Link:
    name: str
    capacity: float


class Arrays(NamedTuple):
    """The network as arrays (leading batch axes allowed). Source-level mapping tables: entry
    [i, l] describes m_l^{j(i)} for source i's protocol j(i)."""

    c: np.ndarray        # (…, L)
    R: np.ndarray        # (…, L, N) routing matrix, 0/1
    is_red: np.ndarray   # (…, N, L) bool
    scale: np.ndarray    # (…, N, L)
    expo: np.ndarray     # (…, N, L)
    red_lo: np.ndarray   # (…, N, L)
    red_hi: np.ndarray   # (…, N, L)
    red_max: np.ndarray  # (…, N, L)
    alpha: np.ndarray    # (…, N)
    beta: np.ndarray     # (…, N)
    w: np.ndarray        # (…, N)
    x_cap: np.ndarray    # (…,)


@dataclass(frozen=True)
class Network:
    name: str
    links: tuple[Link, ...]
    protocols: tuple[Protocol, ...]
    sources: tuple[Source, ...]
    settings: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    source_file: str = "<network>"

    @property
    def link_names(self) -> list[str]:
        return [l.name for l in self.links]

    @property
    def source_names(self) -> list[str]:
        return [s.name for s in self.sources]

    def mapping(self, protocol: str, link: str) -> PriceMapping:
        proto = next(p for p in self.protocols if p.name == protocol)
        return proto.mapping.get(link, PriceMapping())

    def arrays(self) -> Arrays:
        L, N = len(self.links), len(self.sources)
        idx = {l.name: k for k, l in enumerate(self.links)}
        c = np.array([l.capacity for l in self.links], float)
        R = np.zeros((L, N))
        tabs = {k: np.zeros((N, L)) for k in ("scale", "expo", "lo", "hi", "mx")}
        is_red = np.zeros((N, L), bool)
        for i, s in enumerate(self.sources):
            for ln in s.links:
                R[idx[ln], i] = 1.0
            for k, ln in enumerate(self.link_names):
                m = self.mapping(s.protocol, ln)
                is_red[i, k] = m.kind == "red"
                tabs["scale"][i, k], tabs["expo"][i, k] = m.scale, m.exponent
                tabs["lo"][i, k], tabs["hi"][i, k], tabs["mx"][i, k] = m.min_th, m.max_th, m.max_p
        src = self.sources
        return Arrays(c, R, is_red, tabs["scale"], tabs["expo"], tabs["lo"], tabs["hi"], tabs["mx"],
                      np.array([s.utility_alpha for s in src], float),
                      np.array([s.utility_weight for s in src], float),
                      np.array([s.fairness_weight for s in src], float),
                      np.array(1e3 * c.max()))

    def describe(self) -> str:
        return (f"{self.name}: {len(self.links)} links, {len(self.protocols)} protocols, "
                f"{len(self.sources)} sources")


def stack(arrays: list[Arrays]) -> Arrays:
    """Batch networks of equal shape (same L, N) along a new leading axis."""
    return Arrays(*(np.stack([np.asarray(getattr(a, f)) for a in arrays]) for f in Arrays._fields))


# --- the model equations ------------------------------------------------------------------------
def mapped_prices(p, is_red, scale, expo, lo, hi, mx):
    """m_l^j(p_l) and its slope ṁ (right derivative at the RED kinks). Shapes broadcast."""
    p = np.broadcast_to(p, np.broadcast_shapes(np.shape(p), np.shape(expo)))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        pos = p > 0
        pw = np.where(pos, scale * np.exp(expo * np.log(np.where(pos, p, 1.0))), 0.0)
        dpw = np.where(pos, expo * pw / np.where(pos, p, 1.0),
                       np.where(expo > 1, 0.0, np.where(expo == 1, scale, np.inf)))
    if not np.any(is_red):
        return pw, dpw
    span = np.where(hi > lo, hi - lo, 1.0)
    red = mx * np.clip((p - lo) / span, 0.0, 1.0)
    dred = np.where((p >= lo) & (p < hi), mx / span, 0.0)
    return np.where(is_red, red, pw), np.where(is_red, dred, dpw)


def source_mappings(a: Arrays, p):
    """Effective prices m_l^{j(i)}(p_l) and slopes, shape (…, N, L)."""
    p = np.asarray(p, float)[..., None, :]
    return mapped_prices(p, a.is_red, a.scale, a.expo, a.red_lo, a.red_hi, a.red_max)


def aggregate_prices(a: Arrays, p):
    """(3): q_i = Σ_l R_li m_l^{j(i)}(p_l); returns (q, m_src, dm_src)."""
    m, dm = source_mappings(a, p)
    q = np.einsum("...li,...il->...i", a.R, m)
    return q, m, dm


def rates(a: Arrays, q, mu=1.0):
    """(6)/(30): x_i = (β_i μ_i / q_i)^{1/α_i}, capped at x_cap; also returns dx/dq."""
    mu = np.asarray(mu, float)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        x = np.power(a.beta * mu / q, 1.0 / a.alpha)
        dx = -x / (a.alpha * q)
    cap = np.asarray(a.x_cap)[..., None]
    capped = ~(x < cap)
    x = np.where(capped, cap, x)
    dx = np.where(capped, 0.0, dx)
    return x, dx


def evaluate(a: Arrays, p, mu=1.0, jacobian: bool = False):
    """Rates x(p), link loads y(p) = R x (4), and optionally J = ∂y/∂p."""
    q, m, dm = aggregate_prices(a, p)
    x, dx = rates(a, q, mu)
    y = np.einsum("...li,...i->...l", a.R, x)
    if not jacobian:
        return x, y
    Rdm = np.swapaxes(a.R, -1, -2) * np.nan_to_num(dm, posinf=1e300)  # (…, N, L): R_ki ṁ_k
    J = np.einsum("...li,...i,...ik->...lk", a.R, dx, Rdm)
    return x, y, J


def utility(a: Arrays, x):
    """U_i(x_i) = β x^{1−α}/(1−α), β log x for α = 1."""
    with np.errstate(divide="ignore"):
        one = np.isclose(a.alpha, 1.0)
        safe = np.where(one, 2.0, a.alpha)
        return np.where(one, a.beta * np.log(x), a.beta * np.power(x, 1.0 - safe) / (1.0 - safe))


# --- loading and validation ---------------------------------------------------------------------
_TOP = ("name", "description", "links", "protocols", "sources", "algorithm1", "dynamics")
_LINK = ("name", "capacity")
_PROTO = ("name", "mapping")
_MAP = ("kind", "scale", "exponent", "min_th", "max_th", "K", "max_p")
_SOURCE = ("name", "protocol", "links", "utility_alpha", "utility_weight", "fairness_weight")
_ALG1 = ("mode", "kappa", "prob", "period", "max_iterations", "seed", "dt", "tol")
_DYN = ("starts", "duration", "dt")


def parse(data: Mapping[str, Any], source: str = "<network>") -> Network:
    c = Check(source)
    c.known_keys(data, _TOP, "")
    name = c.string(c.require(data, "name", "", '"example3"'), "name", "example3")

    links: list[Link] = []
    for w, raw, lname in c.named_tables(data, "links", _LINK, "l1", "name and capacity"):
        cap = c.number(c.require(raw, "capacity", w, "1.0"), w + "capacity", "1.0", rng="hetero.capacity")
        links.append(Link(lname, cap))
    link_names = [l.name for l in links]

    protos: list[Protocol] = []
    for w, raw, pname in c.named_tables(data, "protocols", _PROTO, "reno", "name and mapping"):
        mraw = c.table(raw.get("mapping", {}), w + "mapping", "mapping = {l1 = {scale = 1, exponent = 1}}")
        mapping: dict[str, PriceMapping] = {}
        for ln, spec in mraw.items():
            f = f"{w}mapping.{ln}"
            if ln not in link_names:
                c.fail(f, f"unknown link {ln!r} (defined: {', '.join(link_names)})",
                       "map only links defined in [[links]]")
            spec = c.table(spec, f, f"{ln} = {{scale = 1, exponent = 1}}")
            c.known_keys(spec, _MAP, f + ".")
            kind = spec.get("kind", "red" if ("K" in spec or "max_p" in spec) else "power")
            if kind not in ("power", "red"):
                c.fail(f + ".kind", f"unknown mapping kind {kind!r}", 'use kind = "power" or kind = "red"')
            if kind == "power":
                for bad in ("min_th", "max_th", "K", "max_p"):
                    if bad in spec:
                        c.fail(f"{f}.{bad}", "RED parameter in a power mapping", 'set kind = "red" or remove it')
                sc = c.number(spec.get("scale", 1.0), f + ".scale", "1.0", rng="hetero.scale")
                ex = c.number(spec.get("exponent", 1.0), f + ".exponent", "1.0", rng="hetero.exponent")
                mapping[ln] = PriceMapping("power", sc, ex)
            else:
                for bad in ("scale", "exponent"):
                    if bad in spec:
                        c.fail(f"{f}.{bad}", "power parameter in a RED mapping", 'set kind = "power" or remove it')
                lo = c.number(c.require(spec, "min_th", f + ".", "300"), f + ".min_th", "300", rng="hetero.threshold")
                hi = c.number(c.require(spec, "max_th", f + ".", "1500"), f + ".max_th", "1500", rng="hetero.threshold")
                if hi <= lo:
                    c.fail(f + ".max_th", f"max_th ({hi:g}) must exceed min_th ({lo:g})", "choose min_th < max_th")
                if ("K" in spec) == ("max_p" in spec):
                    c.fail(f + ".K", "give exactly one of K (eq. 2) or max_p = 1/K", "write K = 10000")
                if "K" in spec:
                    K = c.number(spec["K"], f + ".K", "10000", rng="hetero.K")
                    mx = 1.0 / K
                else:
                    mx = c.number(spec["max_p"], f + ".max_p", "0.1", rng="red.max_p")
                    if mx > 1:
                        c.fail(f + ".max_p", f"max_p must be ≤ 1, got {mx:g}", "use a probability such as 0.1")
                mapping[ln] = PriceMapping("red", min_th=lo, max_th=hi, max_p=mx)
        protos.append(Protocol(pname, mapping))
    proto_names = [p.name for p in protos]

    sources: list[Source] = []
    for w, raw, sname in c.named_tables(data, "sources", _SOURCE, "s1", "name, protocol, links"):
        proto = c.string(c.require(raw, "protocol", w, f'"{proto_names[0]}"'), w + "protocol", proto_names[0])
        if proto not in proto_names:
            c.fail(w + "protocol", f"unknown protocol {proto!r} (defined: {', '.join(proto_names)})",
                   "use a protocol defined in [[protocols]]")
        route = c.require(raw, "links", w, '["l1"]')
        if isinstance(route, str):
            route = [route]
        if not isinstance(route, list) or not route or not all(isinstance(n, str) for n in route):
            c.fail(w + "links", f"expected a non-empty list of link names, got {route!r}", 'write links = ["l1", "l2"]')
        for n in route:
            if n not in link_names:
                c.fail(w + "links", f"unknown link {n!r} (defined: {', '.join(link_names)})",
                       "use links defined in [[links]]")
        if len(set(route)) != len(route):
            c.fail(w + "links", f"route visits a link twice: {route!r}", "list each link once")
        a = c.number(raw.get("utility_alpha", 1.0), w + "utility_alpha", "1.0", rng="hetero.utility_alpha")
        b = c.number(raw.get("utility_weight", 1.0), w + "utility_weight", "1.0", rng="hetero.utility")
        fw = c.number(raw.get("fairness_weight", 1.0), w + "fairness_weight", "1.0", rng="hetero.utility")
        sources.append(Source(sname, proto, tuple(route), a, b, fw))

    settings: dict[str, dict[str, Any]] = {}
    if "algorithm1" in data:
        t = dict(c.table(data["algorithm1"], "algorithm1", "[algorithm1] kappa = 0.5"))
        c.known_keys(t, _ALG1, "algorithm1.")
        if "mode" in t and t["mode"] not in ("sync", "async"):
            c.fail("algorithm1.mode", f"unknown mode {t['mode']!r}", 'use mode = "sync" or "async"')
        for k in ("kappa", "prob", "period", "dt", "tol"):
            if k in t:
                t[k] = c.number(t[k], f"algorithm1.{k}", "", rng=f"hetero.{k}")
        for k in ("kappa", "prob"):
            if k in t and t[k] > 1:
                c.fail(f"algorithm1.{k}", f"must be ≤ 1, got {t[k]:g}", f"use a {k} in (0, 1]")
        for k, rng in (("max_iterations", "hetero.max_iterations"), ("seed", "seed")):
            if k in t:
                t[k] = c.number(t[k], f"algorithm1.{k}", "", rng=rng)
        if t.get("dt", 0) > t.get("period", 20.0):
            c.fail("algorithm1.dt", f"dt ({t['dt']:g}) exceeds the period ({t.get('period', 20.0):g})",
                   "choose dt ≤ period, e.g. dt = 0.05")
        settings["algorithm1"] = t
    if "dynamics" in data:
        t = dict(c.table(data["dynamics"], "dynamics", "[dynamics] starts = [[0.3, 0.3]]"))
        c.known_keys(t, _DYN, "dynamics.")
        starts = t.get("starts", [])
        if not isinstance(starts, list) or not all(
                isinstance(s, list) and len(s) == len(links) and all(
                    ranges.R["hetero.start"].check(v)[1] is None for v in s) for s in starts) or len(starts) > 1000:
            c.fail("dynamics.starts", f"expected at most 1000 price vectors of length {len(links)} with entries in "
                   f"{ranges.R['hetero.start'].describe()}",
                   "write starts = [[" + ", ".join(["0.3"] * len(links)) + "]]")
        t["starts"] = [[float(v) for v in s] for s in starts]
        for k in ("duration", "dt"):
            if k in t:
                t[k] = c.number(t[k], f"dynamics.{k}", "", rng=f"hetero.{k}")
        if t.get("dt", 0) > t.get("duration", 200.0):
            c.fail("dynamics.dt", f"dt ({t['dt']:g}) exceeds the duration ({t.get('duration', 200.0):g})",
                   "choose dt ≤ duration, e.g. dt = 0.05")
        settings["dynamics"] = t

    used = {l for s in sources for l in s.links}
    for l in links:
        if l.name not in used:
            c.fail("links", f"link {l.name!r} is used by no source", "remove it or route a source over it")
    return Network(name, tuple(links), tuple(protos), tuple(sources), settings, source)


def load(path: str | Path) -> Network:
    return parse(read_toml(path, "scenarios/tang2010/"), str(path))


def loads(text: str, source: str = "<string>") -> Network:
    return parse(decode_toml(text, source), source)


def to_toml(net: Network) -> str:
    """Write a network back as an input file (used to store generated examples)."""
    out = [f'name = "{net.name}"', ""]
    for l in net.links:
        out += ["[[links]]", f'name = "{l.name}"', f"capacity = {l.capacity!r}", ""]
    for p in net.protocols:
        items = []
        for ln, m in p.mapping.items():
            if m.kind == "red":
                items.append(f'{ln} = {{kind = "red", min_th = {m.min_th!r}, max_th = {m.max_th!r}, max_p = {m.max_p!r}}}')
            else:
                items.append(f"{ln} = {{scale = {m.scale!r}, exponent = {m.exponent!r}}}")
        out += ["[[protocols]]", f'name = "{p.name}"', "mapping = {" + ", ".join(items) + "}", ""]
    for s in net.sources:
        route = ", ".join(f'"{l}"' for l in s.links)
        out += ["[[sources]]", f'name = "{s.name}"', f'protocol = "{s.protocol}"', f"links = [{route}]",
                f"utility_alpha = {s.utility_alpha!r}", f"utility_weight = {s.utility_weight!r}"]
        if s.fairness_weight != 1.0:
            out.append(f"fairness_weight = {s.fairness_weight!r}")
        out.append("")
    return "\n".join(out)


def network(links: Mapping[str, float], protocols: Mapping[str, Mapping[str, PriceMapping]],
            sources: list[Source], name: str = "network") -> Network:
    """Build a Network in code (no file validation: the caller passes well-formed values)."""
    return Network(name, tuple(Link(k, float(v)) for k, v in links.items()),
                   tuple(Protocol(k, dict(v)) for k, v in protocols.items()), tuple(sources))
