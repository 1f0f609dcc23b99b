"""Table-III-like drop-tail networks of other sizes, written WITHOUT a [sim] table: does the
simulator keep the fluid model's order of the multipath per-flow rates,
EWTCP > Semicoupled > LIA > Balia > Coupled (Peng et al. Table III)?

    nice -n 10 .venv/bin/python bench/compare/droptail_order.py   (or python -m mpcc.compare.droptail_order) [--seeds 3] [--jitter S]

``--jitter S`` writes ``[sim] host_jitter_s = S`` into the files (to compare with the default).
Prints per size the fluid and the sim (mean over seeds) per-flow rate of the multipath group
for each algorithm and whether the order holds.
"""

from __future__ import annotations

import argparse

import numpy as np

from mpcc import fluid, scenario, sim

ORDER = ("ewtcp", "semicoupled", "lia", "balia", "coupled")

#: (name, multipath flows, single-path Reno flows, links, capacity Mb/s, one-way delay ms, buffer pkts)
SIZES = (
    ("20+20, 2x40 Mb/s, 5 ms, 50 pkts", 20, 20, 2, 40.0, 5.0, 50),
    ("10+10, 2x30 Mb/s, 20 ms, 100 pkts", 10, 10, 2, 30.0, 20.0, 100),
    ("10+10, 3x30 Mb/s, 20 ms, 100 pkts", 10, 10, 3, 30.0, 20.0, 100),
    ("40+20, 2x100 Mb/s, 10 ms, 100 pkts", 40, 20, 2, 100.0, 10.0, 100),
)


def toml(algo: str, n_mp: int, n_sp: int, n_links: int, cap: float, delay: float, buf: int,
         duration: float = 60.0, jitter: float | None = None) -> str:
    links = "".join(f'[[links]]\nname = "l{i + 1}"\ncapacity_mbps = {cap}\ndelay_ms = {delay}\nbuffer_pkts = {buf}\n\n'
                    for i in range(n_links))
    paths = ", ".join(f'["l{i + 1}"]' for i in range(n_links))
    text = (f'name = "table3-like"\nduration_s = {duration}\n\n{links}'
            f'[[groups]]\nname = "mp"\ncount = {n_mp}\nalgorithm = "{algo}"\npaths = [{paths}]\n\n'
            f'[[groups]]\nname = "sp"\ncount = {n_sp}\nalgorithm = "reno"\npaths = [["l{n_links}"]]\n')
    if jitter is not None:
        text += f"\n[sim]\nhost_jitter_s = {jitter}\n"
    return text


def measure(size, seeds: int, jitter: float | None) -> dict:
    _, n_mp, n_sp, n_links, cap, delay, buf = size
    out = {"fluid": {}, "sim": {}, "ci": {}}
    for a in ORDER:
        s = scenario.loads(toml(a, n_mp, n_sp, n_links, cap, delay, buf, jitter=jitter), f"<{a}>")
        out["fluid"][a] = fluid.to_result(s, fluid.equilibrium(s)).groups["mp"].rate_mbps
        res = sim.run_many(s, runs=seeds, seed=1, progress=False, sample_interval_s=0).result
        out["sim"][a] = res.groups["mp"].rate_mbps
        out["ci"][a] = res.groups["mp"].extra["ci95_mbps"]
    return out


def in_order(rates: dict) -> bool:
    v = [rates[a] for a in ORDER]
    return all(x > y for x, y in zip(v, v[1:]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--jitter", type=float, default=None)
    a = ap.parse_args()
    print("| size | engine | " + " | ".join(ORDER) + " | order |")
    print("| --- | --- | " + " | ".join("---" for _ in ORDER) + " | --- |")
    for size in SIZES:
        m = measure(size, a.seeds, a.jitter)
        print(f"| {size[0]} | fluid | " + " | ".join(f"{m['fluid'][x]:.3f}" for x in ORDER) + f" | {in_order(m['fluid'])} |")
        print(f"| | sim ({a.seeds} seeds) | " + " | ".join(f"{m['sim'][x]:.3f} ± {m['ci'][x]:.2f}" for x in ORDER)
              + f" | {in_order(m['sim'])} |", flush=True)


if __name__ == "__main__":
    main()
