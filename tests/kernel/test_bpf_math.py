"""bpf/include/mpcc_math.h — the integer per-ACK / per-loss rules the BPF programs run — compiled
for the host and checked against every case of spec/vectors/algorithms.json for the algorithms
the kernel implements (plus the generalized family, which the header also implements).

Stated error bound (derivation: docs/kernel.md, "Fixed-point error bound"):

    |I_fixed − I| ≤ 2^-23 |I| + 2^-39        (increase, packets per ACK)
    |D_fixed − D| ≤ 2^-23 |D| + 2^-31        (decrease and window after a loss, packets)
"""

from __future__ import annotations

import ctypes
import json
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VECTORS = ROOT / "spec" / "vectors" / "algorithms.json"
HEADER = ROOT / "bpf" / "include" / "mpcc_math.h"

REL = 2.0**-23
ABS_INC = 2.0**-39
ABS_DEC = 2.0**-31

ALGO_IDS = {"reno": 0, "ewtcp": 1, "coupled": 2, "semicoupled": 3, "lia": 4, "olia": 5,
            "balia": 6, "generalized": 7}
U64P = ctypes.POINTER(ctypes.c_uint64)


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.skip("no C compiler (cc) to build bpf/include/mpcc_math.h for the host")
    so = tmp_path_factory.mktemp("mpcc_math") / "libmpcc_math.so"
    subprocess.run([cc, "-O2", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-o", str(so),
                    str(ROOT / "bpf" / "host" / "mpcc_math_host.c")], check=True)
    lib = ctypes.CDLL(str(so))
    args = [ctypes.c_int, ctypes.c_uint32, U64P, U64P, U64P, ctypes.c_uint32,
            ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint32]
    lib.mpcc_host_on_ack.argtypes = args
    lib.mpcc_host_on_ack.restype = ctypes.c_int64
    lib.mpcc_host_on_loss.argtypes = args
    lib.mpcc_host_on_loss.restype = ctypes.c_uint64
    lib.mpcc_host_cwnd_after_loss.argtypes = [ctypes.c_int, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_uint64]
    lib.mpcc_host_cwnd_after_loss.restype = ctypes.c_uint64
    lib.mpcc_host_min_cwnd.argtypes = [ctypes.c_int, ctypes.c_uint32]
    lib.mpcc_host_min_cwnd.restype = ctypes.c_uint32
    return lib


def _cases():
    doc = json.loads(VECTORS.read_text())
    return [c for c in doc["cases"] if c["algorithm"]["name"] in ALGO_IDS]


def _q32(x) -> int:
    return round(float(x) * 2**32)


def _run_case(lib, case):
    """(increase, decrease, cwnd_after_loss, min_cwnd) per route from the C header."""
    algo = case["algorithm"]
    n = len(case["cwnd"])
    arr = ctypes.c_uint64 * 8
    cwnd = arr(*[_q32(w) for w in case["cwnd"]])              # packets · 2^32
    rtt = arr(*[round(t * 1e12) for t in case["rtt"]])        # picoseconds (any unit works)
    ell = arr(*[round(v) for v in case["state"].get("loss_interval", [0] * n)])
    norm = algo.get("n", "inf")
    params = (_q32(algo.get("a", 1.0)), _q32(algo.get("beta", 0.2)), _q32(algo.get("eta", 0.5)),
              0 if norm == "inf" else int(norm))
    aid = ALGO_IDS[algo["name"]]
    out = []
    for r in range(n):
        inc = lib.mpcc_host_on_ack(aid, n, cwnd, rtt, ell, r, *params) / 2.0**40
        dec_q = lib.mpcc_host_on_loss(aid, n, cwnd, rtt, ell, r, *params)
        after = lib.mpcc_host_cwnd_after_loss(aid, n, cwnd[r], dec_q) / 2.0**32
        out.append((inc, dec_q / 2.0**32, after))
    return out, lib.mpcc_host_min_cwnd(aid, n)


CASES = _cases()


def test_vectors_cover_the_kernel_algorithms():
    names = {c["algorithm"]["name"] for c in CASES}
    assert names == set(ALGO_IDS)
    assert len(CASES) == 528     # 11 parameter variants × 48 connections of 1..8 routes


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_header_matches_vectors_within_bound(lib, case):
    got, min_cwnd = _run_case(lib, case)
    assert min_cwnd == case["min_cwnd"]
    for r, (inc, dec, after) in enumerate(got):
        ref_i, ref_d, ref_a = case["increase"][r], case["decrease"][r], case["cwnd_after_loss"][r]
        assert abs(inc - ref_i) <= REL * abs(ref_i) + ABS_INC, f"route {r} increase {inc!r} vs {ref_i!r}"
        assert abs(dec - ref_d) <= REL * abs(ref_d) + ABS_DEC, f"route {r} decrease {dec!r} vs {ref_d!r}"
        assert abs(after - ref_a) <= REL * abs(ref_a) + ABS_DEC, f"route {r} after loss {after!r} vs {ref_a!r}"


def test_bound_is_tight_enough_to_catch_a_wrong_rule(lib):
    """The bound is not vacuous: Balia's increase without its (4+α)/5 factor (a plausible
    transcription error, relative change (α−1)/5) falls outside it on the unequal-RTT cases."""
    caught = 0
    for case in CASES:
        if case["algorithm"]["name"] != "balia" or "unequal-rtt" not in case["id"]:
            continue
        got, _ = _run_case(lib, case)
        w = [float(v) for v in case["cwnd"]]
        t = [float(v) for v in case["rtt"]]
        x = [wi / ti for wi, ti in zip(w, t)]
        for r, (inc, _, _) in enumerate(got):
            a = max(x) / x[r]
            wrong = x[r] / (t[r] * sum(x) ** 2) * (1 + a) / 2        # missing (4+α)/5
            if abs(inc - wrong) > REL * abs(wrong) + ABS_INC:
                caught += 1
    assert caught >= 7


def test_single_route_reduces_to_reno(lib):
    """With one route every coupled rule is Reno's: I = 1/w, D = w/2 (Peng et al. §II-B)."""
    arr = ctypes.c_uint64 * 8
    for name in ("coupled", "semicoupled", "lia", "olia", "balia"):
        for w in (1.0, 3.0, 17.0, 1000.0, 123456.0):
            cwnd, rtt, ell = arr(_q32(w)), arr(12_345_678), arr(100)
            inc = lib.mpcc_host_on_ack(ALGO_IDS[name], 1, cwnd, rtt, ell, 0, 0, 0, 0, 0) / 2.0**40
            dec = lib.mpcc_host_on_loss(ALGO_IDS[name], 1, cwnd, rtt, ell, 0, 0, 0, 0, 0) / 2.0**32
            assert abs(inc - 1 / w) <= REL / w + ABS_INC, (name, w)
            assert abs(dec - w / 2) <= REL * w / 2 + ABS_DEC, (name, w)


def test_kernel_inputs_srtt_units(lib):
    """The kernel passes integer windows and srtt_us (1/8 µs): the result equals the same
    connection given in picoseconds (the rules depend on RTT ratios only)."""
    arr = ctypes.c_uint64 * 8
    cwnd = arr(*[_q32(w) for w in (10, 40, 7)])
    srtt = arr(8 * 2_000, 8 * 31_000, 8 * 90_000)                 # 2 ms, 31 ms, 90 ms
    ps = arr(2_000_000_000, 31_000_000_000, 90_000_000_000)
    ell = arr(0, 0, 0)
    for name in ("coupled", "semicoupled", "lia", "balia"):
        for r in range(3):
            a = lib.mpcc_host_on_ack(ALGO_IDS[name], 3, cwnd, srtt, ell, r, 0, 0, 0, 0)
            b = lib.mpcc_host_on_ack(ALGO_IDS[name], 3, cwnd, ps, ell, r, 0, 0, 0, 0)
            assert abs(a - b) <= 2.0**-23 * abs(b) + 2, (name, r)


def test_generalized_family_contains_coupled_and_balias_increase(lib):
    """Peng et al. §IV-B: (β, η) = (0, 0) is Coupled (I and D) for every n, and (0.2, 0.5, ∞) has
    Balia's increase (1) — checked on the header with the parameter encoding the kernel objects
    are compiled with (β, η as numerator/2^32, n = 0 for ∞)."""
    arr = ctypes.c_uint64 * 8
    conns = [((10.0, 40.0, 7.0), (0.002, 0.031, 0.09)), ((3.0, 3.0), (0.05, 0.05)),
             ((1.0, 250.5, 17.25, 64.0), (0.2, 0.01, 0.04, 0.04))]
    for w, t in conns:
        n = len(w)
        cwnd, rtt, ell = arr(*[_q32(x) for x in w]), arr(*[round(x * 1e12) for x in t]), arr(*[0] * n)
        for r in range(n):
            coupled = lib.mpcc_host_on_ack(ALGO_IDS["coupled"], n, cwnd, rtt, ell, r, 0, 0, 0, 0)
            for norm in (0, 1, 2):
                gen = lib.mpcc_host_on_ack(ALGO_IDS["generalized"], n, cwnd, rtt, ell, r, 0, 0, 0, norm)
                assert abs(gen - coupled) <= REL * abs(coupled) + 2, (w, r, norm)
                d = lib.mpcc_host_on_loss(ALGO_IDS["generalized"], n, cwnd, rtt, ell, r, 0, 0, 0, norm)
                assert abs(d - cwnd[r] // 2) <= REL * cwnd[r] / 2 + 2, (w, r, norm)
            balia = lib.mpcc_host_on_ack(ALGO_IDS["balia"], n, cwnd, rtt, ell, r, 0, 0, 0, 0)
            gen = lib.mpcc_host_on_ack(ALGO_IDS["generalized"], n, cwnd, rtt, ell, r, 0, _q32(0.2), _q32(0.5), 0)
            assert abs(gen - balia) <= 2 * REL * abs(balia) + 2, (w, r)
