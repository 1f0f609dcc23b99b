"""bench/kernel/notes/dsn_trace.py's ftrace reader (`wakes`, bench/kernel/RESULTS.md §37): which
kernel path woke a writer blocked in sendto, read from a trace in ftrace's own text format."""

import json
import sys
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench" / "kernel" / "notes"))

import dsn_trace as dt  # noqa: E402

# Writer 100 (MPTCP: never tcp_sendmsg_locked) blocks in a 64-KB sendto twice: woken first by
# sk_stream_write_space right after a data-ACK jump, then by its send timeout; writer 200 is a
# plain TCP socket's; task 300 never writes. A stack line belongs to the wake-up on its CPU.
TRACE = """\
# tracer: nop
#
          python-100     [000] .....   10.000000: sys_sendto(fd: 4, buff: 0x7f15, len: 0x10000, flags: 0, addr: 0, addr_len: 0)
          python-200     [001] .....   10.000100: sys_sendto(fd: 5, buff: 0x7f16, len: 0x10000, flags: 0, addr: 0, addr_len: 0)
          python-200     [001] .....   10.000150: tcp_sendmsg_locked: skb_addr=0x1 skb_len=0 msg_left=65536 size_goal=65160
          <idle>-0       [001] ..s2.   10.050000: ack_update_msk: data_ack=5000 old_snd_una=1000 new_snd_una=525000 new_wnd_end=9 msk_wnd_end=9
          <idle>-0       [001] d.s4.   10.050010: sched_waking: comm=python pid=100 prio=120 target_cpu=000
          <idle>-0       [000] d.s4.   10.050011: sched_waking: comm=python pid=300 prio=120 target_cpu=000
          <idle>-0       [001] d.s4.   10.050012: <stack trace>
 => trace_event_raw_event_sched_wakeup_template
 => __traceiter_sched_waking
 => try_to_wake_up
 => __wake_up_common
 => sk_stream_write_space
 => tcp_check_space
 => tcp_rcv_established
          <idle>-0       [000] d.s4.   10.050013: <stack trace>
 => try_to_wake_up
 => sock_def_readable
          python-100     [000] .....   10.060000: sys_sendto -> 0x10000
          python-100     [000] .....   10.060100: sys_sendto(fd: 4, buff: 0x7f15, len: 0x10000, flags: 0, addr: 0, addr_len: 0)
          <idle>-0       [000] d.s4.   10.264000: sched_waking: comm=python pid=100 prio=120 target_cpu=000
          <idle>-0       [000] d.s4.   10.264001: <stack trace>
 => try_to_wake_up
 => call_timer_fn
 => __run_timers
          python-100     [000] .....   10.264100: sys_sendto -> 0xfffffffffffffff5
          <idle>-0       [001] d.s4.   10.300000: sched_waking: comm=python pid=200 prio=120 target_cpu=001
          <idle>-0       [001] d.s4.   10.300001: <stack trace>
 => sk_stream_write_space
          python-200     [001] .....   10.300100: sys_sendto -> 0x10000
"""


def test_wake_ups_of_mptcp_writers_are_named_by_the_waker(tmp_path, capsys):
    (tmp_path / "wake.trace").write_text(TRACE)
    writers, events = dt.parse_trace(tmp_path / "wake.trace")
    assert writers == {100}                      # 200 is a plain TCP writer, 300 never wrote
    wakes = [(tid, dt.waker(stack)) for _, kind, tid, stack in events if kind == "wake"]
    assert wakes == [(100, "sk_stream_write_space"), (300, "data ready"), (100, "send timeout"),
                     (200, "sk_stream_write_space")]
    dt.wakes(SimpleNamespace(dir=tmp_path, path=1, gap=0.1))
    out = json.loads(capsys.readouterr().out)
    assert out["writers"] == 1 and out["sendto"] == 2
    assert out["returns"] == {"64 KB": 1, "error": 1}
    assert {k: v["n"] for k, v in out["wakers"].items()} == {"sk_stream_write_space": 1, "send timeout": 1}
    assert out["wakers"]["sk_stream_write_space"]["within_1ms_of_ack_advance"] == 1
    assert out["wakers"]["send timeout"]["in_sendto_median_s"] == 0.2039
    assert out["sk_stream_write_space_after_data_ack_advance_kb"]["median"] == round(524000 / 1024, 1)
    assert out["sk_stream_write_space_callers"] == {"tcp_check_space < tcp_rcv_established": 1}


def test_a_wake_up_without_a_recorded_stack_is_named_so():
    assert dt.waker([]) == "no stack recorded"
    assert dt.waker(["try_to_wake_up", "some_new_path", "x"]).startswith("other: some_new_path < x")
