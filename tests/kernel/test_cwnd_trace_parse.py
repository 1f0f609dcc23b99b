"""The window trace's reading of tcp:tcp_probe lines and its loss-event comparison
(python/mpcc/lab/cwnd_trace.py), on hand-written lines in the kernel's format
(include/trace/events/tcp.h, TP_printk of tcp_probe). Host only, deterministic."""

from __future__ import annotations

from mpcc.lab import cwnd_trace


def _line(cwnd: int, ssthresh: int, dport: int = 5201) -> str:
    return (f"  python3-812 [001] ..s1. 10.0: tcp_probe: family=AF_INET src=198.18.1.1:40000 "
            f"dest=198.18.1.2:{dport} mark=0x0 data_len=0 snd_nxt=0x1 snd_una=0x1 snd_cwnd={cwnd} "
            f"ssthresh={ssthresh} snd_wnd=64240 srtt=1000 rcv_wnd=65535 sock_cookie=1")


INF = 2147483647


def test_windows_keeps_changes_of_the_port_only():
    lines = [_line(10, INF), _line(10, INF), _line(12, INF), _line(99, 7, dport=22), "garbage", _line(12, 6)]
    assert cwnd_trace.windows(lines) == [(10, INF), (12, INF), (12, 6)]


def test_loss_events_are_the_falls_of_ssthresh_with_the_window_before():
    # tcp_current_ssthresh: 3/4 of the window outside a reduction ((16>>1)+(16>>2) = 12, …)
    trace = [(10, INF), (20, INF), (24, INF), (12, 12), (16, 12), (18, 13), (20, 15), (10, 10), (11, 10)]
    assert cwnd_trace.loss_events(trace) == [(24, 12), (20, 10)]


def test_compare_names_the_first_difference_and_needs_enough_events():
    a = {"cc": "reno", "loss_events": [(24, 12), (26, 13), (26, 13)]}
    b = {"cc": "mpcc_ewtcp", "loss_events": [(24, 12), (27, 13)]}
    assert cwnd_trace.compare(a, a, 3) is None
    assert "loss event 2" in cwnd_trace.compare(a, b, 2)
    assert "too short" in cwnd_trace.compare(a, b, 3)


def test_same_dynamics_needs_the_same_head_and_only_windows_reno_had():
    head = [(210, 105), (105, 52), (53, 26), (31, 15), (23, 11)]
    a, b = (22, 11), (21, 10)
    reno1 = {"cc": "reno", "loss_events": head + [b] * 10 + [a] * 5}
    reno2 = {"cc": "reno", "loss_events": head + [b] * 3 + [a] * 12}
    ewtcp = {"cc": "mpcc_ewtcp", "loss_events": head + [b] * 14 + [a]}
    assert cwnd_trace.same_dynamics(ewtcp, [reno1, reno2]) is None
    other = {"cc": "mpcc_ewtcp", "loss_events": head + [b] * 5 + [(24, 12)] + [a] * 5}
    assert "(24, 12)" in cwnd_trace.same_dynamics(other, [reno1, reno2])
    # both reno runs in cycle a, EWTCP in cycle b one packet below (6.1 guest, 2026-11-29): Reno's
    # own spread; a cycle two packets away is not
    in_a = [{"cc": "reno", "loss_events": head + [a] * 15}] * 2
    assert cwnd_trace.same_dynamics({"cc": "mpcc_ewtcp", "loss_events": head + [b] * 15}, in_a) is None
    lower = {"cc": "mpcc_ewtcp", "loss_events": head + [(20, 10)] * 15}
    assert "(20, 10)" in cwnd_trace.same_dynamics(lower, in_a)
    # slow-start exit one packet apart (HEAD_SLACK)
    one_ack = {"cc": "mpcc_ewtcp", "loss_events": [(209, 104), (104, 52)] + head[2:] + [a] * 10}
    assert cwnd_trace.same_dynamics(one_ack, [reno1, reno2]) is None
    late = {"cc": "mpcc_ewtcp", "loss_events": [(212, 106)] + head[1:] + [a] * 10}
    assert "first 5" in cwnd_trace.same_dynamics(late, [reno1, reno2])
    # a window within the slack but an ssthresh that is not Reno's halving
    not_half = {"cc": "mpcc_ewtcp", "loss_events": [(210, 104)] + head[1:] + [a] * 10}
    assert "Reno sets 105" in cwnd_trace.same_dynamics(not_half, [reno1, reno2])
    assert cwnd_trace.reno_ssthresh(3) == 2 and cwnd_trace.reno_ssthresh(23) == 11
