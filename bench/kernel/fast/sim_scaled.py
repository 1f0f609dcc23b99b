"""The simulator on the kernel's scaled Table I (mpcc.reproduce.tang2010.kernel.scaled_down, k = 10):
does the ÷10 network itself give the kernel's ratios, or the paper-scale simulator's? Per
configuration and seed: Reno/FAST rates (packets/ms ×10), FAST's per-packet loss rate (drops +
marks of its own packets / sent) and mean α in the window (Algorithm 2 rows).

    nice .venv/bin/python bench/kernel/fast/sim_scaled.py OUT.json [DURATION WARMUP SEEDS [W [K]]]

W: Algorithm 2's w (s, at that scale) instead of the scaled paper value (125/k² s; "-" keeps it);
K: the scale factor (default 10, the kernel's); rates are reported ×K.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np


def main(out: str, duration: float, warmup: float, seeds: int, w: float | None, k: float = 10.0) -> None:
    from mpcc import scenario as scen
    from mpcc.hetero import packet
    from mpcc.reproduce.common import SCENARIO_DIR
    from mpcc.reproduce.tang2010 import kernel
    from mpcc.reproduce.tang2010.packet import adapts, with_adapt_w

    res = {"duration_s": duration, "warmup_s": warmup, "adapt_w": w, "k": k, "started_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())}
    for name in kernel.PAPER_TABLE1:
        s = kernel.scaled_down(scen.load(SCENARIO_DIR / "tang2010" / f"{name}.toml"), k).with_changes(duration_s=duration)
        if w is not None:
            s = with_adapt_w(s, w)
        rows = []
        for seed in range(1, seeds + 1):
            fr = packet.run(s, seed=seed, measure=(warmup, duration), sample_interval_s=1.0)
            ppm = 1e6 / (8.0 * s.packet_bytes) / 1e3 * k
            g = fr.result.groups
            row = {"seed": seed, "reno": g["reno"].rate_mbps * ppm, "fast": g["fast"].rate_mbps * ppm,
                   "fast_loss_rate": g["fast"].extra["losses"] / g["fast"].extra["sent_pkts"],
                   "reno_loss_rate": g["reno"].extra["losses"] / g["reno"].extra["sent_pkts"],
                   "queue_mean_pkts": packet.mean_queues(fr, warmup, duration)}
            fg = next(x for x in s.groups if x.name == "fast")
            if adapts(fg):
                ta, aa = packet.alpha_trajectory(fr, "fast")
                sel = ta >= warmup
                row["alpha_mean"] = float(aa[sel].mean()) if sel.any() else None
            row["ratio"] = row["reno"] / row["fast"]
            rows.append(row)
        res[name] = {"runs": rows, "reno": float(np.mean([r["reno"] for r in rows])),
                     "fast": float(np.mean([r["fast"] for r in rows]))}
        res[name]["ratio"] = res[name]["reno"] / res[name]["fast"]
        print(name, json.dumps({k: (round(v, 3) if isinstance(v, float) else v) for k, v in res[name].items() if k != "runs"}),
              "FAST l", [f"{r['fast_loss_rate']:.4f}" for r in rows], "Reno l", [f"{r['reno_loss_rate']:.4f}" for r in rows],
              "alpha", [r.get("alpha_mean") and round(r["alpha_mean"], 1) for r in rows], flush=True)
    with open(out, "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    a = sys.argv[1:]
    main(a[0], float(a[1]) if len(a) > 1 else 420.0, float(a[2]) if len(a) > 2 else 168.0,
         int(a[3]) if len(a) > 3 else 3, float(a[4]) if len(a) > 4 and a[4] != "-" else None,
         float(a[5]) if len(a) > 5 else 10.0)
