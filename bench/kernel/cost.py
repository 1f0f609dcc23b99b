"""Cost per ACK and throughput at line rate (issue 15 item 3; root): BPF mpcc_balia, mpcc_lia,
mpcc_olia (and, with --arms, any parameter set) side by side with the kernel's built-in reno and
cubic, one two-path MPTCP connection (2 subflows) over two unshaped veth pairs (netlab.TwoPaths;
sender on CPU 0, receiver on CPU 1).

Method: R rounds; each round runs every arm for SECS back to back, in an order drawn at random
every round (--seed; the order is kept in the JSON), so each round gives a *paired* ratio
arm ÷ reno and arm ÷ cubic under the same machine state; reported: the median of the paired
ratios and its 95 % percentile-bootstrap interval (target ≥ 0.98). (Before 2026-11-24 the order
was rotated, which keeps every arm's predecessor fixed — OLIA always ran right after LIA and
right before reno — so an effect of the previous transfer would not average out.) Then one more round with kernel.bpf_stats_enabled = 1 (which adds two clock
reads to every BPF call, so it is not used for throughput): run_time_ns / run_cnt of each
struct_ops program = ns per call, and Σ run_time_ns of the arm's programs ÷ ACKs received by the
sender (Tcp InSegs of its namespace) = BPF ns per ACK. The machine has no cycle counter (perf:
cycles <not supported> in this VM), so cycles per ACK = ns per ACK × the nominal clock of
/proc/cpuinfo. CPU per ACK = non-idle CPU time of the whole machine ÷ ACKs (both ends, all
overheads: an upper bound that also shows whether the BPF arms cost more CPU per ACK).

    flock /tmp/mpcc-bench.lock .venv/bin/python bench/kernel/cost.py [--runs 7] [--secs 3]
        [--setups "offloads on;offloads off"] [--arms reno,cubic,balia,lia,olia] [--seed 1] [--json FILE]
    (--arms: ';'-separated when an arm has parameters, e.g. "reno;cubic;olia(per_ack=1)")
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1] / "python"))

from mpcc.lab import netlab  # noqa: E402
from run import bootstrap_ci, bpf_stats, machine, struct_ops_stats  # noqa: E402

BUILTIN = ("reno", "cubic")
SETUPS = {"offloads on": True, "offloads off": False}     # tso/gso/gro (off: an ACK per 1–2 segments)


def cpu_mhz() -> float:
    for ln in Path("/proc/cpuinfo").read_text().splitlines():
        if ln.startswith("cpu MHz"):
            return float(ln.split(":", 1)[1])
    return float("nan")


def measure(arms: list[str], runs: int, secs: float, offload: bool, pin, seed: int = 1) -> dict:
    from mpcc.kernel import bpf
    kname = {a: a if a in BUILTIN else bpf.kernel_name(a) for a in arms}
    prefix = {a: None if a in BUILTIN else bpf.spec(a).algorithm + "_" for a in arms}
    out = {a: {"rounds": [], "stats": None} for a in arms}
    rng = random.Random(seed)
    with contextlib.ExitStack() as stack:
        for a in arms:
            if a not in BUILTIN:
                stack.enter_context(bpf.load(a))
        lab = stack.enter_context(netlab.TwoPaths(offload=offload))
        lab.transfer(lab.server, 1.0, [(7000, "mptcp", "reno")], pin=pin)            # warm-up
        port = 7001
        for i in range(runs + 1):
            stats = i == runs
            order = rng.sample(arms, len(arms))
            for pos, a in enumerate(order):
                port += 1
                # the programs of the arm's own ops table, by member (struct_ops_stats)
                with (bpf_stats() if stats and prefix[a] else contextlib.nullcontext()):
                    st0 = struct_ops_stats(kname[a]) if prefix[a] else {}
                    r = lab.transfer(lab.server, secs, [(port, "mptcp", kname[a])], pin=pin)
                    st1 = struct_ops_stats(kname[a]) if prefix[a] else {}
                got = sum(r["received"].values())
                sub = [s for s in r["ss"] if s["peer"].endswith(f":{port}")]
                row = {"mbps": got * 8 / secs / 1e6, "acks": r["acks"], "cpu_s": r["cpu_s"], "retrans": r["retrans"],
                       "us_per_ack": 1e6 * r["cpu_s"] / max(r["acks"], 1), "subflows": len(sub),
                       "ca": sorted({s["ca"] for s in sub}), "position": pos,
                       "cwnd_mid": [s["cwnd"] for s in sub]}
                if stats and not prefix[a]:
                    continue                   # a built-in control runs no BPF: nothing to count
                if stats:
                    calls = {k: (st1[k][0] - st0.get(k, (0, 0))[0],
                                                               st1[k][1] - st0.get(k, (0, 0))[1]) for k in st1}
                    total_ns = sum(t for _, t in calls.values())
                    row["bpf"] = {k: {"calls": c, "ns_per_call": t / c if c else None} for k, (c, t) in calls.items()}
                    row["bpf_ns_per_ack"] = total_ns / max(r["acks"], 1) if prefix[a] else None
                    out[a]["stats"] = row
                    print(f"  stats round {a:<18} {row['bpf_ns_per_ack']:.1f} BPF ns/ACK "
                          f"{ {k: round(v['ns_per_call'] or 0) for k, v in row['bpf'].items()} }", flush=True)
                    continue
                out[a]["rounds"].append(row)
                print(f"  round {i + 1}/{runs} {a:<18} {row['mbps']:8.0f} Mb/s  {row['us_per_ack']:.2f} µs CPU/ACK  "
                      f"{row['acks']} ACKs  {row['subflows']} subflows {row['ca']}", flush=True)
    return out


def section(label: str, res: dict, arms: list[str], mhz: float) -> list[str]:
    med = lambda xs: statistics.median(xs) if xs else float("nan")        # noqa: E731
    lines = [f"### {label}", "",
             "| congestion control | goodput median (Mb/s) | rounds (Mb/s) | ÷ reno, median of paired rounds "
             "(95 % CI) | ÷ cubic, median of paired rounds (95 % CI) | CPU per ACK, whole machine (µs) | ACKs "
             "per round | BPF ns per ACK (stats round) | ≈ cycles per ACK | "
             "BPF cong_control (before: cong_avoid) ns/call |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for a in arms:
        rr = res[a]["rounds"]
        mbps = [x["mbps"] for x in rr]
        cells = []
        for base in BUILTIN:
            if a == base or base not in res:
                cells.append("–")
                continue
            paired = [x["mbps"] / y["mbps"] for x, y in zip(rr, res[base]["rounds"]) if y["mbps"] > 0]
            lo, hi = bootstrap_ci(paired)
            cells.append(f"{med(paired):.3f} ({lo:.3f}–{hi:.3f})")
        st = res[a]["stats"] or {}
        ns = st.get("bpf_ns_per_ack")
        bpf_calls = st.get("bpf") or {}
        ca = bpf_calls.get("cong_control", bpf_calls.get("cong_avoid", {})).get("ns_per_call")
        lines.append(f"| {a} | {med([x['mbps'] for x in rr]):.0f} | {', '.join(f'{m:.0f}' for m in mbps)} | "
                     f"{cells[0]} | {cells[1]} | {med([x['us_per_ack'] for x in rr]):.2f} | "
                     f"{med([x['acks'] for x in rr]):.0f} | {f'{ns:.1f}' if ns is not None else '–'} | "
                     f"{f'{ns * mhz / 1000:.0f}' if ns is not None else '–'} | {f'{ca:.0f}' if ca else '–'} |")
    lines.append("")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--secs", type=float, default=3.0)
    ap.add_argument("--setups", default=";".join(SETUPS))
    ap.add_argument("--arms", default="reno,cubic,balia,lia,olia")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--seed", type=int, default=1, help="of the random order of the arms in each round")
    ap.add_argument("--markdown", type=Path, help="write the tables here")
    a = ap.parse_args(argv)
    if not netlab.start_as_root("cost"):
        return 2
    arms = netlab.parse_arms(a.arms)
    pin = (0, 1) if (os.cpu_count() or 1) >= 2 else None
    mhz = cpu_mhz()
    head = {"machine": machine(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "loadavg_start": Path("/proc/loadavg").read_text().split()[:3], "cpu_mhz": mhz,
            "runs": a.runs, "secs": a.secs, "arms": arms, "seed": a.seed, "order": "random per round"}
    results, lines = {}, []
    for label in a.setups.split(";"):
        print(f"cost, {label}: {a.runs} rounds × {a.secs:g} s × {len(arms)} arms", flush=True)
        results[label] = measure(arms, a.runs, a.secs, SETUPS[label], pin, a.seed)
        lines += section(label, results[label], arms, mhz)
    head["loadavg_end"] = Path("/proc/loadavg").read_text().split()[:3]
    print("\n".join(lines))
    if a.json:
        a.json.write_text(json.dumps({**head, "results": results}, indent=1) + "\n")
    if a.markdown:
        a.markdown.write_text(f"{head['machine']}; {head['date']}; load {' '.join(head['loadavg_start'])} → "
                              f"{' '.join(head['loadavg_end'])}\n\n" + "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
