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


# --- Table I: calibration of Algorithm 2's w (footnote 6) -----------------------------------------
def test_calibrate_w_by_hand():
    from mpcc.reproduce.tang2010.example1 import calibrate_w
    # Reno 2, FAST 6 packets/ms at w_cal = 100 s, α0 = 50:
    #   l_cal = 50/(100 s · 6000 /s) = 8.33e-5, x* = 4000 /s, l* = l_cal·(2000/4000)² = 2.083e-5,
    #   w = 50/(2.083e-5 · 4000) = 600 s; with l unchanged 50/(8.33e-5 · 4000) = 150 s
    c = calibrate_w(2.0, 6.0, 100.0, 50.0)
    assert c["l_cal"] == pytest.approx(50 / (100 * 6000), rel=1e-12)
    assert c["target_rate"] == pytest.approx(4.0, rel=1e-12)
    assert c["l_target"] == pytest.approx(50 / (100 * 6000) / 4, rel=1e-12)
    assert c["w_s"] == pytest.approx(600.0, rel=1e-12)
    assert c["w_fixed_l_s"] == pytest.approx(150.0, rel=1e-12)
    # already equal rates: keep w; FAST below Reno: smaller w (FAST's x = α0/(l w) grows)
    assert calibrate_w(3.0, 3.0, 125.0, 50.0)["w_s"] == pytest.approx(125.0, rel=1e-12)
    assert calibrate_w(5.0, 2.0, 125.0, 50.0)["w_s"] == pytest.approx(125 * 2 * 3.5 / 25, rel=1e-12)
    with pytest.raises(ValueError):
        calibrate_w(0.0, 2.0, 125.0)


def _fake_packet_jobs(calls, b80_rates):
    """Stand-in for tang2010 example1.run_packet_jobs: fixed rates per configuration, no simulation."""
    rates = {"example1a-b400": (5.7, 1.8), "example1a-b80": (0.5, 6.1), "example1b-b400": (2.9, 4.6),
             "example1b-b80": b80_rates}

    def run(jobs, workers, progress, label):
        calls.append(jobs)
        out = []
        for path, _dur, seed, measure, _bin, *rest in jobs:
            w, label_ = rest if rest else (None, None)
            name = Path(path).stem
            reno, fast = rates[name] if w is None else (3.7, 3.8)
            r = {"name": label_ or name, "seed": seed, "wall_s": 1.0, "measure_s": list(measure),
                 "rates": {"reno": reno, "fast": fast}, "utilization": {"bottleneck": 1.0},
                 "loss_rate": {"reno": 1e-4, "fast": 1e-4}}
            if name.startswith("example1b"):
                r.update(adapt_w={"fast": 125.0 if w is None else w}, alpha0={"fast": 50.0},
                         alpha={"fast": 100.0}, alpha_end={"fast": 100.0}, alg2_q_s={"fast": 0.02},
                         alg2_l={"fast": 1e-4})
            out.append(r)
        return out
    return run


@pytest.mark.parametrize("b80_rates", [(2.8, 4.5), (0.3, 7.0)])
def test_example1_uses_one_calibrated_w_for_both_buffers(monkeypatch, b80_rates):
    """The calibrated w comes from the B = 400, w = 125 s runs only and both buffers run at it
    (no per-buffer tuning: B = 80 is held out, its w = 125 s results do not move w)."""
    from mpcc.reproduce.tang2010 import example1 as tang2010, paper
    calls = []
    monkeypatch.setattr(tang2010, "run_packet_jobs", _fake_packet_jobs(calls, b80_rates))
    out = tang2010.example1(EX, runs=3, measure=(1800.0, 5400.0), w="calibrate")
    assert len(calls) == 2
    # second batch: 1b files of both buffers, every seed, all at the same w
    second = calls[1]
    assert sorted({Path(j[0]).stem for j in second}) == ["example1b-b400", "example1b-b80"]
    assert len(second) == 2 * 3
    ws = {j[5] for j in second}
    assert len(ws) == 1
    (w,) = ws
    assert w == pytest.approx(125 * 4.6 * 3.75 / 2.9 ** 2, rel=1e-12)  # w_cal·x_F·x*/x_R² from B = 400
    assert out["calibration"]["w_s"] == w and out["w_s"] == w
    extra = [k for k in out["rows"] if k.endswith(f"-w{w:.0f}")]
    assert len(extra) == 2 and all(out["rows"][k]["w_s"] == w for k in extra)
    assert out["rows"]["example1b-b80"]["w_s"] == 125.0  # the paper's rows stay at w = 125 s


def test_example1_w_number_and_paper(monkeypatch):
    from mpcc.reproduce.tang2010 import example1 as tang2010, paper
    calls = []
    monkeypatch.setattr(tang2010, "run_packet_jobs", _fake_packet_jobs(calls, (2.8, 4.5)))
    out = tang2010.example1(EX, runs=2, w=200.0)
    assert {j[5] for j in calls[1]} == {200.0} and "calibration" not in out
    calls.clear()
    out = tang2010.example1(EX, runs=2, w=None)
    assert len(calls) == 1 and list(out["rows"]) == list(paper.PAPER_TABLE1)


def test_with_adapt_w_reaches_the_simulator():
    """with_adapt_w changes Algorithm 2's w in the run: 1 % loss at w = 125 s lowers α, the same
    run at w = 0.01 s follows the rule with w = 0.01 s (α* = q/(l w)·α0 ≫ α: α rises)."""
    from mpcc.hetero import packet
    from mpcc.reproduce.tang2010.packet import with_adapt_w
    s = with_adapt_w(_one_fast_link(loss=1e-2, w=125.0), 0.01)
    fast = {g.name: g for g in s.groups}["fast"].algorithm
    assert fast.params["adapt_w"] == 0.01 and fast.alpha == 50.0 and fast.params["adapt_interval_s"] == 5.0
    r = packet.run(s, seed=1)
    _check_log_follows_rule(r, 0.01)
    assert r.alpha_log["alpha"][-1] > 50.0


def test_cli_rejects_bad_w():
    from click.testing import CliRunner
    from mpcc.cli import cli
    for bad in ("abc", "-5", "0"):
        r = CliRunner().invoke(cli, ["hetero", "example1", "--w", bad, "--scenarios", str(EX)])
        assert r.exit_code == 2 and "--w" in r.output, r.output
