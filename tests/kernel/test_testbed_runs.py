"""The namespace testbed end to end on the real kernel: Table IV-like WiFi/3G runs with kernel
Reno per subflow and (when the BPF loader is there) mpcc_balia; friendliness on a shared
bottleneck; SIGKILL mid-run leaves nothing behind after the next cleanup or the next run; Ctrl-C
in the second of two runs keeps the first run's results (marked partial) and leaves nothing.

Needs root, MPTCP and a built linkem; skips otherwise. ~2 min in total.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mpcc import scenario
from mpcc.errors import EnvironmentProblem, ScenarioError

ROOT = Path(__file__).resolve().parents[2]
TABLE4 = ROOT / "scenarios" / "peng2016" / "table4.toml"

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="kernel testbed tests need root")


def _ready():
    from mpcc.testbed import topology
    if problem := topology.environment_problem():
        pytest.skip(problem)


def _bpf_algorithms() -> list[str]:
    try:
        from mpcc.kernel import bpf
        bpf.check_environment()
        return list(bpf.algorithms())
    except Exception:
        return []


def _run(s, bed=None, **kw):
    from mpcc.testbed import engine
    _ready()
    return engine.run_detailed(s, engine.settings_from(s, **kw), None, progress=False, bed=bed)[0]


@pytest.fixture(scope="module")
def bed():
    """One testbed session (engine.Testbed) for the traffic tests of this module: a network is
    rebuilt only when the scenario's network changes, BPF programs are loaded once."""
    _ready()
    from mpcc.testbed import engine
    with engine.Testbed() as b:
        yield b


# --- without root: validation -----------------------------------------------------------------------
def test_testbed_table_is_validated():
    from mpcc.testbed import engine
    with pytest.raises(ScenarioError, match=r"testbed\.runs"):   # checked when the file is loaded
        scenario.loads('name = "x"\nduration_s = 10\n[[links]]\nname = "l"\ncapacity_mbps = 1\ndelay_ms = 1\n'
                       'buffer_pkts = 5\n[[groups]]\nname = "g"\ncount = 1\nalgorithm = "reno"\npaths = [["l"]]\n'
                       '[testbed]\nruns = 0\n', "t.toml")
    with pytest.raises(ScenarioError, match=r"warmup_s"):
        engine.settings_from(scenario.loads(
            'name = "x"\nduration_s = 10\n[[links]]\nname = "l"\ncapacity_mbps = 1\ndelay_ms = 1\nbuffer_pkts = 5\n'
            '[[groups]]\nname = "g"\ncount = 1\nalgorithm = "reno"\npaths = [["l"]]\n'), warmup_s=20.0)


def test_without_root_the_error_is_one_line(monkeypatch):
    from mpcc.testbed import netns
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(EnvironmentProblem, match="needs root") as e:
        netns.check_environment()
    assert "\n" not in str(e.value)


def test_cli_reports_a_bad_testbed_table_in_one_line(tmp_path):
    f = tmp_path / "bad.toml"
    f.write_text(TABLE4.read_text() + "\n[testbed]\nsample_ms = 5\n")
    p = subprocess.run([sys.executable, "-c", "from mpcc.cli import main; main()", "testbed", str(f)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1 and "testbed.sample_ms" in p.stderr and "Traceback" not in p.stderr


# --- on the kernel ------------------------------------------------------------------------------------
@pytest.mark.kernel
@needs_root
@pytest.mark.parametrize("algorithm", [pytest.param("reno", marks=pytest.mark.long), "balia",
                                       pytest.param("epsilon", marks=pytest.mark.long)])
def test_table4_wifi_3g_uses_both_paths_and_fills_them(algorithm, bed):
    """False-failure rate: not measured run to run; the bounds are loose on a stock kernel: one
    backlogged flow alone on two links fills each (goodput ceiling 1448/1500 = 96.5 % of 10 Mb/s,
    the bound 90 %; each subflow's bound is half its link or less), and the link-load bound is
    the emulator's own rate limit (deterministic). It fails if a subflow stalls for seconds or
    the emulator loses rate, not by the sampling of a 11 s window. Kernel Reno's and the
    ε-family's cases are long tests (`make test-long`): `make test` runs Balia here, carries the
    ε-family's program over two paths in test_bpf_kernel and kernel Reno in the other runs."""
    if algorithm != "reno" and algorithm not in _bpf_algorithms():
        pytest.skip(f"BPF loader/algorithm {algorithm} not available")
    res = _run(scenario.load(TABLE4), bed, duration_s=15.0, warmup_s=4.0, algorithm=algorithm)
    g = res.groups["mp"]
    wifi, g3 = g.path_rate_mbps
    # both subflows carry data; together ≥ 90 % of the 8 + 2 Mb/s (payload bytes acked)
    assert wifi > 0.5 * 8.0 and g3 > 0.3 * 2.0, g.path_rate_mbps
    assert g.rate_mbps >= 0.9 * 10.0, g
    assert res.links["wifi"].load_mbps <= 8.0 * 1.01 and res.links["3g"].load_mbps <= 2.0 * 1.01
    # the kernel's tcp_sndbuf_expand per_mss for the simulator's linux mode, recorded with the run
    from mpcc.testbed.tcpmem import kernel_sndbuf_per_mss
    assert res.extra["sndbuf_per_mss"] == kernel_sndbuf_per_mss(1460)


SHARE_DURATION_S, SHARE_WARMUP_S = 16.0, 4.0    # each run; the share is read over the last 12 s
SHARE_RUNS = 4
SHARED = """
name = "shared-bottleneck"
duration_s = 16.0
[[links]]
name = "l"
capacity_mbps = 20.0
delay_ms = 10.0
buffer_pkts = 50
{aqm}
[[groups]]
name = "mp"
count = 1
algorithm = "{algo}"
paths = [["l"], ["l"]]
[[groups]]
name = "sp"
count = 1
algorithm = "reno"
paths = [["l"]]
"""


@pytest.mark.kernel
@pytest.mark.long
@needs_root
def test_shared_bottleneck_coupled_flow_takes_about_one_share(bed):
    """Two balia subflows through one bottleneck next to one Reno flow: the multipath flow
    takes about one Reno share (Peng et al., design goal of TCP friendliness), not two. A long
    test (`make test-long`, 4 runs of 16 s); `make test` runs the RED case below, where the
    friendliness is judged against its uncoupled contrast.
    (Drop-tail: uncoupled kernel Reno on both subflows gets only ~0.8–1.4 shares here, not the
    ideal 2, because the router drops the subflows' packets at 4–5× a TCP flow's rate — see
    docs/testbed.md; the RED test below shows the uncoupled contrast.)

    False-failure rate: judged on the mean of SHARE_RUNS runs' ratios (multipath ÷ Reno goodput,
    each over 12 s), not one run: the drop-tail share is set by the arrival phase of the two
    flows' ACKs and varies from run to run (bench/kernel/RESULTS.md §6), and with the machine:
    bench/tests/share_spread.py measured per-run ratios of mean 0.648, sd 0.155 (8 runs,
    2026-11-28, load ~14) and mean 1.020, sd 0.203 (0.66–1.50; 40 runs, 2026-12-02, a machine with
    5–17 % steal), samples that differ (Welch t = 5.9); when the test judged one run, one CI
    run gave 0.288. The bounds are the claim's: above 0.3
    (the flow is not starved) and below 1.5, the midpoint between one share and the two that
    uncoupled subflows would take. On the 40 runs the mean of 4 has sd 0.102: 1.5 is 4.7 sd
    above, 0.3 is 7.1 sd below, a normal tail of 1·10⁻⁶ per test run (Student t with 39 df on the
    predictive sd 0.203·√(1/4 + 1/40): 3·10⁻⁵); on the 8 runs 0.3 is 4.5 sd below: 4·10⁻⁶ (t
    with 7 df: 4·10⁻³). The former upper bound 1.3 allowed 3·10⁻³ (t: 6·10⁻³) on the 40 runs
    (bench/tests/RESULTS.md)."""
    if "balia" not in _bpf_algorithms():
        pytest.skip("BPF loader/balia not available")
    res = _run(scenario.loads(SHARED.format(algo="balia", aqm="")), bed, runs=SHARE_RUNS,
               duration_s=SHARE_DURATION_S, warmup_s=SHARE_WARMUP_S)
    mp, sp = res.groups["mp"].extra["rate_per_run_mbps"], res.groups["sp"].extra["rate_per_run_mbps"]
    ratios = [m / r for m, r in zip(mp, sp)]
    assert len(ratios) == SHARE_RUNS
    mean = sum(ratios) / len(ratios)
    assert 0.3 <= mean <= 1.5, (ratios, res.to_json())
    assert min(res.groups["mp"].path_rate_mbps) > 0.5  # both subflows carry data (mean over the runs)
    assert res.links["l"].load_mbps >= 0.9 * 20.0


RED = 'aqm = "red"\nred = {min_th = 10, max_th = 30, max_p = 0.1}'


RED_DURATION_S, RED_WARMUP_S = 12.0, 3.0    # each run; the ratio is read over the last 9 s
RED_RUNS = 3


@pytest.mark.kernel
@needs_root
def test_red_shared_bottleneck_ewtcp_takes_more_than_balia(bed):
    """The short version of the test below: one RED run of 12 s each (9 s measured); uncoupled
    EWTCP's share (multipath ÷ Reno goodput) exceeds Balia's, both subflows carry data, the link
    is busy. False-failure rate: per-run ratios measured below (ewtcp mean 2.05, sd 0.207, 8 runs;
    balia 0.729, sd 0.097, 6 runs): their difference is 1.32 with sd 0.229, 5.8 sd above 0 (Student t,
    12 df, on the predictive sd 0.243: 5.4 sd, 8·10⁻⁵ per test run). "Carries data": each subflow
    above 1 % of the link (0.2 Mb/s). Balia's two subflows split the link at random: its weaker
    subflow carried 1.27–3.85 Mb/s in 15 runs (2026-11-30, mean 3.16, sd 0.75; its share of the
    stronger one 0.20–0.98, so the earlier bound of 0.25 of it failed 1 in 15), 0.2 Mb/s is 3.8
    predictive sd below that mean (Student t, 14 df: about 10⁻³ per test run)."""
    if not {"ewtcp", "balia"} <= set(_bpf_algorithms()):
        pytest.skip("BPF loader/ewtcp, balia not available")
    share = {}
    for algo in ("ewtcp", "balia"):
        res = _run(scenario.loads(SHARED.format(algo=algo, aqm=RED)), bed, runs=1,
                   duration_s=RED_DURATION_S, warmup_s=RED_WARMUP_S)
        share[algo] = res.groups["mp"].rate_mbps / res.groups["sp"].rate_mbps
        assert min(res.groups["mp"].path_rate_mbps) > 0.01 * 20.0, (algo, res.to_json())
        assert res.links["l"].load_mbps >= 0.8 * 20.0, (algo, res.to_json())
    assert share["ewtcp"] > share["balia"], share


@pytest.mark.kernel
@pytest.mark.long
@needs_root
@pytest.mark.parametrize("algo,low,high", [("ewtcp", 1.5, 2.5), ("balia", 0.3, 1.3)])
def test_red_shared_bottleneck_ewtcp_takes_two_shares_balia_about_one(algo, low, high, bed):
    """At a RED bottleneck the uncoupled design (EWTCP, two Reno-like subflows) takes about two
    single-path Reno shares and Balia about one (Peng et al. §III; the fluid model's price is
    RED-like). Drop-tail is different on this kernel: the router drops an MPTCP subflow's packets
    at 4–5× the rate of a competing TCP flow's (bench/kernel/RESULTS.md §3b), so there even
    uncoupled subflows get ~1 share — hence RED here. Measured (bench/kernel/shared_bottleneck.py,
    2 × 30 s runs, RESULTS.md §4): ewtcp 1.99, balia 0.76, the two-TCP control 1.91.

    False-failure rate: judged on the mean of RED_RUNS runs' ratios (multipath ÷ Reno goodput, each over 9 s), not
    one run. Measured (bench/tests/kernel_spread.py red, this scenario and run length, one testbed
    session, 2026-11-28 20:30–20:33 UTC, 2 shared CPUs, load ~5–7): ewtcp 8 runs, ratio mean
    2.05, sd 0.207; balia 6 runs, mean 0.729, sd 0.097. Mean of 3 runs: ewtcp sd 0.120, the bounds
    3.8 (2.5) and 4.6 (1.5) sd away, a normal tail of 9·10⁻⁵ per test run; balia sd 0.056, 7.7
    and 10 sd away, < 10⁻¹². (With the sd itself estimated from the 8 or 6 runs, Student t on
    the predictive sd: ewtcp 7·10⁻³, balia 7·10⁻⁴ — the figures to improve by measuring more
    runs.)"""
    if algo not in _bpf_algorithms():
        pytest.skip(f"BPF loader/{algo} not available")
    res = _run(scenario.loads(SHARED.format(algo=algo, aqm=RED)), bed, runs=RED_RUNS,
               duration_s=RED_DURATION_S, warmup_s=RED_WARMUP_S)
    mp, sp = res.groups["mp"].extra["rate_per_run_mbps"], res.groups["sp"].extra["rate_per_run_mbps"]
    ratios = [m / r for m, r in zip(mp, sp)]
    assert len(ratios) == RED_RUNS
    ratio = sum(ratios) / len(ratios)
    assert low <= ratio <= high, (ratios, res.to_json())
    assert min(res.groups["mp"].path_rate_mbps) > 0.25 * max(res.groups["mp"].path_rate_mbps)  # both subflows
    assert res.links["l"].load_mbps >= 0.8 * 20.0


def _sigkill_a_run(algo: str) -> tuple[subprocess.Popen, dict]:
    """Start `mpcc testbed` on Table IV, SIGKILL it 2 s into its traffic; returns the process and
    its ownership record (namespaces, helper pids)."""
    from mpcc.testbed import netns
    before = set(p.name for p in netns.RUN_DIR.iterdir()) if netns.RUN_DIR.is_dir() else set()
    p = subprocess.Popen([sys.executable, "-c", "from mpcc.cli import main; main()", "testbed", str(TABLE4),
                          "--duration", "30", "--no-progress", "--algorithm", algo],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rec = None
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and rec is None:
        time.sleep(0.2)
        for d in netns.RUN_DIR.iterdir() if netns.RUN_DIR.is_dir() else []:
            f = d / "owner.json"
            if d.name not in before and f.exists():
                r = json.loads(f.read_text())
                if r.get("pid") == p.pid and len(r.get("pids", [])) >= 4:  # 2 linkem + receiver + sender
                    rec = r
    assert rec is not None, "the testbed run did not start"
    time.sleep(2.0)  # traffic flowing
    p.send_signal(signal.SIGKILL)
    p.wait()
    time.sleep(0.5)
    return p, rec


@pytest.mark.kernel
@needs_root
def test_sigkill_mid_run_then_cleanup_leaves_no_state(tmp_path):
    """False-failure rate: deterministic: it asserts what exists after a SIGKILL and after `--cleanup`
    (namespaces, the run folder, processes, struct_ops holders); it fails only if the run does
    not start its traffic within 30 s (a connect that fails twice) or the cleanup leaves state.
    False-failure rate 0 on a stock kernel."""
    _ready()
    from mpcc.testbed import netns
    algo = "balia" if "balia" in _bpf_algorithms() else "reno"
    p, rec = _sigkill_a_run(algo)
    left = [n for n in netns.list_netns() if n in rec["namespaces"]]
    assert left, "SIGKILL should leave namespaces for the next run to clean"
    out = subprocess.run([sys.executable, "-c", "from mpcc.cli import main; main()", "testbed", "--cleanup"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    runid = rec["namespaces"][0].split("-")[1]
    assert not [n for n in netns.list_netns() if n.startswith(f"mpcc-{runid}-")]
    assert not (netns.RUN_DIR / runid).exists()
    for pid in rec["pids"]:  # linkem and traffic processes are gone (or zombies awaiting reaping)
        assert _gone_or_zombie(pid), pid
    if algo != "reno":
        from mpcc.kernel import bpf
        for st in bpf.status():
            assert p.pid not in st.holders, st
        assert not [st for st in bpf.status() if st.registered and st.owned and not st.holders and not st.persistent]


@pytest.mark.kernel
@needs_root
def test_the_run_after_a_sigkilled_one_removes_its_state_first(tmp_path):
    """docs/testbed.md: after a SIGKILL "the next run (or `mpcc testbed --cleanup`)" removes the
    dead run's namespaces and processes — here the next run, a normal one, which must also
    complete on its own.

    False-failure rate: deterministic (what exists afterwards) but for the next run's rate > 1 Mb/s
    of 10 Mb/s over 2 s, 9× below what one flow carries there; it fails only if that run cannot
    connect twice. False-failure rate 0 on a stock kernel."""
    _ready()
    from mpcc.testbed import netns
    p, rec = _sigkill_a_run("reno")
    assert [n for n in netns.list_netns() if n in rec["namespaces"]]
    out = subprocess.run([sys.executable, "-c", "from mpcc.cli import main; main()", "testbed", str(TABLE4),
                          "--duration", "3", "--warmup", "1", "--no-progress", "--algorithm", "reno", "--json"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["groups"]["mp"]["rate_mbps"] > 1.0
    runid = rec["namespaces"][0].split("-")[1]
    assert not [n for n in netns.list_netns() if n.startswith(f"mpcc-{runid}-")]
    assert not (netns.RUN_DIR / runid).exists()
    for pid in rec["pids"]:
        assert _gone_or_zombie(pid), pid


@pytest.mark.kernel
@needs_root
def test_ctrl_c_in_the_second_run_keeps_the_first_and_leaves_no_state(tmp_path):
    """Ctrl-C (SIGINT) during run 2 of 2 with --out D: one line on stderr, exit 130, and D holds
    run 1's results (result.json marked partial, Parquet, PARTIAL.json with the counts) — they
    were lost before 2026-11-24, only the raw CSVs were kept; no namespace or helper is left.

    False-failure rate: deterministic (files, exit code, what exists afterwards) but for run 1's
    rate > 1 Mb/s of 10 and the timing: SIGINT 2.5 s after run 2's plan, inside its ~5 s of set-
    up and traffic; it fails only if run 2's set-up stalls past 60 s or its traffic ends before
    the signal (a ≥ 2.5 s scheduling stall). False-failure rate 0 on a stock kernel."""
    _ready()
    import pyarrow.parquet as pq
    from mpcc.testbed import netns
    out = tmp_path / "res"
    before = set(netns.list_netns())
    p = subprocess.Popen([sys.executable, "-c", "from mpcc.cli import main; main()", "testbed", str(TABLE4),
                          "--duration", "4", "--warmup", "1", "--runs", "2", "--no-progress", "--algorithm", "reno",
                          "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         # as from a terminal: a background job (`cmd &`) inherits SIGINT ignored
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not list(tmp_path.glob(".res.tmp-*/run1/plan.json")):
        time.sleep(0.1)
    assert list(tmp_path.glob(".res.tmp-*/run1/plan.json")), "the second run did not start"
    time.sleep(2.5)                                       # inside run 2's traffic
    ours = [n for n in netns.list_netns() if n not in before]
    recs = [json.loads(f.read_text()) for f in netns.RUN_DIR.glob("*/owner.json")]
    pids = [pid for r in recs if r.get("pid") == p.pid for pid in r.get("pids", [])]
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130
    # besides the health check's notice of an unsound run 1 run again (a loaded host's late
    # emulator releases), the interrupt is one line
    assert [l for l in err.splitlines() if l.strip() and not l.startswith("mpcc testbed: run unsound")] == [
        f"mpcc: interrupted; kept the 1 completed of 2 runs in {out}/ (marked partial: PARTIAL.json)"], err
    assert not (out / "run1").exists()                    # the interrupted run's raw files are not a result
    marker = json.loads((out / "PARTIAL.json").read_text())
    assert marker == {"partial": True, "completed": 1, "requested": 2, "reason": "interrupted"}
    res = json.loads((out / "result.json").read_text())
    assert res["partial"] is True and res["runs"] == 1 and res["runs_completed"] == 1 and res["runs_requested"] == 2
    assert res["groups"]["mp"]["rate_mbps"] > 1.0
    assert set(pq.read_table(out / "subflows.parquet").column("run").to_pylist()) == {0}
    assert ours and not [n for n in netns.list_netns() if n in ours]
    assert len(pids) >= 4 and all(_gone_or_zombie(pid) for pid in pids)   # linkem ×2, receiver, sender


@pytest.mark.kernel
@needs_root
def test_a_failed_run_keeps_the_log_its_message_names(monkeypatch, tmp_path):
    """A failed run says "(fix: read …/sender.log)": that file must still be there after the
    command (it was in a temporary directory removed on the way out, or — with --out — named
    at its staging path, moved by then).

    False-failure rate: deterministic: the run's failure is forced (monkeypatched), nothing is
    measured. 0."""
    _ready()
    from mpcc.testbed import engine

    def fails(s, ccs, st, run_dir, tick=None, on_built=None, bed=None):
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "sender.log").write_text("connect: No route to host\n")
        raise engine.RunFailed(f"testbed traffic failed: connect (fix: read {run_dir / 'sender.log'})")

    monkeypatch.setattr(engine, "run_with_retry", fails)
    s = scenario.load(TABLE4)
    with pytest.raises(engine.RunFailed) as e:
        engine.run_scenario(s, engine.settings_from(s, algorithm="reno", duration_s=3.0), None, progress=False)
    log = Path(str(e.value).split("read ")[1].rstrip(")"))
    assert log.read_text().startswith("connect")
    import shutil
    shutil.rmtree(log.parents[1], ignore_errors=True)
    # with --out D: the message names the file where it is published
    from click.testing import CliRunner
    from mpcc.cli import cli
    out = tmp_path / "res"
    r = CliRunner().invoke(cli, ["testbed", str(TABLE4), "--duration", "3", "--algorithm", "reno", "--no-progress",
                                 "--out", str(out)])
    assert r.exit_code != 0
    log = Path(str(r.exception).split("read ")[1].rstrip(")"))
    assert log.is_relative_to(out) and log.read_text().startswith("connect")


def _gone_or_zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def test_oscillation_ds_is_the_relative_decrease_of_the_aggregate_window():
    import numpy as np
    from mpcc.reproduce.peng2016.testbed import oscillation_ds
    inf = 2.0**31 - 1
    # Reno alone: w = 40 halves to ssthresh 20 → D_s = 0.5 (Peng et al. §III-F)
    assert oscillation_ds(np.array([[38.0, 40.0, 20.0, 21.0]]), np.array([[inf, inf, 20.0, 20.0]])) == 0.5
    # two routes (10 and 20 packets): a loss on route 0 with D = 5 → 5/30; then one on route 1
    # with D = 10 → 10/31 (route 0 grew by one packet meanwhile); mean of the two events
    cw = np.array([[10.0, 5.0, 6.0, 6.0], [20.0, 20.0, 25.0, 15.0]])
    ss = np.array([[inf, 5.0, 5.0, 5.0], [inf, inf, inf, 15.0]])
    assert oscillation_ds(cw, ss) == (5 / 30 + 10 / 31) / 2


def test_oscillation_ds_counts_a_loss_that_sets_ssthresh_to_the_value_it_already_had():
    import math
    import numpy as np
    from mpcc.reproduce.peng2016.testbed import oscillation_ds
    # Reno alone on a link halves from the same window (40) to the same ssthresh (20) every time:
    # ssthresh never changes, the retransmission counter marks each loss event. A second
    # retransmission 60 ms into the recovery (window already 21, RTT 50 ms) is the same event.
    t = np.round(np.arange(0.0, 1.0, 0.01), 3)
    cw, ss, rt, srtt = np.full(len(t), 30.0), np.full(len(t), 20.0), np.zeros(len(t)), np.full(len(t), 0.05)
    for e in (20, 70):
        cw[e - 1], cw[e], cw[e + 1:e + 8] = 40.0, 20.0, 21.0
        rt[e:] += 1
        rt[e + 6:] += 1
    one = lambda a: a[np.newaxis, :]  # noqa: E731  one route
    assert math.isnan(oscillation_ds(one(cw), one(ss)))   # by ssthresh changes alone: no event
    assert oscillation_ds(one(cw), one(ss), one(rt), one(srtt), t) == 0.5   # 20/40 twice


def test_convergence_time_is_the_first_return_to_the_pre_competition_window():
    from mpcc.testbed.engine import Summary
    from mpcc.reproduce.peng2016.testbed import convergence_time
    t = [float(x) for x in range(0, 120)]
    w = [60.0 if x < 40 else (20.0 if x < 80 else 20.0 + 4 * (x - 80)) for x in t]  # reaches 60 at 90 s
    sm = Summary({}, {}, {}, {}, {"time_s": t, "group": ["mp"] * len(t), "flow": [0] * len(t),
                                  "route": [1] * len(t), "cwnd_pkts": w}, {})
    assert convergence_time(sm, before=(10.0, 40.0), after=80.0) == 10.0


def test_sampling_a_socket_its_flow_just_closed_is_an_oserror_the_sampler_skips():
    """traffic.send's sampler lists the sockets, then samples each; a flow may close its socket in
    between (fileno() = -1). That must be the OSError the sampler skips, not a ValueError that ends
    the sender (seen in `make reproduce`, 2026-11-25 06:05 UTC: Table III's ewtcp run 0 retried)."""
    from mpcc.testbed import traffic
    s = socket.socket()
    s.close()
    with pytest.raises(OSError):
        traffic.msk_sample(s, [])
