"""mpcc compare: differences, the eq. (7) model window, the diagnosis, engines that cannot
run, and the CLI (table, --json, --out)."""

import json
import math
import subprocess
import sys

import pytest

from mpcc import algorithms, compare, scenario
from mpcc.compare import diagnosis
from mpcc.errors import EnvironmentProblem
from mpcc.results import GroupResult, LinkResult, RunResult

RED_TWO_LINKS = """
name = "two-red"
duration_s = 30.0
[[links]]
name = "a"
capacity_mbps = 30.0
delay_ms = 10.0
buffer_pkts = 100
aqm = "red"
red = {min_th = 10, max_th = 40, max_p = 0.1}
[[links]]
name = "b"
capacity_mbps = 20.0
delay_ms = 20.0
buffer_pkts = 100
aqm = "red"
red = {min_th = 10, max_th = 40, max_p = 0.1}
[[groups]]
name = "mp"
count = 4
algorithm = "balia"
paths = [["a"], ["b"]]
[[groups]]
name = "ra"
count = 4
algorithm = "reno"
paths = [["a"]]
[fluid]
rtt = "propagation+queue"
"""


def _rr(engine, rate, paths, **extra):
    return RunResult(engine, "x", {"g": GroupResult("reno", 1, rate, paths, extra)}, {"l": LinkResult(1.0, 0.01)})


def test_differences_are_relative_to_the_earlier_engine():
    d = compare.differences({"fluid": _rr("fluid", 4.0, [3.0, 1.0]), "sim": _rr("sim", 3.0, [2.0, 1.0]),
                             "testbed": _rr("testbed", 6.0, [4.0, 2.0])})
    g = d["groups"]["g"]
    assert d["pairs"] == ["sim vs fluid", "testbed vs fluid", "testbed vs sim"]
    assert g["rel"]["sim vs fluid"] == pytest.approx(-0.25)
    assert g["rel"]["testbed vs sim"] == pytest.approx(1.0)
    assert g["paths"][0]["rel"]["sim vs fluid"] == pytest.approx(-1 / 3)
    assert d["max_abs_rel"] == pytest.approx(1.0)


def test_non_unique_fluid_split_measures_to_the_range():
    fl = _rr("fluid", 4.0, [2.0, 2.0], path_rate_range_mbps=[[1.0, 3.0], [1.0, 3.0]])
    d = compare.differences({"fluid": fl, "sim": _rr("sim", 4.0, [2.9, 3.3])})
    p = d["groups"]["g"]["paths"]
    assert p[0]["rel"]["sim vs fluid"] == 0.0
    assert p[1]["rel"]["sim vs fluid"] == pytest.approx(0.1)


def test_a_path_the_fluid_model_leaves_empty_is_a_disagreement():
    d = compare.differences({"fluid": _rr("fluid", 4.0, [4.0, 0.0]), "sim": _rr("sim", 4.0, [3.5, 0.5]),
                             "testbed": _rr("testbed", 4.0, [4.0, 0.0])})
    p = d["groups"]["g"]["paths"]
    assert p[1]["rel"]["sim vs fluid"] == math.inf
    assert p[1]["rel"]["testbed vs fluid"] == 0.0          # both empty: they agree
    assert d["max_abs_rel"] == math.inf


def test_cause_factors_multiply_to_the_rate_ratio():
    row = {"rate_mbps": 1.3, "mean_cwnd_pkts": 9.0, "model_cwnd_pkts": 9.6, "mean_rtt_ms": 78.0,
           "min_utilisation": 0.99, "timeouts": 0.0}
    fluid_row = {"rate_mbps": 1.5, "mean_cwnd_pkts": 10.7, "mean_rtt_ms": 86.6}
    f = diagnosis.factors(row, fluid_row)
    assert math.prod(f.values()) == pytest.approx(1.3 / 1.5, rel=1e-12)
    assert f["window-vs-eq7"] == pytest.approx(9.0 / 9.6) and f["rtt"] == pytest.approx(86.6 / 78.0)
    # −13 %: window (−6 %) and price (−10 %) point that way, the shorter RTT (+11 %) the other
    tags = diagnosis.causes(row, fluid_row)
    assert {"window-vs-eq7", "price"} <= set(tags) and "rtt" not in tags


def test_a_link_the_fluid_model_leaves_as_empty_is_not_named_underused():
    """`underused-link` names a difference from the fluid model: when the fluid model itself
    leaves the link at 90 % (random loss holding its flows back), an engine at 89 % is not
    under-used against it; at 60 % it is."""
    fluid_row = {"rate_mbps": 8.5, "mean_cwnd_pkts": 14.1, "mean_rtt_ms": 20.0, "min_utilisation": 0.90}
    row = {"rate_mbps": 8.4, "mean_cwnd_pkts": 14.0, "model_cwnd_pkts": 14.1, "mean_rtt_ms": 20.0,
           "min_utilisation": 0.89, "timeouts": 0.0}
    assert "underused-link" not in diagnosis.causes(row, fluid_row)
    assert "underused-link" in diagnosis.causes({**row, "min_utilisation": 0.60}, fluid_row)
    assert "underused-link" in diagnosis.causes(row, {**fluid_row, "min_utilisation": 1.0})


def test_rtt_explanation_counts_each_packets_transmission_on_a_slow_link():
    """On a 1 Mb/s link a 1500-byte packet takes 12 ms to send: the RTT a flow measures is the
    propagation, that transmission and the queueing. The explanation names all three (it said
    "propagation 40.0 + queueing 3.5" for a 52.5 ms RTT)."""
    s = scenario.loads("""
name = "slow"
duration_s = 10.0
[[links]]
name = "l"
capacity_mbps = 1.0
delay_ms = 20.0
buffer_pkts = 5
[[groups]]
name = "one"
count = 1
algorithm = "reno"
paths = [["l"]]
""")
    c = compare.compare(s, engines=("fluid", "sim"), seed=1)
    row = c.routes["sim"]["one"][0]
    assert row["transmission_ms"] == pytest.approx(1500 * 8 / 1e6 * 1e3)
    line = diagnosis.explain("sim", "fluid", "one", 0, ("l",), row, c.routes["fluid"]["one"][0])
    assert any("(propagation 40.0 + transmission 12.0 + queueing" in x for x in line), line
    # and the three parts account for the measured RTT to within a packet time (+ ACK noise)
    parts = row["base_rtt_ms"] + row["transmission_ms"] + row["queue_ms"]
    assert abs(row["mean_rtt_ms"] - parts) < 12.0, (row["mean_rtt_ms"], parts)


def test_model_window_closed_forms():
    # Reno: φ = I/D = (1/w)/(w/2) = 2/w²  ⇒  w = √(2/q)
    w, res = diagnosis.model_window(algorithms.get("reno"), [0.05], [0.005])
    assert w[0] == pytest.approx(math.sqrt(2 / 0.005), rel=1e-6) and res < 1e-6
    # EWTCP(a): every route is a Reno with increase a²/w... φ_r = 2a²/w_r² ⇒ w_r = a√(2/q_r)
    ew = algorithms.get({"name": "ewtcp", "a": 0.5})
    inc = ew.on_ack([10.0, 10.0], [0.1, 0.1])[0] * 10.0  # I·w = the per-RTT increase a²... of the rule
    w, _ = diagnosis.model_window(ew, [0.1, 0.04], [0.01, 0.002])
    assert w[0] == pytest.approx(math.sqrt(2 * inc / 0.01), rel=1e-6)
    assert w[1] == pytest.approx(math.sqrt(2 * inc / 0.002), rel=1e-6)
    # no loss measured: no model
    w, _ = diagnosis.model_window(algorithms.get("reno"), [0.05], [0.0])
    assert math.isnan(w[0])


def test_fluid_and_sim_with_testbed_unavailable(monkeypatch):
    from mpcc.compare import engines

    def no_testbed(*a, **k):
        raise EnvironmentProblem("the testbed needs root (fix: run as root)")

    monkeypatch.setattr(engines, "run_testbed", no_testbed)
    s = scenario.loads(RED_TWO_LINKS)
    c = compare.compare(s, engines=("fluid", "sim", "testbed"), runs=2, seed=1)
    assert c.runs["testbed"].error == "the testbed needs root (fix: run as root)"
    assert set(c.results) == {"fluid", "sim"}
    assert c.differences["pairs"] == ["sim vs fluid"]
    d = c.to_dict()
    assert d["engines"]["testbed"] == {"engine": "testbed", "error": "the testbed needs root (fix: run as root)"}
    assert d["engines"]["sim"]["groups"]["mp"]["ci95_mbps"] >= 0
    # the sim's per-route quantities are self-consistent: loss events ≤ losses, RTT ≥ propagation
    for rows in c.routes["sim"].values():
        for row in rows:
            assert 0 < row["loss_event_rate"] <= row["loss_rate"]
            assert row["mean_rtt_ms"] >= row["base_rtt_ms"]
            assert row["mean_cwnd_pkts"] > 1


def test_diagnosis_names_an_underused_link():
    """One Reno flow alone on a RED link whose thresholds (5–15 packets) are far below its
    bandwidth-delay product (20 Mb/s × 50 ms ≈ 83 packets): after each halving the window is
    about BDP/2, the queue is empty and the link idles until the window is back at one BDP (a
    single flow needs a buffer of about one BDP to stay busy; its utilisation is then about
    3/4), so the sim misses the fluid model's full link, and the diagnosis must say which link."""
    s = scenario.loads("""
name = "underused"
duration_s = 60.0
[[links]]
name = "l"
capacity_mbps = 20.0
delay_ms = 25.0
buffer_pkts = 100
aqm = "red"
red = {min_th = 5, max_th = 15, max_p = 0.1}
[[groups]]
name = "one"
count = 1
algorithm = "reno"
paths = [["l"]]
""")
    c = compare.compare(s, engines=("fluid", "sim"), seed=1)
    assert c.differences["groups"]["one"]["rel"]["sim vs fluid"] < -0.10
    row = c.routes["sim"]["one"][0]
    assert row["min_utilisation"] < 0.9 and "underused-link" in row["causes"]
    assert any("link l carries" in line for line in c.diagnosis)


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "mpcc.cli", "compare", *map(str, args)], capture_output=True,
                          text=True, timeout=300)


def test_cli_json_out_and_errors(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text(RED_TWO_LINKS)
    p = _cli(f, "--json", "--out", tmp_path / "out")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert set(d["engines"]) == {"fluid", "sim"} and d["engines"]["fluid"]["engine"] == "fluid"
    assert "sim vs fluid" in d["differences"]["groups"]["mp"]["rel"]
    names = {x.name for x in (tmp_path / "out").iterdir()}
    assert {"comparison.json", "comparison.png", "comparison.svg", "subflows.parquet", "links.parquet"} <= names
    p = _cli(f, "--engines", "fluid,ns3")
    assert p.returncode == 2 and p.stderr.strip().count("\n") == 0 and "--engines" in p.stderr
    p = _cli(tmp_path / "missing.toml")
    assert p.returncode == 2 and "no such file" in p.stderr
    p = _cli(f)
    assert p.returncode == 0 and "sim vs fluid" in p.stdout


def test_algorithm_without_fluid_model_keeps_the_sim_column():
    s = scenario.loads(RED_TWO_LINKS.replace('"balia"', '"olia"'))
    c = compare.compare(s, engines=("fluid", "sim"))
    assert not c.runs["fluid"].ok and "olia" in c.runs["fluid"].error
    assert c.runs["sim"].ok and c.differences["pairs"] == []
    assert c.differences["groups"]["mp"]["rate_mbps"] == {"sim": c.results["sim"].groups["mp"].rate_mbps}
    assert c.differences["groups"]["mp"]["rel"] == {} and c.diagnosis == []


def test_testbed_diag_parsers(monkeypatch):
    from mpcc.testbed import diag
    ss = """State Recv-Q Send-Q Local Address:Port Peer Address:PortProcess
ESTAB 0 12 198.18.1.1:40000 198.18.1.2:5002
\t reno wscale:7,7 rto:204 rtt:20.1/1 cwnd:12 data_segs_out:900 retrans:0/17 lost:2 busy:3000ms rwnd_limited:300ms(10.0%) sndbuf_limited:30ms(1.0%)
ESTAB 0 0 198.18.1.1:40001 198.18.1.2:5002
\t reno cwnd:10 data_segs_out:100 busy:1000ms
ESTAB 0 0 198.18.9.1:40002 198.18.9.2:5002
\t reno cwnd:10 busy:1000ms
"""
    socks = diag.parse_ss(ss)
    assert socks[0]["retrans"] == 17 and socks[0]["rwnd_limited_ms"] == 300 and socks[1]["sndbuf_limited_ms"] == 0
    routes = {1: {"198.18.1.1": 0}}  # group 1 = port 5002; 198.18.9.1 belongs to no route of it
    monkeypatch.setattr(diag, "_exec", lambda ns, cmd, timeout=10.0: ss)  # no namespace in a unit test
    c = diag.chrono("ns", routes, 5001)
    assert c == {"1/0": {"busy_ms": 4000, "rwnd_limited_ms": 300, "sndbuf_limited_ms": 30, "data_segs_out": 1000,
                         "retrans": 17, "lost": 2, "sockets": 2}}
    assert diag.parse_nstat('{"kernel": {"MPTcpExtMPJoinAckRx": 3, "TcpExtTCPTimeouts": 2, "IpInReceives": 9}}') == \
        {"MPTcpExtMPJoinAckRx": 3, "TcpExtTCPTimeouts": 2}
    assert diag.mib_delta({"a": 1, "b": 2}, {"a": 1, "b": 5, "c": 1}) == {"b": 3, "c": 1}
    assert diag.parse_nstat("not json") == {}


def test_testbed_route_with_window_room_names_the_connection_level_cause():
    """The documented kernel deficit (docs/testbed.md: subflows with window room and nothing to
    send) is shown by the diagnosis when a route's window is rarely full, and not otherwise."""
    from mpcc.compare.diagnosis import explain

    row = {"loss_event_rate": 0.01, "loss_rate": 0.01, "price": 0.01, "model_cwnd_pkts": 20.0,
           "mean_cwnd_pkts": 18.0, "mean_rtt_ms": 40.0, "base_rtt_ms": 30.0, "queue_ms": 10.0,
           "retransmits": 5.0, "timeouts": 0.0, "window_full": 0.78}
    text = " ".join(explain("testbed", "sim", "mp", 0, ("a",), row, None))
    assert "window full in only 78%" in text and "connection level" in text
    row["window_full"] = 0.95
    assert "window full" not in " ".join(explain("testbed", "sim", "mp", 0, ("a",), row, None))


def test_testbed_idle_route_names_the_connection_level_limit_it_measured():
    """With the MPTCP connection-level samples (testbed ``connection_limits``) the diagnosis says
    which connection-level limit left the subflow idle: no data to hand out (send buffer) or a
    full shared receive window, with the measured shares."""
    from mpcc.compare.diagnosis import explain

    row = {"loss_event_rate": 0.01, "loss_rate": 0.01, "price": 0.01, "model_cwnd_pkts": 20.0,
           "mean_cwnd_pkts": 18.0, "mean_rtt_ms": 40.0, "base_rtt_ms": 30.0, "queue_ms": 10.0,
           "retransmits": 5.0, "timeouts": 0.0, "window_full": 0.70, "idle_no_data": 0.95, "idle_rwnd_full": 0.02}
    text = " ".join(explain("testbed", "sim", "mp", 0, ("a",), row, None))
    assert "window full in only 70%" in text
    assert "no data to hand out in 95%" in text and "send buffer" in text and "full in 2%" in text


def test_print_shows_one_health_line_for_the_testbed():
    """The kernel's numbers carry their health (mpcc.testbed.health) in compare's table output."""
    from types import SimpleNamespace

    from rich.console import Console

    from mpcc.compare.engines import EngineRun
    from mpcc.compare.report import print_comparison
    from mpcc.testbed import health
    s = scenario.loads(RED_TWO_LINKS)
    groups = {g.name: GroupResult("reno", g.count, 1.0, [0.5] * len(g.paths), {}) for g in s.groups}
    links = {l.name: LinkResult(1.0, 0.01) for l in s.links}
    cell = health.aggregate([health.Health(bpf_repairs=0).judge().record(),
                             health.Health(bpf_repairs=0, implausible_windows=3).judge().record()], attempts=3)
    tb = RunResult("testbed", "two-red", groups, links, extra={"health": cell})
    c = SimpleNamespace(runs={"testbed": EngineRun("testbed", tb)}, scenario=s, diagnosis=[],
                        differences={"pairs": [], "groups": {}})
    con = Console(record=True, width=400)
    print_comparison(c, con)
    lines = [ln for ln in con.export_text().splitlines() if "health:" in ln]
    assert lines == ["testbed " + health.line(cell)]
    assert "UNSOUND (2 runs, 1 re-run unsound;" in lines[0] and "run 1: 3 samples with an implausible window" in lines[0]
