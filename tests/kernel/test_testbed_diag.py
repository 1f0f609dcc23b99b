"""The testbed's diagnostic counters read from ``ss -tin`` (python/mpcc/testbed/diag.py), on
hand-written lines in ss's format. Host only, deterministic."""

from __future__ import annotations

from mpcc.testbed import diag

# two sockets of the server namespace (group 0 on port 5201: its two subflows, client addresses
# 10.1.0.2 and 10.2.0.2) and a socket of another port, which no group owns
SERVER = """State Recv-Q Send-Q Local Address:Port Peer Address:Port Process
ESTAB 0 0 10.9.0.1:5201 10.1.0.2:40000
\t cubic wscale:7,7 rto:204 ato:40 segs_out:900 segs_in:1001 data_segs_in:1000 rcv_space:14480
ESTAB 0 0 10.9.0.1:5201 10.2.0.2:40001
\t cubic wscale:7,7 rto:204 ato:40 segs_out:50 segs_in:101 data_segs_in:100
ESTAB 0 0 10.9.0.1:6000 10.1.0.2:40002
\t cubic segs_out:7 data_segs_in:7
"""
ROUTES = {0: {"10.1.0.2": 0, "10.2.0.2": 1}}


def test_receiver_acks_are_summed_per_group_and_route():
    acks = diag._per_route(diag.parse_ss(SERVER), ROUTES, 5201, "local_port", "peer", diag._RECV)
    assert acks == {"0/0": {"segs_out": 900, "data_segs_in": 1000, "sockets": 1},
                    "0/1": {"segs_out": 50, "data_segs_in": 100, "sockets": 1}}


def test_sender_chrono_reads_the_peer_port():
    text = ("ESTAB 0 0 10.1.0.2:40000 10.9.0.1:5201\n\t cubic busy:1000ms rwnd_limited:10ms "
            "data_segs_out:1000 retrans:0/3 segs_out:1001\n")
    c = diag._per_route(diag.parse_ss(text), ROUTES, 5201, "peer_port", "local", diag._SEND)
    assert c["0/0"]["busy_ms"] == 1000 and c["0/0"]["rwnd_limited_ms"] == 10 and c["0/0"]["retrans"] == 3
    assert c["0/0"]["data_segs_out"] == 1000 and "segs_out" not in c["0/0"]
