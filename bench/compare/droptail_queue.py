"""Mean queue of drop-tail links in the sim against the fluid model's half-buffer rule.

    nice -n 10 .venv/bin/python bench/compare/droptail_queue.py [--scenarios 15] [--duration 30]

Generated drop-tail networks (mpcc.scenario_gen, aqm="droptail"), one sim run each: for every
link the fluid model prices (p_l > 0) and the sim uses ≥ 95 %, the time-mean queue in the
measurement window over the buffer. `rtt = "propagation+queue"` assumes 0.5 (docs/fluid.md).
Also printed: the error of a desynchronised-sawtooth estimate, B − (BDP + B)/(4N) (N flows
crossing the link, BDP at their mean propagation RTT: one flow halving its window of
(BDP + B)/N drains the queue by half that, which then refills), as a candidate replacement.
"""

from __future__ import annotations

import argparse
from dataclasses import replace

import numpy as np

from mpcc import fluid, scenario_gen, sim
from mpcc.errors import MpccError


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenarios", type=int, default=30)
    ap.add_argument("--duration", type=float, default=30.0)
    a = ap.parse_args()
    ratios = []
    for seed in range(1, a.scenarios + 1):
        s = scenario_gen.generate(seed, aqm="droptail", algorithms_=scenario_gen.FLUID_ALGORITHMS,
                                  ranges=replace(scenario_gen.Ranges(), duration_s=a.duration))
        try:
            eq = fluid.equilibrium(s)
        except MpccError as e:
            print(f"scenario {seed}: fluid: {str(e).splitlines()[0][:120]}")
            continue
        run = sim.run(s, seed=1)
        t0, _ = run.result.extra["measure_s"]
        lk = run.timeseries["links"]
        for i, l in enumerate(s.links):
            m = (lk["link"] == l.name) & (lk["time_s"] >= t0)
            q = float(lk["queue_pkts"][m].astype(float).mean())
            u = run.result.links[l.name].extra["utilization"]
            if eq.p[i] > 0 and u >= 0.95:
                taus = [s.path_delay_s(p) for g in s.groups for p in g.paths if l.name in p for _ in range(g.count)]
                B = l.buffer_pkts
                saw = max(0.0, 1.0 - (s.capacity_pps(l) * float(np.mean(taus)) + B) / (4 * len(taus) * B))
                ratios.append((q / B, saw))
                print(f"scenario {seed} {l.name}: buffer {l.buffer_pkts}, mean queue / buffer {q / l.buffer_pkts:.2f}, used {u:.3f}")
    r = np.array(ratios)
    q1, med, q3 = np.percentile(r[:, 0], [25, 50, 75])
    print(f"{len(r)} priced links ≥ 95 % used: mean queue / buffer median {med:.2f} (IQR {q1:.2f}–{q3:.2f})")
    for name, pred in (("half buffer", np.full(len(r), 0.5)), ("sawtooth B − (BDP + B)/(4N)", r[:, 1])):
        err = r[:, 0] - pred
        print(f"  {name}: median |error| {np.median(np.abs(err)):.3f} of the buffer, mean error {np.mean(err):+.3f}, "
              f"correlation {np.corrcoef(r[:, 0], pred)[0, 1] if np.std(pred) > 0 else float('nan'):.2f}")


if __name__ == "__main__":
    main()
