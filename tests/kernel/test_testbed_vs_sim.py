"""Simulator vs kernel testbed on a RED network from no paper: per group within 15 % (issue #11's
criterion; 2 runs of 24 s per case, the last 20 s of each measured. With 9 s measured,
one run's noise alone crossed the bound now and then: a Reno group at 15.2 % in a CI run, the
EWTCP case once in 9 runs on 2026-11-24; with one run of 20 s measured, about 7·10⁻³ per test run,
see the tests). Needs root, MPTCP, linkem and the BPF loader; ≤ 60 s per case.

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


def _both(algo: str, bed):
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
    tb = engine.run_detailed(s, engine.settings_from(s, warmup_s=warm, runs=TB_RUNS), None, progress=False, bed=bed)[0]
    out = {}
    for g in s.groups:
        sv = sum(r.groups[g.name].rate_mbps for r in sims) / len(sims)
        out[g.name] = (sv, tb.groups[g.name].rate_mbps * s.packet_bytes / PAYLOAD)
    return out


@pytest.mark.kernel
@needs_root
def test_uncoupled_ewtcp_and_reno_groups_agree_with_the_simulator_within_15_percent(bed):
    """False-failure rate: each group's testbed rate is the mean of TB_RUNS runs of 24 s (20 s
    measured). Measured (bench/tests/kernel_spread.py vssim, 3 runs, 2026-11-28 20:38 UTC, load
    ~1–2), per-run error (testbed − sim) / sim: mp −8.2, +0.8, −4.3 % (mean −3.9, sd 4.5);
    sp-a −3.0, −2.8, −0.9 (sd 1.1); sp-b −0.6, −7.6, −3.4 (sd 3.5); sp-c −0.3, −3.0, −1.6
    (sd 1.4). The mean of 2 runs: mp sd 3.2 %, the bound −15 % 3.5 sd away (2.4·10⁻⁴); sp-b
    4.5 sd (4·10⁻⁶); the others > 10 sd: ≈ 2.5·10⁻⁴ per test run (normal, the sd from 3 runs:
    an estimate to firm up with more measured runs). One run of 24 s allowed ≈ 7·10⁻³."""
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
