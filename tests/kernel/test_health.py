"""mpcc.testbed.health without the kernel: the implausible-window bound, the verdict, the
aggregate of a cell, the one-line summary and the retry of unsound runs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from mpcc import scenario
from mpcc.testbed import engine, health

CROWDED = Path(__file__).parent / "scenarios" / "crowded_start.toml"


def _sender(rows):
    return np.array([(1.0, g, f, "x", r, c, 0, 0, ss, 0, 0, 0, 0, 0, 0) for g, f, r, c, ss in rows],
                    dtype=engine.SENDER_DT)


def test_window_bound_is_four_bdp_plus_buffer_plus_100():
    s = scenario.load(CROWDED)
    # route l1: 20 Mb/s, 2 × 10 ms, 1500-byte packets: BDP 33.3 packets, buffer 20
    assert health.window_bound(s, 0, 0) == pytest.approx(4 * (20e6 * 0.020 / 12000 + 20) + 100)


def test_implausible_windows_counts_garbage_and_windows_no_path_holds():
    s = scenario.load(CROWDED)
    bound = health.window_bound(s, 1, 0)      # ≈ 313 packets
    rows = [(1, 0, 0, 10, 0x7FFFFFFF),        # slow start: ssthresh = TCP_INFINITE_SSTHRESH, fine
            (1, 1, 0, int(bound) - 1, 50),    # just under the bound, fine
            (1, 2, 0, 10, 0x81104110),        # a skipped ssthresh(): stack garbage
            (1, 3, 0, 10**9, 50),             # the window that followed it
            (1, 4, 0, int(bound) + 2, 50)]    # above 4 × (BDP + buffer) + 100
    assert health.implausible_windows(s, _sender(rows)) == 3


def test_verdict_names_every_failed_criterion_and_ignores_connect_retries():
    h = health.Health(bpf_repairs=None, connect_retries=3, linkem_late=1, linkem_releases=10_000).judge()
    assert h.sound and h.record()["sound"] is True
    assert health.Health(bpf_repairs=40, bpf_unrepaired=0).judge().sound    # repaired: counted, not unsound
    h = health.Health(bpf_repairs=2, bpf_unrepaired=2, implausible_windows=5, subflows_not_joined=1,
                      linkem_tx_errors=1, linkem_late=11, linkem_releases=10_000).judge()
    assert not h.sound and len(h.reasons) == 5
    assert any("BPF" in r for r in h.reasons) and any("late" in r for r in h.reasons)


def test_aggregate_and_line():
    a = health.Health(bpf_repairs=0, bpf_unrepaired=0).judge().record()
    b = health.Health(bpf_repairs=1, bpf_unrepaired=1).judge().record()
    cell = health.aggregate([a, b], attempts=4)
    assert cell["sound"] is False and cell["bpf_repairs"] == 1 and cell["attempts"] == 4
    assert cell["reasons"] == ["run 1: 1 BPF program skips not repaired"]
    line = health.line(cell)
    assert line.startswith("health: UNSOUND (2 runs, 2 re-run unsound;") and "\n" not in line
    assert health.aggregate([health.Health().judge().record()])["bpf_repairs"] is None   # not measured
    assert "bpf repairs not measured" in health.line(health.aggregate([health.Health().judge().record()]))
    assert health.line(None) == "health: not measured"


def test_run_healthy_retries_until_sound_and_is_bounded():
    seq = [health.Health(implausible_windows=1).judge(), health.Health().judge()]
    calls = []

    def attempt(k):
        calls.append(k)
        return f"run{k}", seq[min(k, 1)]
    value, h, n = health.run_healthy(attempt)
    assert (value, h.sound, n, calls) == ("run1", True, 2, [0, 1])
    assert h.discarded == [["1 samples with an implausible window"]] and h.record()["discarded"] == h.discarded
    never = lambda k: (k, health.Health(subflows_not_joined=1).judge())  # noqa: E731
    value, h, n = health.run_healthy(never, extra_attempts=2)
    assert (value, h.sound, n) == (2, False, 3)


def test_bpf_counters_are_used_when_the_loader_offers_them(monkeypatch):
    from mpcc.kernel import bpf
    monkeypatch.setattr(bpf, "health_counters", lambda: {"repaired": 7, "skipped": 1}, raising=False)
    assert health.bpf_counters() == {"repaired": 7, "skipped": 1}
    assert health.counter_delta({"repaired": 5, "skipped": 1}, {"repaired": 7, "skipped": 1}) == 2
    assert health.counter_deltas({"x": 2**64 - 1}, {"x": 1}) == {"x": 2}      # wrapped at 2^64
    monkeypatch.setattr(bpf, "health_counters", lambda: None, raising=False)
    assert health.bpf_counters() is None and health.counter_delta(None, {"x": 1}) is None


def test_linkem_timing_counts_late_releases_or_says_not_measured(tmp_path):
    f = tmp_path / "t.json"
    f.write_text(json.dumps({"fwd": {"release_late": {"n": 100, "over_1ms": 2}},
                             "rev": {"release_late": {"n": 50, "over_1ms": 1}}}))
    assert health.linkem_timing([f]) == (3, 150)
    f.write_text(json.dumps({"fwd": {"release_late": {"n": 100}}, "rev": {"release_late": {"n": 50}}}))
    assert health.linkem_timing([f]) == (None, 150)
