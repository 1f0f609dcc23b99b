"""Shared test vectors: ``spec/vectors/algorithms.json``.

The Python reference (:mod:`mpcc.algorithms`) computes, for a fixed set of connections, every
route's per-ACK increase and per-loss decrease. The Rust simulator (``crates/mpcc-core``) and
the BPF fixed-point code (``bpf/``) are tested against the same file, each within the tolerance
it states. The file is generated (``mpcc vectors write``) and committed; ``mpcc vectors check``
(run by the tests) fails if the committed file no longer matches the reference.

Case schema::

    {"id": "balia/n2/unequal-rtt/0", "algorithm": {"name": "balia", ...params},
     "cwnd": [..packets..], "rtt": [..seconds..], "state": {"loss_interval": [...]},
     "increase": [I_r per route], "decrease": [D_r per route],
     "cwnd_after_loss": [max(w_r − D_r, min_cwnd)], "min_cwnd": FLOAT,
     "update": [FAST only: window after one periodic update, with w_old = cwnd],
     "update_old": {FAST only: "old_cwnd": [w_old per route, the window the RTT samples' packets
                    were sent under, round(RTT/interval) updates ago], "update": [the window after
                    the update with that w_old]},
     "per_ack": {OLIA only: mptcp_olia.c's per-ACK counter, per route — "counter_increment":
                 trunc(2^10·I_r), "acks_per_step": ACKs from a zero counter until the window
                 moves one packet (0: never)},
     "adapt": [FAST with Algorithm 2 only: {"alpha", "q_s", "lost", "sent", "alpha_next"}, ...]}

``adapt`` steps are Algorithm 2 of Tang et al. (:meth:`mpcc.algorithms.fast.Fast.adapt`): from α,
the mean queueing delay q_s (a whole number of 1/8 µs, the kernel's srtt unit) and the interval's
``lost`` congestion signals out of ``sent`` packets (l = lost/sent), the next α.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import click
import numpy as np

from .errors import MpccError

from . import algorithms
from .algorithms import olia

SPEC_PATH = Path(__file__).resolve().parents[2] / "spec" / "vectors" / "algorithms.json"

#: Algorithms (with parameter variants) the vectors cover.
VECTOR_ALGORITHMS: list[dict] = [
    {"name": "reno"},
    {"name": "ewtcp"}, {"name": "ewtcp", "a": 0.5},
    {"name": "coupled"},
    {"name": "semicoupled"},
    {"name": "lia"},
    {"name": "olia"},
    {"name": "balia"},
    {"name": "generalized", "beta": 0.2, "eta": 0.5, "n": "inf"},
    {"name": "generalized", "beta": 1.0, "eta": 0.0, "n": 1},
    {"name": "generalized", "beta": 0.5, "eta": 1.0, "n": 2},
    {"name": "mstcp", "a": 0.03, "b": 0.5},
    {"name": "mtcp", "alpha": 0.0, "beta": 1.0},
    {"name": "mtcp", "alpha": 1.0, "beta": 0.0},
    {"name": "mtcp", "alpha": 1.0, "beta": 1.0},
    {"name": "mtcp", "alpha": 0.3, "beta": 0.7, "a": 1.0, "b": 0.5},
    {"name": "fast", "alpha": 50.0, "gamma": 0.5},
    {"name": "scalable"}, {"name": "scalable", "a": 0.02, "b": 0.25},
    # Tang et al. Algorithm 2: the paper's Example 1b setting and one far from it
    {"name": "fast", "alpha": 50.0, "gamma": 0.5, "adapt_interval_s": 120.0, "adapt_w": 125.0, "adapt_delta": 0.1},
    {"name": "fast", "alpha": 20.0, "gamma": 1.0, "adapt_interval_s": 10.0, "adapt_w": 1820.0, "adapt_delta": 0.25},
    # the ε-family: both ends (htsim's a = 1), LIA (ε = 1) and two interior points
    {"name": "epsilon", "epsilon": 0.0}, {"name": "epsilon", "epsilon": 0.5}, {"name": "epsilon"},
    {"name": "epsilon", "epsilon": 1.5}, {"name": "epsilon", "epsilon": 2.0},
]

#: the kernel's RTT unit (srtt_us: 1/8 µs) per second; the adapt steps' q_s are whole multiples
Q_UNITS_PER_S = 8e6


def _connections(rng: np.random.Generator):
    """(label, cwnd, rtt) for 1..8 routes: equal and very unequal RTTs, tiny and huge windows."""
    out = []
    for n in range(1, 9):
        out.append(("equal-rtt", np.full(n, 10.0) + np.arange(n) * 3.0, np.full(n, 0.02)))
        out.append(("unequal-rtt", rng.uniform(2, 200, n).round(3), np.geomspace(0.001, 0.5, n) if n > 1 else np.array([0.3])))
        out.append(("tiny", rng.choice([1.0, 1.5, 2.0, 3.0], n), rng.uniform(0.005, 0.05, n).round(5)))
        out.append(("huge", rng.uniform(1e4, 1e6, n).round(1), rng.uniform(0.01, 0.3, n).round(5)))
        out.append(("mixed", np.where(np.arange(n) % 2 == 0, 1.0, 5e4), rng.uniform(0.001, 0.2, n).round(5)))
        out.append(("equal-windows", np.full(n, 40.0), np.full(n, 0.05)))
    return out


def _state(algo, label, cwnd, rtt, rng):
    state = {}
    if "loss_interval" in algo.state_keys:
        n = len(cwnd)
        ell = rng.uniform(10, 1000, n).round(0)
        if label == "equal-windows" or n == 1:
            ell = np.full(n, 100.0)
        elif label == "mixed":  # best path is a non-max-window path: exercises ε ≠ 0
            ell = np.where(cwnd == cwnd.min(), 1e6, 10.0)
        state["loss_interval"] = ell
    if "base_rtt" in algo.state_keys:
        state["base_rtt"] = (rtt * rng.uniform(0.3, 1.0, len(rtt))).round(6)
    return state


def _adapt_steps(algo, rng) -> list[dict]:
    """Algorithm 2 steps for one case: a random one, no loss with and without a queue, a queue-free
    interval with losses (α* = 0), α just below and just above α* (lands on it), a huge and a
    tiny α."""
    def q_of(lo, hi):
        return float(rng.integers(round(lo * Q_UNITS_PER_S), round(hi * Q_UNITS_PER_S))) / Q_UNITS_PER_S

    def target(q, lost, sent):
        return q / (lost / sent * algo.adapt_w) * algo.alpha

    steps = [(round(float(rng.uniform(1, 500)), 3), q_of(1e-4, 0.2), int(rng.integers(1, 500)), int(rng.integers(1000, 10**7))),
             (round(float(rng.uniform(1, 500)), 3), q_of(1e-4, 0.2), 0, int(rng.integers(1, 10**6))),
             (round(float(rng.uniform(1, 500)), 3), 0.0, 0, int(rng.integers(1, 10**6))),
             (round(float(rng.uniform(1, 500)), 3), 0.0, int(rng.integers(1, 100)), int(rng.integers(100, 10**6))),
             (round(float(rng.uniform(5000, 60000)), 1), q_of(1e-3, 0.5), int(rng.integers(1, 10)), int(rng.integers(10**4, 10**7))),
             (round(float(rng.uniform(0.01, 1)), 4), q_of(1e-3, 0.5), int(rng.integers(1, 10)), int(rng.integers(10**4, 10**7)))]
    for side in (-0.5, 0.5):                      # within one step of α*
        q, lost, sent = q_of(1e-3, 0.1), int(rng.integers(1, 200)), int(rng.integers(10**4, 10**6))
        steps.append((round(target(q, lost, sent) * (1 + side * algo.adapt_delta), 4), q, lost, sent))
    return [{"alpha": a, "q_s": q, "lost": lost, "sent": sent,
             "alpha_next": algo.adapt(a, q, lost / sent)} for a, q, lost, sent in steps]


def _seed(tag: str, stream: str) -> int:
    """The random inputs of one algorithm variant are seeded from its own tag (``describe()``)
    and the stream's name: adding, removing or reordering a variant never changes another's."""
    return int.from_bytes(hashlib.sha256(f"{tag}/{stream}".encode()).digest()[:8], "little")


def build() -> dict:
    cases = []
    for spec in VECTOR_ALGORITHMS:
        algo = algorithms.get(spec)
        tag = algo.describe()
        rng = np.random.default_rng(_seed(tag, "cases"))
        rng_adapt = np.random.default_rng(_seed(tag, "adapt"))   # FAST's Algorithm 2 steps
        rng_old = np.random.default_rng(_seed(tag, "old"))       # FAST's w_old
        for k, (label, cwnd, rtt) in enumerate(_connections(rng)):
            cwnd, rtt = np.asarray(cwnd, float), np.asarray(rtt, float)
            state = _state(algo, label, cwnd, rtt, rng)
            case = {
                "id": f"{tag}/n{len(cwnd)}/{label}",
                "algorithm": {kk: (("inf" if math.isinf(v) else v) if isinstance(v, float) else v)
                              for kk, v in {"name": algo.name, **algo.params}.items()},
                "cwnd": cwnd.tolist(), "rtt": rtt.tolist(),
                "state": {kk: np.asarray(v).tolist() for kk, v in state.items()},
                "increase": algo.on_ack(cwnd, rtt, **state).tolist(),
                "decrease": algo.on_loss(cwnd, rtt, **state).tolist(),
                "cwnd_after_loss": algo.cwnd_after_loss(cwnd, rtt, **state).tolist(),
                "min_cwnd": algo.min_cwnd(len(cwnd)),
            }
            if hasattr(algo, "on_update"):
                case["update"] = algo.on_update(cwnd, rtt, state["base_rtt"]).tolist()
                old = (cwnd * rng_old.uniform(0.25, 2.0, len(cwnd))).round(3).clip(1.0)
                case["update_old"] = {"old_cwnd": old.tolist(),
                                      "update": algo.on_update(cwnd, rtt, state["base_rtt"], old_cwnd=old).tolist()}
            if algo.name == "olia":
                steps = [olia.per_ack_counter(i) for i in case["increase"]]
                case["per_ack"] = {"counter_increment": [d for d, _ in steps], "acks_per_step": [k for _, k in steps]}
            if getattr(algo, "adapt_interval_s", 0.0) > 0:
                case["adapt"] = _adapt_steps(algo, rng_adapt)
            cases.append(case)
    return {
        "schema": 1,
        "generator": "mpcc.vectors (python reference, mpcc.algorithms)",
        "units": {"cwnd": "packets", "rtt": "seconds", "loss_interval": "packets",
                  "increase": "packets added to cwnd of route r per ACK on route r",
                  "decrease": "packets removed from cwnd of route r per loss on route r"},
        "tolerance": {"rel": 1e-9, "abs": 1e-12,
                      "note": "for floating-point engines; fixed-point engines state their own bound"},
        "cases": cases,
    }


MATH_PATH = SPEC_PATH.with_name("math.json")
#: the stated bounds of bpf/include/mpcc_math.h's mn_log2 / mn_exp2 / mn_pow (docs/algorithms.md)
MATH_BOUNDS = {"log2_abs": 2.0**-28, "exp2_rel": 2.0**-29, "pow_rel": 2.0**-28}   # pow: × (1 + |y|)


def build_math() -> dict:
    """Vectors for the fixed-point log2, exp2 and pow, computed with Python's float math (an
    independent computation; its own error, ~1e-15 relative, is far below the bounds). A number
    is given exactly as the header stores it, a = m·2^e with m ∈ [2^31, 2^32); exponents y in
    Q32 (y_q32 = y·2^32). pow covers the ranges the rules use: windows 1..10^6 packets, ratios
    down to 10^-6, exponents in [−2, 2]."""
    rng = np.random.default_rng(_seed("mathlib", "cases"))
    lo, hi = 2**31, 2**32

    def mantissa_exponent(v: float) -> tuple[int, int]:
        m, e = math.frexp(v)                       # v = m·2^e, m ∈ [0.5, 1)
        return int(m * 2**32), e - 32              # truncated to 32 bits, as mn_from does

    numbers = [(lo, -31), (lo, 0), (hi - 1, -31), (3037000499, -31), (3037000500, -31),
               (3037000501, -31), (lo + 1, -31), (hi - 1, 100), (lo, -200)]
    numbers += [(int(m), int(e)) for m, e in zip(rng.integers(lo, hi, 150), rng.integers(-80, 80, 150))]
    numbers += [mantissa_exponent(float(w)) for w in (1.0, 1.5, 2.0, 3.0, 10.0, 1e6)]
    log2 = [{"m": m, "e": e, "log2": math.log2(m) + e} for m, e in numbers]
    ys = [0, 1, -1, 2**32, -(2**32), 2**31, -(2**31), 2**32 - 1, -(2**32) + 1, 40 * 2**32, -40 * 2**32 - 1]
    ys += [int(v) for v in rng.integers(-60 * 2**32, 60 * 2**32, 150)]
    exp2 = [{"y_q32": y, "exp2": 2.0 ** (y / 2**32)} for y in ys]
    pow_ = []
    windows = [1.0, 2.0, 1.5, 7.0, 1e6] + list(rng.uniform(1, 1e6, 60)) + list(rng.uniform(1e-6, 1, 20))
    exponents = [0.0, 0.5, 1.0, -1.0, 0.25, 0.75, -0.5, 2.0, -2.0] + list(rng.uniform(-2, 2, 40))
    for k, w in enumerate(windows):
        m, e = mantissa_exponent(float(w))
        for y in (exponents[k % len(exponents)], exponents[(7 * k + 3) % len(exponents)]):
            yq = round(y * 2**32)
            pow_.append({"m": m, "e": e, "y_q32": yq, "pow": math.exp2(yq / 2**32 * (math.log2(m) + e))})
    return {"schema": 1, "generator": "mpcc.vectors.build_math (python float math)",
            "bounds": MATH_BOUNDS, "log2": log2, "exp2": exp2, "pow": pow_}


def compare(a: dict, b: dict, rel: float = 1e-12) -> list[str]:
    """Differences between two vector documents (ids and values), as readable lines."""
    problems = []
    ia, ib = {c["id"]: c for c in a["cases"]}, {c["id"]: c for c in b["cases"]}
    for missing in sorted(set(ia) ^ set(ib)):
        problems.append(f"case {missing} present in only one file")
    for cid in sorted(set(ia) & set(ib)):
        if ia[cid].get("per_ack") != ib[cid].get("per_ack"):
            problems.append(f"case {cid}: per_ack differs")
        for key in ("cwnd", "rtt", "increase", "decrease", "cwnd_after_loss", "update"):
            va, vb = ia[cid].get(key), ib[cid].get(key)
            if (va is None) != (vb is None) or (va is not None and not np.allclose(va, vb, rtol=rel, atol=0)):
                problems.append(f"case {cid}: {key} differs")
        oa, ob = ia[cid].get("update_old"), ib[cid].get("update_old")
        if (oa is None) != (ob is None) or (oa is not None and not all(
                np.allclose(oa[k], ob[k], rtol=rel, atol=0) for k in ("old_cwnd", "update"))):
            problems.append(f"case {cid}: update_old differs")
        sa, sb = ia[cid].get("adapt"), ib[cid].get("adapt")
        if (sa is None) != (sb is None) or (sa is not None and (
                len(sa) != len(sb) or any(not np.allclose([x[k] for k in ("alpha", "q_s", "lost", "sent", "alpha_next")],
                                                          [y[k] for k in ("alpha", "q_s", "lost", "sent", "alpha_next")],
                                                          rtol=rel, atol=0) for x, y in zip(sa, sb)))):
            problems.append(f"case {cid}: adapt differs")
    return problems


@click.group("vectors")
def command():
    """Shared per-ACK / per-loss test vectors (spec/vectors/algorithms.json)."""


@command.command("write")
@click.option("--out", type=click.Path(dir_okay=False), default=str(SPEC_PATH), show_default=True)
def write(out):
    """Regenerate the vectors from the Python reference."""
    doc = build()
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps(doc, indent=1) + "\n")
    click.echo(f"wrote {len(doc['cases'])} cases to {out}")
    if Path(out).resolve() == SPEC_PATH:
        math_doc = build_math()
        MATH_PATH.write_text(json.dumps(math_doc, indent=1) + "\n")
        click.echo(f"wrote {sum(len(math_doc[k]) for k in ('log2', 'exp2', 'pow'))} math cases to {MATH_PATH}")


@command.command("check")
@click.option("--file", "path", type=click.Path(dir_okay=False, exists=True), default=str(SPEC_PATH), show_default=True)
def check(path):
    """Check the committed vectors still match the Python reference."""
    try:
        problems = compare(json.loads(Path(path).read_text()), build())
    except (ValueError, KeyError, TypeError, AttributeError, IndexError) as e:
        raise MpccError(f"--file {path}: not a vectors file ({type(e).__name__}: {' '.join(str(e).split())[:100]}) "
                        f"(fix: use spec/vectors/algorithms.json or `mpcc vectors write`)") from None
    for p in problems[:20]:
        click.echo(p, err=True)
    if Path(path).resolve() == SPEC_PATH and json.loads(MATH_PATH.read_text()) != json.loads(json.dumps(build_math())):
        problems.append(f"{MATH_PATH.name} differs from mpcc.vectors.build_math()")
    if problems:
        raise click.ClickException(f"{len(problems)} differences; run `mpcc vectors write` if the change is intended")
    click.echo("vectors match the reference")
