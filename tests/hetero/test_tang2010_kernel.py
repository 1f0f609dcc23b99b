"""Tang et al. Table I's kernel column without a kernel: the 1/10 scaling of the scenario files,
the budgets, and the side-by-side table (paper | sim | kernel) with a failed cell and with a
kernel column that cannot run ("unavailable")."""

from __future__ import annotations

import pytest

from mpcc import scenario
from mpcc.errors import EnvironmentProblem
from mpcc.reproduce.common import SCENARIO_DIR
from mpcc.reproduce.tang2010 import kernel, table1
from mpcc.reproduce.tang2010.paper import PAPER_TABLE1


def _load(name):
    return scenario.load(SCENARIO_DIR / "tang2010" / f"{name}.toml")


@pytest.mark.parametrize("name", list(PAPER_TABLE1))
def test_scaled_down_keeps_the_papers_ratios(name):
    """Rates ÷ 10 (capacity, buffer, noise, α₀) and RTT kept: α/B, B/BDP and q = B/C are the
    paper's; Algorithm 2's interval ÷ 10 and w ÷ 100."""
    s0 = _load(name)
    s = kernel.scaled_down(s0)
    (l0,), (l,) = s0.links, s.links
    assert l.capacity_mbps == l0.capacity_mbps / 10 == 10.0 and l.delay_ms == l0.delay_ms
    assert l.buffer_pkts == l0.buffer_pkts / 10 in (40, 8)
    f0, f = s0.groups[1].algorithm, s.groups[1].algorithm
    assert f.name == "fast" and f.alpha == f0.alpha / 10 == 5.0
    assert f.alpha / l.buffer_pkts == pytest.approx(f0.alpha / l0.buffer_pkts)
    bdp = lambda link: link.capacity_mbps * 1e6 / 8 / 1500 * 2 * link.delay_ms / 1e3  # noqa: E731
    assert l.buffer_pkts / bdp(l) == pytest.approx(l0.buffer_pkts / bdp(l0))
    assert s.groups[0].algorithm.name == "reno"
    mean = sum(b.rate_mbps * b.mean_on_s / (b.mean_on_s + b.mean_off_s) for b in s.background)
    assert mean == pytest.approx(0.1 * l.capacity_mbps)          # the paper's noise: 10 % of capacity
    if f0.adapt_interval_s > 0:
        assert f.adapt_interval_s == 12.0 and f.adapt_w == 1.25 and f.adapt_delta == f0.adapt_delta
    else:
        assert f.adapt_interval_s == 0.0


def test_budgets():
    """Quick: a few minutes of kernel time, long enough for ≥ 15 Algorithm 2 intervals (12 s at
    the kernel's scale), ≥ 5 before the window; full: the paper's 20 runs and 5400 s (from 1800 s) ÷ 10."""
    assert kernel.QUICK.kernel_seconds() <= 300
    assert kernel.QUICK.duration_s / 12.0 >= 15 and kernel.QUICK.warmup_s / 12.0 >= 5
    assert (kernel.FULL.runs, kernel.FULL.duration_s * 10, kernel.FULL.warmup_s * 10) == (20, 5400.0, 1800.0)


def _sim():
    rows = {n: {"reno": 4.0 + i, "fast": 2.0, "ratio": (4.0 + i) / 2.0} for i, n in enumerate(PAPER_TABLE1)}
    return {"runs": 20, "measure_s": [1800.0, 5400.0], "rows": rows}


def test_table_with_a_failed_kernel_cell(monkeypatch, tmp_path):
    """paper | sim | kernel; a failed cell says so in all three rows, the others are kept, and
    the quick budget's cells carry a †."""
    def fake_table1(budget, names=tuple(PAPER_TABLE1), out=None, progress=False, lock=None):
        res = {n: {"reno": 3.0, "fast": 1.5, "ratio": 2.0} for n in names}
        res["example1b-b80"] = {"failed": "group fast flow 0: never connected (forced)"}
        res["setup"] = {"budget": budget.name, "runs": budget.runs, "duration_s": budget.duration_s,
                        "warmup_s": budget.warmup_s, "scale": 10, "text": budget.text()}
        return res

    monkeypatch.setattr(kernel, "table1", fake_table1)
    rep, errors = table1.reproduce(_sim(), kernel.QUICK, tmp_path)
    assert rep.sources() == ["paper", "sim", "testbed"]
    row = rep.row(table1.TABLE, table1.Q_RATIO, table1.LABELS["example1a-b80"])
    assert row.cells["paper"].value == round(0.6 / 3.4, 2)
    assert row.cells["sim"].value == pytest.approx(5.0 / 2.0)
    assert rep.cell_text(row, "testbed") == "2 †"
    for q in (table1.Q_RATIO, table1.Q_RENO, table1.Q_FAST):
        bad = rep.row(table1.TABLE, q, table1.LABELS["example1b-b80"]).cells["testbed"]
        assert bad.value is None and "failed" in bad.text()
    assert len(errors) == 1 and "example1b-b80" in errors[0] and "never connected" in errors[0]
    assert (tmp_path / "results.md").read_text().count("|") > 20


def test_a_failed_side_by_side_run_fails_every_cell(monkeypatch):
    """The cells share one run: when it fails (after the engine's retry) each cell says so."""
    from mpcc.testbed import engine

    def boom(*a, **k):
        raise engine.RunFailed("group x flow 0: never connected (forced)")

    monkeypatch.setattr(kernel, "table1_together", boom)
    res = kernel.table1(kernel.QUICK)
    assert all("never connected" in res[n]["failed"] for n in PAPER_TABLE1)
    assert res["setup"]["budget"] == "quick"


def test_the_report_has_the_runs_health_line_and_a_failed_runs(monkeypatch, tmp_path):
    """Every configuration shares one run: results.md has its health in one line under Table I
    (the testbed's aggregate record), and a run that failed says its health was not measured."""
    from mpcc.testbed import engine, health

    run = {"bpf_repairs": 0, "bpf_unrepaired": 0, "implausible_windows": 0, "connect_retries": 1,
           "subflows_not_joined": 0, "linkem_tx_errors": 0, "linkem_late": 3, "linkem_releases": 5000}
    rec = health.aggregate([{**run, "sound": True, "reasons": []}])

    def together(budget, names=tuple(PAPER_TABLE1), out=None, progress=False, adapt_w=None):
        res = {n: {"reno": 3.0, "fast": 1.5, "ratio": 2.0} for n in names}
        res["setup"] = {"budget": budget.name, "runs": budget.runs, "duration_s": budget.duration_s,
                        "warmup_s": budget.warmup_s, "scale": 10, "text": budget.text()}
        res["health"] = rec
        return res

    monkeypatch.setattr(kernel, "table1_together", together)
    table1.reproduce(_sim(), kernel.QUICK, tmp_path)
    md = (tmp_path / "results.md").read_text()
    assert ("- every configuration (one run): health: sound (1 runs; bpf repairs 0 (unrepaired 0), implausible "
            "windows 0, connect retries 1, subflows not joined 0, linkem late 3/5000, tx errors 0)") in md

    def boom(*a, **k):
        raise engine.RunFailed("group x flow 0: never connected (forced)")

    monkeypatch.setattr(kernel, "table1_together", boom)
    table1.reproduce(_sim(), kernel.QUICK, tmp_path)
    assert "- every configuration (one run): health: not measured (the cell failed)" in (tmp_path / "results.md").read_text()


def test_kernel_unavailable_keeps_paper_and_sim(monkeypatch, tmp_path):
    def no_kernel(*a, **k):
        raise EnvironmentProblem("kernel testbed needs root (fix: run as root)")

    monkeypatch.setattr(kernel, "table1", no_kernel)
    rep, errors = table1.reproduce(_sim(), kernel.QUICK, tmp_path)
    row = rep.row(table1.TABLE, table1.Q_RATIO, table1.LABELS["example1a-b400"])
    assert rep.cell_text(row, "testbed") == "unavailable"
    assert row.cells["sim"].value == pytest.approx(2.0)
    assert errors == ["kernel: kernel testbed needs root (fix: run as root)"]
    assert "unavailable — kernel testbed needs root" in (tmp_path / "results.md").read_text()


def test_side_by_side_keeps_the_configurations_apart():
    """All four configurations in one scenario: each on its own link, its Reno, FAST and 10 noise
    sources on that link only, parameters as in its own scaled file."""
    names = list(PAPER_TABLE1)
    s = kernel.side_by_side(names)
    assert [l.name for l in s.links] == [f"{n}.bottleneck" for n in names]
    for n in names:
        alone = kernel.scaled_down(_load(n))
        link = next(l for l in s.links if l.name == f"{n}.bottleneck")
        assert (link.capacity_mbps, link.buffer_pkts) == (alone.links[0].capacity_mbps, alone.links[0].buffer_pkts)
        mine = [g for g in s.groups if g.name.startswith(f"{n}.")]
        assert [g.name for g in mine] == [f"{n}.reno", f"{n}.fast"]
        assert all(g.paths == ((link.name,),) for g in mine)
        assert mine[1].algorithm.params == alone.groups[1].algorithm.params
        assert sum(b.path == (link.name,) for b in s.background) == 10
    assert len(s.background) == 40


def test_kernel_lock_is_held_during_the_run_and_released(monkeypatch, tmp_path):
    """--kernel-lock: the side-by-side run holds an exclusive flock on the file (another
    non-blocking flock fails meanwhile); afterwards it can be taken again."""
    import fcntl

    lock = tmp_path / "bench.lock"
    seen = []

    def probe(budget, names=tuple(PAPER_TABLE1), out=None, progress=False):
        with open(lock, "a") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                seen.append("free")
            except BlockingIOError:
                seen.append("held")
        return {"setup": {}}

    monkeypatch.setattr(kernel, "table1_together", probe)
    kernel.table1(kernel.QUICK, lock=lock)
    kernel.table1(kernel.QUICK)
    assert seen == ["held", "free"]
    with open(lock, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
