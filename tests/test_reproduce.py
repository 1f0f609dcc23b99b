"""`mpcc reproduce peng2016`: the side-by-side table, the saved files, and that an engine
failing (e.g. the kernel testbed without root) keeps every column already computed."""

import json
import subprocess
import sys

import pytest

from mpcc.errors import EnvironmentProblem
from mpcc.reproduce import peng2016 as rp
from mpcc.reproduce.peng2016.paper import PENG_TABLE3


def test_fluid_column_matches_closed_forms(tmp_path):
    rep, errors = rp.reproduce(["fluid"], ("ewtcp", "coupled", "olia"), out=tmp_path, progress=False)
    assert errors == []
    cell = lambda q, a: rep.row(rp.T3, q, a).cells  # noqa: E731
    # Fig. 2, c = 60 Mb/s, N1 = N2 = 30, equal RTTs: EWTCP MP 2 + 1, SP 1; Coupled MP 2 + 0, SP 2
    assert cell(rp.Q_T3_MP, "ewtcp")["fluid"].value == pytest.approx(3.0, rel=1e-9)
    assert cell(rp.Q_T3_SP, "ewtcp")["fluid"].value == pytest.approx(1.0, rel=1e-9)
    assert cell(rp.Q_T3_MP, "coupled")["fluid"].value == pytest.approx(2.0, rel=1e-9)
    assert cell(rp.Q_T3_SP, "coupled")["fluid"].value == pytest.approx(2.0, rel=1e-9)
    assert cell(rp.Q_T3_MP, "olia")["fluid"].value is None            # no fluid model
    assert cell(rp.Q_T3_MP, "ewtcp")["paper"].value == PENG_TABLE3["mp"]["ewtcp"][0]
    # WiFi + 3G, one flow alone: both links full → 10 Mb/s
    assert rep.row(rp.T4, rp.Q_T4, "ewtcp").cells["fluid"].value == pytest.approx(10.0, rel=1e-9)
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["paper"].startswith("Peng") and saved["rows"]
    assert "| ewtcp |" in (tmp_path / "results.md").read_text()


def test_engine_failure_keeps_other_columns(tmp_path, monkeypatch):
    def no_kernel(*a, **k):
        raise EnvironmentProblem("testbed needs root (fix: run as root)")

    monkeypatch.setattr(rp, "testbed_column", no_kernel)
    rep, errors = rp.reproduce(["fluid", "testbed"], ("ewtcp",), out=tmp_path, progress=False)
    assert len(errors) == 1 and "needs root" in errors[0]
    assert rep.row(rp.T3, rp.Q_T3_MP, "ewtcp").cells["fluid"].value == pytest.approx(3.0)
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["columns"]["testbed"]["error"].startswith("testbed needs root")
    assert any("fluid" in r["cells"] for r in saved["rows"])


def test_cli_bad_algorithm_is_one_line():
    p = subprocess.run([sys.executable, "-m", "mpcc.cli", "reproduce", "peng2016", "--engine", "fluid",
                        "--algorithms", "balia,nosuch"], capture_output=True, text=True)
    assert p.returncode == 2 and "nosuch" in p.stderr and "Traceback" not in p.stderr
