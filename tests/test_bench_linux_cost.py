"""bench/kernel/linux_cost_breakdown.py's variants and the host sysctls a testbed row may carry
(conn_mechanisms.py ``--sysctl`` and ``--quickack``, linux_mode_agreement.py ``--testbed-sysctl`` and
``--testbed-quickack``)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench" / "kernel"))

import conn_mechanisms as cm  # noqa: E402
import linux_cost_breakdown as lcb  # noqa: E402
import linux_mode_agreement as lma  # noqa: E402


def _mp(seed, algorithm, options):
    q = lma.sim_quantities(seed, algorithm, 6.0, 2.0, range(2), options)
    return [(x["mp"], x["mp/path 0"], x["mp/path 1"]) for x in q]


def test_the_ideal_and_linux_variants_are_the_agreements_modes():
    v = lcb.variant_options({"sndbuf_per_mss": 2304})
    assert _mp(1, "coupled", v["ideal"]) == _mp(1, "coupled", cm.SIM_MODES["ideal"])
    assert _mp(1, "coupled", v["linux"]) == _mp(1, "coupled", {**cm.SIM_MODES["linux"], "sndbuf_per_mss": 2304})
    # and a lifted limit changes the linux mode's run (Coupled is buffer-limited on network 1)
    assert _mp(1, "coupled", v["both 64 MB"]) != _mp(1, "coupled", v["linux"])
    assert v["tcp"]["mptcp"] == "ideal" and "sndbuf_per_mss" not in v["tcp"]
    # quickack: the linux mode with receivers that ACK every segment (the route metric's effect)
    assert v["quickack"] == {**v["linux"], "receiver": "simple"}


def test_sysctls_map_to_the_linux_modes_options():
    assert cm.sysctl_sim_options(["net.ipv4.tcp_wmem=4096 8388608 33554432",
                                  "net.ipv4.tcp_rmem = 1 2 3"]) == {
        "tcp_wmem_min": 4096, "tcp_wmem_default": 8388608, "tcp_wmem_max": 33554432,
        "tcp_rmem_min": 1, "tcp_rmem_default": 2, "tcp_rmem_max": 3}
    for bad in ("net.core.wmem_max=1", "net.ipv4.tcp_wmem=4096 8388608", "net.ipv4.tcp_rmem=a b c"):
        with pytest.raises(ValueError, match="models only"):
            cm.sysctl_sim_options([bad])


def test_cells_keep_rows_of_one_sysctl_set_apart():
    row = {"seed": 1, "algorithm": "lia", "conn": "none", "paths": [1.0, 1.0], "health": {"sound": True}}
    big = ["net.ipv4.tcp_wmem=4096 8388608 33554432"]
    rows = [row, dict(row), {**row, "sysctls": big}, {**row, "sysctls": big}, {**row, "health": {"sound": False}}]
    assert [len(v) for v in lma.cells(rows, 2).values()] == [2]
    assert lma.cells(rows, 2, tuple(big))[(1, "lia")] == rows[2:4]
    assert lma.cells(rows, 3, tuple(big)) == {}


def test_cells_keep_quickack_rows_apart():
    row = {"seed": 1, "algorithm": "coupled", "conn": "none", "paths": [1.0, 1.0], "health": {"sound": True}}
    rows = [row, dict(row), {**row, "quickack": True}, {**row, "quickack": True}, {**row, "quickack": True}]
    assert lma.cells(rows, 2)[(1, "coupled")] == rows[:2]
    assert lma.cells(rows, 3, quickack=True)[(1, "coupled")] == rows[2:]
    assert lma.cells(rows, 3) == {}


def test_the_sysctl_hook_sets_them_in_every_host_and_the_server(monkeypatch):
    """conn_mechanisms.on_built_hook: each sysctl in every host namespace and the server's (no
    root: the commands are recorded); none, no hook. --quickack is the testbed's own
    ``receiver = "quickack"`` setting, which the linux mode models as QUICKACK_SIM."""
    calls = []
    monkeypatch.setattr(subprocess, "run", lambda cmd, **kw: calls.append(cmd))
    topo = type("Topo", (), {"server_ns": "srv", "hosts": {0: "h0", 1: "h1"}})()
    cm.on_built_hook(("net.ipv4.tcp_wmem=4096 16384 4194304",))(topo)
    assert [c[3] for c in calls] == ["h0", "h1", "srv"]
    assert all(c[-1] == "net.ipv4.tcp_wmem=4096 16384 4194304" for c in calls)
    assert cm.on_built_hook(()) is None
    assert cm.QUICKACK_SIM == {"receiver": "simple"}


def _rows_file(tmp_path, **extra):
    """Two sound testbed rows of one cell (network 1, LIA), with ``extra`` fields, as a rows file."""
    row = {"seed": 1, "algorithm": "lia", "conn": "none", "paths": [1.0, 1.0], "testbed": 2.0, "others": {},
           "health": {"sound": True}, "sndbuf_per_mss": 2304, **extra}
    f = tmp_path / "rows.json"
    f.write_text(json.dumps([row, row]))
    return f


def _run(script, *args):
    """A bench/kernel script (path relative to it) run as a user would."""
    return subprocess.run([sys.executable, str(Path(lma.__file__).parent / script), *args],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("script, says", [("linux_mode_agreement.py", "judge those rows' files apart)"),
                                          ("linux_cost_breakdown.py", "or --no-testbed)")])
def test_rows_of_another_run_length_are_one_line_exit_2(tmp_path, script, says):
    p = _run(script, str(_rows_file(tmp_path, secs=120.0, warmup=100.0)))
    assert p.returncode == 2, p.stderr
    line, = p.stderr.strip().splitlines()
    assert "recorded with --secs 120 --warmup 100, not 30 and 10" in line and says in line


def test_sim_settings_decode_and_a_malformed_one_is_named():
    assert lma.parse_sim_settings(["receiver=simple", "tlp = false", "sndbuf_per_mss=2304"]) == {
        "receiver": "simple", "tlp": False, "sndbuf_per_mss": 2304}
    for bad in ("receiver", "=simple", " = "):
        with pytest.raises(ValueError, match="not KEY=VALUE"):
            lma.parse_sim_settings([bad])


@pytest.mark.parametrize("script", ["linux_mode_agreement.py", "notes/coupled_split_trace.py"])
def test_a_malformed_sim_setting_is_one_line_exit_2(tmp_path, script):
    args = [str(_rows_file(tmp_path))] if script.startswith("linux") else []
    p = _run(script, *args, "--sim", "receiver")
    assert p.returncode == 2, p.stderr
    line, = p.stderr.strip().splitlines()
    assert "--sim 'receiver': not KEY=VALUE (fix: e.g. --sim receiver=simple)" in line


def test_sampler_csv_read_by_header_and_an_older_file_lacks_a_column(tmp_path):
    from mpcc.testbed import engine as tb
    (tmp_path / "new").mkdir(), (tmp_path / "old").mkdir()
    new = tmp_path / "new" / "sender.csv"
    new.write_text("t,group,flow,local,route,cwnd,srtt_us,bytes_acked,ssthresh,total_retrans,unacked,busy_us,"
                   "rwnd_limited_us,sndbuf_limited_us,notsent\n"
                   "1.5,0,1,198.18.0.1,1,7,25000,100,20,0,5,10,0,0,3000\n"
                   "1.6,0,1,198.18.0.1,1,7\n")         # cut short by the run's end: skipped
    old = tmp_path / "old" / "sender.csv"
    old.write_text("t,group,flow,local,route,cwnd,srtt_us,bytes_acked,ssthresh,total_retrans,unacked,busy_us,"
                   "rwnd_limited_us,sndbuf_limited_us\n"
                   "1.5,0,1,198.18.0.1,1,7,25000,100,20,0,5,10,0,0\n")
    a, b = tb._read_csv(new, tb.SENDER_DT), tb._read_csv(old, tb.SENDER_DT)
    assert len(a) == 1 and a["notsent"][0] == 3000 and a["cwnd"][0] == 7 and a["local"][0] == "198.18.0.1"
    assert len(b) == 1 and b["notsent"][0] == 0 and b["unacked"][0] == 5
    assert len(tb._read_csv(tmp_path / "missing.csv", tb.SENDER_DT)) == 0
    # only sender.csv's added column may be absent: any other missing field is an error, not a 0
    msk = tmp_path / "msk.csv"
    msk.write_text("t,group,flow,outq,sndbuf,snd_wnd,bytes_retrans,sub_notsent\n1.5,0,0,1,2,3,4,5\n")
    with pytest.raises(ValueError, match="msk.csv: no column notsent"):
        tb._read_csv(msk, tb.MSK_DT)


def test_link_stats_read_by_the_header_linkem_writes(tmp_path):
    """LINK_DT names the columns of linkem's stats file (crates/linkem/src/main.rs writes the header)."""
    import re
    from mpcc.testbed import engine as tb
    src = (Path(__file__).parents[1] / "crates/linkem/src/main.rs").read_text()
    header = re.search(r'writeln!\(f, "(t_mono_s,[a-z_,]+)"\)', src).group(1)
    f = tmp_path / "linkem-l1.csv"
    f.write_text(header + "\n" + "2.0,fwd,7,100,90,4,3,2,1,123456,0\n")
    rows = tb._read_csv(f, tb.LINK_DT)
    assert [n for n, _ in tb.LINK_DT] == header.split(",")
    assert rows["t_mono_s"][0] == 2.0 and rows["queue_pkts"][0] == 7 and rows["arrivals"][0] == 100
    assert rows["bytes_out"][0] == 123456 and rows["dir"][0] == "fwd"


def test_per_path_samples_of_the_testbed_and_their_ratio_to_the_linux_mode():
    import math

    import numpy as np
    from mpcc.testbed import engine as tb
    import sim_vs_testbed as svt
    sd = np.zeros(6, dtype=tb.SENDER_DT)
    sd["t"] = [1, 1, 2, 2, 9, 9]                      # t = 9: outside [0.5, 3]
    sd["route"] = [0, 1, 0, 1, 0, 1]
    sd["cwnd"] = 4
    sd["unacked"] = [4, 1, 2, 4, 0, 0]
    sd["notsent"] = [1024, 0, 0, 2048, 0, 0]
    p = svt.path_limits(sd, 0.5, 3.0, True)
    assert p["path_idle"] == [0.5, 0.5]
    assert p["path_queued_kb"] == [(4 * svt.MSS + 1024 + 2 * svt.MSS) / 2 / 1024,
                                   (svt.MSS + 4 * svt.MSS + 2048) / 2 / 1024]
    assert all(math.isnan(x) for x in svt.path_limits(sd, 0.5, 3.0, False)["path_queued_kb"])
    runs = [{"msk": {"path_queued_kb": [10.0, 20.0], "path_idle": [0.1, 0.4]}},
            {"msk": {"path_queued_kb": [30.0, math.nan], "path_idle": [0.3, 0.2]}}]
    want = {"path_queued_kb/0": 20.0, "path_queued_kb/1": 20.0, "path_idle/0": 0.2, "path_idle/1": 0.3}
    assert lma.tb_path_conn(runs) == pytest.approx(want)
    assert lma.tb_path_conn([{"msk": {}}, *runs]) == pytest.approx(want)   # a row from before: left out
    assert lma.tb_path_conn([{"msk": {}}]) == {}
    # the linux mode's side: the same keys, from its connection_limits
    q = lma.sim_quantities(9, "olia", 6.0, 2.0, range(1), cm.SIM_MODES["linux"])[0]
    assert {k for k in q if k.startswith("conn:path")} == {"conn:path_queued_kb/0", "conn:path_queued_kb/1",
                                                           "conn:path_idle/0", "conn:path_idle/1"}
    assert all(0 <= q[f"conn:path_idle/{i}"] <= 1 and q[f"conn:path_queued_kb/{i}"] > 0 for i in (0, 1))
