"""The minimal reproducer of bench/kernel/notes/KERNEL_BUG.md (bench/kernel/notes/ssbug/run.sh; root).

Its bad-input and not-root paths must be one line and exit code 2 and leave nothing behind; a
short real run must register the Reno clone, see its ssthresh() run at the tbf's losses, report
the counters, and remove its namespaces (the struct_ops itself may linger while sockets free)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

RUN = Path(__file__).resolve().parents[2] / "bench" / "kernel" / "notes" / "ssbug" / "run.sh"
ROOT = os.geteuid() == 0


def _netns() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return {l.split()[0] for l in out.splitlines() if l.strip()}


@pytest.mark.parametrize("args, names", [(["--conns", "x"], "--conns"), (["--secs", "0"], "--secs"),
                                         (["--cpu", "a"], "--cpu"), (["--bogus"], "--bogus")])
def test_bad_argument_is_one_line_and_exit_2(args, names):
    r = subprocess.run([str(RUN), *args], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2, r
    assert r.stdout == "" and len(r.stderr.strip().splitlines()) == 1 and names in r.stderr, r.stderr


@pytest.mark.skipif(not ROOT or shutil.which("setpriv") is None, reason="needs root to drop to nobody")
def test_not_root_is_one_line_and_exit_2():
    before = _netns()
    r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", str(RUN)],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2, r
    assert len(r.stderr.strip().splitlines()) == 1 and "root" in r.stderr, r.stderr
    assert _netns() == before


@pytest.mark.skipif(not ROOT or shutil.which("clang") is None or shutil.which("bpftool") is None,
                    reason="needs root, clang and bpftool")
@pytest.mark.kernel
def test_short_run_counts_and_cleans_up(tmp_path):
    """False-failure rate: deterministic identities of the counters and what is left; ss_calls > 0
    needs one loss among 8 connections into a 30 kB queue in 4 s (certain). False-failure rate 0
    on a stock kernel."""
    listed = subprocess.run(["bpftool", "struct_ops", "list"], capture_output=True, text=True).stdout
    if "ssbug_reno" in listed:
        pytest.skip("ssbug_reno still registered by an earlier run (lingers while its sockets free)")
    out = tmp_path / "r.jsonl"
    r = subprocess.run([str(RUN), "--conns", "8", "--secs", "4", "--json", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    res = json.loads(out.read_text().splitlines()[-1])
    # 8 connections into a 20 Mbit/s tbf with a 30 kB queue lose packets: ssthresh() must run
    assert res["ss_calls"] > 0, res
    # every callback run is counted once, in exactly one of the context classes
    assert res["cb_runs"] == res["ctx_own"] + res["ctx_idle"] + res["ctx_tgid1"] + res["ctx_other"], res
    assert res["cb_runs"] >= res["ss_calls"] + res["undo_calls"], res
    assert not any(n.startswith("ssbug") for n in _netns())


@pytest.mark.skipif(not ROOT or shutil.which("clang") is None or shutil.which("bpftool") is None,
                    reason="needs root, clang and bpftool")
@pytest.mark.kernel
def test_ctrl_c_removes_namespaces_and_struct_ops():
    """False-failure rate: deterministic (what exists afterwards). 0."""
    listed = subprocess.run(["bpftool", "struct_ops", "list"], capture_output=True, text=True).stdout
    if "ssbug_reno" in listed:
        pytest.skip("ssbug_reno still registered by an earlier run (lingers while its sockets free)")
    # as from a terminal: SIGINT not ignored (a background job of a script would ignore it)
    p = subprocess.Popen([str(RUN), "--conns", "4", "--secs", "60"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 30
    while time.time() < deadline and not any(n.startswith("ssbug") for n in _netns()):
        time.sleep(0.2)
    assert any(n.startswith("ssbug") for n in _netns()), "run.sh did not get as far as its namespaces"
    time.sleep(2)                     # traffic under way
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 130, err[-2000:]
    assert not any(n.startswith("ssbug") for n in _netns())
    # unregistered at once; the map itself may stay listed while the killed sockets free
    deadline = time.time() + 90
    while time.time() < deadline:
        listed = subprocess.run(["bpftool", "struct_ops", "list"], capture_output=True, text=True).stdout
        if "ssbug_reno" not in listed:
            break
        time.sleep(1)
    assert "ssbug_reno" not in listed, listed
