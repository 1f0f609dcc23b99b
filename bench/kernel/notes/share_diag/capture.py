"""TCP segments seen on a namespace's interfaces, with kernel timestamps (stdlib only): the one
capture loop of sniff.py, phase.py and drops.py, which run inside namespaces via
`ip netns exec python SCRIPT` (this directory is then on sys.path)."""

from __future__ import annotations

import socket
import struct
import time
from typing import Iterator, NamedTuple

SO_TIMESTAMPNS = 35
PACKET_OUTGOING = 4
ETH_P_ALL, ETH_P_IP = 0x0003, 0x0800


class Segment(NamedTuple):
    iface: str
    outgoing: bool       # sent by this namespace (PACKET_OUTGOING), else received
    t_ns: int            # kernel timestamp (SO_TIMESTAMPNS)
    src: str
    sport: int
    dport: int
    seq: int
    payload: int         # TCP payload bytes (0 = pure ACK)


def segments(secs: float, iface: str | None = None, rcvbuf: int = 32 << 20) -> Iterator[Segment]:
    """Every IPv4 TCP segment on ``iface`` (all interfaces if None), both directions, for ``secs``."""
    s = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(ETH_P_ALL))   # ALL: outgoing too
    if iface:
        s.bind((iface, 0))
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(0.2)
    try:
        end = time.monotonic() + secs
        while time.monotonic() < end:
            try:
                data, anc, _, addr = s.recvmsg(128, 64)     # DGRAM: data starts at the IP header
            except socket.timeout:
                continue
            if addr[1] != ETH_P_IP or len(data) < 40 or data[9] != 6:
                continue
            ts = next((struct.unpack("qq", d[:16]) for _, typ, d in anc if typ == SO_TIMESTAMPNS), None)
            if ts is None:
                continue
            ihl = (data[0] & 15) * 4
            total = struct.unpack("!H", data[2:4])[0]
            sport, dport, seq = struct.unpack("!HHI", data[ihl:ihl + 8])
            doff = (data[ihl + 12] >> 4) * 4
            yield Segment(addr[0], addr[2] == PACKET_OUTGOING, ts[0] * 1_000_000_000 + ts[1],
                          socket.inet_ntoa(data[12:16]), sport, dport, seq, total - ihl - doff)
    finally:
        global missed
        missed = struct.unpack("II", s.getsockopt(263, 6, 8))[1]   # SOL_PACKET, PACKET_STATISTICS: drops
        s.close()


missed = 0   # packets the socket dropped in the last segments() run (its buffer overflowed)
