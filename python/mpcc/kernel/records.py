"""Reading the BPF programs' diagnostic records (bpf/compat/mpcc_records.h; only the compat-diag
build has them: ``bpf.load(algo, diag=True)`` or MPCC_BPF_BUILD=compat-diag) through bpftool:
the opt-in trace of the last on_ack/on_loss computation (tests/kernel/test_bpf_kernel.py compares
it with the host build), the opt-in record of the subflows the coupled rule summed over
(python/mpcc/lab/churn.py compares it with ``ss -M``), and the always-on window-jump check."""

from __future__ import annotations

import json
import re
import struct

from ..errors import MpccError
from .bpf import bpftool, kernel_name, registered

_TRACE_LAYOUT = struct.Struct("<IIIII4x8Q8Q8Q8QqQQQQ")   # struct mpcc_trace in bpf/compat/mpcc_records.h


def _trace_maps(algo) -> dict[str, int]:
    """Map ids (mpcc_trace_on, mpcc_trace, ...) of the registered struct_ops of this algorithm
    (found through its programs, so parameter sets of one algorithm, whose programs share names,
    are told apart)."""
    kname = kernel_name(algo)
    ids = registered()
    if kname not in ids:
        raise MpccError(f"{kname} is not loaded")
    dump = bpftool(["-j", "struct_ops", "dump", "id", str(ids[kname])], "struct_ops dump")
    progs = sorted(set(re.findall(r"/prog_id:(\d+)", dump)))
    if not progs:
        raise MpccError(f"{kname}: no program in its struct_ops")
    out = {}
    for pid in progs:
        prog = json.loads(bpftool(["-j", "prog", "show", "id", pid], "prog show"))
        for mid in prog.get("map_ids", []):
            if mid not in out.values():
                m = json.loads(bpftool(["-j", "map", "show", "id", str(mid)], "map show"))
                out[m["name"]] = mid
    return _Maps(kname, out)


class _Maps(dict):
    """name → map id; a missing diagnostic map is a one-line MpccError naming the fix."""

    def __init__(self, kname: str, ids: dict):
        super().__init__(ids)
        self.kname = kname

    def __missing__(self, name: str):
        raise MpccError(f"{self.kname} has no map {name}: it was loaded without the diagnostic maps (fix: load it "
                        f"with bpf.load(..., diag=True) or MPCC_BPF_BUILD=compat-diag)")


def trace_set(algo, on: bool) -> None:
    """Turn the program's record of its last on_ack/on_loss computation on or off."""
    mid = _trace_maps(algo)["mpcc_trace_on"]
    bpftool(["map", "update", "id", str(mid), "key", "0", "0", "0", "0",
          "value", str(int(on)), "0", "0", "0"], "enabling the trace")


def trace_read(algo) -> dict[str, dict]:
    """The last recorded multi-route computations: {"ack": {...}, "loss": {...}} and, for a
    periodic algorithm, {"update": {...}}, with n, self, cwnd (packets·2^32), rtt (srtt_us), ell,
    base_rtt (1/8 µs), inc (packets·2^40), dec (D_r, or the update's new window, packets·2^32;
    in the per-ACK update's "ack" entry the counter increment, two's complement), ssthresh,
    samples, per_ack (1: the per-ACK update computed it), adapted (the adapted parameter the update
    used; 0 = as loaded), w_old (the window of round(RTT/interval) updates ago the update used,
    packets·2^32; 0 = the current one); with MPCC_ADAPT also {"adapt": {..., "adapt_in": {value, q_sum, q_n,
    lost, sent}, "dec": result}}."""
    mid = _trace_maps(algo)["mpcc_trace"]
    rows = json.loads(bpftool(["-j", "map", "dump", "id", str(mid)], "reading the trace") or "[]")
    out = {}
    for row in rows:
        key = int.from_bytes(bytes(int(x, 16) for x in row["key"]), "little")
        v = _TRACE_LAYOUT.unpack(bytes(int(x, 16) for x in row["value"]))
        _, n, self_, ssthresh, per_ack, *rest = v
        cwnd, rtt, ell, base, (inc, dec, samples, adapted, w_old) = (rest[0:8], rest[8:16], rest[16:24],
                                                                     rest[24:32], rest[32:37])
        rec = {"n": n, "self": self_, "ssthresh": ssthresh, "cwnd": cwnd, "rtt": rtt, "ell": ell, "base_rtt": base,
               "inc": inc, "dec": dec, "samples": samples, "per_ack": per_ack, "adapted": adapted, "w_old": w_old}
        if key == 3:   # MPCC_ADAPT: struct mpcc_adapt_in in cwnd[0..4], the result in dec
            rec["adapt_in"] = dict(zip(("value", "q_sum", "q_n", "lost", "sent"), cwnd[:5]))
        out[("ack", "loss", "update", "adapt")[key]] = rec
    return out


_SEEN_LAYOUT = struct.Struct("<QII8I8I8I8I")   # struct mpcc_seen in bpf/compat/mpcc_records.h


def seen_read(algo) -> dict[int, dict]:
    """The subflow set the coupled rule last summed over, per MPTCP connection (recorded while
    trace_set(algo, True)): {token: {"ktime_ns", "n", "self", "lport", "cwnd", "srtt", "silent"}} with the
    connection's local token (as ``ss -M`` shows it) and, per counted route, the subflow's local
    port, snd_cwnd (packets) and srtt_us (1/8 µs) as the rule read them; "silent": the local ports
    of the routes the walk left out as silent (ACKs stopped with data in flight, mpcc_walk.h)."""
    mid = _trace_maps(algo)["mpcc_seen"]
    rows = json.loads(bpftool(["-j", "map", "dump", "id", str(mid)], "reading the subflow sets")
                      or "[]")
    out = {}
    for row in rows:
        key = int.from_bytes(bytes(int(x, 16) for x in row["key"]), "little")
        v = _SEEN_LAYOUT.unpack(bytes(int(x, 16) for x in row["value"]))
        out[key] = seen_parse(v)
    return out


def seen_parse(v: tuple) -> dict:
    """One mpcc_seen record from its unpacked fields (_SEEN_LAYOUT)."""
    n = min(v[1], 8)
    return {"ktime_ns": v[0], "n": n, "self": v[2], "lport": list(v[3:3 + n]),
            "cwnd": list(v[11:11 + n]), "srtt": list(v[19:19 + n]), "silent": [p for p in v[27:35] if p]}


_JUMP_FIELDS = ("ktime_ns", "kind", "lport", "cwnd_before", "cwnd_after", "ssthresh", "prior_cwnd", "prior_ssthresh",
                "ca_state", "packets_out", "sacked_out", "lost_out", "retrans_out", "prr_delivered", "prr_out",
                "acked", "count", "bound", "segs_in", "dsack", "una_bytes", "prev_out")
_JUMP_LAYOUT = struct.Struct("<Q21I4x")   # struct mpcc_jump in bpf/compat/mpcc_records.h (padded to 8)
_JUMP_KINDS = {1: "between callbacks", 2: "slow start", 3: "the rule", 4: "ssthresh above cwnd (acked: the rule's w_r)",
               5: "ssthresh above TCP_INFINITE_SSTHRESH repaired (acked: the repaired value)",
               6: "cwnd above TCP_INFINITE_SSTHRESH repaired (acked: the repaired value)",
               7: "slow start over the packets delivered since the last run (acked: them, ≤ bound)",
               8: "init had not run: done at the first cong_control (acked: tp->delivered)",
               9: "delivered count above what can have been delivered: the bound used (acked: the count)"}
_APART = {65: "repaired", 66: "delivered", 67: "late_init", 69: "clamped"}   # counters of the kinds that are no fault
_FAULT_KINDS = (1, 2, 3, 4)   # the kinds that are window faults; 5-9 are counted apart (_APART)


def jumps_read(algo) -> dict:
    """The window-jump check's record (always on): {"count": records seen, and of them, counted
    apart as no fault: "repaired" (bad ssthresh or cwnd values repaired before any window was
    computed from them, kinds 5 and 6), "delivered" (a slow-start step over more than the window's
    worth of packets that were all delivered since the control last ran: the kernel's own rule
    after skipped runs or a stretch ACK, kind 7), "late_init" (kind 8) and "clamped" (a delivered
    count above what can have been delivered, replaced by that bound, kind 9); "unrepaired": the
    faults, count − those four; "unseen": {"runs", "packets"}: cong_control runs that found
    packets delivered by ACKs no run was passed (an old ACK's SACKs, a DSACK with nothing in
    flight, a run the platform skipped), and how many, and "rs_unread": runs that could not read
    the kernel's rate sample (0 on every kernel verified); "last": up to 64 records, each with the TCP state (cwnd
    before/after, ssthresh, prior_cwnd, ca_state, bound, segs_in, dsack, ...) and "fault": whether
    its kind is a fault (1-4) or one of the kinds counted apart (5-9)}."""
    mid = _trace_maps(algo)["mpcc_jumps"]
    rows = json.loads(bpftool(["-j", "map", "dump", "id", str(mid)], "reading the window jumps")
                      or "[]")
    return jumps_parse(rows)


def jumps_parse(rows: list) -> dict:
    """jumps_read's result from the rows of ``bpftool -j map dump`` of mpcc_jumps."""
    out, count, apart = [], 0, dict.fromkeys(_APART.values(), 0)
    unseen = {"runs": 0, "packets": 0, "rs_unread": 0}
    for row in rows:
        key = int.from_bytes(bytes(int(x, 16) for x in row["key"]), "little")
        rec = dict(zip(_JUMP_FIELDS, _JUMP_LAYOUT.unpack(bytes(int(x, 16) for x in row["value"]))))
        if key == 64:
            count = rec["count"]
        elif key in _APART:
            apart[_APART[key]] = rec["count"]
        elif key == 68:
            unseen = {"runs": rec["count"], "packets": rec["acked"], "rs_unread": rec["bound"]}
        elif rec["kind"]:
            rec["fault"] = rec["kind"] in _FAULT_KINDS
            rec["kind"] = _JUMP_KINDS.get(rec["kind"], rec["kind"])
            out.append(rec)
    return {"count": count, **apart, "unrepaired": count - sum(apart.values()), "unseen": unseen,
            "last": sorted(out, key=lambda r: r["ktime_ns"])}

