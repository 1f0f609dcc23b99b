"""The churn soak's capture without root: pcap.py's reader, extract and MPTCP DSS option."""

from __future__ import annotations

import socket
import struct
from pathlib import Path

import pytest

from mpcc.lab import pcap

CLI, SRV = "198.18.3.1", "198.18.3.2"


def packet(src, dst, sport, dport, seq, ack, payload, tsval, tsecr, sack=(), extra=b""):
    opts = b"\x01\x01\x08\x0a" + struct.pack("!II", tsval, tsecr) + extra
    if sack:
        opts += b"\x01\x01" + bytes([5, 2 + 8 * len(sack)]) + b"".join(struct.pack("!II", a, b) for a, b in sack)
    doff = 20 + len(opts)
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, (doff // 4) << 4, 0x10, 65535, 0, 0) + opts
    total = 20 + doff + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, total, 0, 0, 64, 6, 0, socket.inet_aton(src), socket.inet_aton(dst))
    return ip + tcp              # headers only, as the capture keeps them (the payload is not stored)


def write(path: Path, recs):
    body = b"".join(struct.pack("<IIII", int(t), int(round((t % 1) * 1e6)), len(d), len(d)) + d for t, d in recs)
    path.write_bytes(pcap.PCAP_HEADER + body)


def test_reader_gets_timestamps_sack_and_payload_length(tmp_path):
    f = tmp_path / "x.pcap"
    write(f, [(100.25, packet(CLI, SRV, 40000, 5301, 1000, 7, 1424, 111, 222)),
              (100.5, packet(SRV, CLI, 5301, 40000, 7, 2424, 0, 333, 111, sack=((3000, 4000),)))])
    a, b = list(pcap.read(f))
    assert (a.src, a.sport, a.seq, a.payload, a.tsval, a.tsecr) == (CLI, 40000, 1000, 1424, 111, 222)
    assert a.t == pytest.approx(100.25)
    assert (b.ack, b.payload, b.tsecr, b.sack) == (2424, 0, 111, ((3000, 4000),))
    assert pcap.extract(f, tmp_path / "y.pcap", 5301, 100.4, 101) == 1
    assert [s.ack for s in pcap.read(tmp_path / "y.pcap")] == [2424]


def test_dss_mapping_and_data_ack(tmp_path):
    """RFC 8684 §3.3.1: flags A (data ACK, 4 octets), M and m (mapping with an 8-octet DSN), no checksum;
    Linux sends this on data segments. 22 bytes: kind, length, subtype, flags, 4 + 8 + 4 + 2 (two NOPs
    before it keep the options a multiple of 4 octets)."""
    dsn = 7617119205120535640
    dss = b"\x01\x01" + bytes([30, 22, 2 << 4, 0x01 | 0x04 | 0x08]) + struct.pack("!IQIH", 1558475247, dsn, 81, 7968)
    f = tmp_path / "d.pcap"
    write(f, [(1.0, packet(CLI, SRV, 40000, 5301, 2761099227, 9, 7120, 5, 6, extra=dss))])
    (seg,) = pcap.read(f)
    assert seg.dss == (1558475247, dsn, 81, 7968) and seg.mptcp == (2,) and seg.tsval == 5
