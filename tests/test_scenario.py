"""Scenario loading: the bundled files load; every error class gives one clear message
(file, field, fix) and exit code 2 from the CLI."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mpcc import scenario as sc
from mpcc.errors import ScenarioError

ROOT = Path(__file__).resolve().parents[1]

GOOD = textwrap.dedent("""
    name = "t"
    duration_s = 10.0
    [[links]]
    name = "l1"
    capacity_mbps = 10.0
    delay_ms = 5.0
    buffer_pkts = 50
    [[links]]
    name = "l2"
    capacity_mbps = 20.0
    delay_ms = 7.0
    buffer_pkts = 40
    aqm = "red"
    red = {min_th = 5, max_th = 15, max_p = 0.1}
    [[groups]]
    name = "mp"
    count = 2
    algorithm = {name = "generalized", beta = 0.2, eta = 0.5, n = "inf"}
    paths = [["l1"], ["l2", "l1"]]
    start_s = 1.0
""")


def test_good_scenario():
    s = sc.loads(GOOD)
    assert [l.name for l in s.links] == ["l1", "l2"]
    g = s.groups[0]
    assert g.algorithm.name == "generalized" and g.algorithm.params["beta"] == 0.2
    assert g.stop_s == 10.0 and g.multipath
    assert s.path_delay_s(g.paths[1]) == pytest.approx(0.024)
    assert s.links[1].red.max_p == 0.1
    assert s.capacity_pps(s.links[0]) == pytest.approx(10e6 / 12000)


def test_bundled_scenarios_load():
    """Every bundled file loads: scenarios with the scenario loader, heterogeneous-network
    files (they have [[protocols]]) with the hetero loader."""
    import tomllib

    from mpcc.hetero import model as hetero_model

    files = sorted((ROOT / "scenarios").rglob("*.toml"))
    assert len(files) >= 15
    for f in files:
        if "protocols" in tomllib.loads(f.read_text()):
            hetero_model.load(f)
        else:
            sc.load(f)


def _bad(old, new):
    assert old in GOOD, old
    return GOOD.replace(old, new, 1)


ERRORS = [
    ("unknown link", _bad('["l2", "l1"]', '["l2", "l9"]'), "groups[0].paths[1]", "unknown link 'l9'"),
    ("negative capacity", _bad("capacity_mbps = 10.0", "capacity_mbps = -1.0"), "links[0].capacity_mbps", "out of range"),
    ("zero capacity", _bad("capacity_mbps = 10.0", "capacity_mbps = 0"), "links[0].capacity_mbps", "out of range"),
    ("unknown algorithm", _bad('algorithm = {name = "generalized", beta = 0.2, eta = 0.5, n = "inf"}', 'algorithm = "vegas"'),
     "groups[0].algorithm", "unknown algorithm 'vegas'"),
    ("bad algorithm parameter", _bad("beta = 0.2", 'beta = "big"'), "groups[0].algorithm.beta", "expected a number"),
    ("missing field", _bad("delay_ms = 5.0\n", ""), "links[0].delay_ms", "missing required field"),
    ("missing top-level", _bad('name = "t"\n', ""), "name", "missing required field"),
    ("wrong type", _bad("buffer_pkts = 50", 'buffer_pkts = "fifty"'), "links[0].buffer_pkts", "expected an integer"),
    ("wrong type float for int", _bad("count = 2", "count = 2.5"), "groups[0].count", "expected an integer"),
    ("unknown field", _bad("count = 2", "count = 2\ncolour = 1"), "groups[0].colour", "unknown field"),
    ("stop before start", _bad("start_s = 1.0", "start_s = 1.0\nstop_s = 0.5"), "groups[0].stop_s", "not after start_s"),
    ("duplicate link", _bad('name = "l2"', 'name = "l1"'), "links[1].name", "duplicate link name"),
    ("red thresholds", _bad("max_th = 15", "max_th = 4"), "links[1].red.max_th", "must exceed min_th"),
    ("bad aqm", _bad('aqm = "red"', 'aqm = "codel"'), "links[1].aqm", "unknown AQM"),
    ("empty paths", _bad('paths = [["l1"], ["l2", "l1"]]', "paths = []"), "groups[0].paths", "non-empty list"),
    ("toml syntax", GOOD.replace("duration_s = 10.0", "duration_s = "), "(syntax)", "invalid TOML"),
]


@pytest.mark.parametrize("label,text,field,problem", ERRORS, ids=[e[0] for e in ERRORS])
def test_error_classes(label, text, field, problem):
    with pytest.raises(ScenarioError) as e:
        sc.loads(text, "bad.toml")
    assert e.value.field == field
    assert problem in e.value.problem
    msg = str(e.value)
    assert msg.startswith("bad.toml: ") and "fix:" in msg and "\n" not in msg


def test_cli_error_is_one_line_exit_2(tmp_path):
    f = tmp_path / "bad.toml"
    f.write_text(_bad('["l2", "l1"]', '["l2", "nowhere"]'))
    p = subprocess.run([sys.executable, "-m", "mpcc.cli", "check", str(f)], capture_output=True, text=True)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "unknown link 'nowhere'" in lines[0] and str(f) in lines[0]
    assert p.stdout == ""


def test_cli_missing_file(tmp_path):
    p = subprocess.run([sys.executable, "-m", "mpcc.cli", "check", str(tmp_path / "none.toml")],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "no such file" in p.stderr


@pytest.mark.parametrize("kind", ["fifo", "device", "unreadable"])
def test_cli_file_that_is_not_a_readable_regular_file(tmp_path, kind):
    """A FIFO must not block the read; a device or an unreadable file is one line, exit 2."""
    if kind == "fifo":
        f = tmp_path / "s.toml"
        os.mkfifo(f)
    elif kind == "device":
        f = Path("/dev/null")
    else:
        if os.geteuid() == 0:
            pytest.skip("root reads any file")
        f = tmp_path / "s.toml"
        f.write_text(GOOD)
        f.chmod(0)
    p = subprocess.run([sys.executable, "-m", "mpcc.cli", "check", str(f)], capture_output=True, text=True,
                       timeout=60)
    want = "permission denied" if kind == "unreadable" else "not a regular file"
    assert p.returncode == 2 and want in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr


def _deep(n: int) -> str:
    return GOOD + "x = " + "[" * n + "]" * n + "\n"


@pytest.mark.parametrize("depth", [40, 400, 10_000])
def test_too_deep_toml_is_one_line_error(depth):
    """10,000 nested arrays exhausted tomllib's recursion (a RecursionError traceback); 40 and
    400 levels parse but are past MAX_TOML_DEPTH. All three are the same one-line error."""
    with pytest.raises(ScenarioError) as e:
        sc.loads(_deep(depth), "deep.toml")
    assert "nested more than 32 levels" in str(e.value) and "fix:" in str(e.value)


def test_nesting_up_to_the_limit_is_not_refused_for_depth():
    doc = sc.decode_toml("x = " + "[" * (sc.MAX_TOML_DEPTH - 1) + "]" * (sc.MAX_TOML_DEPTH - 1))
    assert "x" in doc


def test_too_large_toml_is_refused_without_reading_it_whole(tmp_path):
    f = tmp_path / "big.toml"
    with open(f, "w") as out:
        out.write(GOOD)
        out.write("# padding\n" * (sc.MAX_TOML_BYTES // 10 + 1))
    with pytest.raises(ScenarioError) as e:
        sc.load(f)
    assert "too large" in str(e.value) and f"limit is {sc.MAX_TOML_BYTES}" in str(e.value)
    with pytest.raises(ScenarioError, match="too large"):
        sc.loads(f.read_text(), "big.toml")


@pytest.mark.parametrize("kind", ["deep", "large"])
def test_cli_too_deep_or_too_large_toml_is_one_line_exit_2(tmp_path, kind):
    f = tmp_path / f"{kind}.toml"
    f.write_text(_deep(10_000) if kind == "deep" else GOOD + "# pad\n" * (sc.MAX_TOML_BYTES // 6 + 1))
    for cmd in (["check"], ["sim", "--json", "-q"]):
        p = subprocess.run([sys.executable, "-m", "mpcc.cli", *cmd, str(f)], capture_output=True, text=True,
                           timeout=60)
        lines = p.stderr.strip().splitlines()
        assert p.returncode == 2 and len(lines) == 1 and "(fix:" in lines[0] and str(f) in lines[0], p.stderr
        assert ("nested more than" if kind == "deep" else "too large") in lines[0]


def test_hetero_file_too_deep_is_one_line_error(tmp_path):
    from mpcc.hetero import model
    f = tmp_path / "net.toml"
    f.write_text("x = " + "[" * 10_000 + "]" * 10_000 + "\n")
    with pytest.raises(ScenarioError, match="nested more than"):
        model.load(f)


def test_background_traffic():
    s = sc.loads(GOOD + '\n[[background]]\nname = "u"\npath = ["l2"]\nrate_mbps = 2.0\nmean_on_s = 1.0\nmean_off_s = 0.5\nstart_s = 2.0\n')
    b = s.background[0]
    assert (b.path, b.rate_mbps, b.mean_on_s, b.stop_s) == (("l2",), 2.0, 1.0, 10.0)
    with pytest.raises(ScenarioError) as e:
        sc.loads(GOOD + '\n[[background]]\nname = "u"\npath = ["zz"]\nrate_mbps = 2.0\nmean_on_s = 1.0\nmean_off_s = 0.5\n', "bad.toml")
    assert e.value.field == "background[0].path"
