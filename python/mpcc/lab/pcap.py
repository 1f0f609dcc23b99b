"""Headers-only packet capture to a pcap file, and its reader (stdlib only; no tcpdump on the target).

    ip netns exec NS python pcap.py IFACE SECS OUT [SNAPLEN] [MAX_BYTES]

captures every IPv4 packet on IFACE (both directions) for SECS into OUT (pcap, link type IPv4,
kernel timestamps in µs), keeping the first SNAPLEN bytes of each (default 96: the IP and TCP
headers with their options, no payload) and stopping at MAX_BYTES of file (default 64 MB). The
socket stays bound while the interface goes down and up (churn.py's link flaps): the kernel
unhooks it at NETDEV_DOWN (one ENETDOWN) and hooks it again at NETDEV_UP. A classic BPF filter
returns SNAPLEN, so the kernel queues only the headers. On exit it prints one JSON line:
packets written, packets the socket dropped, whether the size cap was reached.

``read(path)`` yields the TCP segments of such a file with the fields RTT questions need
(addresses, ports, seq/ack, flags, payload length, TSval/TSecr, SACK blocks) and an MPTCP DSS
option's data ACK and mapping (which connection-level bytes a segment carries)."""

from __future__ import annotations

import ctypes
import errno
import json
import socket
import struct
import sys
import time
from pathlib import Path
from typing import Iterator, NamedTuple

ETH_P_ALL = 0x0003
SO_ATTACH_FILTER, SO_TIMESTAMPNS = 26, 35
LINKTYPE_IPV4 = 228
PCAP_HEADER = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, LINKTYPE_IPV4)


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_SockFilter))]


def _snap_filter(s: socket.socket, snaplen: int):
    """A one-instruction classic BPF program, `ret #snaplen`: the kernel trims each packet."""
    prog = (_SockFilter * 1)(_SockFilter(0x06, 0, 0, snaplen))        # BPF_RET | BPF_K
    fprog = _SockFprog(1, prog)
    s.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, bytes(memoryview(fprog)))   # noqa: the pointer stays alive


def capture(iface: str, secs: float, out: Path, snaplen: int = 96, max_bytes: int = 64 << 20) -> dict:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(ETH_P_ALL))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 << 20)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    _snap_filter(s, snaplen)
    s.bind((iface, 0))
    s.settimeout(0.2)
    written, size, capped = 0, len(PCAP_HEADER), False
    with open(out, "wb") as f:
        f.write(PCAP_HEADER)
        end = time.monotonic() + secs
        while time.monotonic() < end and not capped:
            try:
                data, anc, _, addr = s.recvmsg(snaplen, 64)
            except socket.timeout:
                continue
            except OSError as e:          # ENETDOWN once per link-down: the hook returns at link-up
                if e.errno == errno.ENETDOWN:
                    continue
                raise
            if addr[1] != 0x0800:
                continue
            ts = next((struct.unpack("qq", d[:16]) for _, typ, d in anc if typ == SO_TIMESTAMPNS), (0, 0))
            orig = struct.unpack("!H", data[2:4])[0] if len(data) >= 4 else len(data)
            rec = struct.pack("<IIII", ts[0], ts[1] // 1000, len(data), orig) + data
            if size + len(rec) > max_bytes:
                capped = True
                break
            f.write(rec)
            size += len(rec)
            written += 1
    dropped = struct.unpack("II", s.getsockopt(263, 6, 8))[1]      # SOL_PACKET, PACKET_STATISTICS
    s.close()
    return {"iface": iface, "packets": written, "bytes": size, "socket_drops": dropped, "capped": capped}


class Seg(NamedTuple):
    t: float            # capture time, s (CLOCK_REALTIME)
    src: str
    dst: str
    sport: int
    dport: int
    seq: int
    ack: int
    flags: str          # S A F R P letters
    payload: int        # TCP payload bytes (from the IP total length)
    tsval: int | None
    tsecr: int | None
    sack: tuple         # ((left, right), ...) SACK blocks
    mptcp: tuple        # MPTCP option subtypes present (0 MP_CAPABLE, 1 MP_JOIN, 2 DSS, 3 ADD_ADDR, 4 REMOVE_ADDR...)
    dss: tuple = ()     # DSS (RFC 8684 §3.3): (data ACK or None, DSN or None, subflow seq, data-level length)


def _dss(body: bytes) -> tuple:
    """A DSS option's body after kind and length: (data ACK, DSN, relative subflow seq, length);
    a 4-octet DSN or data ACK is returned as such (the sender's low 32 bits)."""
    if len(body) < 2:
        return ()
    fl, i = body[1], 2
    ack = dsn = ssn = dlen = None
    if fl & 0x01:                                     # A: data ACK present, a: 8 octets
        n = 8 if fl & 0x02 else 4
        ack = int.from_bytes(body[i:i + n], "big")
        i += n
    if fl & 0x04 and len(body) >= i + (8 if fl & 0x08 else 4) + 6:   # M: mapping, m: 8-octet DSN
        n = 8 if fl & 0x08 else 4
        dsn = int.from_bytes(body[i:i + n], "big")
        ssn, dlen = struct.unpack("!IH", body[i + n:i + n + 6])
    return (ack, dsn, ssn, dlen)


def _options(opt: bytes):
    tsval = tsecr = None
    dss: tuple = ()
    sack, mp = [], []
    i = 0
    while i < len(opt):
        kind = opt[i]
        if kind == 0:
            break
        if kind == 1:
            i += 1
            continue
        if i + 1 >= len(opt) or opt[i + 1] < 2:
            break
        ln = opt[i + 1]
        body = opt[i + 2:i + ln]
        if kind == 8 and ln == 10 and len(body) == 8:
            tsval, tsecr = struct.unpack("!II", body)
        elif kind == 5:
            sack = [struct.unpack("!II", body[j:j + 8]) for j in range(0, len(body) - 7, 8)]
        elif kind == 30 and body:
            mp.append(body[0] >> 4)
            if body[0] >> 4 == 2:
                dss = _dss(body)
        i += ln
    return tsval, tsecr, tuple(sack), tuple(mp), dss


def read(path: Path) -> Iterator[Seg]:
    raw = Path(path).read_bytes()
    if raw[:4] != PCAP_HEADER[:4]:
        raise ValueError(f"{path}: not a pcap file written by pcap.py")
    i = len(PCAP_HEADER)
    while i + 16 <= len(raw):
        sec, usec, incl, _orig = struct.unpack("<IIII", raw[i:i + 16])
        d = raw[i + 16:i + 16 + incl]
        i += 16 + incl
        if len(d) < 20 or d[9] != 6:
            continue
        ihl = (d[0] & 15) * 4
        total = struct.unpack("!H", d[2:4])[0]
        if len(d) < ihl + 20:
            continue
        sport, dport, seq, ack, off, fl = struct.unpack("!HHIIBB", d[ihl:ihl + 14])
        doff = (off >> 4) * 4
        flags = "".join(c for b, c in ((2, "S"), (16, "A"), (1, "F"), (4, "R"), (8, "P")) if fl & b)
        tsval, tsecr, sack, mp, dss = _options(d[ihl + 20:ihl + doff])
        yield Seg(sec + usec / 1e6, socket.inet_ntoa(d[12:16]), socket.inet_ntoa(d[16:20]), sport, dport, seq, ack,
                  flags, total - ihl - doff, tsval, tsecr, sack, mp, dss)


def extract(src: Path, dst: Path, port: int, t_lo: float = 0.0, t_hi: float = float("inf")) -> int:
    """Copy the packets of one TCP port (either side) captured in [t_lo, t_hi] (CLOCK_REALTIME s)
    from src to a new pcap dst (to keep one subflow's story small enough to commit). Returns the count."""
    raw, out, n = Path(src).read_bytes(), [PCAP_HEADER], 0
    i = len(PCAP_HEADER)
    while i + 16 <= len(raw):
        sec, usec, incl, _ = struct.unpack("<IIII", raw[i:i + 16])
        rec, d = raw[i:i + 16 + incl], raw[i + 16:i + 16 + incl]
        i += 16 + incl
        if len(d) >= 24 and d[9] == 6 and t_lo <= sec + usec / 1e6 <= t_hi:
            ihl = (d[0] & 15) * 4
            if port in struct.unpack("!HH", d[ihl:ihl + 4]):
                out.append(rec)
                n += 1
    Path(dst).write_bytes(b"".join(out))
    return n


if __name__ == "__main__":
    a = sys.argv[1:]
    if len(a) < 3:
        print("pcap.py: usage: pcap.py IFACE SECS OUT [SNAPLEN] [MAX_BYTES]", file=sys.stderr)
        sys.exit(2)
    print(json.dumps(capture(a[0], float(a[1]), Path(a[2]), *(int(x) for x in a[3:5]))), flush=True)
