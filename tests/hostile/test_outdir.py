"""``--out`` (mpcc.outdir): results appear only complete; an interruption keeps completed runs
(marked partial) where the command promises it, and nothing half-written otherwise."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

import fuzzlib as fz
from mpcc import outdir
from mpcc.errors import MpccError

REPO = Path(__file__).resolve().parents[2]
TABLE3 = str(REPO / "scenarios" / "peng2016" / "table3.toml")


def test_staged_publishes_only_on_success(tmp_path):
    out = tmp_path / "res"
    with outdir.staged(out) as tmp:
        (tmp / "a.txt").write_text("a")
    assert (out / "a.txt").read_text() == "a"
    with pytest.raises(RuntimeError):
        with outdir.staged(out) as tmp:
            (tmp / "b.txt").write_text("b")
            raise RuntimeError("fails partway")
    assert sorted(p.name for p in out.iterdir()) == ["a.txt"]          # b.txt never appeared
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".res.tmp-")]   # temp dir removed


def test_published_results_have_the_mode_the_umask_gives(tmp_path):
    """A results directory (and a single staged file) is as readable as one made by mkdir/open
    under the caller's umask, not the 0700/0600 of its temporary name: `sudo mpcc testbed --out D`
    left D unreadable to the user."""
    import os
    old = os.umask(0o022)
    try:
        with outdir.staged(tmp_path / "res") as tmp:
            (tmp / "a.txt").write_text("a")
        with outdir.staged_file(tmp_path / "t.parquet", "--parquet") as f:
            f.write_bytes(b"x")
    finally:
        os.umask(old)
    assert (tmp_path / "res").stat().st_mode & 0o777 == 0o755
    assert (tmp_path / "res" / "a.txt").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "t.parquet").stat().st_mode & 0o777 == 0o644


def test_write_failure_is_one_line(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(MpccError) as e:
        with outdir.staged(blocker / "sub"):
            pass
    assert "--out" in str(e.value) and "\n" not in str(e.value) and "(fix:" in str(e.value)


def test_mtc_figures_interrupted_leaves_nothing(tmp_path, monkeypatch):
    from mpcc.reproduce import jiang2011

    def fake_reproduce(out_dir, **kw):   # writes one figure, then Ctrl-C
        Path(out_dir, "fig3.png").write_bytes(b"png")
        raise KeyboardInterrupt

    monkeypatch.setattr(jiang2011, "reproduce", fake_reproduce)
    o = fz.run_cli(["mtc", "figures", "--out", str(tmp_path / "figs")])
    assert o.code == 130
    assert [l for l in o.err.splitlines() if l.strip()] == ["mpcc: interrupted (no result was written)"]
    assert not (tmp_path / "figs").exists()
    assert not list(tmp_path.iterdir())


def test_sim_runs_interrupted_keeps_completed_runs(tmp_path, monkeypatch):
    from mpcc.sim import parallel

    real = parallel._one
    lock, calls = threading.Lock(), [0]

    def one(scenario, seed, *a):
        with lock:
            calls[0] += 1
            n = calls[0]
        if n > 3:
            raise KeyboardInterrupt
        return real(scenario, seed, *a)

    monkeypatch.setattr(parallel, "_one", one)
    out = tmp_path / "runs"
    o = fz.run_cli(["sim", "-q", "--runs", "40", "--sample-interval", "0", "--out", str(out), TABLE3])
    assert o.code == 130, o.err
    marker = json.loads((out / "PARTIAL.json").read_text())
    result = json.loads((out / "result.json").read_text())
    assert marker["partial"] and marker["requested"] == 40 and 1 <= marker["completed"] <= 3
    assert result["partial"] is True and result["runs_completed"] == marker["completed"]
    assert len(result.get("seeds", [0])) == marker["completed"]
    lines = [l for l in o.err.splitlines() if l.strip()]      # one line, saying what was kept
    assert lines == [f"mpcc: interrupted; kept the {marker['completed']} completed of 40 runs in {out}/ "
                     f"(marked partial: PARTIAL.json)"], o.err


def test_complete_result_replaces_partial_marker(tmp_path):
    out = tmp_path / "res"
    with outdir.staged(out) as tmp:
        outdir.mark_partial(tmp, 1, 2, "interrupted")
    assert (out / outdir.PARTIAL_MARKER).exists()
    with outdir.staged(out) as tmp:
        (tmp / "result.json").write_text("{}")
    assert not (out / outdir.PARTIAL_MARKER).exists()


def _killed_writer(out: Path, single_file: bool) -> None:
    """A child that stages ``out`` (a directory, or one file) and is killed with SIGKILL inside."""
    import os
    import signal
    if single_file:
        with outdir.staged_file(out, "--parquet") as f:
            f.write_bytes(b"half")
            os.kill(os.getpid(), signal.SIGKILL)
    with outdir.staged(out) as tmp:
        (tmp / "run1.json").write_text("{}")
        os.kill(os.getpid(), signal.SIGKILL)


@pytest.mark.parametrize("single_file", [False, True], ids=["dir", "file"])
def test_the_next_command_removes_a_sigkilled_commands_staging(tmp_path, single_file):
    """SIGKILL leaves the staging name (nothing can remove it then); the next command writing next
    to the same --out removes it, and never touches the staging name of a live command."""
    import multiprocessing
    import os
    import signal
    out = tmp_path / ("t.parquet" if single_file else "res")
    ctx = multiprocessing.get_context("fork")
    child = ctx.Process(target=_killed_writer, args=(out, single_file))
    child.start()
    child.join(30)
    assert child.exitcode == -signal.SIGKILL
    left = [p for p in tmp_path.iterdir() if p.name.startswith(f".{out.name}.tmp-")]
    assert len(left) == 1 and left[0].name.startswith(f".{out.name}.tmp-{child.pid}-")
    live = tmp_path / f".{out.name}.tmp-{os.getpid()}-live"      # this (live) process's name
    live.mkdir()
    if single_file:
        with outdir.staged_file(out, "--parquet") as f:
            f.write_bytes(b"whole")
        assert out.read_bytes() == b"whole"
    else:
        with outdir.staged(out) as tmp:
            (tmp / "a.txt").write_text("a")
        assert sorted(p.name for p in out.iterdir()) == ["a.txt"]
    names = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(f".{out.name}.tmp-"))
    assert names == [live.name]
