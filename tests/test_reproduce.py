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


def test_quick_budget_marks_every_shortened_cell_and_full_matches_the_paper():
    from mpcc.reproduce.peng2016.budget import FULL, QUICK, setups

    quick, full = setups(QUICK), setups(FULL)
    for t in (rp.T3, rp.T4, rp.T5):
        assert quick[t]["sim"]["shortened"] and quick[t]["testbed"]["shortened"]
        assert "paper: 20 runs" in quick[t]["testbed"]["text"]
        assert not full[t]["sim"]["shortened"] and not full[t]["testbed"]["shortened"]
    # Table V on the kernel: SP flows inside the run, convergence observed after they leave
    assert QUICK.table5.reference_s[1] <= QUICK.table5.sp_s[0] < QUICK.table5.sp_s[1] < QUICK.table5.duration_s
    # `make reproduce` on a fresh clone in about ten minutes: the quick kernel column (traffic of the
    # paper's six algorithms plus Reno in Fig. 3, and each run's overhead on a reused network) leaves
    # room for the set-up (≈ 1.5 min) and the fluid and sim columns
    assert QUICK.kernel_wall_s(6) <= 9 * 60 and FULL.kernel_seconds(6) > 3600
    # the traffic goes where the paper's claims are: Table III's order gets CIs over runs (≥ 3 runs:
    # a t-interval over 2 runs is 12.7 standard errors wide) and the most traffic per algorithm
    t3 = QUICK.table3.runs * QUICK.table3.duration_s
    assert QUICK.table3.runs >= 3
    assert t3 > max(QUICK.table4.runs * QUICK.table4.duration_s, QUICK.table5.runs * QUICK.table5.duration_s)


def test_shortened_cells_carry_a_dagger_and_the_table_says_why(tmp_path):
    from mpcc.reproduce.peng2016.budget import QUICK

    rep, _ = rp.reproduce(["fluid"], ("ewtcp",), budget=QUICK, out=None, progress=False)
    rp.engine_column(rep, "sim", {"table3": {"ewtcp": {"mp": (2.9, 0.01), "sp": (1.0, 0.01)}},
                                   "table4": {}, "table5": {}, "fig3": {}}, QUICK)
    md = rep.markdown()
    assert "| ewtcp | 2.75 ± 0.005 | 3 | 2.9 ± 0.01 † |" in md
    assert "sim: 5 runs × 100 s; paper: 20 runs × 100 s" in md


def test_report_has_a_figure_per_table(tmp_path):
    rep, errors = rp.reproduce(["fluid"], ("ewtcp", "balia"), out=tmp_path, progress=False)
    report = (tmp_path / "REPORT.md").read_text()
    for stem in ("table3", "table4", "table5", "fig3-oscillation"):
        assert f"](figures/{stem}.png)" in report
        assert (tmp_path / "figures" / f"{stem}.png").stat().st_size > 10_000
        assert (tmp_path / "figures" / f"{stem}.svg").exists()
    assert "window traces" not in report  # the fluid model has no window traces to show


def test_index_report_embeds_every_png(tmp_path):
    from mpcc.reproduce.index import write_index

    for name in ("fig3.png", "fig10.png", "summary.json"):
        (tmp_path / name).write_bytes(b"x")
    text = write_index(tmp_path, "T", "intro", {"fig3": "caption three"}).read_text()
    assert "![fig10](fig10.png)" in text and "![fig3](fig3.png)\n\ncaption three" in text
    assert "[`summary.json`](summary.json)" in text
    assert text.index("fig3.png") < text.index("fig10.png")  # figure numbers in order


def test_report_redraws_from_saved_files(tmp_path):
    from mpcc.reproduce.peng2016.report import redraw

    rep, _ = rp.reproduce(["fluid"], ("ewtcp",), out=tmp_path, progress=False)
    (tmp_path / "REPORT.md").unlink()
    text = redraw(tmp_path).read_text()
    assert "| ewtcp | 2.75 ± 0.005 | 3 |" in text and "](figures/table3.png)" in text


def test_report_has_one_health_line_per_kernel_cell(tmp_path):
    """Every kernel cell of a table carries its health (mpcc.testbed.health) in REPORT.md; a cell
    whose runs never became sound says UNSOUND and why."""
    from mpcc.reproduce.peng2016.budget import QUICK
    from mpcc.reproduce.peng2016.report import write_report
    from mpcc.testbed import health

    rep, _ = rp.reproduce(["fluid"], ("ewtcp", "balia"), out=None, progress=False)
    sound = health.aggregate([health.Health(bpf_repairs=0).judge().record()])
    bad = health.aggregate([health.Health(bpf_repairs=4, bpf_unrepaired=4).judge().record()] * 3, attempts=9)
    rp.engine_column(rep, "testbed", {"table3": {"ewtcp": {"mp": (2.9, 0.1), "sp": (1.0, 0.1)},
                                                  "balia": {"mp": (2.5, 0.1), "sp": (1.5, 0.1)}},
                                      "table4": {}, "table5": {}, "fig3": {},
                                      "health": {"table3": {"ewtcp": sound, "balia": bad}}}, QUICK)
    text = write_report(rep, tmp_path, QUICK).read_text()
    section = text.split("## " + rp.T3)[1].split("## ")[0]
    assert f"- ewtcp: {health.line(sound)}" in section
    assert "- balia: health: UNSOUND (3 runs, 6 re-run unsound;" in section
    assert "run 0: 4 BPF program skips not repaired" in section
    assert rep.to_dict()["columns"]["testbed"]["health"][rp.T3]["balia"]["sound"] is False
    md = rep.markdown()         # results.md: the same lines, once per table
    assert md.count(f"- ewtcp: {health.line(sound)}") == 1 and "- balia: health: UNSOUND" in md
