"""``mpcc reproduce jiang2011``'s paper | model | sim | kernel table (issue 14): the plumbing,
without the kernel (the kernel column's runner is replaced where a test needs its output)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mpcc.errors import EnvironmentProblem
from mpcc.mtc import utilization as ut
from mpcc.reproduce.jiang2011 import budget as jb, columns as jc, testbed as jt
from mpcc.reproduce.jiang2011.plots import ALG_LABEL
from mpcc.reproduce.table import Cell, Reproduction
from mpcc.mtc.flappiness import sim_available

TINY = jb.Budget("tiny", ((2, 20), (4, 20)), jb.KernelRun(1, 6.0, 2.0), (2,), jb.KernelRun(1, 8.0, 2.0))


def test_model_column_is_the_closed_forms_and_orderings_are_checked(tmp_path):
    rep, errors = jc.reproduce(("model",), budget=TINY, level="smoke", out=tmp_path, figures=False)
    assert errors == []
    for n in (2, 4):
        for a in ut.ALGORITHMS:
            # (6)/(10)/(12) with κ = 1 + B/W0, W0 = 5 Mb/s × 100 ms / 1500 B
            want = min(1.0, ut.utilization(a, n, 1, 5e6 * 0.1 / 12000, 20 / (5e6 * 0.1 / 12000)).utilization)
            assert rep.row(jc.T_UTIL, jc.q_util(n, 20), ALG_LABEL[a]).cells["model"].value == pytest.approx(want)
    notes = {r.quantity: r.cells["model"].text() for r in rep.rows if r.table == jc.T_ORDER}
    assert set(notes) == {q for q, _ in jc.ORDER_ROWS}
    assert set(notes.values()) <= {"holds", "differs"}
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["columns"]["model"]["wall_s"] >= 0


def _rep(util: dict, dom: dict) -> Reproduction:
    rep = Reproduction("t")
    for (n, b), vals in util.items():
        for a, v in vals.items():
            rep.put("testbed", jc.T_UTIL, jc.q_util(n, b), ALG_LABEL[a], Cell(v))
    for n, vals in dom.items():
        for a, v in vals.items():
            rep.put("testbed", jc.T_FLAP, jc.q_flap("dominance", n), ALG_LABEL[a], Cell(v))
    return rep


def _notes(rep):
    return [r.cells["testbed"].note if "testbed" in r.cells else None
            for q, _ in jc.ORDER_ROWS for r in rep.rows if r.table == jc.T_ORDER and r.quantity == q]


def test_orderings_hold_and_fail_as_the_values_say():
    ci, cd, fc, ms = "coupled-increase", "coupled-decrease", "fully-coupled", "mstcp"
    good = {(2, 20): {ci: .94, cd: .68, fc: .58, ms: .53}, (4, 20): {ci: .91, cd: .47, fc: .44, ms: .34}}
    rep = _rep(good, {2: {fc: .8, ci: .3, cd: .3, ms: .7}})
    jc.orderings(rep, ut.ALGORITHMS)
    assert _notes(rep) == ["holds", "holds", "holds"]
    bad = {(2, 20): {ci: .60, cd: .68, fc: .58, ms: .53}, (4, 20): {ci: .91, cd: .47, fc: .60, ms: .34}}
    rep = _rep(bad, {2: {fc: .3, ci: .35, cd: .2}})
    jc.orderings(rep, ut.ALGORITHMS)
    assert _notes(rep) == ["differs", "differs", "differs"]
    # two saturated links (the kernel's B = 84: CI 0.99997, FC 1.00002) tie; 0.02 below does not
    for u_fc, note in ((1.00002, "holds"), (0.99997 + 2 * jc.U_TIE, "differs")):
        rep = _rep({(2, 84): {ci: .99997, cd: .92, fc: u_fc, ms: .82}} | good, {})
        jc.orderings(rep, ut.ALGORITHMS)
        assert _notes(rep)[0] == note


def test_kernel_unavailable_keeps_the_other_columns(tmp_path, monkeypatch):
    def refuse(*a, **k):
        raise EnvironmentProblem("the kernel testbed needs root (fix: run as root)")

    monkeypatch.setattr(jt, "utilisation", refuse)
    rep, errors = jc.reproduce(("model", "testbed"), budget=TINY, level="smoke", out=tmp_path, figures=False)
    assert errors == ["kernel: the kernel testbed needs root (fix: run as root)"]
    r = rep.row(jc.T_UTIL, jc.q_util(2, 20), "Fully Coupled")
    assert rep.cell_text(r, "testbed") == "unavailable" and r.cells["model"].value is not None
    assert "unavailable" in (tmp_path / "results.md").read_text()


def test_a_failed_kernel_cell_is_marked_and_the_rest_kept(tmp_path, monkeypatch):
    def util(algos, cells, run, out, progress, lock=None):
        return {(a, n, b): ({"failed": "never connected"} if a == "mstcp" and n == 4 else {"U": (0.5, None)})
                for a in algos for n, b in cells}

    def flap(algos, ns, loss, run, out, progress, lock=None):
        t = np.arange(0, 10, 0.1)
        return {(a, n): {"dominance": 0.5, "dominance_se": float("nan"), "concentration": 0.2,
                         "concentration_se": 0.01, "trace": {"time_s": t.tolist(), "cwnd": [t.tolist()] * n}}
                for a in algos for n in ns}

    monkeypatch.setattr(jt, "utilisation", util)
    monkeypatch.setattr(jt, "flappiness", flap)
    rep, errors = jc.reproduce(("testbed",), budget=TINY, out=tmp_path)
    assert errors == [f"kernel: {jc.q_util(4, 20)} mstcp: never connected"]
    assert "failed" in rep.row(jc.T_UTIL, jc.q_util(4, 20), "MSTCP").cells["testbed"].text()
    assert rep.row(jc.T_UTIL, jc.q_util(4, 20), "Fully Coupled").cells["testbed"].value == 0.5
    conc = rep.row(jc.T_FLAP, jc.q_flap("concentration", 2), "MSTCP").cells["testbed"]
    assert conc.ci95 == pytest.approx(1.96 * 0.01)
    # every kernel cell is shorter than the report's runs: marked †
    assert rep.cell_text(rep.row(jc.T_UTIL, jc.q_util(2, 20), "MSTCP"), "testbed").endswith("†")
    for stem in ("engines_fig9_10", "engines_flappiness", "engines_flappiness_traces"):
        assert (tmp_path / f"{stem}.png").stat().st_size > 1000


@pytest.mark.skipif(not sim_available(), reason="mpcc.sim not built")
def test_sim_column_fills_every_cell(tmp_path):
    rep, errors = jc.reproduce(("sim",), budget=TINY, level="smoke", out=None, figures=False)
    assert errors == []
    for a in ut.ALGORITHMS:
        u = rep.row(jc.T_UTIL, jc.q_util(2, 20), ALG_LABEL[a]).cells["sim"].value
        assert 0.2 < u <= 1.0
        assert 0.0 <= rep.row(jc.T_FLAP, jc.q_flap("dominance", 2), ALG_LABEL[a]).cells["sim"].value <= 1.0


def test_every_kernel_cell_has_a_health_line_in_the_report(tmp_path, monkeypatch):
    """Each kernel cell's health (the testbed's aggregate record) is in results.json and in one
    line per cell of results.md, under its table; a failed cell's says it was not measured."""
    from mpcc.testbed import health

    run = {"bpf_repairs": None, "bpf_unrepaired": None, "implausible_windows": 0, "connect_retries": 0,
           "subflows_not_joined": 0, "linkem_tx_errors": 0, "linkem_late": 0, "linkem_releases": 900}
    sound = health.aggregate([{**run, "sound": True, "reasons": []}])
    unsound = health.aggregate([{**run, "implausible_windows": 2, "sound": False,
                                 "reasons": ["2 samples with an implausible window"]}], attempts=3)

    def util(algos, cells, run, out, progress, lock=None):
        return {(a, n, b): ({"failed": "never connected"} if a == "mstcp" else {"U": (0.5, None), "health": sound})
                for a in algos for n, b in cells}

    def flap(algos, ns, loss, run, out, progress, lock=None):
        t = np.arange(0, 10, 0.1)
        return {(a, n): {"dominance": 0.5, "dominance_se": 0.01, "concentration": 0.2, "concentration_se": 0.01,
                         "trace": {"time_s": t.tolist(), "cwnd": [t.tolist()] * n}, "health": unsound}
                for a in algos for n in ns}

    monkeypatch.setattr(jt, "utilisation", util)
    monkeypatch.setattr(jt, "flappiness", flap)
    rep, _ = jc.reproduce(("testbed",), budget=TINY, out=tmp_path, figures=False)
    md = (tmp_path / "results.md").read_text().splitlines()
    cells = rep.columns["testbed"]["health"]
    assert len(cells[jc.T_UTIL]) == len(jc.ORDER_UTIL) * len(TINY.util_cells) and len(cells[jc.T_FLAP]) == len(jc.ORDER_UTIL)
    assert f"- Fully Coupled, {jc.q_util(2, 20)}: health: sound (1 runs; bpf repairs not measured (unrepaired not measured), " \
           "implausible windows 0, connect retries 0, subflows not joined 0, linkem late 0/900, tx errors 0)" in md
    assert f"- MSTCP, {jc.q_util(4, 20)}: health: not measured (the cell failed)" in md
    flap_lines = [x for x in md if x.startswith("- ") and ", n = 2: health: UNSOUND (1 runs, 2 re-run unsound;" in x]
    assert len(flap_lines) == len(jc.ORDER_UTIL) and all("implausible window" in x for x in flap_lines)
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["columns"]["testbed"]["health"][jc.T_FLAP] == json.loads(json.dumps(cells[jc.T_FLAP]))


def test_each_kernel_cell_runs_holding_the_kernel_lock_and_releases_it(tmp_path, monkeypatch):
    import fcntl

    from mpcc.testbed.engine import RunFailed

    lock = tmp_path / "bench.lock"
    seen = []

    def probe_lock():
        with open(lock, "a") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return "held"
            fcntl.flock(f, fcntl.LOCK_UN)
            return "free"

    def fake_run(text, run, out, progress, sample_ms=100.0):
        seen.append(probe_lock())
        raise RunFailed("stop here")

    monkeypatch.setattr(jt, "_run", fake_run)
    run = jb.KernelRun(1, 6.0, 2.0)
    res = jt.utilisation(["coupled-increase", "mstcp"], [(2, 20)], run, progress=False, lock=lock)
    res |= jt.flappiness(["fully-coupled"], [2], 0.002, run, progress=False, lock=lock)
    assert seen == ["held", "held", "held"] and all(v == {"failed": "stop here"} for v in res.values())
    assert probe_lock() == "free"
    seen.clear()
    jt.utilisation(["coupled-increase"], [(2, 20)], run, progress=False)
    assert seen == ["free"]


def test_window_grid_puts_subflows_sampled_at_different_times_on_one_grid():
    # route 0 sampled at 0, 1, 2 … s with w = t; route 1 at 0.5, 1.5 … with w = 10 − t
    t0 = np.arange(0.0, 10.0, 1.0)
    t1 = t0 + 0.5
    sub = {"time_s": [*t0, *t1], "route": [0] * 10 + [1] * 10, "group": ["mtc"] * 20, "flow": [0] * 20,
           "cwnd_pkts": [*t0, *(10 - t1)]}
    t, w = jt.window_grid(sub, from_s=2.0, step_s=0.5)
    assert t[0] == 0.0 and t[-1] == pytest.approx(6.5)  # grid 2.0 … 8.5, the last common sample 9.0
    assert w[:, 0] == pytest.approx(t + 2.0)          # w = t, interpolated
    assert w[:, 1] == pytest.approx(10.0 - (t + 2.0))


def test_one_subflow_is_a_failed_cell_not_a_crash():
    sub = {"time_s": [0.0, 1.0], "route": [0, 0], "group": ["mtc"] * 2, "flow": [0, 0], "cwnd_pkts": [1.0, 2.0]}
    from mpcc.testbed.engine import RunFailed

    with pytest.raises(RunFailed, match="2 subflows"):
        jt.window_grid(sub, 0.0, 0.1)


def test_quick_budget_is_a_few_minutes_and_full_is_longer():
    assert jb.QUICK.kernel_seconds(4) <= 6 * 60
    assert jb.FULL.kernel_seconds(4) > 10 * jb.QUICK.kernel_seconds(4)
    assert all(c in jb.FULL.util_cells for c in ((2, 20), (4, 20), (2, 84)))


def test_cli_prints_the_table_and_an_unavailable_kernel_is_one_line_exit_2(tmp_path, monkeypatch, capsys):
    import click

    from mpcc import cli
    from mpcc.mtc import cli as mtc_cli

    @click.command()
    @click.option("--out-dir")
    @click.option("--quick", is_flag=True)
    @click.option("--fmt")
    def no_figures(out_dir, quick, fmt):  # the report's figures are tested in test_mtc_cli.py
        pass

    def refuse(*a, **k):
        raise EnvironmentProblem("the kernel testbed needs root (fix: run as root)")

    monkeypatch.setattr(mtc_cli, "figures_cmd", no_figures)
    monkeypatch.setattr(jt, "utilisation", refuse)
    monkeypatch.setattr(jc, "reproduce", lambda engines, **kw: _real(engines, **{**kw, "level": "smoke"}))
    out = tmp_path / "j"
    with pytest.raises(SystemExit) as e:
        cli.main(["reproduce", "jiang2011", "--engine", "model", "--engine", "testbed", "--out", str(out),
                  "--no-progress"])
    err = capsys.readouterr()
    assert e.value.code == 2
    assert err.err.strip().splitlines() == ["mpcc: error: kernel: the kernel testbed needs root (fix: run as root) "
                                            "— every other cell was computed and kept"]
    assert "Coupled Increase" in err.out and "unavailable" in err.out
    saved = json.loads((out / "results.json").read_text())
    assert saved["columns"]["testbed"]["error"] and "model" in saved["columns"]
    report = (out / "REPORT.md").read_text()
    assert (out / "engines_fig9_10.png").exists() and "](engines_fig9_10.png)" in report
    # the engine table is in the report itself, before the figures
    assert report.index("| Coupled Increase |") < report.index("](engines_fig9_10.png)")


_real = jc.reproduce


@pytest.mark.skipif(not sim_available(), reason="mpcc.sim not built")
def test_packet_fig9_at_a_two_packet_buffer_keeps_the_reports_75_percent():
    # §3.2.2: single-path TCP (n = 1; every variant is TCP there) with a small buffer uses 75 % of
    # the link. The packet Figs. 9–10 run with ns-2's exact timing; with 1 ms of ACK jitter the
    # 2-packet buffer starves the flow (≈ 0.07, as on the kernel), which this would catch.
    from mpcc.reproduce.jiang2011.sim import packet_fig9_10_data

    d = packet_fig9_10_data(ns=(1,), buffers=(2,), duration_s=120.0, measure_from_s=30.0)
    for a in ut.ALGORITHMS:
        assert 0.6 < d["sim"][a][0][0] <= 1.0, (a, d["sim"][a])
