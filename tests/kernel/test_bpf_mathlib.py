"""The fixed-point log2, exp2 and pow of bpf/include/mpcc_pow.h (the functions any rule file may
use, e.g. bpf/epsilon.bpf.c's w^(ε/2)), compiled for the host from the same header and checked
against spec/vectors/math.json, which Python's float math computes (mpcc.vectors.build_math),
within the bounds the header states:

    |mn_log2(a)·2^-32 − log2 a| ≤ 2^-28,   mn_exp2: relative ≤ 2^-29,
    mn_pow(a, y): relative ≤ 2^-28·(1 + |y|).

Deterministic integer code on fixed inputs: no false-failure rate."""

from __future__ import annotations

import ctypes
import json
import math
import shutil
import subprocess
from pathlib import Path

import pytest

from mpcc import vectors

ROOT = Path(__file__).resolve().parents[2]

SHIM = r"""
#include "mpcc_pow.h"
int64_t t_log2(uint64_t m, int32_t e) { return mn_log2(mn_pack(m, e)); }
uint64_t t_exp2(int64_t y) { return mn_exp2(y); }
uint64_t t_pow(uint64_t m, int32_t e, int64_t y) { return mn_pow(mn_pack(m, e), y); }
"""


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.skip("no C compiler")
    d = tmp_path_factory.mktemp("mathlib")
    (d / "shim.c").write_text(SHIM)
    subprocess.run([cc, "-O2", "-shared", "-fPIC", "-Wall", "-Werror", "-I", str(ROOT / "bpf" / "include"),
                    "-o", str(d / "shim.so"), str(d / "shim.c")], check=True)
    so = ctypes.CDLL(str(d / "shim.so"))
    so.t_log2.restype, so.t_log2.argtypes = ctypes.c_int64, [ctypes.c_uint64, ctypes.c_int32]
    so.t_exp2.restype, so.t_exp2.argtypes = ctypes.c_uint64, [ctypes.c_int64]
    so.t_pow.restype, so.t_pow.argtypes = ctypes.c_uint64, [ctypes.c_uint64, ctypes.c_int32, ctypes.c_int64]
    return so


def _value(mn: int) -> float:
    m, e = mn & 0xFFFFFFFF, ctypes.c_int32(mn >> 32).value
    return math.ldexp(m, e)


DOC = json.loads(vectors.MATH_PATH.read_text())
B = vectors.MATH_BOUNDS


def test_committed_math_vectors_are_pythons_float_math():
    assert DOC == json.loads(json.dumps(vectors.build_math()))
    assert DOC["bounds"] == B
    assert min(len(DOC[k]) for k in ("log2", "exp2", "pow")) >= 150


def test_log2_within_bound(lib):
    worst = max(abs(lib.t_log2(c["m"], c["e"]) / 2**32 - c["log2"]) for c in DOC["log2"])
    assert worst <= B["log2_abs"], worst
    assert lib.t_log2(2**31, -31) == 0                      # log2 1 = 0 exactly


def test_exp2_within_bound(lib):
    for c in DOC["exp2"]:
        got = _value(lib.t_exp2(c["y_q32"]))
        assert abs(got - c["exp2"]) <= B["exp2_rel"] * c["exp2"], c
    assert _value(lib.t_exp2(5 * 2**32)) == 32.0            # integer powers are exact


def test_pow_within_bound(lib):
    for c in DOC["pow"]:
        y = c["y_q32"] / 2**32
        got = _value(lib.t_pow(c["m"], c["e"], c["y_q32"]))
        assert abs(got - c["pow"]) <= B["pow_rel"] * (1 + abs(y)) * c["pow"], c
