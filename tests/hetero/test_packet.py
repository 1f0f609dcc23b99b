"""Tang et al. at packet level: the Example 1/2 scenario files and Algorithm 2 in the simulator.

Expected values come from the paper (Fig. 4, §II, §VII) and from hand evaluation of
Algorithm 2's rule on the inputs the simulator logs — never from re-running the code under test."""

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from mpcc import scenario as sc

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "scenarios/tang2010"
PKT_PER_MS = 1e6 / (8 * 1500) / 1e3  # packets/ms per Mb/s (1500-byte packets)


def _noise_average_mbps(s, link):
    return sum(b.rate_mbps * b.mean_on_s / (b.mean_on_s + b.mean_off_s) for b in s.background if b.path == (link,))


# --- Example 2 files: Fig. 4 ----------------------------------------------------------------------
@pytest.mark.parametrize("name", ["example2a-fast-first", "example2a-reno-first",
                                  "example2b-fast-first", "example2b-reno-first"])
def test_example2_files_build_fig4(name):
    s = sc.load(EX / f"{name}.toml")
    links = {l.name: l for l in s.links}
    # capacities in packets/ms, 30 ms one-way, 1500-packet buffers, RED (b_min, b_max, 1/K) with ECN
    for l, cap, (bmin, bmax, k) in (("l12", 9.1, (300, 1500, 10000)), ("l23", 13.8, (0, 1500, 10)),
                                    ("l34", 9.1, (300, 1500, 10000))):
        link = links[l]
        assert link.capacity_mbps * PKT_PER_MS == pytest.approx(cap)
        assert link.delay_ms == 30.0 and link.buffer_pkts == 1500 and link.aqm == "red"
        # the simulator's RED counts the packet being transmitted as queue: min_th = b_min + 1 on
        # l23 (b_min = 0) makes it act on the waiting backlog; one packet of 1200 is left on l12/l34
        assert (link.red.min_th, link.red.max_th) == ((bmin + 1 if bmin == 0 else bmin), bmax)
        assert link.red.max_p == pytest.approx(1.0 / k)
        assert link.red.ecn
        # heavy-tail noise stand-in: 10 % of the capacity on average
        assert _noise_average_mbps(s, l) == pytest.approx(0.1 * link.capacity_mbps)
    groups = {g.name: g for g in s.groups}
    assert (groups["reno"].count, groups["fast-123"].count, groups["fast-234"].count) == (8, 2, 2)
    # one-way propagation delays 90 ms (Reno) and 60 ms (FAST) as stated in §II-B
    assert groups["reno"].paths == (("l12", "l23", "l34"),)
    assert s.path_delay_s(groups["reno"].paths[0]) / 2 == pytest.approx(0.090)
    assert groups["fast-123"].paths == (("l12", "l23"),) and groups["fast-234"].paths == (("l23", "l34"),)
    for g in ("fast-123", "fast-234"):
        assert s.path_delay_s(groups[g].paths[0]) / 2 == pytest.approx(0.060)
        a = groups[g].algorithm
        assert a.name == "fast" and a.alpha == 50.0
        if name.startswith("example2b"):
            assert a.params["adapt_w"] == 1820.0 and a.params["adapt_interval_s"] == 120.0
        else:
            assert float(a.params.get("adapt_interval_s", 0.0)) == 0.0
    first, second = ("fast", "reno") if "fast-first" in name else ("reno", "fast")
    starts = {"reno": groups["reno"].start_s, "fast": groups["fast-123"].start_s}
    assert starts[first] == 0.0 and starts[second] == 100.0
    assert groups["fast-234"].start_s == groups["fast-123"].start_s


@pytest.mark.parametrize("name", ["example1a-b400", "example1a-b80", "example1b-b400", "example1b-b80"])
def test_example1_files(name):
    s = sc.load(EX / f"{name}.toml")
    (link,) = s.links
    assert link.capacity_mbps * PKT_PER_MS == pytest.approx(8.33, abs=0.01)  # 100 Mb/s
    assert s.path_delay_s(("bottleneck",)) == pytest.approx(0.050)
    assert link.buffer_pkts == (400 if name.endswith("b400") else 80)
    assert _noise_average_mbps(s, "bottleneck") == pytest.approx(0.1 * link.capacity_mbps)
    fast = {g.name: g for g in s.groups}["fast"].algorithm
    assert fast.alpha == 50.0
    if name.startswith("example1b"):
        assert fast.params["adapt_w"] == 125.0 and fast.params["adapt_interval_s"] == 120.0


# --- Algorithm 2 in the simulator -----------------------------------------------------------------
def _one_fast_link(*, loss=0.0, buffer=400, w=125.0, interval=5.0, duration=40.0, red=None):
    red_toml = f"aqm = \"red\"\nred = {red}\n" if red else ""
    return sc.loads(f"""
name = "alg2-smoke"
duration_s = {duration}
[[links]]
name = "l"
capacity_mbps = 50.0
delay_ms = 10.0
buffer_pkts = {buffer}
loss = {loss}
{red_toml}
[[groups]]
name = "fast"
count = 1
algorithm = {{name = "fast", alpha = 50, adapt_interval_s = {interval}, adapt_w = {w}}}
paths = [["l"]]
""")


def _alg2_by_hand(alpha, q, l, alpha0, w, delta=0.1):
    """Algorithm 2 step 1 (Tang et al. §VII): α* = q/(l w) α0, move towards α* by at most δ."""
    target = np.inf if l == 0 else q / (l * w) * alpha0
    if l == 0 and q == 0:
        return alpha
    if alpha < target:
        return min((1 + delta) * alpha, target)
    if alpha > target:
        return max((1 - delta) * alpha, target)
    return alpha


def _check_log_follows_rule(run, w):
    al = run.alpha_log
    assert len(al["alpha"]) >= 5
    prev = 50.0
    for a, q, l in zip(al["alpha"], al["q_s"], al["l"]):
        assert a == pytest.approx(_alg2_by_hand(prev, q, l, 50.0, w), rel=1e-12)
        prev = a


def test_alg2_raises_alpha_when_delay_to_loss_ratio_is_high():
    from mpcc.hetero import packet
    # rare random loss and a large w^-1: q/(l w)·α0 ≫ α, so α grows by δ = 10 % per interval
    r = packet.run(_one_fast_link(loss=1e-5, w=0.01), seed=1)
    _check_log_follows_rule(r, 0.01)
    q, l, a = r.alpha_log["q_s"], r.alpha_log["l"], r.alpha_log["alpha"]
    prev = np.concatenate([[50.0], a[:-1]])
    with np.errstate(divide="ignore"):
        target = np.where(l > 0, q / (l * 0.01) * 50.0, np.inf)
    assert np.all(target > (1 + 0.1) * prev)  # the case being tested: q/(l w) above α/α0
    assert np.allclose(a, 50.0 * 1.1 ** np.arange(1, len(a) + 1))


def test_alg2_lowers_alpha_when_delay_to_loss_ratio_is_low():
    from mpcc.hetero import packet
    # 1 % random loss: q/(l w)·α0 ≪ α, so α shrinks by δ per interval
    r = packet.run(_one_fast_link(loss=1e-2, w=125.0), seed=1)
    _check_log_follows_rule(r, 125.0)
    q, l, a = r.alpha_log["q_s"], r.alpha_log["l"], r.alpha_log["alpha"]
    prev = np.concatenate([[50.0], a[:-1]])
    assert np.all(q / (l * 125.0) * 50.0 < (1 - 0.1) * prev)  # q/(l w) below α/α0
    assert np.allclose(a, 50.0 * 0.9 ** np.arange(1, len(a) + 1))


def test_fast_counts_ecn_marks_for_alg2_but_does_not_back_off():
    """RED with ECN (Example 2): FAST reacts to queueing delay only; the marks enter l."""
    from mpcc.hetero import packet
    s = _one_fast_link(buffer=400, w=125.0,
                       red="{min_th = 0, max_th = 400, max_p = 0.1, ecn = true, weight = 1.0, gentle = false}")
    r = packet.run(s, seed=2)
    g = r.result.groups["fast"].extra
    assert g["marks"] > 100  # α = 50 packets keep the queue (and the marking probability) up
    assert g["drops"] == 0 and g["loss_events"] == 0  # no window reduction on ECE
    _check_log_follows_rule(r, 125.0)
    assert np.all(r.alpha_log["l"] > 0)  # the marks are Algorithm 2's l
    # l = marks / packets sent over the whole run, up to the intervals' boundaries
    total_l = g["marks"] / g["sent_pkts"]
    assert np.mean(r.alpha_log["l"]) == pytest.approx(total_l, rel=0.3)
