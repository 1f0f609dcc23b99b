"""The fixed regression corpus of issue #12: one input per class of failure the mutation fuzzer
found (tracebacks, Rust aborts, hangs, nonsense accepted with exit 0, errors that were not one
line). Each must now exit 2 with exactly one stderr line ``mpcc: error: …`` that names the
field or flag (``names``) and gives a fix. tests/hostile/corpus/cases.json lists them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import fuzzlib as fz

CORPUS = Path(__file__).parent / "corpus"
REPO = Path(__file__).resolve().parents[2]
CASES = json.loads((CORPUS / "cases.json").read_text())


def _argv(case):
    return [a.replace("{corpus}", str(CORPUS)).replace("{repo}", str(REPO)) for a in case["argv"]]


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_corpus_case(case):
    o = fz.run_cli(_argv(case), timeout_s=60)
    assert o.exception is None, f"{type(o.exception).__name__}: {o.exception}"
    assert o.code == case["code"], o.err
    assert not fz.judge(o), fz.judge(o)
    if case["code"] == 0:       # a valid input the fuzzer once crashed on: it must simply work
        return
    line = o.err.strip()
    assert case["names"] in line, f"error does not name {case['names']!r}: {line}"
    assert "\n" not in line and "(fix:" in line


def test_corpus_covers_every_class_of_the_issue():
    ids = {c["id"] for c in CASES}
    for needed in ("scenario/count-400-digits", "scenario/fluid-t_end-400-digits", "scenario/sim-initial_cwnd-400-digits",
                   "hetero/utility_weight-400-digits", "scenario/fluid-at_s-past-duration", "cli/fluid-at-nan",
                   "hetero/dynamics-dt-1e300", "cli/mtc-rtt-inf", "cli/mtc-smooth-s-inf", "cli/mtc-seed-negative",
                   "cli/mtc-rounds-20-digits", "cli/mtc-rounds-1e9-replicas-1e6", "cli/mtc-sim-rtt-1e-300",
                   "cli/mtc-trace-not-parquet", "cli/mtc-paths-a-inf", "cli/mtc-paths-loss-5e-324", "cli/sim-runs-1e9",
                   "cli/sim-out-under-a-file", "scenario/capacity-1e-300", "scenario/sample_interval-1e-9",
                   "scenario/mstcp-a-inf", "scenario/ewtcp-a-1e300", "scenario/generalized-eta-1e300",
                   "scenario/initial_cwnd-1e9", "scenario/count-2147483648", "scenario/count-1e6-flows",
                   "scenario/fast-update_interval-1e-300", "scenario/fast-adapt_interval-1e-9",
                   "scenario/background-rate-1e-300", "hetero/algorithm1-dt-1e-300", "scenario/duration-1e9",
                   "scenario/duration-1e-9", "scenario/capacity-5e-324", "cli/mtc-rtt-nan", "scenario/buffer-1e12-u32",
                   "scenario/measure-window-empty", "cli/sim-runs-not-int", "scenario/link-name-newline"):
        assert needed in ids, needed
