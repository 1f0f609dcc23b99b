"""Example 1 of Tang et al. (Table I): Reno vs FAST on one 100 Mbps link, buffer 400 and 80
packets, without (1a) and with (1b) Algorithm 2, at packet level; Algorithm 2's w from one
calibration run (:func:`calibrate_w`, footnote 6)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .packet import EXAMPLE1_ALPHA0, EXAMPLE1_MEASURE, mean_over_runs, plot_packet, run_packet_jobs
from .paper import PAPER_TABLE1

def calibrate_w(reno: float, fast: float, w_cal: float, alpha0: float = EXAMPLE1_ALPHA0) -> dict:
    """Algorithm 2's w that gives Reno and FAST equal rates (footnote 6), from one calibration
    measurement: the mean rates ``reno``, ``fast`` (packets/ms) of a run with Algorithm 2 at
    w = ``w_cal`` (s). Returns the w (s) and the intermediate quantities.

    At Algorithm 2's fixed point FAST's rate is x_F = α₀/(l·w) (from α = α* = q/(l·w)·α₀ and
    x_F = α/q), so equal rates x* need w = α₀/(l*·x*), with l* the loss rate *at the equal-rate
    point*:

    * l_cal = α₀/(w_cal·x_F): the loss rate Algorithm 2's fixed point acts on in the calibration
      run (the l for which x_F = α₀/(l·w) holds; Algorithm 2 moves α by ≤ δ towards a noisy
      per-interval α*, so this is below the mean of the per-interval l);
    * x* = (x_R + x_F)/2: the two flows share what they got together in the calibration run;
    * l* = l_cal·(x_R/x*)²: Reno's response function x_R = √(3/2)/(T√l) — the m = p price of
      Reno in §VII — at the same buffer (same RTT T). Giving Reno more bandwidth lowers the loss
      rate, so l* < l_cal when Reno got less than x* (using l_cal itself, ``w_fixed_l``, ignores
      that and undershoots);
    * w = α₀/(l*·x*) = w_cal·x_F·x*/x_R².
    """
    if min(reno, fast, w_cal, alpha0) <= 0:
        raise ValueError("calibrate_w needs positive rates, w_cal and alpha0")
    x_r, x_f = 1e3 * reno, 1e3 * fast  # packets/s, so that l·w·x is dimensionless
    l_cal = alpha0 / (w_cal * x_f)
    x_star = 0.5 * (x_r + x_f)
    l_star = l_cal * (x_r / x_star) ** 2
    return {"w_s": alpha0 / (l_star * x_star), "w_cal_s": w_cal, "alpha0": alpha0,
            "reno_cal": reno, "fast_cal": fast, "target_rate": x_star / 1e3,
            "l_cal": l_cal, "l_target": l_star, "w_fixed_l_s": alpha0 / (l_cal * x_star)}


def example1(scenario_dir: str | Path, *, runs: int = 20, seed: int = 1, duration_s: float | None = None,
             measure: tuple[float, float] | None = EXAMPLE1_MEASURE, workers: int = 1, progress: bool = False,
             out_dir: str | Path | None = None, w: str | float | None = "calibrate") -> dict:
    """Table I: Reno vs FAST on one 100 Mbps link, buffer 400 and 80 packets, without (1a) and with
    (1b) Algorithm 2, packet-level. Rates are averaged over ``runs`` seeds in the ``measure`` window
    and given in packets per ms (1500-byte packets) like the paper; with Algorithm 2 also the mean α
    and Algorithm 2's own q and l in the window. ``out_dir``: Fig. 11–13-style plots.

    The 1b rows use the files' w = 125 s (the paper's). ``w`` adds two more 1b rows, both buffers at
    one other w: ``"calibrate"`` derives it by :func:`calibrate_w` from the B = 400, w = 125 s rows
    (the calibration set; B = 80 is held out), a number is used as given, ``None`` adds nothing."""
    jobs = [(str(Path(scenario_dir) / f"{name}.toml"), duration_s, seed + k, measure, 60.0)
            for name in PAPER_TABLE1 for k in range(runs)]
    res = run_packet_jobs(jobs, workers, progress, "Example 1 runs")
    out = {"runs": runs, "measure_s": res[0]["measure_s"], "rows": {}}
    for name, (paper_reno, paper_fast) in PAPER_TABLE1.items():
        out["rows"][name] = _example1_row([r for r in res if r["name"] == name], name, paper_reno, paper_fast)
    if w is not None:
        if w == "calibrate":
            cal_name = "example1b-b400"
            cal_rows = [r for r in res if r["name"] == cal_name]
            cal = calibrate_w(out["rows"][cal_name]["reno"], out["rows"][cal_name]["fast"],
                              cal_rows[0]["adapt_w"]["fast"], cal_rows[0]["alpha0"]["fast"])
            cal.update(calibration_rows=cal_name, calibration_seeds=[r["seed"] for r in cal_rows],
                       l_alg2_mean=out["rows"][cal_name]["alg2_l"],
                       l_fast_pooled=mean_over_runs(cal_rows, "loss_rate", "fast"))
            out["calibration"] = cal
            w_new = cal["w_s"]
        else:
            w_new = float(w)
            if not w_new > 0:
                raise ValueError(f"w must be > 0 seconds or 'calibrate', got {w!r}")
        extra = {f"{name}-w{w_new:.0f}": name for name in PAPER_TABLE1 if name.startswith("example1b")}
        jobs = [(str(Path(scenario_dir) / f"{name}.toml"), duration_s, seed + k, measure, 60.0, w_new, label)
                for label, name in extra.items() for k in range(runs)]
        res2 = run_packet_jobs(jobs, workers, progress, f"Example 1b runs at w = {w_new:.0f} s")
        for label in extra:
            out["rows"][label] = _example1_row([r for r in res2 if r["name"] == label], label, None, None)
        out["w_s"] = w_new
        res += res2
    if out_dir is not None:
        out["plots"] = plot_packet(Path(out_dir), res, list(out["rows"]), "tang2010_example1",
                                    {"reno": "Reno", "fast": "FAST"})
    return out


def _example1_row(rs, name, paper_reno, paper_fast):
    rn, fs = mean_over_runs(rs, "rates", "reno"), mean_over_runs(rs, "rates", "fast")
    per_seed = [r["rates"]["reno"] / r["rates"]["fast"] for r in rs]
    row = {"paper_reno": paper_reno, "paper_fast": paper_fast,
           "paper_ratio": round(paper_reno / paper_fast, 2) if paper_reno is not None else None,
           "reno": rn, "fast": fs, "ratio": rn / fs, "ratio_per_seed": per_seed,
           "ratio_range": [min(per_seed), max(per_seed)],
           "utilization": mean_over_runs(rs, "utilization", "bottleneck"),
           "wall_s_per_run": float(np.mean([r["wall_s"] for r in rs]))}
    if name.startswith("example1b"):
        row.update(w_s=mean_over_runs(rs, "adapt_w", "fast"), alpha=mean_over_runs(rs, "alpha", "fast"),
                   alpha_end=mean_over_runs(rs, "alpha_end", "fast"),
                   alg2_q_ms=1e3 * mean_over_runs(rs, "alg2_q_s", "fast"), alg2_l=mean_over_runs(rs, "alg2_l", "fast"),
                   fast_loss_rate=mean_over_runs(rs, "loss_rate", "fast"))
    return row
