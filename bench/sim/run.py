"""Simulator benchmark → bench/sim/RESULTS.md (machine, date, load recorded with the numbers).

1. Data packets simulated per wall-clock second (and per CPU-second) on one core: the engine alone
   (`crates/mpcc-core/examples/simbench`, Table III scenario, Balia, 100 s, no time series),
   best and median of 5 repeats; and the same run through the Python API `mpcc.sim.run`.
2. Wall time of one 100-simulated-second Table III run.
3. Peak resident memory of the engine vs. simulated time (25 … 800 s, fresh process each).
4. Wall and CPU time of the whole Table III reproduction: 20 runs × 6 algorithms
   (`mpcc.reproduce.peng2016.sim.table3`), local threads on all cores.

Usage: .venv/bin/python bench/sim/run.py [--quick | --peng]
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
from mpcc.reproduce.peng2016 import sim as peng2016  # noqa: E402


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
    """Tables III, IV, V and Fig. 3 (20 runs; Fig. 3: 5) with the simulator's default host
    behaviour and with the paper's Linux 3.11 hosts (``linux_3_11``) → bench/sim/PENG2016.md."""
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    res = {}
    for l311 in (False, True):
        res[l311] = {
            "t3": peng2016.table3(runs=20, seed=1, progress=False, linux_3_11=l311),
            "t4": peng2016.table4(runs=20, seed=1, progress=False, linux_3_11=l311),
            "t5": peng2016.table5(runs=20, seed=1, progress=False, linux_3_11=l311),
            "f3": peng2016.fig3(runs=5, seed=1, progress=False, linux_3_11=l311),
        }
    wall = time.perf_counter() - t0
    load1 = os.getloadavg()
    f = lambda mc: f"{mc[0]:.3f} ± {mc[1]:.3f}"  # noqa: E731
    c = lambda mc: f"{mc[0]:.2f} ± {mc[1]:.2f}"  # noqa: E731

    def longest(v):
        return f"{v['convergence_max_s']:.3g}" + (f" ({v['not_converged']} never)" if v["not_converged"] else "")

    new, old = res[True], res[False]
    lines = [
        "# Peng et al. Tables III–V and Fig. 3 on the simulator (`bench/sim/run.py --peng`)",
        "",
        f"{now}; {machine()}; load average {load0[0]:.1f} before / {load1[0]:.1f} after (wall {wall:.0f} s).",
        "20 runs (Fig. 3: 5), seeds 1…; `[sim] host_jitter_s = 0.001` (Dummynet tick). Throughput ="
        " packets delivered × 1500 B (wire size). Two host models (`python/mpcc/reproduce/peng2016/sim.py`):",
        "**3.11** = the paper's Linux 3.11.8 hosts (`delayed_ack`, `per_ack_increase`,"
        " `slow_start_at_ssthresh`; the default of `table5`), **modern** = the simulator's defaults"
        " (one ACK per packet, increase per acknowledged packet, slow start while cwnd < ssthresh;"
        " the default of `table3`, `table4`, `fig3`). OLIA follows mptcp_olia.c in both (per-ACK"
        " integer counter, ≤ slow-start test).",
        "",
        "## Table V (20 Mb/s, 10 ms; 5 SP flows on link 2 during 40–80 s)",
        "",
        "Convergence (footnote 2): first time after 80 s that the MP flow's route-2 window reaches its"
        " mean over 10–40 s (≈ 65 packets here; the paper's \"e.g., 60\"). The paper reports the longest"
        " of its runs.",
        "",
        "| algorithm | paper conv. (s, longest) | 3.11: mean (s) | 3.11: longest | modern: mean (s) | modern: longest"
        " | paper SP (Mb/s) | 3.11: SP (Mb/s) | modern: SP |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        *[f"| {a} | {v['paper']['convergence_s']} | {c(v['convergence_s'])} | {longest(v)} |"
          f" {c(old['t5'][a]['convergence_s'])} | {longest(old['t5'][a])} | {v['paper']['sp']} | {f(v['sp'])} |"
          f" {f(old['t5'][a]['sp'])} |" for a, v in new["t5"].items()],
        "",
        "Why **modern** is about half the paper: Linux 3.11 (the paper's kernel) ran slow start and"
        " congestion avoidance once per ACK, whatever the ACK acknowledged, and Linux receivers send"
        " one ACK per two segments: every route gained ≈ 1/2 packet per RTT, not 1 (the sim's default"
        " and Linux ≥ 4.0, which counts acknowledged packets; our kernel testbed runs 6.18, so its"
        " times are also about half). The reference window and \"longest\" are not the cause: the"
        " reference (≈ 65) is above the paper's \"e.g., 60\", and the longest of 20 runs is at most"
        " ≈ 20 % above the mean.",
        "",
        "Why OLIA is slow (3.11) and fast (modern): after 80 s route 2 has w ≈ 3 and ε_r = 0, and"
        " mptcp_olia.c rounds its per-ACK increase w_2/(w_1+w_2)² ≈ 7·10⁻⁴ down to 0 (2⁻¹⁰"
        " counter): it only grows once it becomes a best path (ℓ_2/τ_2² > ℓ_1/τ_1², acked data since"
        " its last loss vs. route 1's inter-loss interval), then by ε_r/w_r = 1/(2w_2) per ACK. Seed 1,"
        " 81–84 s / 60–80 s: with 3.11 hosts a 3-packet window is acknowledged as 2 + 1 (the odd"
        " packet after the 40 ms timer): route 2 sends 95 packets/s with srtt 42 ms, route 1 loses"
        " every 5,600 packets (srtt 40 ms), so route 2 must send ≈ 6,000 packets: ≈ 50 s. Modern: 210"
        " packets/s, srtt 21 ms, route 1 every 3,000 packets (srtt 39 ms): ≈ 900 packets, ≈ 5 s.",
        "",
        "## Table III (Fig. 2 network, N1 = N2 = 30, 60 Mb/s, 5 ms), Mb/s per flow",
        "",
        "| algorithm | paper MP | modern MP | 3.11 MP | paper SP | modern SP | 3.11 SP |",
        "| --- | --- | --- | --- | --- | --- | --- |",
        *[f"| {a} | {v['paper']['mp']} | {f(v['mp'])} | {f(new['t3'][a]['mp'])} | {v['paper']['sp']} | {f(v['sp'])} |"
          f" {f(new['t3'][a]['sp'])} |" for a, v in old["t3"].items()],
        "",
        "## Table IV (WiFi 8 Mb/s 10 ms + 3G 2 Mb/s 100 ms, one MP flow), Mb/s",
        "",
        "| algorithm | paper | modern | modern WiFi / 3G | 3.11 | 3.11 WiFi / 3G |",
        "| --- | --- | --- | --- | --- | --- |",
        *[f"| {a} | {v['paper']['mp']} | {f(v['mp'])} | {f(v['paths'][0])} / {f(v['paths'][1])} | {f(new['t4'][a]['mp'])} |"
          f" {f(new['t4'][a]['paths'][0])} / {f(new['t4'][a]['paths'][1])} |" for a, v in old["t4"].items()],
        "",
        "## Fig. 3 (one 10 Mb/s link, 10 ms, 50 packets: MP flow with 2 routes vs. one Reno flow)",
        "",
        "| algorithm | modern D_s | modern CV of total cwnd | 3.11 D_s | 3.11 CV | modern rate (Mb/s) |",
        "| --- | --- | --- | --- | --- | --- |",
        *[f"| {a} | {f(v['ds'])} | {f(v['total_cwnd_cv'])} | {f(new['f3'][a]['ds'])} | {f(new['f3'][a]['total_cwnd_cv'])} |"
          f" {f(v['rate_mbps'])} |" for a, v in old["f3"].items()],
        "",
    ]
    Path(__file__).with_name("PENG2016.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    if "--peng" in sys.argv:  # only the Peng et al. tables (PENG2016.md)
        peng_tables(datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
    else:
        main(quick="--quick" in sys.argv)
