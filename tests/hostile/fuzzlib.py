"""Hostile-input fuzzing of the ``mpcc`` command line (issue #12), shared by the CI suite
(tests/hostile/test_fuzz.py) and the long campaign (bench/fuzz/campaign.py).

Inputs are generated with hypothesis strategies: valid small scenario / hetero files mutated at
one or more fields with hostile values (huge integers, nan/inf, 5e-324, negative zero, control
characters, wrong types, missing and unknown keys), and every command's flags with hostile or
small valid values. Each case runs IN PROCESS (``mpcc.cli.main(argv)``, SystemExit caught) and
must end in exactly one of:

* exit 0 with physically possible output: with ``--json`` no null/nan/inf anywhere, every link
  load ≤ capacity·(1 + tol) plus what its buffer can absorb over the measurement window;
* exit 2 with exactly one stderr line ``mpcc: error: … (fix: …)``.

Anything else — a traceback (any other exception), another exit code, a multi-line error,
output on stderr with exit 0 — is a finding. The generators keep every valid case small
(durations ≤ 4 s, capacities ≤ 50 Mb/s, ≤ 2000 rounds) so a case takes well under a second.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import math
import os
import signal
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

# --- hostile values ---------------------------------------------------------------------------
HUGE_INT = 10**400
HOSTILE_NUMBERS = [HUGE_INT, -HUGE_INT, 2**31, 2**32, 2**63, -1, 0, 1e300, -1e300, 1e-300, 5e-324, -0.0,
                   math.nan, math.inf, -math.inf, 1e9, 1e-9, 1e6, 1000000000000]
HOSTILE_STRINGS = ["", " ", "a\nb", "tab\there", "esc\x1b[31m", "nul\x00", "x" * 300, "ünïcødé", "\u2028sep"]
HOSTILE_OTHER = [True, False, [], [1, 2], {"a": 1}, {}]


def hostile_value():
    return st.one_of(st.sampled_from(HOSTILE_NUMBERS), st.sampled_from(HOSTILE_STRINGS),
                     st.sampled_from(HOSTILE_OTHER),
                     st.floats(allow_nan=True, allow_infinity=True),
                     st.integers(min_value=-(2**70), max_value=2**70))


# --- TOML writer (tomllib reads; nothing in the stdlib writes) ----------------------------------
def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        r = repr(v)
        return r if any(c in r for c in ".en") else r + ".0"
    if isinstance(v, str):
        return json.dumps(v)   # JSON string escapes are valid TOML basic-string escapes
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))} = {_toml_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(type(v))


def to_toml(doc: dict) -> str:
    lines, tables = [], []
    for k, v in doc.items():
        if isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            tables.append((k, v, True))
        elif isinstance(v, dict) and k in ("sim", "fluid", "testbed", "algorithm1", "dynamics"):
            tables.append((k, v, False))
        else:
            lines.append(f"{json.dumps(str(k))} = {_toml_value(v)}")
    for k, v, array in tables:
        for item in (v if array else [v]):
            lines.append(f"\n[[{k}]]" if array else f"\n[{k}]")
            lines.extend(f"{json.dumps(str(kk))} = {_toml_value(x)}" for kk, x in item.items())
    return "\n".join(lines) + "\n"


# --- scenarios ------------------------------------------------------------------------------
ALGOS = ["reno", "balia", "lia", "olia", "ewtcp", "coupled", "semicoupled", "mstcp", "fully-coupled",
         {"name": "generalized", "beta": 0.2, "eta": 0.5, "n": "inf"}, {"name": "fast", "alpha": 20.0},
         {"name": "mtcp", "alpha": 0.5, "beta": 0.5}]


@st.composite
def small_scenario(draw) -> dict:
    """A valid scenario that simulates in milliseconds."""
    n_links = draw(st.integers(1, 3))
    duration = draw(st.sampled_from([0.05, 0.5, 1.0, 2.0, 4.0]))
    links = []
    for i in range(n_links):
        link = {"name": f"l{i}", "capacity_mbps": draw(st.sampled_from([0.01, 0.5, 2.0, 10.0, 50.0])),
                "delay_ms": draw(st.sampled_from([0.0, 1.0, 5.0, 40.0])),
                "buffer_pkts": draw(st.sampled_from([1, 5, 50, 400]))}
        if draw(st.booleans()) and link["buffer_pkts"] >= 5:
            link["aqm"] = "red"
            link["red"] = {"min_th": 1, "max_th": link["buffer_pkts"], "max_p": 0.1,
                           "ecn": draw(st.booleans())}
        if draw(st.integers(0, 4)) == 0:
            link["loss"] = draw(st.sampled_from([0.001, 0.05]))
        links.append(link)
    names = [l["name"] for l in links]
    groups = []
    for g in range(draw(st.integers(1, 2))):
        k = draw(st.integers(1, min(2, n_links)))
        paths = [[names[(g + j) % n_links]] for j in range(k)]
        groups.append({"name": f"g{g}", "count": draw(st.integers(1, 4)), "algorithm": draw(st.sampled_from(ALGOS)),
                       "paths": paths})
    doc = {"name": "fuzz", "duration_s": duration, "links": links, "groups": groups}
    if draw(st.integers(0, 3)) == 0:
        doc["background"] = [{"name": "udp", "path": [names[0]], "rate_mbps": 0.5, "mean_on_s": 0.2,
                              "mean_off_s": 0.2}]
    if draw(st.integers(0, 3)) == 0:
        doc["sim"] = {"sample_interval_s": 0.1, "start_jitter_s": 0.01}
    return doc


def _paths(doc, prefix=()):
    """Every (path, value) leaf and table of a decoded document."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield prefix + (k,), v
            yield from _paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield prefix + (i,), v
            yield from _paths(v, prefix + (i,))


def _set(doc, path, value):
    node = doc
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = value


def _delete(doc, path):
    node = doc
    for p in path[:-1]:
        node = node[p]
    del node[path[-1]]


@st.composite
def mutated(draw, base) -> dict:
    """``base`` with 1–3 mutations: a hostile value at a field, a deleted field, an unknown key,
    or (for engine tables) a hostile engine option."""
    doc = json.loads(json.dumps(base))
    for _ in range(draw(st.integers(1, 3))):
        with contextlib.suppress(KeyError, IndexError, TypeError, AttributeError):
            _mutate_once(draw, doc)
    return doc


def _mutate_once(draw, doc) -> None:
    paths = [p for p, _ in _paths(doc)]
    kind = draw(st.integers(0, 9))
    if kind <= 5 and paths:
        _set(doc, draw(st.sampled_from(paths)), copy.deepcopy(draw(hostile_value())))
    elif kind == 6 and paths:
        p = draw(st.sampled_from(paths))
        with contextlib.suppress(KeyError, IndexError, TypeError):
            _delete(doc, p)
    elif kind == 7:
        table = draw(st.sampled_from(["sim", "fluid", "testbed"]))
        opts = {"sim": ["measure_from_s", "measure_to_s", "sample_interval_s", "start_jitter_s", "initial_cwnd",
                        "rto_min_s", "delayed_ack", "delayed_ack_s", "host_jitter_s", "ecn", "bogus"],
                "fluid": ["rtt", "gamma", "t_end", "at_s", "bogus"],
                "testbed": ["runs", "duration_s", "warmup_s", "sample_ms", "seed", "spin_us", "algorithm", "receiver"]}[table]
        doc.setdefault(table, {})[draw(st.sampled_from(opts))] = copy.deepcopy(draw(hostile_value()))
    elif kind == 8 and doc.get("groups"):
        g = draw(st.integers(0, len(doc["groups"]) - 1))
        alg = draw(st.sampled_from(["ewtcp", "mstcp", "mtcp", "generalized", "fast"]))
        par = draw(st.sampled_from(["a", "b", "alpha", "beta", "eta", "n", "gamma", "update_interval_s",
                                    "adapt_interval_s", "adapt_w", "adapt_delta"]))
        doc["groups"][g]["algorithm"] = {"name": alg, par: copy.deepcopy(draw(hostile_value()))}
    else:
        doc[draw(st.sampled_from(["bogus", "links", "groups", "name", "duration_s", "packet_bytes"]))] = \
            copy.deepcopy(draw(hostile_value()))


# --- heterogeneous networks (mpcc hetero) -------------------------------------------------------
HETERO_BASE = {
    "name": "fuzz-hetero",
    "links": [{"name": "l1", "capacity": 1.0}, {"name": "l2", "capacity": 2.0}],
    "protocols": [{"name": "p1", "mapping": {"l1": {"scale": 1.0, "exponent": 1.0}, "l2": {"scale": 1.0, "exponent": 1.0}}},
                  {"name": "p2", "mapping": {"l1": {"scale": 2.0, "exponent": 1.0}, "l2": {"kind": "red", "min_th": 0.1,
                                                                                          "max_th": 2.0, "max_p": 0.5}}}],
    "sources": [{"name": "s1", "protocol": "p1", "links": ["l1"], "utility_alpha": 2.0, "utility_weight": 1.0},
                {"name": "s2", "protocol": "p2", "links": ["l1", "l2"], "utility_alpha": 1.0, "utility_weight": 0.5},
                {"name": "s3", "protocol": "p1", "links": ["l2"]}],
    "algorithm1": {"kappa": 0.5, "period": 1.0, "dt": 0.1, "max_iterations": 50},
    "dynamics": {"starts": [[0.3, 0.3]], "duration": 5.0, "dt": 0.05},
}


# --- command lines --------------------------------------------------------------------------
def flag_value():
    """A flag value: hostile (as text) or small and valid."""
    return st.one_of(
        st.sampled_from(["nan", "inf", "-inf", "-1", "0", "-0", "1e300", "1e-300", "5e-324", "1e9", "2147483648",
                         "99999999999999999999", "abc", "", "1,2", "0x10", "1_000", " 3 ", "\n"]),
        st.sampled_from(["0.5", "1", "2", "0.1", "0.01", "0.8", "10", "100"]),
        st.floats(allow_nan=True, allow_infinity=True).map(repr),
        st.integers(-(2**66), 2**66).map(str))


#: command → [(flag, how)], how = "num" (flag_value), "flag" (switch), or a list of choices
COMMANDS: dict[tuple[str, ...], list[tuple[str, Any]]] = {
    ("mtc", "utilization"): [("--algorithm", ["mstcp", "coupled-decrease", "fully-coupled", "x"]), ("--subflows", ["1", "2", "8", "64", "65", "0", "nan"]),
                             ("--flows", ["1", "4", "1000", "1001", "-1"]), ("--bdp", "num"), ("--buffer-ratio", "num"), ("--decrease", "num"),
                             ("--json", "flag")],
    ("mtc", "paths"): [("--alpha", "num"), ("--beta", "num"), ("--loss", ["0.01,0.02", "5e-324,5e-324", "nan", "0.5,0.5,0.1",
                                                                       "1", "0", "-0.1", "inf", ",", "0.01"]),
                       ("--a", "num"), ("--b", "num"), ("--json", "flag")],
    ("mtc", "flappiness"): [("--algorithm", ["mstcp", "fully-coupled", "mtcp", "bogus"]), ("--alpha", "num"), ("--beta", "num"),
                            ("--subflows", "num"), ("--loss", ["0.002", "0.01,0.02", "nan", "1e-300", "0.3", "2"]),
                            ("--rtt", "num"), ("--rounds", ["10", "50", "200", "1000", "nan", "1e9", "-5", "99999999999999999999"]),
                            ("--replicas", ["1", "2", "0", "1e6", "-1"]), ("--seed", "num"), ("--smooth-rtts", "num"),
                            ("--smooth-s", "num"), ("--enter", "num"), ("--leave", "num"), ("--json", "flag")],
    ("fluid", "equilibrium"): [("SCENARIO", None), ("--at", "num"), ("--rtt", ["propagation", "propagation+queue", "x"]),
                               ("--algorithm", ["balia", "lia", "olia", "generalized", "bogus"]),
                               ("--param", ["beta=0.2", "eta=nan", "n=inf", "beta=1e300", "x", "eta=-1"]), ("--json", "flag")],
    ("fluid", "dynamics"): [("SCENARIO", None), ("--t-end", ["0.5", "1", "nan", "inf", "-1", "1e300", "0"]),
                            ("--gamma", "num"), ("--json", "flag")],
    ("fluid", "conditions"): [("ALGORITHM", ["balia", "lia", "generalized", "reno", "bogus"]), ("--routes", "num"),
                              ("--rates", ["100,50", "nan,1", "1e300,1", "5e-324,1", "-1,2", "x"]),
                              ("--rtt", ["0.1,0.1", "0,0.1", "nan,0.1", "inf,1"]), ("--samples", ["10", "50", "0", "-1", "1e9"]),
                              ("--decades", "num"), ("--seed", "num"), ("--json", "flag")],
    ("fluid", "sweep"): [("SCENARIO", None), ("--beta", ["0.2", "nan", "1e300", "-1", "0,1"]), ("--eta", ["0.5", "inf", "-0"]),
                         ("--n", ["inf", "2", "0", "1.5", "nan"]), ("--json", "flag")],
    ("sim",): [("SCENARIO", None), ("--runs", ["1", "2", "3", "0", "-1", "nan", "1000000000"]), ("--seed", "num"),
               ("--sample-interval", "num"), ("--measure", "pair"), ("--algorithm", ["balia", "olia", "bogus", "fast"]),
               ("--json", "flag"), ("-q", "flag")],
    ("check",): [("SCENARIO", None)],
    ("vectors", "check"): [("--file", "path")],
    ("hetero", "run"): [("HETERO", None), ("--kappa", "num"), ("--prob", "num"), ("--period", ["1", "2", "nan", "1e300", "-1", "0"]),
                        ("--seed", "num"), ("--algorithm1", ["sync", "async", "x"]), ("--json", "flag")],
    # commands whose valid runs need root or take minutes: only hostile values (exit 2 expected)
    ("testbed",): [("SCENARIO", None), ("--runs", "bad"), ("--duration", "bad"), ("--warmup", "bad"), ("--sample-ms", "bad"),
                   ("--receiver", "bad")],
    ("kernel", "load"): [("NAME", ["generalized"]), ("--beta", "bad"), ("--eta", "bad")],
    ("reproduce", "peng2016"): [("--runs", "bad"), ("--seed", "bad"), ("--kernel-runs", "bad")],
    ("hetero", "example4"): [("--trials", "bad"), ("--seed", "bad"), ("--workers", "bad")],
    ("hetero", "example1"): [("--runs", "bad"), ("--duration", "bad"), ("--workers", "bad")],
}
BAD_VALUES = ["nan", "inf", "-inf", "-1", "1e300", "abc", "", "99999999999999999999", "-0.5"]  # invalid for every flag that takes them


@st.composite
def command_line(draw, scenario_file: str, hetero_file: str):
    """(argv, needs_error): a command with some of its flags. ``needs_error``: the command is
    one whose valid runs are out of scope, and its argv holds at least one bad value."""
    cmd = draw(st.sampled_from(sorted(COMMANDS)))
    spec = COMMANDS[cmd]
    argv = list(cmd)
    bad_only = any(how == "bad" for _, how in spec)
    chosen_bad = False
    for flag, how in spec:
        if flag in ("SCENARIO", "HETERO"):
            argv.append(scenario_file if flag == "SCENARIO" else hetero_file)
            continue
        if flag in ("ALGORITHM", "NAME"):
            argv.append(draw(st.sampled_from(how)))
            continue
        if not draw(st.booleans()):
            continue
        if how == "flag":
            argv.append(flag)
        elif how == "num":
            argv += [flag, draw(flag_value())]
        elif how == "path":
            argv += [flag, draw(st.sampled_from([scenario_file, hetero_file]))]
        elif how == "pair":
            argv += [flag, draw(flag_value()), draw(flag_value())]
        elif how == "bad":
            argv += [flag, draw(st.sampled_from(BAD_VALUES))]
            chosen_bad = True
        else:
            argv += [flag, draw(st.sampled_from(how))]
    if bad_only and not chosen_bad:
        flag = draw(st.sampled_from([f for f, h in spec if h == "bad"]))
        argv += [flag, draw(st.sampled_from(BAD_VALUES))]
    # commands with required flags: sometimes leave them out (click's usage error)
    if cmd == ("mtc", "paths") and draw(st.integers(0, 4)) > 0:
        for req, default in (("--alpha", "0.5"), ("--beta", "1"), ("--loss", "0.01,0.02")):
            if req not in argv:
                argv += [req, default]
    return argv, bad_only


# --- running and judging ---------------------------------------------------------------------
@dataclass
class Outcome:
    argv: list[str]
    code: int | None
    out: str
    err: str
    exception: BaseException | None = None
    problems: list[str] = field(default_factory=list)


class CaseTimeout(Exception):
    pass


#: The product's run-time limit while fuzzing (mpcc.cost.MAX_WALL_S, 10 min for users). A case
#: must end within run_cli's 60 s of CPU, and the product stops, with its one-line error, only
#: runs estimated above the limit: a valid mutant such as duration_s = 1e6 at 10 Mb/s (estimated
#: 3.5 min) would run past the case's bound. With the limit at 10 s every case the estimate lets
#: run fits the bound: the estimate assumes half the measured simulator speed, and `--runs 2` on
#: 2 cores uses at most twice its wall time in CPU, 20 s of 60. A case that still times out is a
#: finding (the estimate was too low), not chance. Measured on 9,000 drawn scenario cases (ten
#: suite runs' worth, 2026-12-02): 42 were valid simulator runs, 3 of them estimated above 10 s;
#: the users' limit had let each run, and one such case ended a fresh clone's `make test`.
CASE_MAX_WALL_S = 10.0


@contextlib.contextmanager
def case_cost_limit(max_wall_s: float = CASE_MAX_WALL_S):
    """The product's cost limit set to ``max_wall_s`` while fuzzing (restored after)."""
    from mpcc import cost
    old, cost.MAX_WALL_S = cost.MAX_WALL_S, max_wall_s
    try:
        yield
    finally:
        cost.MAX_WALL_S = old


def run_cli(argv: list[str], timeout_s: float = 60.0, wall_timeout_s: float = 600.0) -> Outcome:
    """``mpcc argv`` in this process: (exit code, stdout, stderr); an exception other than
    SystemExit is recorded (a traceback the user would see). A case may use ``timeout_s`` of CPU
    time (this process, all threads: ITIMER_PROF) and ``wall_timeout_s`` of wall time (a case that
    blocks): a CPU bound, so that a case is judged the same on a machine whose other jobs (a
    parallel test worker, other users) take most of the CPU."""
    from mpcc.cli import main

    out, err = io.StringIO(), io.StringIO()
    code, exc = None, None

    def _cpu(signum, frame):
        raise CaseTimeout(f"case exceeded {timeout_s:g} s of CPU time")

    def _wall(signum, frame):
        raise CaseTimeout(f"case exceeded {wall_timeout_s:g} s")

    old = signal.signal(signal.SIGPROF, _cpu), signal.signal(signal.SIGALRM, _wall)
    signal.setitimer(signal.ITIMER_PROF, timeout_s)
    signal.setitimer(signal.ITIMER_REAL, wall_timeout_s)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main(list(argv))
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException as e:  # noqa: BLE001 - anything else is a finding
        exc = e
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGPROF, old[0])
        signal.signal(signal.SIGALRM, old[1])
    return Outcome(list(argv), code, out.getvalue(), err.getvalue(), exc)


def _nonfinite(obj, path=""):
    if obj is None:
        return [path or "(value)"]
    if isinstance(obj, float) and not math.isfinite(obj):
        return [path]
    if isinstance(obj, dict):
        return [p for k, v in obj.items() for p in _nonfinite(v, f"{path}.{k}")]
    if isinstance(obj, list):
        return [p for i, v in enumerate(obj) for p in _nonfinite(v, f"{path}[{i}]")]
    return []


#: JSON fields that may legitimately be null (documented "not applicable" values).
NULL_OK = ("trace_file",)


def judge(o: Outcome, doc: dict | None = None, *, must_fail: bool = False) -> list[str]:
    """The problems of an outcome (empty: it kept the promise). ``doc``: the scenario the
    command ran, for the physical checks of its links."""
    p = []
    if o.exception is not None:
        p.append(f"exception {type(o.exception).__name__}: {str(o.exception)[:200]}")
        return p
    if o.code == 0:
        if must_fail:
            p.append("exit 0 for a command given a bad value")
        noise = [l for l in o.err.splitlines() if l.strip() and not l.startswith("mpcc: warning: ")]
        if noise:   # advisory one-line warnings of the project are allowed, anything else is not
            p.append(f"exit 0 but stderr: {o.err.strip()[:200]!r}")
        if "--json" in o.argv and o.out.strip():
            try:
                data = json.loads(o.out)
            except ValueError:
                p.append("--json output is not JSON")
                return p
            bad = [x for x in _nonfinite(data) if not x.endswith(NULL_OK)]
            if bad:
                p.append(f"null/nan/inf in --json output at {bad[:3]}")
            p += physical(data, doc)
    elif o.code == 2:
        lines = o.err.rstrip("\n").split("\n")
        if len(lines) != 1:
            p.append(f"{len(lines)} stderr lines: {o.err[:300]!r}")
        elif not lines[0].startswith("mpcc: error: ") or "(fix:" not in lines[0]:
            p.append(f"error line not in the project's form: {lines[0][:200]!r}")
    else:
        p.append(f"exit code {o.code}; stderr {o.err[-300:]!r}")
    return p


def physical(data, doc: dict | None, tol: float = 1e-3) -> list[str]:
    """Loads within capacity: a link's accepted rate over the window is at most its capacity
    plus a full buffer's worth (packets accepted into the queue but not yet sent)."""
    if not isinstance(data, dict) or not doc or not isinstance(data.get("links"), dict):
        return []
    p = []
    links = {l["name"]: l for l in doc.get("links", []) if isinstance(l, dict) and "name" in l}
    window = data.get("measure_s") or [0.0, doc.get("duration_s", 1.0)]
    span = max(float(window[1]) - float(window[0]), 1e-9)
    bits = 8.0 * doc.get("packet_bytes", 1500)
    for name, res in data["links"].items():
        l = links.get(name)
        if l is None or not isinstance(res, dict):
            continue
        cap = float(l["capacity_mbps"])
        slack = l.get("buffer_pkts", 0) * bits / span / 1e6 + bits / span / 1e6
        if res.get("load_mbps", 0) > cap * (1 + tol) + slack:
            p.append(f"link {name}: load {res['load_mbps']:.6g} Mb/s > capacity {cap:g} (+ buffer slack {slack:.3g})")
        if data.get("engine") == "sim" and not 0 <= res.get("price", 0) <= 1 + 1e-9:   # sim: a fraction
            p.append(f"link {name}: price {res['price']} outside [0, 1]")
    for name, g in (data.get("groups") or {}).items():
        if isinstance(g, dict) and isinstance(g.get("rate_mbps"), (int, float)) and g["rate_mbps"] < -1e-9:
            p.append(f"group {name}: negative rate {g['rate_mbps']}")
    return p


def write_case(tmpdir: str | Path, name: str, doc_or_text) -> str:
    path = Path(tmpdir) / name
    path.write_text(doc_or_text if isinstance(doc_or_text, str) else to_toml(doc_or_text))
    return str(path)


def scenario_command(doc_path: str, which: int) -> list[str]:
    """One of the commands that read a scenario file."""
    return [["check", doc_path], ["sim", "--json", "-q", doc_path], ["fluid", "equilibrium", "--json", doc_path],
            ["sim", "--json", "-q", "--runs", "2", doc_path], ["fluid", "dynamics", "--json", "--t-end", "0.5", doc_path]
            ][which]


def fresh_tmpdir() -> str:
    return tempfile.mkdtemp(prefix="mpcc-fuzz-")


os.environ.setdefault("MPLBACKEND", "Agg")
