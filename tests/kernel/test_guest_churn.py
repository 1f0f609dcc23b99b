"""python/mpcc/lab/guest_churn.py (churn soak in a fresh qemu guest): the parts that need no root, qemu
or kernel package — flags, the guest's command line, the warning traces taken from a dmesg, the
huge-window count and the result entry. The guests themselves are recorded in
bench/kernel/guest_churn.json (CHURN.md §8)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from mpcc.lab import guest_churn


def test_defaults_and_kernels_list():
    a = guest_churn.parse_args(["balia", "lia", "--kernels", "6.12, 6.1"])
    assert a.algorithms == ["balia", "lia"] and a.kernels == ["6.12", "6.1"]
    assert (a.conns, a.secs, a.rate, a.pattern) == (20, 120.0, 20.0, "alternate")


@pytest.mark.parametrize("argv, words", [
    (["balia", "--kernels", "6.18"], ["--kernels", "'6.18'", "churn.py"]),
    (["balia", "--secs", "600"], ["--secs 600", "720 s", "fix: --secs ≤ 420"]),
    (["balia", "--conns", "0"], ["--conns"]),
    (["balia", "--pattern", "flood"], ["--pattern", "'flood'", "alternate"]),
    (["balia", "--package", "linux-image-6.1.0-56-amd64"], ["--package", "SERIES=NAME"]),
])
def test_bad_flags_are_one_line_exit_2(argv, words, capsys):
    assert guest_churn.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("guest_churn: error: ")
    for w in words:
        assert w in err


def test_the_boot_time_limit_covers_the_run_and_stays_within_one_lock_hold():
    assert guest_churn.timeout_for(120) == 120 + guest_churn.BOOT_ALLOWANCE_S
    assert guest_churn.timeout_for(120.2) == 121 + guest_churn.BOOT_ALLOWANCE_S
    assert guest_churn.timeout_for(guest_churn.MAX_HOLD_S - guest_churn.BOOT_ALLOWANCE_S) == guest_churn.MAX_HOLD_S
    guest_churn.parse_args(["balia", "--secs", str(guest_churn.MAX_HOLD_S - guest_churn.BOOT_ALLOWANCE_S)])


def test_guest_command_survives_the_init_shell_line():
    """init joins the command with spaces into a shell line: an algorithm with parameters must
    come back as one argument."""
    a = guest_churn.parse_args(["olia(per_ack=1)", "--conns", "7", "--secs", "30", "--rate", "2.5", "--trace"])
    cmd = guest_churn.guest_cmd(a, "olia(per_ack=1)", python="/x/.venv/bin/python")
    argv = shlex.split(" ".join(cmd))
    assert argv[:3] == ["/x/.venv/bin/python", "-m", "mpcc.lab.guest_churn"]
    assert argv[3:5] == ["inside", "--out"] and argv[-1] == "olia(per_ack=1)"
    for flag, val in (("--conns", "7"), ("--secs", "30"), ("--rate", "2.5")):
        assert argv[argv.index(flag) + 1] == val
    assert "--trace" in argv and "--pm" not in argv       # the in-kernel PM: churn.py's default
    a = guest_churn.parse_args(["balia", "--pm", "rejoin"])
    argv = shlex.split(" ".join(guest_churn.guest_cmd(a, "balia")))
    assert argv[argv.index("--pm") + 1] == "rejoin"


def test_the_churn_modules_come_from_the_same_package_as_the_checks():
    assert guest_churn.CHURN_MODULES[:len(guest_churn.guestvm.GUEST_MODULES)] == guest_churn.guestvm.GUEST_MODULES
    assert {"sch_tbf", "bridge"} <= set(guest_churn.CHURN_MODULES)


# a real report's shape (6.12's tcp_snd_cwnd_set WARN_ON_ONCE, abridged), between ordinary records
DMESG = """[    1.0] Linux version 6.12.117+deb12-amd64
[   60.1] b3: port 1(m3c) entered disabled state
[   61.2] ------------[ cut here ]------------
[   61.2] WARNING: CPU: 1 PID: 0 at include/net/tcp.h:1370 tcp_undo_cwnd_reduction+0x8f/0xa0
[   61.2] Modules linked in: sch_tbf bridge stp llc veth
[   61.2] CPU: 1 UID: 0 PID: 0 Comm: swapper/1 Not tainted 6.12.117+deb12-amd64 #1
[   61.2] RIP: 0010:tcp_undo_cwnd_reduction+0x8f/0xa0
[   61.2] Call Trace:
[   61.2]  <IRQ>
[   61.2]  tcp_try_undo_recovery+0x3a/0x150
[   61.2]  tcp_ack+0xc7b/0x1340
[   61.2] ---[ end trace 0000000000000000 ]---
[   61.3] b3: port 1(m3c) entered blocking state
[   70.0] refcount_t: underflow; use-after-free.
[   70.0] RIP: 0010:refcount_warn_saturate+0x12/0x20""".splitlines()


def test_warning_traces_keep_each_report_whole_and_nothing_else():
    traces = guest_churn.warning_traces(DMESG)
    assert len(traces) == 2
    first = traces[0]
    assert first[0].endswith("tcp_undo_cwnd_reduction+0x8f/0xa0") and "WARNING:" in first[0]
    assert first[-1].endswith("---[ end trace 0000000000000000 ]---")
    assert len(first) == 9 and any("tcp_try_undo_recovery" in ln for ln in first)
    assert not any("port 1(m3c)" in ln for tr in traces for ln in tr)
    # a report without the end marker runs to the log's end
    assert traces[1] == DMESG[-2:]
    assert guest_churn.warning_traces(DMESG[:2]) == []
    assert len(guest_churn.warning_traces(DMESG[2:12], max_lines=3)[0]) == 3


def _jump(**kw):
    rec = {"kind": "between callbacks", "cwnd_before": 110, "cwnd_after": 112, "ssthresh": 82, "acked": 1}
    return {**rec, **kw}


def test_huge_windows_count_the_stale_return_value_kind():
    jumps = {"count": 3, "repaired": 1, "unrepaired": 2, "last": [
        _jump(cwnd_after=0x81104110),
        _jump(kind="ssthresh above TCP_INFINITE_SSTHRESH repaired (acked: the repaired value)",
              ssthresh=0x81104110, acked=7),
        _jump(cwnd_before=1, cwnd_after=103)]}
    h = guest_churn.huge_windows(jumps)
    assert h == {"records": 3, "huge": 2, "values": ["0x81104110"]}
    assert guest_churn.huge_windows(None) == {"records": 0, "huge": 0, "values": []}
    assert guest_churn.huge_windows({"last": [_jump(cwnd_after=guest_churn.HUGE)]})["huge"] == 0
    # a slow-start record of a socket whose ssthresh is TCP_INFINITE_SSTHRESH (seen: olia in the 6.12
    # guest, 105 -> 4046) is not the stale kind; a window that large would be
    slow = _jump(kind="slow start", cwnd_before=105, cwnd_after=4046, ssthresh=0x7FFFFFFF, acked=0)
    assert guest_churn.huge_windows({"last": [slow]})["huge"] == 0
    assert guest_churn.huge_windows({"last": [{**slow, "cwnd_after": 0x7FFFFFFF}]})["values"] == ["0x7fffffff"]


def test_assemble_puts_the_verdicts_first_and_keeps_the_guest_result():
    guest = {"kernel": "6.12.117+deb12-amd64", "taint_at_start": 0, "taint_end": 512, "cpu_busy": 0.61,
             "warning_traces": guest_churn.warning_traces(DMESG), "dmesg": DMESG,
             "churn": {"algorithm": "balia", "conns": 20, "secs": 120.0, "rate_mbit": 20.0, "pattern": "alternate",
                       "kernel_log": {"records": 900, "lost": 0, "warnings": [DMESG[3]], "new_taint": 512},
                       "cwnd_jumps": {"count": 1, "repaired": 0, "unrepaired": 1, "last": [_jump(cwnd_after=0x81104110)]},
                       "stalled_windows": [{"conn": 3, "window": 5}], "windows": 240, "total_mbit_s": 30.5,
                       "events": {"link_down": 60}, "leaked_maps": [], "struct_ops_left": False, "netns_left": [],
                       "client": {"errors": []}, "pass": False}}
    e = guest_churn.assemble(guest, "6.12", "linux-image-6.12.117+deb12-amd64", "tcg", (1795000000, 0.42),
                             1795000000 + 301.26)
    assert e["lock_taken_utc"] == "2026-11-18 11:06:40" and e["host_load_1min"] == 0.42
    assert e["lock_held_s"] == 301.3
    assert (e["taint_at_boot"], e["taint_end"], e["new_taint"]) == (0, 512, 512)
    assert e["warnings"] == [DMESG[3]] and len(e["warning_traces"]) == 2
    assert e["cwnd_jumps"] == {"count": 1, "repaired": 0, "unrepaired": 1}
    assert e["huge_windows"]["values"] == ["0x81104110"]
    assert (e["stalled_windows"], e["windows"], e["pass"]) == (1, 240, False)
    assert e["guest"]["dmesg"] == DMESG


def test_record_appends(tmp_path):
    p = tmp_path / "g.json"
    guest_churn.record([{"a": 1}], p)
    guest_churn.record([{"a": 2}], p)
    assert guest_churn.json.loads(p.read_text())["runs"] == [{"a": 1}, {"a": 2}]
