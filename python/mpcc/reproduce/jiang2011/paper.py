"""The checkable statements of Jiang, Cai, Towsley (UM-CS-2011-005) — the paper's values — beside
the closed forms, the fluid model, the window model and the packet simulator."""

from __future__ import annotations

import numpy as np

from ...mtc import cycles, utilization as ut
from .plots import ALG_LABEL


def comparison(res: dict) -> list[dict]:
    """Paper | closed form | fluid (deterministic) | packet simulator, for the report's checkable
    statements, from a :func:`reproduce` result. Values the run did not compute are None."""
    import math

    def cell(d, alg, gi, ni):
        try:
            return d[alg][gi][ni]
        except (KeyError, IndexError, TypeError):
            return None

    rows = []
    orbit3 = cycles.periodic_orbit("mstcp", 3, 42.0, 0.0)
    rows.append({"quantity": "f, MSTCP, n = 3, b = 1/2 (§3.1)", "paper": 0.125,
                 "closed_form": ut.f_mstcp(3, 0.5, 42.0), "fluid": float(orbit3.f), "sim": None})
    fl9, pk = res.get("fig9_10", {}), res.get("packet_fig9_10")
    fluid_ci = packet_ci = None
    if fl9 and 2 in fl9.get("n", []):
        fluid_ci = cell(fl9["sim"], "coupled-increase", 0, fl9["n"].index(2))
    if isinstance(pk, dict) and 2 in pk["n"]:
        packet_ci = cell(pk["sim"], "coupled-increase", 0, pk["n"].index(2))
    rows.append({"quantity": "U, Coupled Increase, small buffer (§3.2.2; measured at n = 2)",
                 "paper": 0.75, "closed_form": ut.cycle_utilization_aimd(0.5, 1.0),
                 "fluid": fluid_ci, "sim": packet_ci})
    rows.append({"quantity": "U, Fully Coupled, n → ∞, W0 = 42 (§3.2.3)",
                 "paper": 41 / (42 * math.log(42)),
                 "closed_form": ut.utilization("fully-coupled", 400, 1, 42.0, 0.0).utilization,
                 "fluid": None, "sim": None})
    for alg in ("mstcp", "coupled-decrease"):
        for src, d in (("fluid", fl9), ("sim", pk)):
            if not isinstance(d, dict) or not d:
                continue
            s, dsh = np.array(d["sim"][alg], float), np.array(d["dashed"][alg], float)
            rows.append({"quantity": f"Fig. 9/10 {ALG_LABEL[alg]}: max |dashed − solid|",
                         "paper": "match well", "closed_form": None,
                         src: float(np.nanmax(np.abs(dsh - s)))})
    f12 = res.get("packet_fig12")
    if isinstance(f12, dict):
        tot = {a: r["total_mbps"] for a, r in f12["runs"].items()}
        rows.append({"quantity": "Fig. 12: throughput (Mb/s)",
                     "paper": "CI > CD > FC", "closed_form": None, "fluid": None,
                     "sim": " / ".join(f"{tot[a]:.2f}" for a in ("coupled-increase", "coupled-decrease",
                                                                  "fully-coupled", "mstcp")) + " (CI/CD/FC/MSTCP)"})
        fc = f12["runs"]["fully-coupled"]
        rows.append({"quantity": "Fig. 12: Fully Coupled on surged path 2 (Mb/s)",
                     "paper": "appreciable", "closed_form": 0.0, "fluid": None,
                     "sim": fc["mean_surge_mbps"][1]})
    fp = res.get("flappiness")
    if isinstance(fp, dict):
        for engine in fp.get("engines", ["window"]):
            r = {(x["algorithm"], x["subflows"]): x for x in fp["rows"] if x.get("engine", "window") == engine}
            order = ("fully-coupled", "coupled-increase", "coupled-decrease", "mstcp")
            col = "window_model" if engine == "window" else "sim"
            for key, what, fmt in (("dominance", "dominance", ".2f"), ("mean_dwell_s", "mean dwell (s)", ".1f")):
                if all((a, 2) in r for a in order):
                    rows.append({"quantity": f"flappiness n = 2, {what}: FC/CI/CD/MSTCP",
                                 "paper": "FC ≫ CI, CD; MSTCP < FC",
                                 col: " / ".join(format(r[(a, 2)][key], fmt) for a in order)})
            if ("fully-coupled", 2) in r and ("fully-coupled", 4) in r:
                rows.append({"quantity": "flappiness FC, dominance n = 2 → 4",
                             "paper": "decreases",
                             col: f"{r[('fully-coupled', 2)]['dominance']:.2f} → {r[('fully-coupled', 4)]['dominance']:.2f}"})
    f13 = res.get("fig13")
    if isinstance(f13, dict):
        for engine in [e for e in ("window", "sim") if any(r["engine"] == e for r in f13["rows"])]:
            col = "window_model" if engine == "window" else "sim"
            for n in f13["n"]:
                vals = [r["dominance"] for p in f13["loss"] for r in f13["rows"]
                        if r["engine"] == engine and r["subflows"] == n and r["loss"] == p]
                rows.append({"quantity": f"Fig. 13 FC n = {n}, dominance at p = "
                                         + " / ".join(f"{p:g}" for p in f13["loss"]),
                             "paper": "grows with window", col: " / ".join(f"{v:.2f}" for v in vals)})
    cols = ("paper", "closed_form", "fluid", "window_model", "sim")
    return [{"quantity": row["quantity"], **{c: row.get(c) for c in cols}} for row in rows]
