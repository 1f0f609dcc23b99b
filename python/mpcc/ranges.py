"""Physical ranges of every number a user can give (scenario fields, engine tables, hetero
files, command-line flags) — the one table the validators read. docs/scenario.md "Ranges" lists
them with their reasons.

A number outside its range is a one-line error naming the field or flag and the fix (exit 2),
before any engine starts. The bounds are those of a real network or experiment, generous enough
for every scenario the papers use and tight enough that no engine is asked for nonsense (a
5e-324 Mb/s link, a 1e300-packet window, a 1e-300 s timer).

``number_type(name)`` is the click parameter type of a flag with that range, so flags share the
bounds of the scenario fields they override.
"""

from __future__ import annotations

import math
import unicodedata
from dataclasses import dataclass
from typing import Any

import click


@dataclass(frozen=True)
class Range:
    """A closed or half-open interval [lo, hi] of a physical quantity, optionally with 0 as an
    extra allowed value ("off")."""

    lo: float
    hi: float
    unit: str = ""
    example: str = "1"
    integer: bool = False
    lo_open: bool = False
    hi_open: bool = False
    zero_ok: bool = False  # 0 allowed besides [lo, hi] (e.g. "0 = off")

    def contains(self, v: float) -> bool:
        if self.zero_ok and v == 0:
            return True
        above = v > self.lo if self.lo_open else v >= self.lo
        below = v < self.hi if self.hi_open else v <= self.hi
        return above and below

    def describe(self) -> str:
        lb = "(" if self.lo_open else "["
        rb = ")" if self.hi_open else "]"
        s = f"{lb}{self.lo:g}, {self.hi:g}{rb}"
        if self.zero_ok:
            s = f"0 or {s}"
        return f"{s} {self.unit}".rstrip()

    def check(self, value: Any) -> tuple[float | int | None, str | None]:
        """(number, None) when ``value`` is a finite number in range, else (None, problem)."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            kind = "an integer" if self.integer else "a number"
            return None, f"expected {kind}, got {_show(value)}"
        if self.integer and not isinstance(value, int):
            return None, f"expected an integer, got {_show(value)}"
        try:
            v = float(value)
        except OverflowError:
            return None, f"{_show(value)} is out of range {self.describe()}"
        if not math.isfinite(v):
            return None, f"{_show(value)} is not a finite number"
        if not self.contains(v):
            return None, f"{_show(value)} is out of range {self.describe()}"
        # -0.0 passes a lower bound of 0 but flips signs downstream (numpy's uniform(0, -0) fails)
        return (int(value) if self.integer else v + 0.0), None


def _show(value: Any) -> str:
    """A short, one-line rendering of a user value (long numbers and strings are cut)."""
    s = escape(repr(value))
    return s if len(s) <= 40 else s[:37] + "..."


def escape(text: str) -> str:
    """``text`` with control characters (newline, tab, escape, …) written as ``\\xNN`` so a
    message built from user input is always one line."""
    return "".join(c if unicodedata.category(c)[0] != "C" or c == " " else f"\\x{ord(c):02x}" if ord(c) < 256
                   else f"\\u{ord(c):04x}" for c in text)


def has_control(text: str) -> bool:
    return any(unicodedata.category(c)[0] == "C" for c in text)


INF = math.inf
# --- the table ---------------------------------------------------------------------------------
# Scenario fields (docs/scenario.md). Reasons in docs/scenario.md "Ranges".
R: dict[str, Range] = {
    "duration_s": Range(1e-3, 1e6, "s", "100.0"),
    "packet_bytes": Range(64, 9000, "bytes", "1500", integer=True),
    "capacity_mbps": Range(1e-3, 1e6, "Mb/s", "60.0"),
    "delay_ms": Range(0, 1e4, "ms", "5.0"),
    "buffer_pkts": Range(1, 1e6, "packets", "50", integer=True),
    "loss": Range(0, 1, "", "0.0", hi_open=True),
    "red.min_th": Range(0, 1e6, "packets", "5"),
    "red.max_th": Range(0, 1e6, "packets", "15", lo_open=True),
    "red.max_p": Range(0, 1, "", "0.1", lo_open=True),
    "red.weight": Range(0, 1, "", "0.002", lo_open=True),
    "count": Range(1, 1e5, "flows", "1", integer=True),
    "time_s": Range(0, 1e6, "s", "0.0"),
    "rate_mbps": Range(1e-3, 1e6, "Mb/s", "1.0"),
    "mean_on_s": Range(1e-3, 1e6, "s", "1.0"),
    "mean_off_s": Range(0, 1e6, "s", "1.0"),
    # [sim]
    "sim.measure_from_s": Range(0, 1e6, "s", "20.0"),
    "sim.measure_to_s": Range(0, 1e6, "s", "100.0", lo_open=True),
    "sim.sample_interval_s": Range(1e-3, 1e6, "s", "0.1", zero_ok=True),
    "sim.start_jitter_s": Range(0, 1e4, "s", "1.0"),
    "sim.initial_cwnd": Range(1, 1e4, "packets", "10"),
    "sim.rto_min_s": Range(1e-3, 60, "s", "0.2"),
    "sim.delayed_ack_s": Range(1e-3, 1, "s", "0.04"),
    "sim.host_jitter_s": Range(0, 1, "s", "0.0001"),
    "sim.tcp_wmem_min": Range(1, 2**31, "bytes", "4096"),
    "sim.tcp_wmem_default": Range(1, 2**31, "bytes", "262144"),
    "sim.tcp_wmem_max": Range(1, 2**31, "bytes", "33554432"),
    "sim.sndbuf_per_mss": Range(256, 2**20, "bytes", "4352"),
    "sim.writer_wait_s": Range(0, 60, "s", "0.2"),
    "sim.tcp_rmem_min": Range(1, 2**31, "bytes", "4096"),
    "sim.tcp_rmem_default": Range(1, 2**31, "bytes", "262144"),
    "sim.tcp_rmem_max": Range(1, 2**31, "bytes", "33554432"),
    # [fluid]
    "fluid.gamma": Range(1e-12, 1e3, "1/packet", "1e-4"),
    "fluid.t_end": Range(1e-3, 1e6, "s", "100.0"),
    "fluid.at_s": Range(0, 1e6, "s", "50.0"),
    # [testbed]
    "testbed.runs": Range(1, 1000, "", "1", integer=True),
    "testbed.duration_s": Range(1, 1e5, "s", "60.0"),
    "testbed.warmup_s": Range(0, 1e5, "s", "10.0"),
    "testbed.sample_ms": Range(10, 1000, "ms", "100"),
    "testbed.seed": Range(0, 2**31, "", "1", integer=True),
    "testbed.spin_us": Range(0, 1000, "µs", "30", integer=True),
    # algorithm parameters (mpcc.algorithms.REGISTRY)
    "ewtcp.a": Range(0, 100, "", "1.0", lo_open=True),
    "scalable.a": Range(0, 100, "packets", "0.01", lo_open=True),
    "scalable.b": Range(1e-3, 1, "", "0.125", hi_open=True),
    "epsilon.epsilon": Range(0, 2, "", "1.0"),
    "olia.per_ack": Range(0, 1, "", "1"),
    "generalized.beta": Range(0, 10, "", "0.2"),
    "generalized.eta": Range(0, 100, "", "0.5"),
    "generalized.n": Range(1, 64, "", "2", zero_ok=False),
    "mstcp.a": Range(0, 100, "packets", "0.03", lo_open=True),
    "mstcp.b": Range(1e-3, 1, "", "0.5"),   # decrease factor: below 0.1 % a loss does not decrease
    "mtcp.alpha": Range(0, 1, "", "0.5"),
    "mtcp.beta": Range(0, 1, "", "0.5"),
    "mtcp.a": Range(0, 100, "packets", "1.0", lo_open=True),
    "mtcp.b": Range(1e-3, 1, "", "0.5"),
    "fast.alpha": Range(0, 1e5, "packets", "50", lo_open=True),
    "fast.gamma": Range(0, 1, "", "0.5", lo_open=True),
    "fast.update_interval_s": Range(1e-3, 10, "s", "0.02"),
    "fast.adapt_interval_s": Range(1e-3, 1e4, "s", "1.0", zero_ok=True),
    "fast.adapt_w": Range(0, 1e6, "packets", "125", lo_open=True),
    "fast.adapt_delta": Range(0, 1, "", "0.1", lo_open=True, hi_open=True),
    # heterogeneous networks (mpcc.hetero.model)
    "hetero.capacity": Range(1e-6, 1e9, "", "1.0"),
    "hetero.scale": Range(1e-9, 1e9, "", "1.0"),
    "hetero.exponent": Range(1e-3, 100, "", "1.0"),
    "hetero.threshold": Range(0, 1e9, "", "300"),
    "hetero.K": Range(1, 1e9, "", "10000"),
    "hetero.utility": Range(1e-15, 1e15, "", "1.0"),
    # α-fairness exponent; 8 in Tang et al. Example 3. Above ~10 the utilities x^(1−α)/(1−α) span
    # hundreds of decades over the rates of a network and the optimum is not found to tolerance
    # (example3 with α = 20: KKT violation 0.7); max-min-like fairness needs no larger exponent.
    "hetero.utility_alpha": Range(1e-3, 10, "", "2.0"),
    "hetero.kappa": Range(0, 1, "", "0.5", lo_open=True),
    "hetero.prob": Range(0, 1, "", "1.0", lo_open=True),
    "hetero.period": Range(1e-3, 1e6, "", "20.0"),
    "hetero.dt": Range(1e-4, 10, "", "0.05"),
    "hetero.tol": Range(1e-15, 1, "", "1e-7"),
    "hetero.max_iterations": Range(1, 1e6, "", "2000", integer=True),
    "hetero.duration": Range(1e-3, 1e6, "", "200.0"),
    "hetero.start": Range(0, 1e9, "", "0.3"),
    # command-line-only quantities
    "seed": Range(0, 2**63 - 1, "", "1", integer=True),
    "runs": Range(1, 1e5, "", "10", integer=True),
    "workers": Range(1, 1024, "", "2", integer=True),
    "rtt_s": Range(1e-4, 10, "s", "0.1"),
    "loss_p": Range(1e-9, 0.5, "", "0.01"),
    "probability": Range(0, 1, "", "0.5"),
    "unit_share": Range(0.5, 1, "", "0.8"),
    "rounds": Range(10, 1e8, "rounds", "20000", integer=True),
    "replicas": Range(1, 1e4, "", "4", integer=True),
    "smooth_rtts": Range(0, 1e6, "RTTs", "20"),
    "smooth_s": Range(0, 1e6, "s", "2.0"),
    "subflows": Range(1, 8, "", "2", integer=True),
    "flows": Range(1, 1e5, "", "1", integer=True),
    "bdp_pkts": Range(1e-3, 1e9, "packets", "42"),
    "buffer_ratio": Range(0, 1e3, "", "0.0"),
    "routes": Range(1, 8, "", "2", integer=True),
    "samples": Range(1, 20000, "", "2000", integer=True),   # 8 routes × 20000 Jacobians ≈ 130 MB
    "mtc_subflows": Range(1, 64, "", "2", integer=True),
    "mtc_flows": Range(1, 1000, "", "1", integer=True),
    "decades": Range(0, 12, "", "2.0"),
    "rates_pps": Range(1e-6, 1e9, "packets/s", "100"),
    "capacity_scale": Range(1e-6, 1e6, "", "1.0"),
    "trials": Range(1, 1e6, "", "1000", integer=True),
    "threshold": Range(0, 10, "", "0.1", lo_open=True),
}


def check(name: str, value: Any) -> tuple[float | int | None, str | None]:
    return R[name].check(value)


class Number(click.ParamType):
    """A click type for a flag whose value must lie in ``ranges.R[name]``; the error names the
    range and an example (the CLI prints it as one line)."""

    def __init__(self, name: str):
        self.rname = name
        self.range = R[name]
        self.name = "integer" if self.range.integer else "float"

    def convert(self, value, param, ctx):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            v = value
        else:
            text = str(value).strip()
            try:
                v = int(text) if self.range.integer else float(text)
            except ValueError:
                kind = "an integer" if self.range.integer else "a number"
                self.fail(f"expected {kind}, got {_show(text)} (fix: e.g. {self.range.example})", param, ctx)
        out, problem = self.range.check(v)
        if problem:
            self.fail(f"{problem} (fix: use a value in {self.range.describe()}, e.g. {self.range.example})",
                      param, ctx)
        return out

    def __repr__(self):
        return f"Number({self.rname!r})"


def number_type(name: str) -> Number:
    return Number(name)


def number_list(text: str, name: str, flag: str, *, allow_inf: bool = False) -> list[float]:
    """Comma-separated numbers of a flag, each in ``R[name]`` (``inf`` too with ``allow_inf``);
    a problem is one :class:`mpcc.errors.MpccError` naming the flag."""
    from .errors import MpccError
    r = R[name]
    out = []
    parts = [v.strip() for v in str(text).split(",") if v.strip() != ""]
    if not parts:
        raise MpccError(f"{flag}: no values given (fix: e.g. {flag} {r.example},{r.example})")
    if len(parts) > 10_000:
        raise MpccError(f"{flag}: {len(parts)} values; at most 10000 (fix: give fewer values)")
    for v in parts:
        if allow_inf and v.lower() in ("inf", "infinity"):
            out.append(math.inf)
            continue
        try:
            x = float(v)
        except ValueError:
            raise MpccError(f"{flag}: expected comma-separated numbers, got {_show(v)} "
                            f"(fix: e.g. {flag} {r.example},{r.example})") from None
        _, problem = r.check(x)
        if problem:
            raise MpccError(f"{flag}: {problem} (fix: use values in {r.describe()}, e.g. {flag} {r.example})")
        out.append(x)
    return out
