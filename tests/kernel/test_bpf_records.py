"""The window-jump ring's reader (python/mpcc/kernel/records.py) against the C record
(bpf/compat/mpcc_records.h: struct mpcc_jump, read from the BTF of the compat build with the
diagnostic maps, compiled here; no root), and how it counts the kinds that are no fault apart from
the faults."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from mpcc.kernel import bpf, records as bpf_records


def _row(key: int, **fields) -> dict:
    vals = [fields.get(f, 0) for f in bpf_records._JUMP_FIELDS]
    raw = bpf_records._JUMP_LAYOUT.pack(*vals)
    return {"key": [f"{b:#04x}" for b in key.to_bytes(4, "little")], "value": [f"{b:#04x}" for b in raw]}


def _btf_struct(obj: str, name: str) -> tuple[int, list[tuple[str, int]]]:
    """A struct of the diagnostic build's BTF: its size and (member, byte offset) of each member."""
    path = bpf.build(obj, build="compat-diag")[0]
    out = subprocess.run(["bpftool", "btf", "dump", "file", str(path)],
                         capture_output=True, text=True, check=True).stdout
    block = out[out.index(f"STRUCT '{name}'"):]
    n = int(re.search(r"vlen=(\d+)", block).group(1))
    members = re.findall(r"^\t'(\w+)' type_id=\d+ bits_offset=(\d+)", block, re.M)[:n]
    return int(re.search(r"size=(\d+)", block).group(1)), [(m, int(b) // 8) for m, b in members]


_NEEDS_OBJECTS = pytest.mark.skipif(not shutil.which("bpftool") or not shutil.which("clang")
                                    or not Path("/sys/kernel/btf/vmlinux").exists(),
                                    reason="needs bpftool, clang and the kernel's BTF")


@_NEEDS_OBJECTS
@pytest.mark.parametrize("obj", ["balia", "olia", "fast"])
def test_python_layout_is_the_c_struct(obj):
    size, members = _btf_struct(obj, "mpcc_jump")
    assert [m for m, _ in members] == list(bpf_records._JUMP_FIELDS)
    assert size == bpf_records._JUMP_LAYOUT.size
    assert [off for _, off in members] == [0] + [8 + 4 * i for i in range(len(members) - 1)]


def test_kinds_apart_are_counted_apart_and_the_rest_are_faults():
    rows = [_row(64, count=10), _row(65, count=2), _row(66, count=3), _row(67, count=1),
            _row(68, count=4, acked=17, bound=1),               # mpcc_unseen: not a record
            _row(69, count=1),
            _row(0, ktime_ns=5, kind=7, cwnd_before=10, cwnd_after=90, acked=80, bound=120, segs_in=9),
            _row(1, ktime_ns=3, kind=2, cwnd_before=10, cwnd_after=90, acked=80, bound=30, segs_in=1),
            _row(2)]                                            # an empty slot: no record
    j = bpf_records.jumps_parse(rows)
    assert (j["count"], j["repaired"], j["delivered"], j["late_init"], j["clamped"]) == (10, 2, 3, 1, 1)
    assert j["unrepaired"] == 3
    assert j["unseen"] == {"runs": 4, "packets": 17, "rs_unread": 1}
    assert [r["ktime_ns"] for r in j["last"]] == [3, 5]        # by time
    assert j["last"][0]["kind"] == "slow start" and j["last"][0]["bound"] == 30
    assert j["last"][1]["kind"].startswith("slow start over the packets delivered")
    assert j["last"][1]["segs_in"] == 9
    assert [r["fault"] for r in j["last"]] == [True, False]   # kind 2 is a fault, kind 7 apart


def test_the_fault_kinds_are_those_below_the_first_kind_counted_apart():
    # mpcc_jump_record counts a record apart when kind >= MPCC_JUMP_REPAIRED; the reader must agree
    text = (Path(__file__).resolve().parents[2] / "bpf" / "compat" / "mpcc_records.h").read_text()
    kinds = {name: int(v) for name, v in re.findall(r"MPCC_JUMP_(\w+) = (\d+)", text)}
    assert set(kinds.values()) == set(bpf_records._JUMP_KINDS)
    assert bpf_records._FAULT_KINDS == tuple(range(1, kinds["REPAIRED"]))


@_NEEDS_OBJECTS
@pytest.mark.parametrize("obj", ["balia", "olia", "fast"])
def test_seen_record_layout_is_the_c_struct(obj):
    size, members = _btf_struct(obj, "mpcc_seen")
    assert members == [("ktime_ns", 0), ("n", 8), ("self", 12), ("lport", 16), ("cwnd", 48), ("srtt", 80),
                       ("silent", 112)]
    assert size == bpf_records._SEEN_LAYOUT.size


def test_seen_record_lists_the_silent_routes_apart():
    # the silent ports sit at the routes' list positions, 0 elsewhere
    v = [7, 2, 1] + [1000, 3000] + [0] * 6 + [10, 30] + [0] * 6 + [800, 900] + [0] * 6 + [0, 2000] + [0] * 6
    rec = bpf_records.seen_parse(tuple(v))
    assert rec == {"ktime_ns": 7, "n": 2, "self": 1, "lport": [1000, 3000], "cwnd": [10, 30], "srtt": [800, 900],
                   "silent": [2000]}
