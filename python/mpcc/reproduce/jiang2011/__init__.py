"""Reproduction of Jiang, Cai, Towsley (UM-CS-2011-005): functions returning plain dicts and
writing figures to a directory. ``mpcc mtc figures --out DIR`` and ``mpcc reproduce jiang2011``
call :func:`reproduce`. Modules: :mod:`.model` (closed forms, fluid and window models),
:mod:`.sim` and :mod:`.scenarios` (packet simulator), :mod:`.plots`, :mod:`.paper` (the paper's
statements beside ours).

Figures (file names ``fig3.png`` ...):
 3  per-cycle utilization (6) and (10) versus f, for several buffer ratios gamma;
 4  single-flow U versus n (b = 1/2, W0 = 42), closed forms, with the numerically found
    Assumption-2 orbits (:func:`mpcc.mtc.cycles.periodic_orbit`) as markers;
 6  U versus the number of flows m (Table 1; b = 1/2, W0 = 100), one panel per algorithm;
 7  direction fields of (15) for Fully Coupled MTCP, n = 2, tau = 0.02, a = 1, b = 1/2;
 8  number of paths used over the α–β square, n = 4, p = (0.01, 0.02, 0.03, 0.05);
 9, 10  U versus n and versus gamma from the deterministic-drop fluid simulation
    (:func:`mpcc.mtc.cycles.simulate`, solid) and (6)/(10) at the measured f (dashed) — the
    report's Figs. 9–10 method with a fluid instead of an ns-2 simulation;
 flappiness  the metric of :mod:`mpcc.mtc.flappiness` for the four variants versus n.
"""

from __future__ import annotations

import os
from pathlib import Path

from ...mtc import utilization as ut
from ...mtc.flappiness import sim_available
from ...progress import bar
from .model import fig3_data, fig4_data, fig6_data, fig8_data, fig9_10_data, fig13_data, flappiness_data
from .paper import comparison
from .plots import (plot_fig3, plot_fig4, plot_fig6, plot_fig7, plot_fig8, plot_fig9_10, plot_fig11_packet,
                    plot_fig12_packet, plot_fig13, plot_flappiness, plot_trace_example)
from .sim import packet_fig9_10_data, packet_fig11_data, packet_fig12_data

__all__ = ["reproduce", "comparison", "sim_available", "LEVELS"]


#: Sizes of the runs: "full" (the figures in bench/mtc/RESULTS.md), "quick" (--quick), "smoke" (tests).
LEVELS = {
    "full": dict(ns9=(1, 2, 3, 4, 6, 8), g9=(0.05, 0.5, 1.0, 2.0), cyc=40, warm=10, orbit=(1, 2, 3, 4, 6),
                 fig8=101, flap_n=(2, 3, 4), rounds=20000, replicas=4, trace_rounds=6000,
                 pn=(1, 2, 3, 4, 6, 8), pb=(2, 10, 21, 42, 84), pdur=1200.0, pfrom=200.0,
                 pm=(1, 2, 4, 8, 16), pmn=(1, 2, 4), f12dur=1200.0, f13dur=2000.0, f13rep=2),
    "quick": dict(ns9=(1, 2, 4), g9=(0.05, 1.0), cyc=20, warm=5, orbit=(1, 2, 4), fig8=41,
                  flap_n=(2, 3, 4), rounds=4000, replicas=2, trace_rounds=2000,
                  pn=(1, 2, 4), pb=(2, 42), pdur=300.0, pfrom=50.0, pm=(1, 4, 16), pmn=(1, 4), f12dur=1200.0,
                  f13dur=500.0, f13rep=1),
    "smoke": dict(ns9=(1, 2), g9=(0.05,), cyc=6, warm=2, orbit=(1, 2), fig8=11, flap_n=(2,), rounds=300,
                  replicas=1, trace_rounds=300, pn=(1, 2), pb=(2,), pdur=40.0, pfrom=10.0, pm=(1, 2), pmn=(1,),
                  f12dur=60.0, f13dur=60.0, f13rep=1),
}


def reproduce(out_dir, quick: bool = False, fmt: str = "png", level: str | None = None) -> dict:
    """Compute everything, write the figures and ``jiang2011.json`` to ``out_dir``; return the dict.

    ``level``: "full" (default), "quick" (= ``quick=True``) or "smoke" (tiny runs, for tests)."""
    import json

    z = LEVELS[level or ("quick" if quick else "full")]
    out = Path(out_dir)
    os.makedirs(out, exist_ok=True)
    files: list[str] = []
    res: dict = {"level": level or ("quick" if quick else "full")}
    with_sim = sim_available()
    steps = 8 + len(ut.ALGORITHMS) * len(z["ns9"]) * len(z["g9"])
    if with_sim:
        steps += len(ut.ALGORITHMS) * (len(z["pn"]) * len(z["pb"]) + len(z["pm"]) * len(z["pmn"])) + 1
    with bar("jiang2011", steps) as prog:
        adv = prog.advance
        res["fig3"] = fig3_data(); plot_fig3(res["fig3"], out, fmt, files); adv()
        res["fig4"] = fig4_data(orbit_ns=z["orbit"]); plot_fig4(res["fig4"], out, fmt, files); adv()
        res["fig6"] = fig6_data(); plot_fig6(res["fig6"], out, fmt, files); adv()
        plot_fig7(out, fmt, files); adv()
        res["fig8"] = fig8_data(points=z["fig8"]); plot_fig8(res["fig8"], out, fmt, files); adv()
        res["fig9_10"] = fig9_10_data(z["ns9"], z["g9"], cycles_per_run=z["cyc"], warmup=z["warm"], progress=adv)
        plot_fig9_10(res["fig9_10"], out, fmt, files)
        res["flappiness"] = flappiness_data(z["flap_n"], rounds=z["rounds"], replicas=z["replicas"],
                                            engines=("window", "sim") if with_sim else ("window",))
        plot_flappiness(res["flappiness"], out, fmt, files); adv()
        plot_trace_example(out, fmt, files, rounds=z["trace_rounds"]); adv()
        res["fig13"] = fig13_data(duration_s=z["f13dur"], replicas=z["f13rep"],
                                  engines=("window", "sim") if with_sim else ("window",))
        plot_fig13(res["fig13"], out, fmt, files); adv()
        if with_sim:
            res["packet_fig9_10"] = packet_fig9_10_data(z["pn"], z["pb"], z["pdur"], z["pfrom"], progress=adv)
            plot_fig9_10(res["packet_fig9_10"], out, fmt, files, "_packet", "packet simulator")
            res["packet_fig11"] = packet_fig11_data(z["pm"], z["pmn"], z["pdur"], z["pfrom"], progress=adv)
            plot_fig11_packet(res["packet_fig11"], out, fmt, files)
            res["packet_fig12"] = packet_fig12_data(z["f12dur"])
            plot_fig12_packet(res["packet_fig12"], out, fmt, files); adv()
        else:
            res["packet_fig9_10"] = "skipped: mpcc.sim is not available"
    res["comparison"] = comparison(res)
    res["files"] = files
    with open(out / "jiang2011.json", "w") as fh:
        json.dump(res, fh, indent=1, default=float)
    files.append(str(out / "jiang2011.json"))
    return res
