"""The algorithm files bpf/<algorithm>.bpf.c — the integer per-ACK / per-loss rules the BPF
programs run — compiled for the host (the same source, bpf/include/mpcc_host.h) and checked
against every case of spec/vectors/algorithms.json for each algorithm that has a BPF file, with
the parameters encoded exactly as the loader encodes them for the kernel build.

The algorithms are discovered from bpf/*.bpf.c: nothing here lists them.

Stated error bound (derivation: docs/kernel.md, "Fixed-point error bound"):

    |I_fixed − I| ≤ 2^-23 |I| + 2^-39        (increase, packets per ACK)
    |D_fixed − D| ≤ 2^-23 |D| + 2^-31        (decrease and window after a loss, packets)
"""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import pytest

from mpcc import algorithms as pyalgos
from mpcc.kernel import bpf

ROOT = Path(__file__).resolve().parents[2]
VECTORS = ROOT / "spec" / "vectors" / "algorithms.json"

REL = 2.0**-23
ABS_INC = 2.0**-39
ABS_DEC = 2.0**-31
#: Reno has no BPF file of its own (the testbed uses the kernel's reno): it is EWTCP with a = 1.
STANDS_IN = {"reno": ("ewtcp", {"a": 1.0})}


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    """algorithm → HostMath (built once per module)."""
    out = tmp_path_factory.mktemp("mpcc_host")
    libs: dict[str, bpf.HostMath] = {}

    def get(algo: str) -> bpf.HostMath:
        if algo not in libs:
            libs[algo] = bpf.HostMath(algo, out)
        return libs[algo]
    return get


def _bpf_spec(algorithm: dict) -> bpf.BpfSpec:
    name = algorithm["name"]
    if name in STANDS_IN:
        algo, params = STANDS_IN[name]
        return bpf.make_spec(algo, params)
    return bpf.make_spec(name, {k: v for k, v in algorithm.items() if k != "name"})


def _cases():
    doc = json.loads(VECTORS.read_text())
    names = set(bpf.algorithms()) | set(STANDS_IN)
    return [c for c in doc["cases"] if c["algorithm"]["name"] in names]


def _q32(x) -> int:
    return round(float(x) * 2**32)


def _run_case(host, case):
    """(increase, decrease, cwnd_after_loss) per route and min_cwnd, from the host build; and
    the periodic update per route for the algorithms that have one (FAST), else None."""
    sp = _bpf_spec(case["algorithm"])
    lib = host(sp.algorithm)
    n = len(case["cwnd"])
    cwnd = [_q32(w) for w in case["cwnd"]]                   # packets · 2^32
    rtt = [round(t * 1e12) for t in case["rtt"]]             # picoseconds (any unit works)
    ell = [round(v) for v in case["state"].get("loss_interval", [0] * n)]
    base = [round(t * 1e12) for t in case["state"].get("base_rtt", [0] * n)]
    out, update = [], ([] if "update" in case else None)
    for r in range(n):
        inc = lib.on_ack(cwnd, rtt, r, sp.values, ell) / 2.0**40
        dec_q = lib.on_loss(cwnd, rtt, r, sp.values, ell)
        after = lib.cwnd_after_loss(n, cwnd[r], dec_q) / 2.0**32
        out.append((inc, dec_q / 2.0**32, after))
        if update is not None:
            update.append(lib.on_update(cwnd, rtt, r, sp.values, base) / 2.0**32)
    return out, lib.min_cwnd(n), update


CASES = _cases()


def test_vectors_cover_every_bpf_algorithm_the_reference_knows():
    """Each algorithm with both a BPF file and a Python reference has vectors here, 48
    connections per parameter variant; so a new file with a reference cannot skip them."""
    variants = Counter(json.dumps(c["algorithm"], sort_keys=True) for c in CASES)
    names = {c["algorithm"]["name"] for c in CASES}
    assert {a for a in bpf.algorithms() if a in pyalgos.REGISTRY} <= names
    assert {"ewtcp", "coupled", "semicoupled", "lia", "olia", "balia", "generalized", "reno"} <= names
    assert set(variants.values()) == {48}
    assert {"mstcp", "mtcp", "fast"} <= names
    # 11 parameter variants of Peng et al.'s algorithms, 1 MSTCP, 4 MTCP (three presets and one
    # interior point), 1 FAST, × 48 connections
    assert len(CASES) >= 17 * 48


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_host_build_matches_vectors_within_bound(host, case):
    got, min_cwnd, update = _run_case(host, case)
    assert min_cwnd == case["min_cwnd"]
    assert (update is None) == ("update" not in case), "periodic update in the vectors xor in the BPF file"
    for r, (w, ref_w) in enumerate(zip(update or [], case.get("update", []))):
        assert abs(w - ref_w) <= REL * abs(ref_w) + ABS_DEC, f"route {r} update {w!r} vs {ref_w!r}"
    if "update_old" in case:   # eq. (1) with the window the RTT samples were sent under
        sp, lib = _bpf_spec(case["algorithm"]), host(case["algorithm"]["name"])
        cwnd = [_q32(w) for w in case["cwnd"]]
        rtt = [round(t * 1e12) for t in case["rtt"]]
        base = [round(t * 1e12) for t in case["state"]["base_rtt"]]
        for r, (w_old, ref_w) in enumerate(zip(case["update_old"]["old_cwnd"], case["update_old"]["update"])):
            w = lib.on_update(cwnd, rtt, r, sp.values, base, 0, _q32(w_old)) / 2.0**32
            assert abs(w - ref_w) <= REL * abs(ref_w) + ABS_DEC, f"route {r} update with w_old {w!r} vs {ref_w!r}"
    for r, (inc, dec, after) in enumerate(got):
        ref_i, ref_d, ref_a = case["increase"][r], case["decrease"][r], case["cwnd_after_loss"][r]
        assert abs(inc - ref_i) <= REL * abs(ref_i) + ABS_INC, f"route {r} increase {inc!r} vs {ref_i!r}"
        assert abs(dec - ref_d) <= REL * abs(ref_d) + ABS_DEC, f"route {r} decrease {dec!r} vs {ref_d!r}"
        assert abs(after - ref_a) <= REL * abs(ref_a) + ABS_DEC, f"route {r} after loss {after!r} vs {ref_a!r}"


@pytest.mark.parametrize("algo", bpf.algorithms())
def test_file_declarations_agree_with_the_loader_and_the_reference(host, algo):
    """The C preprocessor's encoding of the file's defaults (what an object built without -D
    holds) is the loader's; the ops table's name is the file's; and where the Python reference
    has the same parameter, its default is the same number."""
    lib, src = host(algo), bpf.sources()[algo]
    assert lib.kernel_name() == src.kernel_name
    assert lib.param_count() == len(src.params)
    assert lib.default_values() == bpf.make_spec(algo).values
    if algo in pyalgos.REGISTRY:
        schema = pyalgos.REGISTRY[algo][1]
        for p in src.params:
            if p.encoding == "FLAG":     # a switch of the kernel glue (per_ack), not of the rule:
                continue                 # test_flag_parameters_leave_the_rule_unchanged
            assert p.name in schema, f"{algo}: BPF parameter {p.name} unknown to the reference"
            assert float(schema[p.name][0]) == p.default, (algo, p.name)


def test_bound_is_tight_enough_to_catch_a_wrong_rule(host):
    """The bound is not vacuous: Balia's increase without its (4+α)/5 factor (a plausible
    transcription error, relative change (α−1)/5) falls outside it on the unequal-RTT cases."""
    caught = 0
    for case in CASES:
        if case["algorithm"]["name"] != "balia" or "unequal-rtt" not in case["id"]:
            continue
        got, _, _ = _run_case(host, case)
        w = [float(v) for v in case["cwnd"]]
        t = [float(v) for v in case["rtt"]]
        x = [wi / ti for wi, ti in zip(w, t)]
        for r, (inc, _, _) in enumerate(got):
            a = max(x) / x[r]
            wrong = x[r] / (t[r] * sum(x) ** 2) * (1 + a) / 2        # missing (4+α)/5
            if abs(inc - wrong) > REL * abs(wrong) + ABS_INC:
                caught += 1
    assert caught >= 7


def test_single_route_reduces_to_reno(host):
    """With one route every coupled rule is Reno's: I = 1/w, D = w/2 (Peng et al. §II-B)."""
    for name in ("coupled", "semicoupled", "lia", "olia", "balia"):
        lib = host(name)
        for w in (1.0, 3.0, 17.0, 1000.0, 123456.0):
            inc = lib.on_ack([_q32(w)], [12_345_678], 0, (), [100]) / 2.0**40
            dec = lib.on_loss([_q32(w)], [12_345_678], 0, (), [100]) / 2.0**32
            assert abs(inc - 1 / w) <= REL / w + ABS_INC, (name, w)
            assert abs(dec - w / 2) <= REL * w / 2 + ABS_DEC, (name, w)


def test_olia_sets_with_ties_match_the_reference(host):
    """OLIA's best paths B (max ℓ/τ²) and max-window paths M, counted in one pass over the routes
    in the BPF file, on 2,000 random connections of 1–8 routes drawn from few values, so most have
    ties in both sets, a maximum that appears late or more than once, and routes in both sets: the
    increase is the Python reference's (sets by numpy over the whole arrays) within the bound,
    taken on the two terms' magnitudes (ε_r/w_r can cancel most of the coupled term). A wrong |M|
    or |B∖M| changes ε_r/w_r by ≥ 1/(8·7·8·w_r), far outside it."""
    import random

    from mpcc.algorithms.olia import Olia

    lib, rng, eps_seen = host("olia"), random.Random(20261124), Counter()
    for _ in range(2000):
        n = rng.randint(1, 8)
        w = [rng.choice((1.0, 2.0, 7.0, 7.0, 40.0, 40.0)) for _ in range(n)]
        t = [rng.choice((0.01, 0.03)) for _ in range(n)]              # ℓ/τ² never tie across
        ell = [rng.choice((0, 1000, 10**6)) for _ in range(n)]         # different (ℓ, τ) pairs
        ref = Olia().on_ack(w, t, loss_interval=ell)
        eps = Olia.epsilon(w, t, ell)
        for r in range(n):
            inc = lib.on_ack([_q32(x) for x in w], [round(x * 1e12) for x in t], r, (), ell) / 2.0**40
            size = abs(ref[r] - eps[r] / w[r]) + abs(eps[r] / w[r])
            assert abs(inc - ref[r]) <= REL * size + ABS_INC, (w, t, ell, r, inc, ref[r])
            eps_seen[int(math.copysign(1, eps[r])) if eps[r] else 0] += 1
    assert min(eps_seen[-1], eps_seen[0], eps_seen[1]) > 500     # every branch of ε exercised


def test_kernel_inputs_srtt_units(host):
    """The kernel passes integer windows and srtt_us (1/8 µs): the result equals the same
    connection given in picoseconds (the rules depend on RTT ratios only)."""
    cwnd = [_q32(w) for w in (10, 40, 7)]
    srtt = [8 * 2_000, 8 * 31_000, 8 * 90_000]                    # 2 ms, 31 ms, 90 ms
    ps = [2_000_000_000, 31_000_000_000, 90_000_000_000]
    for name in ("coupled", "semicoupled", "lia", "balia"):
        for r in range(3):
            a = host(name).on_ack(cwnd, srtt, r)
            b = host(name).on_ack(cwnd, ps, r)
            assert abs(a - b) <= 2.0**-23 * abs(b) + 2, (name, r)


def test_ewtcp_a_is_the_increase_factor(host):
    """EWTCP with a = 0.25 (a parameter set of its own, as the kernel object gets it): I = a/w,
    D = w/2, computed here from the formula, not from the reference."""
    lib, sp = host("ewtcp"), bpf.make_spec("ewtcp", {"a": 0.25})
    assert sp.values == (2**30,) and sp.kernel_name != bpf.kernel_name("ewtcp")
    for w in (1.0, 2.5, 10.0, 77.0, 4096.0):
        cwnd = [_q32(w), _q32(3 * w)]
        for r in range(2):
            inc = lib.on_ack(cwnd, [1, 1], r, sp.values) / 2.0**40
            assert abs(inc - 0.25 / (cwnd[r] / 2**32)) <= REL * 0.25 / w + ABS_INC, (w, r)
            assert lib.on_loss(cwnd, [1, 1], r, sp.values) == cwnd[r] // 2


def test_generalized_family_contains_coupled_and_balias_increase(host):
    """Peng et al. §IV-B: (β, η) = (0, 0) is Coupled (I and D) for every n, and (0.2, 0.5, ∞) has
    Balia's increase (1) — with the parameter encoding the kernel objects are compiled with."""
    conns = [((10.0, 40.0, 7.0), (0.002, 0.031, 0.09)), ((3.0, 3.0), (0.05, 0.05)),
             ((1.0, 250.5, 17.25, 64.0), (0.2, 0.01, 0.04, 0.04))]
    gen = host("generalized")
    for w, t in conns:
        cwnd, rtt = [_q32(x) for x in w], [round(x * 1e12) for x in t]
        for r in range(len(w)):
            coupled = host("coupled").on_ack(cwnd, rtt, r)
            for norm in (1, 2, "inf"):
                vals = bpf.make_spec("generalized", {"beta": 0, "eta": 0, "n": norm}).values
                g = gen.on_ack(cwnd, rtt, r, vals)
                assert abs(g - coupled) <= REL * abs(coupled) + 2, (w, r, norm)
                d = gen.on_loss(cwnd, rtt, r, vals)
                assert abs(d - cwnd[r] // 2) <= REL * cwnd[r] / 2 + 2, (w, r, norm)
            balia = host("balia").on_ack(cwnd, rtt, r)
            g = gen.on_ack(cwnd, rtt, r, bpf.make_spec("generalized").values)
            assert abs(g - balia) <= 2 * REL * abs(balia) + 2, (w, r)


def test_scalable_example_follows_kelly(host):
    """The walkthrough's one-file example, uncoupled Scalable TCP (Kelly 2003): I = a per ACK,
    D = b·w per loss, whatever the other subflows do; a = 0.01, b = 0.125 by default and
    settable per load."""
    lib = host("scalable")
    for params in ({}, {"a": 0.02, "b": 0.5}):
        sp = bpf.make_spec("scalable", params)
        a, b = params.get("a", 0.01), params.get("b", 0.125)
        for w in ((1.0,), (10.0, 3.0), (250.5, 17.25, 64.0, 1e6)):
            cwnd, rtt = [_q32(x) for x in w], [round(1e12 * (0.01 + 0.02 * k)) for k in range(len(w))]
            for r in range(len(w)):
                inc = lib.on_ack(cwnd, rtt, r, sp.values) / 2.0**40
                dec = lib.on_loss(cwnd, rtt, r, sp.values) / 2.0**32
                assert abs(inc - a) <= REL * a + ABS_INC, (params, w, r)
                assert abs(dec - b * w[r]) <= REL * b * w[r] + ABS_DEC, (params, w, r)
                after = lib.cwnd_after_loss(len(w), cwnd[r], lib.on_loss(cwnd, rtt, r, sp.values)) / 2.0**32
                assert abs(after - max(w[r] * (1 - b), 2.0)) <= REL * w[r] + ABS_DEC
    assert math.isclose(bpf.make_spec("scalable").values[0] / 2**32, 0.01, rel_tol=1e-9)


def test_mtcp_presets_are_parameter_sets_of_one_file(host):
    """Jiang et al.'s named points of the (α, β) square load as parameter sets of bpf/mtcp.bpf.c,
    each with its own kernel name; fully coupled computes I = a/W and D = min(b·W, w_r − 1)
    (from eq. (2), not from the reference), and a capped decrease lands on exactly 1 packet."""
    points = {"coupled-decrease": (0.0, 1.0), "coupled-increase": (1.0, 0.0), "fully-coupled": (1.0, 1.0)}
    names = set()
    for preset, (a, b) in points.items():
        sp = bpf.make_spec(preset)
        assert sp.algorithm == "mtcp" and dict(sp.params)["alpha"] == a and dict(sp.params)["beta"] == b
        names.add(sp.kernel_name)
    assert len(names) == 3 and bpf.kernel_name("mtcp") not in names
    lib, vals = host("mtcp"), bpf.make_spec("fully-coupled").values
    for w in ((10.0, 40.0), (3.0, 1.5, 200.0), (1.0, 1.0)):
        cwnd, total = [_q32(x) for x in w], sum(w)
        for r in range(len(w)):
            inc = lib.on_ack(cwnd, [1] * len(w), r, vals) / 2.0**40
            assert abs(inc - 1 / total) <= REL / total + ABS_INC, (w, r)
            dec = lib.on_loss(cwnd, [1] * len(w), r, vals)
            want = min(0.5 * total, max(w[r] - 1, 0.0))
            assert abs(dec / 2**32 - want) <= REL * want + ABS_DEC, (w, r)
            if want == w[r] - 1:
                assert cwnd[r] - dec == 2**32


def test_fast_update_holds_alpha_packets_queued_and_caps_growth_at_double(host):
    """FAST's eq. (1) from the formula: at w = α·RTT/(RTT − baseRTT) (α packets queued) the update
    returns w; with an empty queue it returns min(2w, w + γα); γ = 1 jumps to the target."""
    lib = host("fast")
    for alpha, gamma, base, rtt in ((20.0, 0.5, 0.020, 0.026), (50.0, 0.5, 0.1, 0.13), (5.0, 1.0, 0.002, 0.0025)):
        vals = bpf.make_spec("fast", {"alpha": alpha, "gamma": gamma}).values
        w = alpha * rtt / (rtt - base)
        got = lib.on_update([_q32(w)], [round(rtt * 1e12)], 0, vals, [round(base * 1e12)]) / 2**32
        assert abs(got - w) <= 4 * REL * w + ABS_DEC, (alpha, gamma, w, got)
        for w0 in (1.0, 10.0, 300.0):
            got = lib.on_update([_q32(w0)], [10**9], 0, vals, [10**9]) / 2**32
            want = min(2 * w0, w0 + gamma * alpha)
            assert abs(got - want) <= 4 * REL * want + ABS_DEC, (w0, got, want)
    sp = bpf.make_spec("fast", {"update_interval_s": 0.005})
    assert lib.update_interval_us(sp.values) in (4999, 5000)
    assert lib.update_interval_us(bpf.make_spec("fast").values) in (19999, 20000)


# --- OLIA's per-ACK update (per_ack = 1): mptcp_olia.c's 2^-10-packet counter ----------------
OLIA_CASES = [c for c in CASES if "per_ack" in c]


def test_flag_parameters_leave_the_rule_unchanged(host):
    """A FLAG parameter switches the window update of the kernel glue (mpcc_algo.h): with either
    value the rule gives bit-identical I_r and D_r on every vector connection."""
    flags = [(a, p) for a, src in bpf.sources().items() for p in src.params if p.encoding == "FLAG"]
    assert ("olia", "per_ack") in [(a, p.name) for a, p in flags]
    for algo, p in flags:
        lib, names = host(algo), [q.name for q in bpf.sources()[algo].params]
        v0 = bpf.make_spec(algo, {p.name: 0}).values
        v1 = bpf.make_spec(algo, {p.name: 1}).values
        assert v0 != v1 and v0[names.index(p.name)] == 0 and v1[names.index(p.name)] == 1
        for case in [c for c in CASES if c["algorithm"]["name"] == algo]:
            cwnd = [_q32(w) for w in case["cwnd"]]
            rtt = [round(t * 1e12) for t in case["rtt"]]
            ell = [round(v) for v in case["state"].get("loss_interval", [0] * len(cwnd))]
            for r in range(len(cwnd)):
                assert lib.on_ack(cwnd, rtt, r, v0, ell) == lib.on_ack(cwnd, rtt, r, v1, ell), case["id"]
                assert lib.on_loss(cwnd, rtt, r, v0, ell) == lib.on_loss(cwnd, rtt, r, v1, ell), case["id"]


def test_per_ack_counter_by_hand(host):
    """mptcp_olia.c's counter (scale = 10), values worked out by hand: I = 0.3 packet/ACK adds
    ⌊307.2⌋ = 307 per ACK, the 4th ACK reaches 1228 ≥ 1023 → +1 packet and the counter restarts
    from 0 (the remainder 205 is dropped), so after 5 ACKs it holds 307; I = 0.9/1024 adds 0 and
    the window never moves; I = −0.5 adds −512, the 2nd ACK reaches −1024 ≤ −1023 → −1; I = 1
    adds 1024 → +1 on every ACK."""
    lib = host("olia")
    steps, cnt = lib.counter_steps(round(0.3 * 2**40), 5)
    assert (steps, cnt) == ([0, 0, 0, 1, 0], 307)
    steps, cnt = lib.counter_steps(round(0.9 / 1024 * 2**40), 10_000)
    assert set(steps) == {0} and cnt == 0
    steps, cnt = lib.counter_steps(-round(0.5 * 2**40), 3)
    assert (steps, cnt) == ([0, -1, 0], -512)
    assert lib.counter_steps(2**40, 3) == ([1, 1, 1], 0)
    # rounded toward zero on both sides, as div64_u64 of the magnitude with the sign after
    assert lib.counter_increment(round(2.5 / 1024 * 2**40)) == 2
    assert lib.counter_increment(-round(2.5 / 1024 * 2**40)) == -2


def _near_integer(x: float, slack: float) -> bool:
    return abs(x - round(x)) <= slack


@pytest.mark.parametrize("case", OLIA_CASES, ids=[c["id"] for c in OLIA_CASES])
def test_per_ack_counter_matches_vectors(host, case):
    """The host build's counter on the host build's I_r gives the vectors' increment per ACK and
    ACKs per window step (from the Python reference's I_r). The increment may differ by one only
    where 2^10·I is within the fixed-point bound of an integer (the rounding then depends on the
    last bits)."""
    lib, sp = host("olia"), bpf.make_spec("olia", {"per_ack": 1})
    cwnd = [_q32(w) for w in case["cwnd"]]
    rtt = [round(t * 1e12) for t in case["rtt"]]
    ell = [round(v) for v in case["state"]["loss_interval"]]
    want = case["per_ack"]
    for r in range(len(cwnd)):
        inc = lib.on_ack(cwnd, rtt, r, sp.values, ell)
        d = lib.counter_increment(inc)
        ref_i = case["increase"][r]
        slack = 1024 * (REL * abs(ref_i) + ABS_INC)
        if d != want["counter_increment"][r]:
            assert abs(d - want["counter_increment"][r]) == 1 and _near_integer(1024 * ref_i, slack), (r, d, want)
            continue
        steps, _ = lib.counter_steps(inc, 2 * 1023 + 1)
        moved = [k + 1 for k, st in enumerate(steps) if st]
        if d == 0:
            assert moved == [] and want["acks_per_step"][r] == 0
        else:
            assert moved[0] == want["acks_per_step"][r], (r, moved[:3], want)
            assert steps[moved[0] - 1] == (1 if d > 0 else -1)
            assert moved[1] == 2 * moved[0]          # the counter restarts from 0 after a step

# --- Tang et al.'s Algorithm 2 (FAST's α adaptation, MPCC_ADAPT) -------------------------------
Q_UNITS = 8_000_000          # the kernel's srtt unit (1/8 µs) per second
ADAPT_CASES = [c for c in CASES if "adapt" in c]


def test_vectors_have_algorithm2_steps():
    """Two FAST parameter sets with Algorithm 2 on, 48 connections each, 8 steps per connection."""
    assert len(ADAPT_CASES) == 2 * 48
    assert all(len(c["adapt"]) == 8 for c in ADAPT_CASES)


@pytest.mark.parametrize("case", ADAPT_CASES, ids=[c["id"] for c in ADAPT_CASES])
def test_host_algorithm2_matches_vectors_within_bound(host, case):
    """Each step from α, q (as a sum over 1 and over 7 samples, in 1/8 µs) and lost/sent, as the
    kernel gives them, lands within the header's bound of the reference's next α."""
    sp = _bpf_spec(case["algorithm"])
    lib = host(sp.algorithm)
    for k, st in enumerate(case["adapt"]):
        q_units = round(st["q_s"] * Q_UNITS)
        assert abs(q_units / Q_UNITS - st["q_s"]) <= 1e-15, "q_s is a whole number of 1/8 µs"
        want = st["alpha_next"]
        for n in (1, 7):
            got = lib.on_adapt(_q32(st["alpha"]), q_units * n, n, st["lost"], st["sent"], sp.values) / 2**32
            assert abs(got - want) <= 8 * REL * want + 2.0**-32, (k, n, st, got)


def test_algorithm2_by_hand(host):
    """Algorithm 2 from the paper's formula (α₀ = 50, w = 125 s, δ = 0.1), independent of the
    reference: α* = q/(l·w)·α₀, one step of at most δ towards it; value 0 means the loaded α."""
    lib = host("fast")
    vals = bpf.make_spec("fast", {"adapt_interval_s": 120.0}).values

    def step(alpha, q_s, lost, sent, n=1):
        return lib.on_adapt(_q32(alpha) if alpha else 0, round(q_s * Q_UNITS) * n, n, lost, sent, vals) / 2**32

    def near(a, b):
        return abs(a - b) <= 8 * REL * b + 2.0**-32
    assert near(step(50, 0.02, 1, 10_000), 55.0)          # α* = 0.02/(1e-4·125)·50 = 80: up 10 %
    assert near(step(75, 0.02, 1, 10_000), 80.0)          # 82.5 would overshoot α* = 80
    assert near(step(50, 0.002, 1, 1_000), 45.0)          # α* = 0.8: down 10 %
    assert near(step(0.85, 0.002, 1, 1_000), 0.8)         # stops at α*
    assert near(step(50, 0.01, 0, 5_000), 55.0)           # no loss, a queue: α* = ∞
    assert near(step(50, 0.0, 0, 5_000), 50.0)            # no loss, no queue: unchanged
    assert near(step(50, 0.0, 3, 5_000), 45.0)            # losses, no queue: α* = 0, down δ
    assert near(step(0, 0.02, 1, 10_000), 55.0)           # 0 = the loaded α₀ = 50
    assert near(step(30, 0.05, 0, 0), 30.0)               # nothing sent: unchanged
    assert lib.on_adapt(_q32(30), 0, 0, 0, 100, vals) == _q32(30)   # no samples: unchanged
    assert step(65000, 0.1, 0, 10) == 65536.0             # α stays within the parameter's range
    assert step(2.0**-8, 0.0, 5, 10) == 2.0**-8
    assert lib.adapt_interval_us(vals) == 120_000_000
    assert lib.adapt_interval_us(bpf.make_spec("fast").values) == 0          # off by default
    assert lib.adapt_interval_us(bpf.make_spec("fast", {"adapt_interval_s": 10_000}).values) == 10**10


def test_fast_update_uses_the_adapted_alpha(host):
    """Eq. (1) with c->adapted set uses that α, not the loaded one: at α' packets queued the
    window is a fixed point; with an empty queue it grows by γα'."""
    lib, vals = host("fast"), bpf.make_spec("fast", {"alpha": 50.0}).values
    for alpha in (5.0, 20.0, 137.5):
        base, rtt = 0.02, 0.026
        w = alpha * rtt / (rtt - base)
        got = lib.on_update([_q32(w)], [round(rtt * 1e12)], 0, vals, [round(base * 1e12)], _q32(alpha)) / 2**32
        assert abs(got - w) <= 4 * REL * w + ABS_DEC, (alpha, w, got)
        got = lib.on_update([_q32(400.0)], [10**9], 0, vals, [10**9], _q32(alpha)) / 2**32
        assert abs(got - (400.0 + 0.5 * alpha)) <= 4 * REL * 400 + ABS_DEC, (alpha, got)


def _fast_rs_history(lags, windows, history=1024):
    """w_old per update as crates/mpcc-core/src/cc/fast.rs picks it (a transcription of
    Fast::periodic_update's deque): hist[n − 1 − min(lag, n − 1)] (0 when empty), then pop from
    the front while n ≥ min(2·lag + 4, HISTORY), then push the window."""
    from collections import deque
    hist, out = deque(), []
    for lag, w in zip(lags, windows):
        out.append(hist[len(hist) - 1 - min(lag, len(hist) - 1)] if hist else 0)
        keep = min(2 * lag + 4, history)
        while len(hist) >= keep:
            hist.popleft()
        hist.append(w)
    return out


def test_fast_window_history_picks_the_window_fast_rs_picks(host):
    """The BPF program's ring of past windows (bpf/fast.bpf.c, fast_history_old/add, host build)
    gives eq. (1) the same w_old as the simulator's deque over 6000 updates: steady lags, lags
    that jump up (less history kept than the lag: the oldest), down (trimmed) and beyond the 1024
    kept (the oldest), so the ring wraps many times."""
    import ctypes
    import numpy as np

    lib = host("fast").lib
    rng = np.random.default_rng(7)
    lags = np.concatenate([np.full(500, 10), rng.integers(0, 40, 1500), np.full(300, 3000),
                           rng.integers(0, 1500, 1200), np.full(1000, 1), np.full(1500, 600)]).tolist()
    windows = rng.integers(2, 1 << 20, len(lags)).tolist()
    n = len(lags)
    old = (ctypes.c_uint32 * n)()
    lib.mpcc_host_fast_history.argtypes = [ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint64),
                                           ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint32)]
    lib.mpcc_host_fast_history(n, (ctypes.c_uint64 * n)(*lags), (ctypes.c_uint32 * n)(*windows), old)
    want = _fast_rs_history(lags, windows)
    assert list(old) == want
    assert sum(1 for k in range(1, n) if want[k] == windows[k - 1]) < n / 2    # mostly not the last window
