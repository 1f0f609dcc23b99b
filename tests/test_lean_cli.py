"""The command line imports only what a command uses (structural, not timed: the timings are
in bench/cli/RESULTS.md). Each case runs ``mpcc.cli.main`` in a fresh interpreter and reports
which heavy libraries ended up in ``sys.modules``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SMALL = ROOT / "scenarios" / "peng2016" / "fig3-multipath.toml"  # one flow, 60 s at 10 Mb/s

#: Libraries no plain ``sim --json`` / ``check`` / ``--help`` needs.
HEAVY = ("matplotlib", "pyarrow", "dask", "distributed", "scipy", "rich", "pandas")

_PROBE = """
import json, sys
from mpcc.cli import main
try:
    main(sys.argv[1:])
except SystemExit as e:
    code = e.code
heavy = sorted({m.split('.')[0] for m in sys.modules} & set(%r))
algos = sorted(m.split('.')[2] for m in sys.modules if m.startswith('mpcc.algorithms.'))
print(json.dumps({"code": code, "heavy": heavy, "numpy": "numpy" in sys.modules, "algos": algos,
                  "stdlib": sorted({m.split('.')[0] for m in sys.modules} & {"concurrent", "pathlib", "shutil", "tempfile"})}),
      file=sys.stderr)
""" % (HEAVY,)


def _loaded(*args: str) -> dict:
    p = subprocess.run([sys.executable, "-c", _PROBE, *args], capture_output=True, text=True, cwd=ROOT, timeout=300)
    report = json.loads(p.stderr.strip().splitlines()[-1])
    assert report["code"] == 0, p.stderr
    report["stdout"] = p.stdout
    return report


def test_sim_json_loads_no_numpy_plotting_arrow_dask_scipy_or_rich():
    r = _loaded("sim", str(SMALL), "--json", "-q")
    assert r["heavy"] == [] and not r["numpy"]   # one run's summary is plain Python (mpcc.sim.columns)
    doc = json.loads(r["stdout"])
    assert doc["engine"] == "sim" and doc["groups"]["mp"]["rate_mbps"] > 0  # it really simulated


def test_sim_table_loads_rich_but_no_numpy():
    r = _loaded("sim", str(SMALL), "-q")
    assert r["heavy"] == ["rich"] and not r["numpy"]
    assert "mp" in r["stdout"]   # the table was printed


def test_sim_json_and_check_load_only_the_algorithms_named_and_no_pools_or_pathlib():
    # fig3-multipath names balia; base holds the Algorithm class and mtcp the MTCP presets (aliases)
    for args in (("sim", str(SMALL), "--json", "-q"), ("check", str(SMALL))):
        r = _loaded(*args)
        assert r["algos"] == ["balia", "base", "mtcp"], args
        assert r["stdlib"] == [], args   # concurrent.futures, pathlib, shutil, tempfile: not on this path


def test_check_and_help_load_nothing_heavy():
    c = _loaded("check", str(SMALL))
    assert c["heavy"] == [] and not c["numpy"] and "ok" in c["stdout"]
    h = _loaded("--help")
    assert h["heavy"] == [] and not h["numpy"] and "reproduce" in h["stdout"]


@pytest.mark.parametrize("args, expected", [(("--out", "{tmp}/o", "-q"), {"pyarrow", "matplotlib", "numpy"}),
                                            (("-q",), {"rich"}),
                                            (("--runs", "2", "--json", "-q"), {"scipy", "numpy"})])
def test_the_probe_sees_libraries_that_are_asked_for(tmp_path, args, expected):
    # writing files needs Parquet, plots and numpy time series; the printed table needs rich;
    # statistics over runs need numpy and scipy — the probe must see them
    r = _loaded("sim", str(SMALL), *(a.format(tmp=tmp_path) for a in args))
    assert expected <= set(r["heavy"]) | ({"numpy"} if r["numpy"] else set())
