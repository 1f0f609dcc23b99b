"""Simulator benchmark → bench/sim/RESULTS.md (machine, date, load recorded with the numbers).

1. Data packets simulated per wall-clock second (and per CPU-second) on one core: the engine alone
   (`crates/mpcc-core/examples/simbench`, Table III scenario, Balia, 100 s, no time series),
   best and median of 5 repeats; and the same run through the Python API `mpcc.sim.run`.
2. Wall time of one 100-simulated-second Table III run.
3. Peak resident memory of the engine vs. simulated time (25 … 800 s, fresh process each).
4. Wall and CPU time of the whole Table III reproduction: 20 runs × 6 algorithms
   (`mpcc.sim.peng2016.table3`), local threads on all cores.

Usage: .venv/bin/python bench/sim/run.py [--quick]
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / "target/release/examples/simbench"
sys.path.insert(0, str(ROOT / "python"))

from mpcc import scenario, sim  # noqa: E402
from mpcc.sim import peng2016  # noqa: E402


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{cpu}, {os.cpu_count()} cores, {mem:.0f} GiB, Linux {platform.release()}"


def engine_runs(cfg: dict, repeats: int) -> list[dict]:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(cfg, f)
    try:
        p = subprocess.run([str(BIN), f.name, str(repeats)], capture_output=True, text=True, check=True)
    finally:
        os.unlink(f.name)
    return [json.loads(l) for l in p.stdout.splitlines()]


def main(quick: bool = False) -> None:
    subprocess.run(["cargo", "build", "-q", "--release", "-p", "mpcc-core", "--example", "simbench"], cwd=ROOT,
                   check=True, env={**os.environ, "CARGO_BUILD_JOBS": "1"})
    t3 = scenario.load(ROOT / "scenarios/peng2016/table3.toml")
    balia = peng2016.testbed(sim.with_algorithm(t3, "balia"))
    lines = []
    load0 = os.getloadavg()

    # 1 + 2: engine alone, one core
    runs = engine_runs(sim.core_config(balia, seed=1, sample_interval_s=0), 3 if quick else 5)
    pps = [r["packets_per_s"] for r in runs]
    ppc = [r["packets_per_cpu_s"] for r in runs]
    walls = [r["wall_s"] for r in runs]
    ev_per_pkt = runs[0]["events"] / runs[0]["data_packets"]
    # through the Python API (includes building the result and Arrow tables)
    api = []
    for k in range(3):
        r = sim.run(balia, seed=1, sample_interval_s=0)
        api.append(r.stats["wall_s"])
    r = sim.run(balia, seed=1, sample_interval_s=0.1)
    api_ts = r.stats["wall_s"]

    # 3: memory vs simulated time
    mem = []
    for dur in ([25, 100, 400] if quick else [25, 50, 100, 200, 400, 800]):
        from dataclasses import replace
        longer = balia.with_changes(duration_s=float(dur),
                                    groups=tuple(replace(g, stop_s=float(dur)) for g in balia.groups))
        cfg = sim.core_config(longer, seed=1, sample_interval_s=0)
        rr = engine_runs(cfg, 1)[0]
        mem.append((dur, rr["peak_rss_kb"], rr["data_packets"], rr["wall_s"]))

    # 4: the Table III reproduction
    ru0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    res = peng2016.table3(runs=20, seed=1, progress=False)
    wall_t3 = time.perf_counter() - t0
    ru1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu_t3 = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    load1 = os.getloadavg()

    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines += [
        "# Simulator benchmark (`bench/sim/run.py`)",
        "",
        f"- Date: {now}",
        f"- Machine: {machine()}",
        f"- Load average before / after: {load0[0]:.1f} / {load1[0]:.1f} (other jobs were running on the same 2 cores"
        " when this is > 0.5; the CPU-time column is the load-independent number)",
        "",
        "## Packets per wall-clock second, one core (Table III, Balia, 100 simulated s)",
        "",
        "| what | value |",
        "| --- | --- |",
        f"| engine alone, best of {len(pps)} | {max(pps)/1e6:.2f} M data packets/s |",
        f"| engine alone, median | {statistics.median(pps)/1e6:.2f} M data packets/s |",
        f"| engine alone, per CPU-second (best / median; load-independent) | {max(ppc)/1e6:.2f} / {statistics.median(ppc)/1e6:.2f} M data packets/s |",
        f"| events per data packet | {ev_per_pkt:.2f} |",
        f"| data packets per run | {runs[0]['data_packets']:,} |",
        f"| wall time of one 100 s run, engine (best / median) | {min(walls):.3f} s / {statistics.median(walls):.3f} s |",
        f"| wall time of one 100 s run, `mpcc.sim.run` (best of 3, no time series) | {min(api):.3f} s |",
        f"| same with 0.1 s time series | {api_ts:.3f} s |",
        "| htsim (issue's measurement on this machine, comparable scenario) | ≈ 2.8 M data packets/s, ≈ 4 events/packet, 4 MB peak |",
        "| ns-3.37 (issue) | ≈ 15 k data packets/s |",
        "| target (2 × htsim) | ≥ 5.6 M data packets/s |",
        "",
        "## Peak resident memory of the engine vs. simulated time (no time series)",
        "",
        "| simulated s | peak RSS (MiB) | data packets | wall (s) |",
        "| --- | --- | --- | --- |",
        *[f"| {d} | {kb/1024:.1f} | {n:,} | {w:.2f} |" for d, kb, n, w in mem],
        "",
        "Time series (`sample_interval_s > 0`) grow linearly with simulated time by design"
        " (one row per subflow and link per sample).",
        "",
        "## Whole Table III reproduction: 20 runs × 6 algorithms, local threads on all cores",
        "",
        f"- wall: {wall_t3:.1f} s; CPU (user+sys): {cpu_t3:.1f} s "
        f"(≈ {cpu_t3 / (os.cpu_count() or 1):.1f} s of wall on an otherwise idle {os.cpu_count()}-core machine); target < 60 s",
        "",
        "| algorithm | MP (Mb/s) | SP (Mb/s) | paper MP | paper SP |",
        "| --- | --- | --- | --- | --- |",
        *[f"| {a} | {v['mp'][0]:.3f} ± {v['mp'][1]:.3f} | {v['sp'][0]:.3f} ± {v['sp'][1]:.3f} | "
          f"{v['paper']['mp']} | {v['paper']['sp']} |" for a, v in res.items()],
        "",
    ]
    out = Path(__file__).with_name("RESULTS.md")
    out.write_text("\n".join(lines))
    print("\n".join(lines))
    if not quick:
        peng_tables(now)


def peng_tables(now: str) -> None:
    """Tables IV, V and Fig. 3 (20 runs; Table III is above) → bench/sim/PENG2016.md."""
    t4 = peng2016.table4(runs=20, seed=1, progress=False)
    t5 = peng2016.table5(runs=20, seed=1, progress=False)
    f3 = peng2016.fig3(runs=5, seed=1, progress=False)
    f = lambda mc: f"{mc[0]:.3f} ± {mc[1]:.3f}"
    lines = [
        "# Peng et al. Tables IV, V and Fig. 3 on the simulator (`bench/sim/run.py`)",
        "",
        f"{now}; 20 runs (Fig. 3: 5), seeds 1…; `[sim] host_jitter_s = 0.001` (Dummynet tick, see"
        " `python/mpcc/sim/peng2016.py`). Throughput = packets delivered × 1500 B (wire size).",
        "",
        "## Table IV (WiFi 8 Mb/s 10 ms + 3G 2 Mb/s 100 ms, one MP flow)",
        "",
        "| algorithm | paper (Mb/s) | sim (Mb/s) | WiFi | 3G |",
        "| --- | --- | --- | --- | --- |",
        *[f"| {a} | {v['paper']['mp']} | {f(v['mp'])} | {f(v['paths'][0])} | {f(v['paths'][1])} |" for a, v in t4.items()],
        "",
        "## Table V (20 Mb/s, 10 ms; 5 SP flows on link 2 during 40–80 s)",
        "",
        "| algorithm | paper conv. (s, longest) | sim conv. mean (s) | sim conv. longest (s) | paper SP (Mb/s) | sim SP (Mb/s) |",
        "| --- | --- | --- | --- | --- | --- |",
        *[f"| {a} | {v['paper']['convergence_s']} | {f(v['convergence_s'])} | {v['convergence_max_s']:.3g}"
          f"{' (' + str(v['not_converged']) + ' never)' if v['not_converged'] else ''} | {v['paper']['sp']} | {f(v['sp'])} |"
          for a, v in t5.items()],
        "",
        "## Fig. 3 (one 10 Mb/s link, 10 ms, 50 packets: MP flow with 2 routes vs. one Reno flow)",
        "",
        "| algorithm | empirical D_s | CV of total cwnd | rate (Mb/s) |",
        "| --- | --- | --- | --- |",
        *[f"| {a} | {f(v['ds'])} | {f(v['total_cwnd_cv'])} | {f(v['rate_mbps'])} |" for a, v in f3.items()],
        "",
    ]
    Path(__file__).with_name("PENG2016.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
