"""`mpcc mtc` command line: JSON contracts and one-line errors with exit code 2."""

import json
import math
import subprocess
import sys

import numpy as np
import pytest


def run(*args):
    p = subprocess.run([sys.executable, "-m", "mpcc.cli", "mtc", *args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def test_utilization_json_contract():
    rc, out, _ = run("utilization", "--algorithm", "mstcp", "--subflows", "3", "--flows", "1",
                     "--bdp", "42", "--buffer-ratio", "0", "--decrease", "0.5", "--json")
    assert rc == 0
    d = json.loads(out)
    # (8): f = (1/2)^3; (6) with kappa = 1: U = (1 − f)/(−log f)
    assert d["f"] == pytest.approx(0.125)
    assert d["utilization"] == pytest.approx(0.875 / math.log(8))


def test_utilization_multiple_flows():
    rc, out, _ = run("utilization", "--algorithm", "coupled-decrease", "--subflows", "2", "--flows", "3",
                     "--bdp", "100", "--buffer-ratio", "0", "--decrease", "0.5", "--json")
    d = json.loads(out)
    # Table 1: f = max{(2 − 1.5)/(2 + 0.5), 4/(200 − 2)} = 0.2, U = 3(1.2)/(4 + 2·0.2)
    assert rc == 0 and d["f"] == pytest.approx(0.2) and d["utilization"] == pytest.approx(3.6 / 4.4)


def test_paths_json_contract():
    rc, out, _ = run("paths", "--alpha", "0", "--beta", "0", "--loss", "0.01,0.04", "--json")
    d = json.loads(out)
    assert rc == 0 and d["paths_used"] == 2
    assert np.allclose(d["windows"], np.sqrt(2 * (1 - np.array([0.01, 0.04])) / np.array([0.01, 0.04])))


def test_paths_tie_at_alpha_beta_one():
    rc, out, _ = run("paths", "--alpha", "1", "--beta", "1", "--loss", "0.01,0.01", "--json")
    d = json.loads(out)
    assert rc == 0 and d["paths_used"] == 2 and d["equilibrium_set"] is True
    assert sum(d["windows"]) == pytest.approx(math.sqrt(2 * 0.99 / 0.01))


@pytest.mark.parametrize("args", [
    ("paths", "--alpha", "0.5", "--beta", "0.5", "--loss", "0.01,1.0"),
    ("paths", "--alpha", "0.5", "--beta", "0.5", "--loss", "0.01,x"),
    ("paths", "--alpha", "1.5", "--beta", "0.5", "--loss", "0.01"),
    ("utilization", "--algorithm", "mstcp", "--subflows", "0"),
    ("utilization", "--algorithm", "mstcp", "--flows", "0"),
    ("utilization", "--algorithm", "mstcp", "--decrease", "1.5"),
    ("utilization", "--algorithm", "mstcp", "--bdp", "0.5"),
    ("flappiness", "--subflows", "1"),
    ("flappiness", "--subflows", "2", "--loss", "0.1,0.2,0.3"),
])
def test_bad_input_is_one_line_exit_2(args):
    rc, out, err = run(*args)
    assert rc == 2
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_flappiness_cli_on_trace(tmp_path):
    t = np.arange(0, 100.0, 0.1)
    first = (np.floor(t / 10) % 2) == 0
    w = np.where(first[:, None], [18.0, 2.0], [2.0, 18.0])
    path = tmp_path / "trace.csv"
    np.savetxt(path, np.column_stack([t, w]), delimiter=",", header="time,cwnd_1,cwnd_2", comments="")
    rc, out, _ = run("flappiness", "--trace", str(path), "--smooth-rtts", "0", "--json")
    d = json.loads(out)
    assert rc == 0 and d["dominance"] == pytest.approx(1.0) and d["episodes"] == 10


def test_flappiness_cli_model_runs():
    rc, out, _ = run("flappiness", "--algorithm", "mtcp", "--alpha", "1", "--beta", "1", "--subflows", "2",
                     "--loss", "0.005", "--rounds", "500", "--replicas", "1", "--json")
    d = json.loads(out)
    assert rc == 0 and 0.0 <= d["dominance"] <= 1.0 and d["subflows"] == 2


def test_figures_smoke(tmp_path):
    from mpcc.reproduce import jiang2011

    res = jiang2011.reproduce(tmp_path, level="smoke")
    names = {p.rsplit("/", 1)[-1] for p in res["files"]}
    for f in ("fig3.png", "fig4.png", "fig6.png", "fig7.png", "fig8.png", "fig9.png", "fig10.png",
              "flappiness.png", "jiang2011.json"):
        assert f in names
        assert (tmp_path / f).stat().st_size > 1000


def test_saved_trace_round_trip(tmp_path):
    path = tmp_path / "tr.parquet"
    rc, out, _ = run("flappiness", "--rounds", "1500", "--replicas", "1", "--seed", "4", "--save-trace", str(path),
                     "--json")
    model = json.loads(out)
    rc2, out2, _ = run("flappiness", "--trace", str(path), "--json")
    again = json.loads(out2)
    assert rc == 0 and rc2 == 0
    for key in ("dominance", "mean_dwell_s", "concentration", "episodes"):
        assert again[key] == pytest.approx(model[key])
