"""``[sim] mptcp = "linux"``: upstream Linux's MPTCP connection level in the simulator
(crates/mpcc-core/src/sim/mptcp_linux.rs; its mechanisms have Rust unit tests there)."""

import dataclasses
import subprocess
import sys

import pytest

from mpcc import compare, scenario, sim
from mpcc.errors import ScenarioError
from mpcc.sim.engine import core_config

#: A coupled connection over a 10 Mb/s path and a 1 Mb/s path that four Reno flows share: the
#: coupled subflow there is driven to a window of 1–2 packets.
HOL = """
name = "hol"
duration_s = 30.0
[[links]]
name = "fast"
capacity_mbps = 10.0
delay_ms = 10.0
buffer_pkts = 50
[[links]]
name = "slow"
capacity_mbps = 1.0
delay_ms = 40.0
buffer_pkts = 20
[[groups]]
name = "mp"
count = 1
algorithm = "coupled"
paths = [["fast"], ["slow"]]
[[groups]]
name = "sp"
count = 4
algorithm = "reno"
paths = [["slow"]]
{sim}
"""


def _mode(s, mode, **opts):
    return dataclasses.replace(s, engine={**s.engine, "sim": {**(s.engine.get("sim") or {}), "mptcp": mode, **opts}})


def test_linux_connection_level_blocks_a_coupled_connection_behind_its_small_window():
    """With the ideal connection level the coupled connection fills the fast path (≈ 10.1–10.3
    Mb/s); on Linux its send buffer (2 × 256 KB + 4 KB, expanded while the writer waits by
    2 × the fast subflow's window) fills with data waiting behind the
    1–2-packet subflow and the fast subflow sits idle with nothing to send, until the
    connection-level timer re-injects the data it waits for. How long that takes varies with
    the seed: linux ÷ ideal = 0.34–0.92 over seeds 1–8, mean 0.62. Judged: below ideal in every
    seed, and the mean of the eight ratios below 0.8 (a fault that removed the blocking would
    bring it to ≈ 1; one that kept it would have to move the mean by 0.18). The receiver is the
    simple one, so that this checks the connection level alone (with the Linux receiver, the
    linux mode's default, the blocking costs less here: docs/sim.md)."""
    s = scenario.loads(HOL.format(sim=""))
    ratios = []
    for seed in range(1, 9):
        ideal = sim.run(s, seed=seed, sample_interval_s=0).result
        linux = sim.run(_mode(s, "linux", receiver="simple"), seed=seed, sample_interval_s=0).result
        assert "mptcp" not in ideal.extra and linux.extra["mptcp"] == "linux"
        mp_i, mp_l = ideal.groups["mp"], linux.groups["mp"]
        assert mp_l.rate_mbps < mp_i.rate_mbps and mp_l.path_rate_mbps[0] < mp_i.path_rate_mbps[0]
        ratios.append(mp_l.rate_mbps / mp_i.rate_mbps)
        cl = mp_l.extra["connection_limits"]
        assert cl["idle"] > 0.03 and cl["idle_no_data"] > 0.9, cl
        assert cl["reinjected_pkts"] > 0
        # the data queued on the subflows and not yet sent is part of the connection's queued data
        assert 0 < cl["sf_notsent_kb"] < cl["queued_kb"], cl
        # the fast route is the idle one; group idle = mean of the two routes' (one flow)
        assert cl["path_idle"][0] > cl["path_idle"][1]
        assert cl["idle"] == pytest.approx(sum(cl["path_idle"]) / 2)
        # tcp_wmem[0] + two subflows of at least tcp_wmem[1]; the fast one's grows with its
        # window (the testbed: 737 and 827 KB, bench/kernel/RESULTS.md §17f)
        assert (4096 + 2 * 262144) / 1024 <= cl["sndbuf_kb"] < 4 * 1024, cl["sndbuf_kb"]
        assert "connection_limits" not in mp_i.extra
        assert "connection_limits" not in linux.groups["sp"].extra
    assert sum(ratios) / len(ratios) < 0.8, ratios


def test_ideal_is_the_default_and_its_run_description_is_unchanged():
    """``mptcp = "ideal"`` (the default) hands the core the run description it had before the
    linux mode existed (no new option keys), so its results are those of the existing sim
    tests, which pass unchanged; spelled out or left out, the results are identical."""
    default = scenario.loads(HOL.format(sim=""))
    explicit = scenario.loads(HOL.format(sim='[sim]\nmptcp = "ideal"'))
    cfg = core_config(default, seed=1)
    assert set(cfg["options"]) == {"start_jitter_s", "initial_cwnd", "rto_min_s", "delayed_ack", "delayed_ack_s",
                                   "per_ack_increase", "slow_start_at_ssthresh", "ecn", "host_jitter_s"}
    assert core_config(explicit, seed=1) == cfg
    a = sim.run(default, seed=1, sample_interval_s=0).result.to_dict()
    b = sim.run(explicit, seed=1, sample_interval_s=0).result.to_dict()
    assert a == b
    lx = core_config(_mode(default, "linux"), seed=1)["options"]
    assert lx["mptcp"] == "linux" and lx["tcp_wmem"] == [4096.0, 262144.0, 33554432.0]


def test_send_buffer_follows_tcp_wmem():
    """The connection's send buffer is tcp_wmem[0] + the subflows' (tcp_wmem[1] each, at least
    tcp_sndbuf_expand's 2 × max(cwnd, 10) × 4352 bytes, and expanded so while the writer
    waits)."""
    s = scenario.loads(HOL.format(sim='[sim]\nmptcp = "linux"\ntcp_wmem_default = 1048576'))
    big = sim.run(s, seed=1, sample_interval_s=0).result.groups["mp"].extra["connection_limits"]["sndbuf_kb"]
    assert big >= (4096 + 2 * 1048576) / 1024
    s = scenario.loads(HOL.format(sim='[sim]\nmptcp = "linux"\ntcp_wmem_default = 16384'))
    small = sim.run(s, seed=1, sample_interval_s=0).result.groups["mp"].extra["connection_limits"]["sndbuf_kb"]
    assert (4096 + 2 * 2 * 10 * 4352) / 1024 < small < big


def test_sndbuf_per_mss_is_the_kernels_and_sizes_the_buffers():
    """``sndbuf_per_mss`` (tcp_sndbuf_expand's per-segment truesize, a constant of the kernel's
    build: 4352 by default, 2304 on the testbed's 6.18) reaches the core in the linux mode only
    and sizes the subflows' buffers in proportion where they exceed tcp_wmem[1]."""
    opts = '[sim]\nmptcp = "linux"\ntcp_wmem_default = 16384'
    dflt = scenario.loads(HOL.format(sim=opts))
    small = scenario.loads(HOL.format(sim=opts + "\nsndbuf_per_mss = 2304"))
    assert core_config(dflt, seed=1)["options"]["sndbuf_per_mss"] == 4352.0
    assert core_config(small, seed=1)["options"]["sndbuf_per_mss"] == 2304.0
    assert "sndbuf_per_mss" not in core_config(scenario.loads(HOL.format(sim="[sim]\nsndbuf_per_mss = 2304")),
                                               seed=1)["options"]
    kb = [sim.run(x, seed=1, sample_interval_s=0).result.groups["mp"].extra["connection_limits"]["sndbuf_kb"]
          for x in (dflt, small)]
    # at least the two subflows' initial 2 · 10 · per_mss each, over tcp_wmem[0]
    assert kb[0] >= (4096 + 2 * 20 * 4352) / 1024 and kb[1] >= (4096 + 2 * 20 * 2304) / 1024
    assert kb[1] < kb[0], kb


def test_sndbuf_expand_selects_the_programs_factor():
    """``sndbuf_expand = "mpcc"`` (MPCC_BPF_CONN=sndbuf's factor, 32 · Σ_k max(w_k, 10) /
    max(w_r, 10)) reaches the core only in the linux mode, and gives the connection buffers
    of megabytes where the kernel's factor 2 gives hundreds of KB; behind the 1–2-packet
    subflow it costs throughput, as the testbed measured (bench/kernel/RESULTS.md §17f: 9.2–9.4
    → 3.7–4.5 Mb/s, 10–30 s), on the mean of 8 seeds over the same window with the linux mode's
    defaults (Linux receiver, tail loss probes): 15 % (§25; 4 % over the whole run, whose first
    seconds the small buffer wins). Without probes and with the simple receiver the 1–2-packet
    subflow times out, which stalls the small buffer more than the large one, so the cost is a
    property of the whole linux mode, not of its connection level alone. Deterministic per seed:
    no false-failure rate."""
    opts = '[sim]\nmptcp = "linux"'
    default = scenario.loads(HOL.format(sim=opts))
    mpcc = scenario.loads(HOL.format(sim=opts + '\nsndbuf_expand = "mpcc"'))
    assert core_config(default, seed=1)["options"]["sndbuf_expand"] == "kernel"
    assert core_config(mpcc, seed=1)["options"]["sndbuf_expand"] == "mpcc"
    ideal = scenario.loads(HOL.format(sim='[sim]\nsndbuf_expand = "mpcc"'))
    assert "sndbuf_expand" not in core_config(ideal, seed=1)["options"]
    k = [sim.run(default, seed=i, sample_interval_s=0, measure=(10, 30)).result.groups["mp"] for i in range(8)]
    m = [sim.run(mpcc, seed=i, sample_interval_s=0, measure=(10, 30)).result.groups["mp"] for i in range(8)]
    for a, b in zip(m, k):
        assert a.extra["connection_limits"]["sndbuf_kb"] > 10 * b.extra["connection_limits"]["sndbuf_kb"]
    rate = lambda gs: sum(g.rate_mbps for g in gs) / len(gs)  # noqa: E731
    assert rate(m) < 0.9 * rate(k), (rate(m), rate(k))


def test_tail_loss_probes_come_with_the_linux_connection_level():
    """``tlp = "auto"``: every sender probes tail losses with the linux connection level (as the
    testbed's sockets do), none with the ideal one; "on" and "off" override it, and only a value
    other than "auto" reaches the core, so the ideal mode's run description is unchanged. The
    counts are deterministic per seed; the mechanism's own tests are in sim/tcp/tlp.rs."""
    runs = {k: scenario.loads(HOL.format(sim=v)) for k, v in {
        "ideal": "", "ideal+on": '[sim]\ntlp = "on"', "linux": '[sim]\nmptcp = "linux"',
        "linux+off": '[sim]\nmptcp = "linux"\ntlp = "off"'}.items()}
    assert "tlp" not in core_config(runs["ideal"], seed=1)["options"]
    assert "tlp" not in core_config(runs["linux"], seed=1)["options"]
    assert core_config(runs["ideal+on"], seed=1)["options"]["tlp"] == "on"
    probes = {k: sum(g.extra["loss_probes"] for g in sim.run(s, seed=1, sample_interval_s=0).result.groups.values())
              for k, s in runs.items()}
    assert probes["ideal"] == 0 and probes["linux+off"] == 0, probes
    assert probes["linux"] > 0 and probes["ideal+on"] > 0, probes


@pytest.mark.parametrize("field, value, choices", [("sndbuf_expand", "sndbuf", "kernel, mpcc"),
                                                    ("receiver", "kernel", "auto, simple, linux"),
                                                    ("tlp", "yes", "auto, on, off")])
def test_bad_choice_is_one_line_exit_2(tmp_path, field, value, choices):
    f = tmp_path / "bad.toml"
    f.write_text(HOL.format(sim=f'[sim]\nmptcp = "linux"\n{field} = "{value}"'))
    p = subprocess.run([sys.executable, "-m", "mpcc.cli", "check", str(f)], capture_output=True, text=True)
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1 and f"sim.{field}" in lines[0] and choices in lines[0], p.stderr


def test_bad_per_mss_is_one_line_exit_2(tmp_path):
    f = tmp_path / "bad.toml"
    f.write_text(HOL.format(sim='[sim]\nmptcp = "linux"\nsndbuf_per_mss = 100'))
    p = subprocess.run([sys.executable, "-m", "mpcc.cli", "check", str(f)], capture_output=True, text=True)
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1 and "sim.sndbuf_per_mss" in lines[0], p.stderr


def test_bad_mode_is_one_line_exit_2(tmp_path):
    with pytest.raises(ScenarioError, match="sim.mptcp"):
        sim.run(scenario.loads(HOL.format(sim='[sim]\nmptcp = "kernel"')), seed=1)
    f = tmp_path / "bad.toml"
    f.write_text(HOL.format(sim='[sim]\nmptcp = "kernel"'))
    p = subprocess.run([sys.executable, "-m", "mpcc.cli", "check", str(f)], capture_output=True, text=True)
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1 and "sim.mptcp" in lines[0] and "ideal, linux" in lines[0], p.stderr


def test_compare_shows_both_modes_and_the_cost_of_the_connection_level():
    s = scenario.loads(HOL.format(sim=""))
    c = compare.compare(s, engines=("sim", "sim-linux"), seed=1)
    g = c.differences["groups"]["mp"]
    rates = g["rate_mbps"]
    assert g["connection_cost_mbps"] == pytest.approx(rates["sim"] - rates["sim-linux"])
    assert g["connection_cost_mbps"] > 0
    assert g["path_connection_cost_mbps"][0] == pytest.approx(
        g["paths"][0]["rate_mbps"]["sim"] - g["paths"][0]["rate_mbps"]["sim-linux"])
    assert "mptcp" not in c.runs["sim"].result.extra
    assert c.runs["sim-linux"].result.extra["mptcp"] == "linux"
    assert "connection_limits" in c.runs["sim-linux"].result.groups["mp"].extra
    # the diagnosis quotes the connection level's samples for sim-linux, as for the testbed
    assert any("sim-linux mp/1" in line and "no data to hand out" in line for line in c.diagnosis), c.diagnosis
    from rich.console import Console
    con = Console(record=True, width=200)
    c.print(con)
    assert "ideal − linux" in con.export_text()


def test_compare_models_the_programs_the_testbed_loads(monkeypatch):
    """compare's sim-linux takes ``sndbuf_expand`` from MPCC_BPF_CONN, as the testbed's loader
    does, unless the scenario's [sim] table sets it."""
    from mpcc.compare.engines import with_mptcp
    s = scenario.loads(HOL.format(sim=""))
    monkeypatch.delenv("MPCC_BPF_CONN", raising=False)
    assert with_mptcp(s, "linux").engine["sim"]["sndbuf_expand"] == "kernel"
    monkeypatch.setenv("MPCC_BPF_CONN", "sndbuf,pacing")
    assert with_mptcp(s, "linux").engine["sim"]["sndbuf_expand"] == "mpcc"
    assert "sndbuf_expand" not in with_mptcp(s, "ideal").engine["sim"]
    explicit = scenario.loads(HOL.format(sim='[sim]\nsndbuf_expand = "kernel"'))
    assert with_mptcp(explicit, "linux").engine["sim"]["sndbuf_expand"] == "kernel"


def test_compare_models_the_testbeds_receivers():
    """compare's sim-linux ACKs every segment ("simple") when the testbed's receivers do
    (``[testbed] receiver = "quickack"``), keeps the linux mode's own receiver ("auto": Linux's
    delayed ACKs) for the stock one, and never overrides a receiver the [sim] table sets."""
    from mpcc.compare.engines import with_mptcp

    def sim_table(sim="", testbed=""):
        s = scenario.loads(HOL.format(sim=sim) + testbed)
        return with_mptcp(s, "linux").engine["sim"], with_mptcp(s, "ideal").engine["sim"]
    linux, ideal = sim_table(testbed='\n[testbed]\nreceiver = "quickack"\n')
    assert linux["receiver"] == "simple" and "receiver" not in ideal
    assert "receiver" not in sim_table(testbed='\n[testbed]\nreceiver = "linux"\n')[0]
    assert "receiver" not in sim_table()[0]
    assert sim_table('[sim]\nreceiver = "linux"', '\n[testbed]\nreceiver = "quickack"\n')[0]["receiver"] == "linux"
    # the result says which receiver it simulated (only where one is set)
    s = scenario.loads(HOL.format(sim="") + '\n[testbed]\nreceiver = "quickack"\n')
    c = compare.compare(dataclasses.replace(s, duration_s=5.0), engines=("sim", "sim-linux"), seed=1)
    assert c.runs["sim-linux"].result.extra["receiver"] == "simple"
    assert "receiver" not in c.runs["sim"].result.extra


def test_compare_models_the_kernel_it_runs_beside(monkeypatch):
    """compare's sim-linux takes ``sndbuf_per_mss`` from this machine's kernel where it can be
    measured (mpcc.testbed.tcpmem), for the testbed's MSS, unless the scenario sets it; where
    it cannot (no root), the simulator's default stays."""
    from mpcc.compare.engines import with_mptcp
    from mpcc.testbed import tcpmem
    asked = []
    monkeypatch.setattr(tcpmem, "sim_per_mss_or_none", lambda pb: asked.append(pb) or 2304)
    s = scenario.loads(HOL.format(sim=""))
    assert with_mptcp(s, "linux").engine["sim"]["sndbuf_per_mss"] == 2304 and asked == [s.packet_bytes]
    assert "sndbuf_per_mss" not in with_mptcp(s, "ideal").engine["sim"]
    explicit = scenario.loads(HOL.format(sim="[sim]\nsndbuf_per_mss = 4352"))
    assert with_mptcp(explicit, "linux").engine["sim"]["sndbuf_per_mss"] == 4352
    monkeypatch.setattr(tcpmem, "sim_per_mss_or_none", lambda pb: None)
    assert "sndbuf_per_mss" not in with_mptcp(s, "linux").engine["sim"]


def test_linux_receiver_runs_linuxs_delayed_ack_engine():
    """``receiver``: "auto" (the default) is the Linux receiver in the linux mode and the simple
    one in the ideal mode. The Linux receiver runs Linux's delayed-ACK engine
    (crates/mpcc-core/src/sim/receiver.rs, unit-tested there): one ACK per two segments apart
    from quick ACKs, holes and timers. Here the TCP flows' windows are a few packets on the slow
    link, so the timer ACKs many lone segments (0.87 ACKs per segment); the coupled subflow on
    the fast link ACKs fewer than every segment once its window stops growing. The simple
    receiver ACKs every segment. Deterministic per seed: no false-failure rate."""
    def ratios(sim_table):
        s = scenario.loads(HOL.format(sim=sim_table))
        g = sim.run(s, seed=1, sample_interval_s=0).result.groups
        acks, segs = g["sp"].extra["path_acks"][0], g["sp"].extra["path_segs_in"][0]
        assert segs > 1000
        return acks / segs, g["mp"].extra["path_acks"][0] / g["mp"].extra["path_segs_in"][0]

    auto = scenario.loads(HOL.format(sim='[sim]\nmptcp = "linux"'))
    assert "receiver" not in core_config(auto, seed=1)["options"]
    linux = ratios('[sim]\nmptcp = "linux"\nreceiver = "linux"')
    assert ratios('[sim]\nmptcp = "linux"') == linux
    assert 0.5 <= linux[0] <= 0.95 and 0.5 <= linux[1] < 0.95, linux
    # (segments received = sent − dropped: packets still queued at the end count as received)
    assert min(ratios('[sim]\nmptcp = "linux"\nreceiver = "simple"')) > 0.99
    assert min(ratios("")) > 0.99
