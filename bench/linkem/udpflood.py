"""UDP traffic for the forwarding-rate test: a paced sendmmsg(2) sender and a sink.

    udpflood.py send ADDR PORT RATE_MBPS SECS [BATCH]   → prints JSON {"sent": packets, "secs": s, ...}
    udpflood.py sink PORT SECS                          → holds a bound socket (no ICMP unreachable)

The sender writes 1472-byte UDP payloads (1500-byte IP packets) on a connected socket, BATCH
(default 32) per sendmmsg call, paced to RATE_MBPS of IP bytes (0 = as fast as it can), so
one process offers well over 1 Gb/s with a fraction of a core — iperf3 3.12 (one write(2)
per datagram, one thread) does not on this machine while linkem runs SCHED_FIFO beside it.
What was received is counted on the receiving interface (ip -s link), not here: the sink
only keeps the port open, so the receiver's socket queue overflowing costs nothing extra.
"""

from __future__ import annotations

import ctypes
import json
import socket
import sys
import time

PAYLOAD = 1472
IP_BYTES = PAYLOAD + 28


class IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


class MsgHdr(ctypes.Structure):
    _fields_ = [("name", ctypes.c_void_p), ("namelen", ctypes.c_uint32), ("iov", ctypes.POINTER(IoVec)),
                ("iovlen", ctypes.c_size_t), ("control", ctypes.c_void_p), ("controllen", ctypes.c_size_t),
                ("flags", ctypes.c_int)]


class MMsgHdr(ctypes.Structure):
    _fields_ = [("hdr", MsgHdr), ("len", ctypes.c_uint)]


def send(addr: str, port: int, rate_mbps: float, secs: float, batch: int = 32) -> dict:
    libc = ctypes.CDLL(None, use_errno=True)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    s.connect((addr, port))
    buf = ctypes.create_string_buffer((bytes(range(256)) * 6)[:PAYLOAD], PAYLOAD)
    iovs = (IoVec * batch)(*[IoVec(ctypes.cast(buf, ctypes.c_void_p), PAYLOAD) for _ in range(batch)])
    msgs = (MMsgHdr * batch)()
    for i in range(batch):
        msgs[i].hdr.iov = ctypes.pointer(iovs[i])
        msgs[i].hdr.iovlen = 1
    sendmmsg = libc.sendmmsg
    sendmmsg.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_uint, ctypes.c_int]
    fd = s.fileno()
    pps = rate_mbps * 1e6 / 8 / IP_BYTES if rate_mbps > 0 else 0.0
    sent = errors = calls = 0
    t0 = time.monotonic()
    end = t0 + secs
    while True:
        now = time.monotonic()
        if now >= end:
            break
        if pps:
            due = int((now - t0) * pps) - sent
            if due < batch:
                time.sleep((batch - due) / pps)
                continue
            n = min(due, batch)
        else:
            n = batch
        r = sendmmsg(fd, msgs, n, 0)
        calls += 1
        if r < 0:
            errors += 1  # ENOBUFS etc.: the datagrams were not sent
        else:
            sent += r
    secs_run = time.monotonic() - t0
    return {"sent": sent, "secs": secs_run, "offered_mbps": sent * IP_BYTES * 8 / secs_run / 1e6,
            "errors": errors, "calls": calls}


def sink(port: int, secs: float) -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", port))
    time.sleep(secs)


if __name__ == "__main__":
    if sys.argv[1] == "send":
        print(json.dumps(send(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]),
                              *(int(x) for x in sys.argv[6:7]))))
    else:
        sink(int(sys.argv[2]), float(sys.argv[3]))
