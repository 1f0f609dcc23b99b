"""Jiang, Cai, Towsley's utilisation ordering on the real kernel (issue 14), through
:mod:`mpcc.reproduce.jiang2011.testbed`: one MPTCP flow with a subflow on each of two 5 Mb/s,
100 ms paths (20-packet drop-tail buffers, §5.1). Coupling only the increase (MTCP α = 1, β = 0)
keeps the paths busier than coupling both phases (Fully Coupled, α = β = 1): the report's §3.2
and Fig. 9 (closed forms at this buffer: 1.0 vs 0.83; packet simulator 0.94 vs 0.68).

Root, MPTCP, BPF struct_ops and a built linkem; skips otherwise. A long test (`make test-long`):
14 runs of 12 s, ~4 min with the set-up.
Three repetitions of one such run (bench/kernel/RESULTS.md §14.2, 2026-11-24): coupled-increase
0.899 / 0.923 / 0.911, fully-coupled 0.501 / 0.560 / 0.632. One 12 s run of fully-coupled can
reach its closed form, 0.830 (a fresh-clone CI run, 2026-11-28, against coupled-increase 0.906:
a single run failed the margin), so the test compares means over several runs, as the
testbed's tables do.
"""

from __future__ import annotations

import os

import pytest

pytestmark = [pytest.mark.kernel,
              pytest.mark.skipif(os.geteuid() != 0, reason="kernel testbed tests need root")]

DURATION_S, WARMUP_S = 12.0, 3.0
CI_RUNS, FC_RUNS = 6, 8


def _utilisation(algorithm: str, runs: int) -> dict:
    from mpcc.reproduce.jiang2011 import testbed as tb
    from mpcc.reproduce.peng2016.budget import KernelRun
    from mpcc.kernel import bpf
    from mpcc.testbed import topology

    if problem := topology.environment_problem() or bpf.environment_problem():
        pytest.skip(problem)
    res = tb.utilisation([algorithm], [(2, 20)], KernelRun(runs, DURATION_S, WARMUP_S), progress=False)
    assert not any("failed" in v for v in res.values()), res
    out = res[(algorithm, 2, 20)]
    assert len(out["per_run"]) == runs, res
    return out


@pytest.mark.long
def test_coupled_increase_uses_more_of_two_paths_than_fully_coupled():
    """The paper's ordering: mean U of CI_RUNS coupled-increase runs above that of FC_RUNS
    fully-coupled runs, 12 s each (9 s measured). A long test (`make test-long`, ~4 min): no
    single run of either has a bound that holds by a wide margin (below).

    Per-run U measured: fully-coupled 12 runs (bench/tests/kernel_spread.py mtcp and RESULTS.md
    §14.2, 2026-11-24 and 2026-11-28), mean 0.575, sd 0.103 (0.49–0.83); coupled-increase 6 runs
    on a quiet machine (2026-11-29 02:05 UTC, the compat build), mean 0.822, sd 0.083 (0.71–0.91;
    8 earlier runs spread only 0.90–0.92). Below the closed form (1.0) and the simulator (0.94),
    and a run can fall below single-path TCP's 0.75, so the earlier bound U ≥ 0.8 is not a test
    of the code (RESULTS.md §14.2). False-failure rate: the difference of the means has sd
    √(0.083²/6 + 0.103²/8) = 0.050 and lies 0.247 above 0: 5.0 sd, a normal tail of 3·10⁻⁷ per
    test run (Student t with 5 df, coupled-increase's sd estimated from 6 runs: 2·10⁻³)."""
    a, b = _utilisation("coupled-increase", CI_RUNS), _utilisation("fully-coupled", FC_RUNS)
    ci, fc = a["U"][0], b["U"][0]
    runs = f"runs: coupled-increase {[round(u, 3) for u in a['per_run']]}, fully-coupled {[round(u, 3) for u in b['per_run']]}"
    assert ci > fc, f"coupled-increase mean U = {ci:.3f} not above fully-coupled {fc:.3f}; {runs}"
