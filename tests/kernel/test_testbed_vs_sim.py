"""Simulator vs kernel testbed on a RED network from no paper: per group within 15 % (issue #11's
criterion), judged on 2 runs of 24 s per case (the last 20 s of each measured) in long tests;
`make test` runs EWTCP's case on one run, within 25 % (rates in the tests). With 9 s measured,
one run's noise alone crossed 15 % now and then (a Reno group at 15.2 % in a CI run). Needs
root, MPTCP, linkem and the BPF loader; ≤ 60 s per case.

Longer runs and more scenarios: bench/kernel/sim_vs_testbed.py, recorded in
bench/kernel/RESULTS.md §5 — uncoupled EWTCP and the single-path groups agree within 15 %; the
coupled algorithms' multipath groups get less on the kernel (Balia −26 %, Coupled −32 %), the miss
named there and in docs/testbed.md; §13 measures it at the MPTCP connection level (its send
buffer full of data awaiting the connection-level ACK).
"""

from __future__ import annotations

import os

import pytest

from mpcc import scenario
from mpcc.errors import EnvironmentProblem

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="kernel testbed tests need root")
PAYLOAD = 1448  # TCP payload of a 1500-byte packet (timestamps on): the testbed counts payload

RED = 'aqm = "red"\nred = {min_th = 10, max_th = 40, max_p = 0.1}'
NET = f"""
name = "red-three-links"
duration_s = 24.0
[[links]]
name = "a"
capacity_mbps = 20.0
delay_ms = 10.0
buffer_pkts = 100
{RED}
[[links]]
name = "b"
capacity_mbps = 15.0
delay_ms = 20.0
buffer_pkts = 100
{RED}
[[links]]
name = "c"
capacity_mbps = 30.0
delay_ms = 5.0
buffer_pkts = 100
{RED}
[[groups]]
name = "mp"
count = 1
algorithm = "{{algo}}"
paths = [["a"], ["b", "c"]]
[[groups]]
name = "sp-a"
count = 2
algorithm = "reno"
paths = [["a"]]
[[groups]]
name = "sp-b"
count = 2
algorithm = "reno"
paths = [["b"]]
[[groups]]
name = "sp-c"
count = 1
algorithm = "reno"
paths = [["c"]]
"""


TB_RUNS = 2      # testbed runs per case; each group is judged on its mean rate over them


@pytest.fixture(scope="module")
def bed():
    """One testbed session for both cases: the same network (only the algorithm differs)."""
    from mpcc.testbed import engine, netns, topology
    try:
        netns.check_environment()
        topology.linkem_binary()
    except EnvironmentProblem as e:
        pytest.skip(str(e))
    with engine.Testbed() as b:
        yield b


def _both(algo: str, bed, runs: int = TB_RUNS):
    from mpcc.sim import engine as sim
    from mpcc.kernel import bpf
    from mpcc.testbed import engine, netns, topology
    try:
        netns.check_environment()
        topology.linkem_binary()
        bpf.check_environment()
    except EnvironmentProblem as e:
        pytest.skip(str(e))
    if algo not in bpf.algorithms():
        pytest.skip(f"no BPF {algo}")
    s = scenario.loads(NET.replace("{algo}", algo), "red-three-links.toml")
    warm = 4.0
    sims = [sim.run(s, seed=k, sample_interval_s=0, measure=(warm, s.duration_s)).result for k in range(3)]
    tb = engine.run_detailed(s, engine.settings_from(s, warmup_s=warm, runs=runs), None, progress=False, bed=bed)[0]
    out = {}
    for g in s.groups:
        sv = sum(r.groups[g.name].rate_mbps for r in sims) / len(sims)
        out[g.name] = (sv, tb.groups[g.name].rate_mbps * s.packet_bytes / PAYLOAD)
    return out


# The EWTCP case's spread: per-run error (testbed − sim) / sim of each group, 9 runs of 24 s
# (bench/tests/kernel_spread.py vssim: 3 runs 2026-11-28 20:38 UTC, 6 runs 2026-11-29 04:24 UTC
# on a quiet machine with the lock held; bench/tests/RESULTS.md), mean and sd in %: mp −2.45 and
# 4.20, sp-a −2.93 and 2.75, sp-b −3.92 and 2.42, sp-c −2.45 and 1.23.


@pytest.mark.kernel
@needs_root
def test_uncoupled_ewtcp_and_reno_groups_agree_with_the_simulator_one_run(bed):
    """`make test`'s short version of the 15 % case below: one 24 s run (20 s measured), each
    group within 25 % of the simulator.

    False-failure rate (the spread above, 9 runs): mp's bound is 5.4 sd from its mean (normal 4·10⁻⁸;
    Student t with 8 df on the predictive sd, the sd itself estimated from 9 runs: 6·10⁻⁴), the
    Reno groups' ≥ 8 sd (t ≤ 4·10⁻⁵): ≈ 6.5·10⁻⁴ per test run by the t figure."""
    rates = _both("ewtcp", bed, runs=1)
    for name, (sim_v, tb_v) in rates.items():
        assert abs(tb_v - sim_v) <= 0.25 * sim_v, (name, rates)


@pytest.mark.kernel
@pytest.mark.long
@needs_root
def test_uncoupled_ewtcp_and_reno_groups_agree_with_the_simulator_within_15_percent(bed):
    """Every group within 15 % (issue #11's criterion) on the mean of TB_RUNS runs of 24 s (20 s
    measured). A long test (`make test-long`); `make test` runs the one-run case above.

    False-failure rate (the spread above, 9 runs): the mean of 2 runs has mp sd 3.0 %, the bound 4.2
    sd from its mean (normal 1.2·10⁻⁵; Student t with 8 df on the predictive sd: 2.9·10⁻³), the
    Reno groups ≥ 6 sd (t ≤ 3·10⁻⁴): ≈ 3.4·10⁻³ per test run by the t figure, to lower by
    measuring more runs. One run of 24 s allowed ≈ 7·10⁻³."""
    rates = _both("ewtcp", bed)
    for name, (sim_v, tb_v) in rates.items():
        assert abs(tb_v - sim_v) <= 0.15 * sim_v, (name, rates)


@pytest.mark.kernel
@pytest.mark.long
@needs_root
def test_balia_groups_agree_with_the_simulator_within_15_percent(bed):
    """The single-path groups must agree within 15 %. Balia's multipath group gets less on the
    kernel than in the simulator (RESULTS.md §5: −26 % at 40 s; issue 30, docs/testbed.md: upstream
    MPTCP's connection level), so it is held only to more than half the simulator's rate (a
    larger miss means something else broke); its deficit is printed. A long test (`make
    test-long`); `make test` runs the EWTCP case above.

    False-failure rate: the single-path groups are judged on the mean of TB_RUNS runs as in the
    EWTCP case; their spread was measured there (sd 1–3.5 % per run), not with Balia: estimated
    < 10⁻³ if Balia's Reno groups spread alike (unmeasured). The multipath bound (> 50 % of the
    simulator) is 7 sd (mean of 2 runs) from the −26 % measured: ≈ 0."""
    rates = _both("balia", bed)
    for name, (sim_v, tb_v) in rates.items():
        if name != "mp":
            assert abs(tb_v - sim_v) <= 0.15 * sim_v, (name, rates)
    sim_v, tb_v = rates["mp"]
    assert tb_v > 0.5 * sim_v, rates  # far beyond the documented deficit: something else broke
    print(f"balia multipath group: sim {sim_v:.2f}, testbed {tb_v:.2f} Mb/s ({(tb_v - sim_v) / sim_v:+.1%}; "
          "the connection-level deficit of docs/testbed.md)")
