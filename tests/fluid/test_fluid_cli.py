import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MPCC = [sys.executable, "-c", "from mpcc.cli import main; main()"]


def run(*args):
    return subprocess.run([*MPCC, *args], capture_output=True, text=True, cwd=ROOT, timeout=300)


def test_json_contract():
    r = run("fluid", "scenarios/peng2016/table3.toml", "--json", "--algorithm", "ewtcp")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["engine"] == "fluid" and d["scenario"] == "peng2016-table3"
    assert set(d["groups"]) == {"mp", "sp"} and set(d["links"]) == {"link1", "link2"}
    mp = d["groups"]["mp"]
    assert mp["count"] == 30 and mp["path_rate_mbps"] == pytest.approx([2.0, 1.0], rel=1e-9)
    assert mp["rate_mbps"] == pytest.approx(3.0, rel=1e-9)
    assert d["links"]["link1"]["load_mbps"] == pytest.approx(60.0, rel=1e-9)
    assert d["unique"] is True and max(d["residuals"].values()) < 1e-10


def test_plot_writes_png_svg(tmp_path):
    r = run("fluid", "dynamics", "scenarios/peng2016/table3.toml", "--t-end", "5", "--plot", str(tmp_path),
            "--parquet", str(tmp_path / "ts.parquet"))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "dynamics.png").stat().st_size > 0 and (tmp_path / "dynamics.svg").stat().st_size > 0
    import pyarrow.parquet as pq
    t = pq.read_table(tmp_path / "ts.parquet")
    assert "t_s" in t.column_names and "link2.price" in t.column_names


@pytest.mark.parametrize("args,needle", [
    (("fluid", "nope.toml"), "no such file"),
    (("fluid", "scenarios/peng2016/table3.toml", "--algorithm", "olia"), "mpcc sim"),
    (("fluid", "scenarios/peng2016/table3.toml", "--algorithm", "bogus"), "unknown algorithm"),
    (("fluid", "conditions", "generalized", "--param", "beta=x"), "not a number"),
])
def test_bad_input_one_line_error(args, needle):
    r = run(*args)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mpcc: error:") and needle in lines[0]
    assert "Traceback" not in r.stderr


def test_conditions_json():
    r = run("fluid", "conditions", "generalized", "--param", "beta=0.2", "--routes", "3", "--samples", "200", "--json")
    d = json.loads(r.stdout)
    assert d["fraction_satisfied"]["c2"] == 1.0 and d["fraction_satisfied"]["c0"] == 0.0
