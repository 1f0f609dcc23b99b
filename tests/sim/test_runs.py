"""Determinism, repetitions and executors (local threads, Dask), CLI outputs and bad input."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from mpcc import scenario, sim

ROOT = Path(__file__).resolve().parents[2]
TABLE4 = ROOT / "scenarios/peng2016/table4.toml"


def _short():
    return scenario.load(TABLE4).with_changes(duration_s=20.0)


def test_same_seed_same_result_different_seed_different():
    s = _short()
    a, b, c = sim.run(s, seed=5), sim.run(s, seed=5), sim.run(s, seed=6)
    assert a.result.to_json() == b.result.to_json()
    for key in ("subflows", "links"):
        ta, tb = a.timeseries[key], b.timeseries[key]
        assert ta.num_rows == tb.num_rows > 0
        for col in ta.column_names:
            x, y = ta[col], tb[col]
            assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), col
    assert a.result.to_json() != c.result.to_json()


def test_progress_callback_reports_simulated_time_and_changes_nothing():
    s = _short()
    seen = []
    a = sim.run(s, seed=2, progress=seen.append)
    assert seen == sorted(seen) and seen[-1] == pytest.approx(20.0) and len(seen) >= 50
    assert a.result.to_json() == sim.run(s, seed=2).result.to_json()
    assert sim.run(s, seed=2, progress=True).result.to_json() == a.result.to_json()


def test_run_many_matches_single_runs_and_has_ci():
    s = _short()
    many = sim.run_many(s, runs=3, seed=10, progress=False)
    assert [r.seed for r in many] == [10, 11, 12]
    for r in many:
        assert r.result.to_json() == sim.run(s, seed=r.seed).result.to_json()
    agg = many.result
    rates = [r.result.groups["mp"].rate_mbps for r in many]
    assert agg.groups["mp"].rate_mbps == pytest.approx(np.mean(rates))
    # Student-t 95 % half-width for 3 samples: t(0.975, 2) = 4.303
    assert agg.groups["mp"].extra["ci95_mbps"] == pytest.approx(4.303 * np.std(rates, ddof=1) / np.sqrt(3), rel=1e-3)


def test_dask_cluster_gives_the_same_numbers():
    distributed = pytest.importorskip("distributed")
    s = _short()
    local = sim.run_many(s, runs=2, seed=3, progress=False)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            remote = sim.run_many(s, runs=2, seed=3, progress=False, scheduler=client)
        dask_by_address = sim.run_many(s, runs=2, seed=3, progress=False, scheduler=cluster.scheduler_address)
    for a, b, c in zip(local, remote, dask_by_address):
        assert a.result.to_json() == b.result.to_json() == c.result.to_json()


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "mpcc.cli", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd or ROOT, timeout=300)


def test_cli_json_and_out_dir(tmp_path):
    out = tmp_path / "res"
    p = _cli("sim", TABLE4, "--json", "--runs", "2", "--seed", "1", "--out", out, "--algorithm", "olia", "-q")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["engine"] == "sim" and doc["groups"]["mp"]["algorithm"] == "olia"
    assert "ci95_mbps" in doc["groups"]["mp"]
    assert sorted(x.name for x in out.iterdir()) == ["cwnd.png", "links.parquet", "queues.png", "result.json", "subflows.parquet"]
    t = pq.read_table(out / "subflows.parquet")
    assert set(t.column_names) >= {"time_s", "group", "flow", "route", "cwnd_pkts", "srtt_s", "rate_mbps", "loss_events", "seed"}
    assert sorted(set(t.column("seed").to_pylist())) == [1, 2]
    assert json.loads((out / "result.json").read_text()) == doc
    assert (out / "cwnd.png").read_bytes()[:4] == b"\x89PNG"


BAD = {
    "unknown-link": ('paths = [["wifi"], ["nowhere"]]', "unknown link"),
    "zero-capacity": ("capacity_mbps = 0.0", "capacity_mbps"),
    "stops-before-start": ('start_s = 50.0\nstop_s = 10.0', "stop_s"),
    "bad-sim-option": ("[sim]\nstart_jitter_s = -1", "sim.start_jitter_s"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_cli_bad_input_is_one_line_and_writes_nothing(tmp_path, case):
    text = TABLE4.read_text()
    change, expect = BAD[case]
    if case == "unknown-link":
        text = text.replace('paths = [["wifi"], ["3g"]]', change)
    elif case == "zero-capacity":
        text = text.replace("capacity_mbps = 8.0", change, 1)
    elif case == "stops-before-start":
        text = text.replace('paths = [["wifi"], ["3g"]]', 'paths = [["wifi"], ["3g"]]\n' + change)
    elif "[sim]" in text:  # the scenario already has a [sim] table: add the bad key to it
        text = text.replace("[sim]", change, 1)
    else:
        text += "\n" + change + "\n"
    bad = tmp_path / "bad.toml"
    bad.write_text(text)
    out = tmp_path / "out"
    p = _cli("sim", bad, "--out", out, "-q")
    assert p.returncode == 2
    assert expect in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert "Traceback" not in p.stderr
    assert not out.exists()
    assert sorted(x.name for x in tmp_path.iterdir()) == ["bad.toml"]  # no temp dirs left


def test_out_dir_is_written_atomically_when_writing_fails(tmp_path, monkeypatch):
    from mpcc.sim import output
    run = sim.run(_short(), seed=1)

    def boom(*a, **k):
        raise RuntimeError("plot failed")

    monkeypatch.setattr(output, "plot_queues", boom)
    with pytest.raises(RuntimeError):
        run.write(tmp_path / "out")
    assert list(tmp_path.iterdir()) == []
