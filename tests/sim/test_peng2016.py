"""The Peng et al. reproductions on the simulator (few runs; the full 20-run tables are in
bench/sim/RESULTS.md and `mpcc reproduce peng2016 --engine sim`)."""

import math

import numpy as np
import pytest

from mpcc import scenario
from mpcc.reproduce.peng2016 import sim as peng2016
from mpcc.sim.engine import SimRun
from mpcc.sim.timeseries import Frame

ORDER = ("ewtcp", "semicoupled", "lia", "balia", "coupled")


def test_table3_order_matches_the_paper():
    # Paper: multipath throughput ewtcp > semicoupled > max > balia > coupled, single-path the
    # reverse (Table III). Three seeds give CIs far below the gaps.
    t3 = peng2016.table3(ORDER, runs=3, seed=1, progress=False)
    mp = [t3[a]["mp"][0] for a in ORDER]
    sp = [t3[a]["sp"][0] for a in ORDER]
    assert mp == sorted(mp, reverse=True), mp
    assert sp == sorted(sp), sp
    for a in ORDER:  # link 1 carries only the multipath flows' first routes: 60 Mb/s / 30
        assert t3[a]["mp_paths"][0][0] == pytest.approx(2.0, rel=0.02)


def test_table5_ewtcp_fastest_coupled_slowest():
    t5 = peng2016.table5(ORDER, runs=2, seed=1, progress=False)
    conv = {a: t5[a]["convergence_s"][0] for a in ORDER}
    assert all(not math.isnan(v) for v in conv.values()), conv
    assert min(conv, key=conv.get) == "ewtcp", conv
    assert max(conv, key=conv.get) == "coupled", conv
    # the five single-path flows share link 2 with the multipath flow's second route
    for a in ORDER:
        assert 10.0 < t5[a]["sp"][0] <= 20.0 * 1.01


def test_table5_olia_recovers_slowly_like_coupled():
    # Paper Table V: OLIA (58.5 s) and Coupled (94.36 s) take far longer than Max (17.75 s) and
    # Balia (14.73 s): after the single-path flows leave, OLIA's route 2 is not a best path
    # (ℓ_r/τ_r² below route 1's) so ε_r = 0 and it grows by the Coupled term only.
    t5 = peng2016.table5(("lia", "balia", "olia"), runs=2, seed=1, progress=False)
    conv = {a: t5[a]["convergence_s"][0] for a in t5}
    assert all(not math.isnan(v) for v in conv.values()), conv
    assert conv["olia"] > 2 * max(conv["lia"], conv["balia"]), conv


def _fake_run(times, cwnd):
    s = scenario.load(peng2016.SCENARIOS / "table5.toml")
    n = len(times)
    table = Frame({"time_s": np.asarray(times), "group": np.array(["mp"] * n, dtype=object),
                   "flow": np.zeros(n, np.uint32), "route": np.ones(n, np.uint32), "cwnd_pkts": np.asarray(cwnd)})
    return SimRun(s, 0, None, {"subflows": table})


def test_convergence_time_follows_footnote_2():
    # window 40 over [10, 40) (reference 40), collapses to 5 during the single-path period, then
    # grows by 1 packet per second from 80 s: it is back at 40 at t = 80 + 35 = 115 s.
    t = np.arange(0.0, 200.0, 0.5)
    w = np.where(t < 40, 40.0, np.where(t <= 80, 5.0, np.minimum(5.0 + (t - 80.0), 60.0)))
    w[t < 10] = 100.0  # slow-start overshoot is excluded from the reference
    conv, ref = peng2016.convergence_time(_fake_run(t, w))
    assert ref == pytest.approx(40.0)
    assert conv == pytest.approx(35.0)
    never = np.where(t > 80, 5.0, w)
    assert math.isnan(peng2016.convergence_time(_fake_run(t, never))[0])


def test_fig3_multipath_reduces_window_oscillation():
    f3 = peng2016.fig3(("balia",), runs=2, seed=1, progress=False)
    # D_s = 0.5 for NewReno; a loss on one of two routes removes about a quarter of the total
    assert f3["reno"]["ds"][0] == pytest.approx(0.5, abs=1e-9)
    assert f3["balia"]["ds"][0] < 0.45
    assert f3["balia"]["total_cwnd_cv"][0] < f3["reno"]["total_cwnd_cv"][0]
    assert len(f3["balia"]["trace"]["cwnd"]) == 2


def test_reproduce_summary_format(tmp_path):
    s = peng2016.reproduce(["ewtcp"], runs=2, seed=1, out=tmp_path, progress=False)
    assert set(s) >= {"table3", "table4", "table5", "fig3", "runs", "notes"}
    mp, ci = s["table3"]["ewtcp"]["mp"]
    assert mp > s["table3"]["ewtcp"]["sp"][0] and ci >= 0
    assert s["table4"]["ewtcp"]["mp"][0] > 9.0
    assert s["table5"]["ewtcp"]["convergence_s"][0] > 0
    assert s["fig3"]["reno (single path)"]["oscillation"][0] == pytest.approx(0.5)
    assert (tmp_path / "peng2016-sim.json").exists()
    tr = s["traces"]["table5"]["ewtcp"]
    assert len(tr["time_s"]) == len(tr["cwnd"][0]) > 1000  # 200 s every 0.1 s
    assert len(s["traces"]["fig3"]["ewtcp"]["cwnd"]) == 2  # two routes
