"""The churn diagnosis tools without root: pcap.py's reader and extract, pcap_rtt.py's choice of RTT
sample (Linux's tcp_ack_update_rtt: Karn, then the TSecr), stall_holders.py's holder."""

from __future__ import annotations

import json
import socket
import struct
import sys
from pathlib import Path

import pytest

from mpcc.lab import pcap
from mpcc.lab import pcap_rtt
from mpcc.lab import stall_holders

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


def test_karn_then_timestamp_sample():
    """Two segments sent at t=0 (TSval 100) just before the link went down; the first is retransmitted
    at t=10 (TSval 110); the receiver, which already had both, acks them echoing TSval 100. Karn
    forbids a sequence sample (retransmitted data is acknowledged), so Linux takes TSecr's: 10.01 s.
    Then a fresh segment (t=11, TSval 111) acked at 11.05: a sequence sample of 0.05 s."""
    flow = {"data": [(0.0, 1000, 2000, 100), (0.0, 2000, 3000, 100), (10.0, 1000, 2000, 110), (11.0, 3000, 4000, 111)],
            "acks": [(10.01, 3000, 100, ()), (11.05, 4000, 111, ()), (11.06, 4000, 111, ())]}
    s = pcap_rtt.samples(flow)
    assert [x["kind"] for x in s] == ["tsecr", "seq"]        # the duplicate ACK at 11.06 acks nothing new
    assert s[0]["rtt"] == pytest.approx(10.01) and s[0]["retrans_acked"] and s[0]["acked"] == 2000
    assert s[1]["rtt"] == pytest.approx(0.05) and not s[1]["retrans_acked"]


def test_holder_is_the_subflow_with_unacked_data_and_the_largest_rto():
    def sf(path, rto, unacked, backoff=0, state="ESTAB"):
        return {"local": f"198.18.{path}.1:{1000 + path}", "state": state, "rto": str(rto),
                "unacked": str(unacked), "backoff": str(backoff)}

    snaps = [(1.0, {"snd_una": 5}, [sf(1, 300, 2), sf(2, 900, 4), sf(3, 64000, 0, backoff=6)]),
             (2.0, {"snd_una": 5}, [sf(1, 400, 1), sf(2, 1200, 3, state="LAST-ACK")])]
    h = stall_holders.holder(snaps)
    assert (h["path"], h["rto_ms"], h["state"]) == (2, 1200, "LAST-ACK")   # path 3 holds nothing unacked
    assert stall_holders.classify(h) == "path 2, RTO <= 2 s"
    assert stall_holders.classify({"path": 3, "rto_ms": 16000, "backoff": 2}) == "path 3, RTO > 10 s, inflated"
    assert stall_holders.classify({"path": 3, "rto_ms": 64000, "backoff": 6}) == "path 3, RTO > 10 s by backoff"


def test_hole_copies_are_found_by_their_own_data_range(tmp_path):
    """One subflow (initial sequence number 1000): a mapping of 3000 bytes at DSN D in two segments,
    then one of 1500 at D + 3000. The hole D + 2000 is in the second segment only (its range starts at
    D + (2501 − 1000) − 1); the server's data ACK D + 3000 (4 octets) fills it at t = 5."""
    from mpcc.lab import pcap_hole

    D, t0 = 9_000_000_000_000_000_000, 100.0

    def seg(t, seq, n, dsn, ssn, dlen):
        dss = b"\x01\x01" + bytes([30, 22, 2 << 4, 0x01 | 0x04 | 0x08]) + struct.pack("!IQIH", 0, dsn, ssn, dlen)
        return (t0 + t, packet("198.18.1.1", "198.18.1.2", 40000, 5301, seq, 1, n, 1, 1, extra=dss))

    data = [seg(1.0, 1001, 1500, D, 1, 3000), seg(1.1, 2501, 1500, D, 1, 3000),
            seg(1.2, 4001, 1500, D + 3000, 3001, 1500)]
    write(tmp_path / "cli_p1.pcap", data)
    dack = b"\x01\x01\x01\x01" + bytes([30, 8, 2 << 4, 0x01]) + struct.pack("!I", (D + 3000) & 0xFFFFFFFF)
    write(tmp_path / "srv_p1.pcap", [(t0 + 1.15, data[1][1]),
                                     (t0 + 5.0, packet("198.18.1.2", "198.18.1.1", 5301, 40000, 1, 4001, 0, 2, 1,
                                                       extra=dack))])
    r = pcap_hole.copies(tmp_path, [1], t0, [D + 2000])[D + 2000]
    assert r["sent"] == [(1.1, 1)] and r["arrived"] == [(1.15, 1)] and r["acked"] == 5.0
    assert r["ports"] == {(1, 40000)}


def test_conn_profile_groups_connections_and_takes_medians(tmp_path):
    """Three connections over three snapshots: 0 (first) with a big path-1 send buffer, 1 with a
    path-3 subflow, 2 without one; conn_profile groups them (--first 1) and takes medians."""
    from mpcc.lab import conn_profile

    def sf(conn, path, tb, notsent, **kw):
        return {"local": f"198.18.{path}.1:{4000 + 10 * conn + path}", "state": "ESTAB", "token": f"t{conn}",
                "cwnd": "4", "unacked": "2", "notsent": str(notsent), "rto": "400", "tb": tb, "w": notsent,
                "bytes_acked": str(1000 * path), **kw}

    peers = ["198.18.1.1:4001", "198.18.1.1:4011", "198.18.1.1:4021"]
    with open(tmp_path / "trace", "w") as f:
        for t, big in ((1.0, 2_000_000), (2.0, 2_100_000), (3.0, 1_900_000)):
            snap = {"t": t, "msk": {p: {"token": f"t{i}", "write_seq": 100, "snd_una": 40} for i, p in enumerate(peers)},
                    "sf": [sf(0, 1, big, big - 1000), sf(1, 1, 70_000, 60_000),
                           sf(1, 3, 100_000, 50_000, backoff="2", rto="16000"), sf(2, 1, 60_000, 50_000)]}
            f.write(json.dumps(snap) + "\n")
    (tmp_path / "res.json").write_text(json.dumps({"peers": peers, "stalled_windows": [{"conn": 0, "window": 0}]}))
    assert conn_profile.main([str(tmp_path / "res.json"), str(tmp_path / "trace"), "--first", "1",
                              "--json", str(tmp_path / "out.json")]) == 0
    g = json.loads((tmp_path / "out.json").read_text())["groups"]
    assert g["first 1"]["connections"] == 1 and g["first 1"]["stalled_windows"] == 1
    assert g["first 1"]["path1_tb"] == 2_000_000 and g["first 1"]["path1_notsent"] == 1_999_000
    assert g["others with path 3"]["connections"] == 1 and g["others with path 3"]["path3_rto"] == 16000
    assert g["others with path 3"]["path3_backoff_holding_share"] == 1.0
    assert g["others with path 3"]["path3_share_of_bytes_acked"] == 0.75     # 3000 of 1000 + 3000
    assert g["others without path 3"]["connections"] == 1 and g["others without path 3"]["path3_snapshots"] == 0
    assert g["others without path 3"]["msk_outstanding"] == 60


def test_down_counted_places_each_rule_record_in_the_link_timeline(tmp_path):
    """down_counted.py: a record made 0.3 s into path 3's outage that sums path 3's window of 30 counts
    a down route (share 30/40); one made while the link was up, or only its own down route, does not."""
    from mpcc.lab import down_counted
    res = {"algorithm": "balia", "date": "d", "pattern": "file x", "secs": 10, "seed": 0,
           "plan": [[1.0, "link", 3, False], [1.5, "endpoint", 2, False], [2.0, "link", 3, True]],
           "executed": [[101.0, 101.0], [101.5, 101.5], [102.0, 102.0]]}
    sf = [{"local": "198.18.1.1:1000", "state": "ESTAB"}, {"local": "198.18.3.1:3000", "state": "ESTAB"}]

    def rec(t, self_, cwnd):
        return {"ktime_ns": int(t * 1e9), "n": 2, "self": self_, "lport": [1000, 3000], "cwnd": cwnd,
                "srtt": [8000, 8000]}
    snaps = [{"t": 1.3, "sf": sf, "seen": {"a": rec(101.3, 0, [10, 30])}},      # down 0.3 s: counted
             {"t": 2.5, "sf": sf, "seen": {"a": rec(102.5, 0, [10, 30])}},      # up again
             {"t": 1.8, "sf": sf, "seen": {"a": rec(101.8, 1, [10, 30])}},      # the down route's own walk
             {"t": 0.5, "sf": sf, "seen": {"a": rec(100.5, 0, [10, 30])}}]      # before any event
    (tmp_path / "trace").write_text("\n".join(json.dumps(s) for s in snaps) + "\n")
    out = down_counted.analyse(res, tmp_path / "trace")
    assert out["records_with_two_or_more_routes"] == 4
    assert out["records_counting_a_down_route"] == 1
    assert out["by_seconds_into_the_outage"]["0.2-0.5"] == 1
    assert out["their_down_share_median"] == 0.75
    # a --schedule run recorded before the plan was kept cannot be placed: one clear error
    del res["plan"]
    with pytest.raises(ValueError, match="recorded no plan"):
        down_counted.analyse(res, tmp_path / "trace")
