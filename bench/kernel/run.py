#!/usr/bin/env python3
"""bench/kernel: the BPF congestion controls on the real kernel (root). Writes RESULTS.md.

1. Cost and throughput — BPF mpcc_balia vs the kernel's built-in reno on the same two-path
   MPTCP setup (two veth pairs between two namespaces, one MPTCP connection, two subflows), with
   mpcc_ewtcp (a = 1: exactly Reno's rule, run as BPF) as a third arm that separates the cost of
   running as BPF from Balia's different reaction to losses. Each round runs the three arms back
   to back (order rotated every round); the paired per-round ratios arm/reno are summarised by
   their median and a 95 % bootstrap interval (target: balia/reno ≥ 0.98). Setups: unshaped with
   offloads on, unshaped with tso/gso/gro off, and tso/gso/gro off with a tbf per path below what
   the CPUs carry (not CPU-starved). Sender and receiver are pinned to CPUs 0 and 1.
   CPU per ACK = non-idle CPU time of the whole machine during the transfer / ACKs the sender
   received (Tcp InSegs of its namespace); the programs' own ns/call from bpf_stats.
2. Coupling — one MPTCP connection (two subflows through one tbf bottleneck in a router
   namespace) against one single-path TCP Reno flow, with the control "tcp2" (two plain TCP Reno
   flows instead). Expected from the design (Peng et al. §II-B): tcp2, EWTCP and kernel reno on
   both subflows ≈ 2 Reno shares; Coupled/Semicoupled/LIA/OLIA/Balia ≈ 1 Reno share or less.
   bench/kernel/notes/share_diag/share_diag.py is the diagnosis behind the setup (RESULTS.md, section 3).

    sudo flock /tmp/mpcc-bench.lock .venv/bin/python bench/kernel/run.py [--runs 10] [--secs 3]
        [--share-secs 15] [--share-runs 3] [--modes ...] [--skip-cost] [--skip-share]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import random
import re
import signal
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1] / "python"))

from mpcc.lab import netlab  # noqa: E402
from mpcc.lab.netlab import bpf_stats  # noqa: E402,F401 (cost.py imports it from here)
from mpcc.kernel import bpf  # noqa: E402


def machine() -> str:
    cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if ln.startswith("model name")), platform.processor())
    return f"{cpu}, {os.cpu_count()} CPUs, Linux {platform.release()}"


def prog_stats(prefix: str) -> dict[str, tuple[int, int]]:
    """run_cnt, run_time_ns of the struct_ops programs whose name starts with prefix (needs
    kernel.bpf_stats_enabled=1)."""
    rows = json.loads(netlab.sh("bpftool", "-j", "prog", "show") or "[]")
    out: dict[str, tuple[int, int]] = {}
    for r in rows:
        name = str(r.get("name", ""))
        if r.get("type") == "struct_ops" and name.startswith(prefix):
            c, t = out.get(name, (0, 0))
            out[name] = (c + int(r.get("run_cnt", 0)), t + int(r.get("run_time_ns", 0)))
    return out


def struct_ops_stats(kname: str) -> dict[str, tuple[int, int]]:
    """run_cnt, run_time_ns of each program in the ops table of the registered struct_ops kname,
    by member (init, cong_avoid, cong_control, ...; needs kernel.bpf_stats_enabled=1): the
    programs of the table, whatever their names (the compat build's are shared by every file)."""
    rows = json.loads(netlab.sh("bpftool", "-j", "struct_ops", "list") or "[]")
    ids = [int(r["id"]) for r in rows if r.get("name") == kname]
    if not ids:
        return {}
    text, docs, dec, i = netlab.sh("bpftool", "-j", "struct_ops", "dump", "id", str(max(ids))), [], json.JSONDecoder(), 0
    while text[i:].strip():             # one JSON value or several, comma-separated without brackets
        doc, i = dec.raw_decode(text, i)
        docs += doc if isinstance(doc, list) else [doc]
        while i < len(text) and (text[i].isspace() or text[i] == ","):
            i += 1
    data = next((d["bpf_struct_ops_tcp_congestion_ops"]["data"] for d in docs
                 if isinstance(d, dict) and "bpf_struct_ops_tcp_congestion_ops" in d), {})
    out: dict[str, tuple[int, int]] = {}
    for member, v in data.items():
        m = re.search(r"prog_id:(\d+)", str(v))
        if m:
            r = json.loads(netlab.sh("bpftool", "-j", "prog", "show", "id", m.group(1)) or "{}")
            out[member] = (int(r.get("run_cnt", 0)), int(r.get("run_time_ns", 0)))
    return out


ARMS = ("reno", "mpcc_ewtcp", "mpcc_balia")   # mpcc_ewtcp (a = 1) is Reno's rule run as BPF

#: The setups of the cost comparison. "pin": sender on CPU 0, receiver on CPU 1 (taskset), so the
#: two ends do not fight for one CPU; "rate": a tbf per path (Mb/s, 100-packet buffer) well below
#: what the CPUs carry, so the ratio measures the congestion control, not CPU starvation.
MODES = {
    "offloads on, unshaped": {"offload": True, "rate": None},
    "tso/gso/gro off, unshaped": {"offload": False, "rate": None},
    "tso/gso/gro off, 2 × 300 Mb/s tbf": {"offload": False, "rate": 300},
}


def bootstrap_ci(xs: list[float], stat=statistics.median, n: int = 4000, seed: int = 1) -> tuple[float, float]:
    """95 % percentile-bootstrap interval of ``stat`` over independent rounds."""
    rng = random.Random(seed)
    vals = sorted(stat([rng.choice(xs) for _ in xs]) for _ in range(n))
    return vals[int(0.025 * n)], vals[int(0.975 * n) - 1]


def cost(runs: int, secs: float, mode: dict, pin: tuple[int, int] | None) -> dict:
    """``runs`` rounds; each round runs the three arms back to back in a rotated order, so a
    round's paired ratios compare arms under the same machine state."""
    rows = {ca: [] for ca in ARMS}
    with bpf.load("balia"), bpf.load("ewtcp"), netlab.TwoPaths(offload=mode["offload"], rate_mbit=mode["rate"]) as lab:
        lab.transfer(lab.server, 1.0, [(7000, "mptcp", "reno")], pin=pin)          # warm-up
        for i in range(runs + 1):
            # rounds 1..runs: goodput; one extra round with kernel.bpf_stats_enabled (which adds a
            # clock read to every BPF call, i.e. only to the BPF arms) for the ns/call columns
            stats = i == runs
            order = ARMS[i % 3:] + ARMS[:i % 3]                            # rotate the order
            for j, ca in enumerate(order):
                port = 7001 + i * 3 + ARMS.index(ca)
                prefix = ca.removeprefix("mpcc_") + "_"
                with (bpf_stats() if stats else contextlib.nullcontext()):
                    st0 = prog_stats(prefix)
                    r = lab.transfer(lab.server, secs, [(port, "mptcp", ca)], pin=pin)
                    st1 = prog_stats(prefix)
                got = sum(r["received"].values())
                subflows = [s for s in r["ss"] if s["ca"] == ca and s["peer"].endswith(f":{port}")]
                d = {}
                for what in ("cong_avoid", "ssthresh"):
                    k = prefix + what
                    d[what] = (st1.get(k, (0, 0))[0] - st0.get(k, (0, 0))[0], st1.get(k, (0, 0))[1] - st0.get(k, (0, 0))[1])
                if stats:
                    dc, dt = d["cong_avoid"]
                    rows.setdefault("stats", {})[ca] = (dc, dt / dc if dc > 0 else None, d["ssthresh"][0])
                    print(f"  stats round {ca:<11} BPF cong_avoid {dc} calls, "
                          f"{(dt / dc if dc > 0 else 0):.0f} ns/call, ssthresh {d['ssthresh'][0]} calls", flush=True)
                    continue
                rows[ca].append({"mbps": got * 8 / secs / 1e6, "acks": r["acks"], "cpu_s": r["cpu_s"],
                                 "retrans": r["retrans"],
                                 "us_per_ack": 1e6 * r["cpu_s"] / max(r["acks"], 1),
                                 "us_per_mb": 1e6 * r["cpu_s"] / max(got / 1e6, 1e-9),
                                 "cwnds": [s["cwnd"] for s in subflows],
                                 "subflows": len(subflows)})
                x = rows[ca][-1]
                print(f"  round {i + 1}/{runs} {ca:<11} {x['mbps']:8.0f} Mb/s  {x['retrans']:6d} retrans  "
                      f"{x['us_per_mb']:.0f} µs CPU/MB  cwnds {x['cwnds']}", flush=True)
    return rows


def cost_section(label: str, c: dict, runs: int, secs: float) -> list[str]:
    st = c.pop("stats", {})
    med = {k: statistics.median(x["mbps"] for x in v) for k, v in c.items()}
    lines = [f"### {label}", "",
             "| congestion control | goodput median (Mb/s) | rounds (Mb/s) | retransmitted segments per round "
             "(median) | CPU per MB median (µs) | CPU per ACK median (µs) | ACKs per round (median) "
             "| subflow cwnds mid-run (median over rounds) | BPF cong_avoid ns/call | BPF ssthresh calls "
             "(stats round) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for k in ARMS:
        per_run = ", ".join(f"{x['mbps']:.0f}" for x in c[k])
        cw = [statistics.median(x["cwnds"]) for x in c[k] if x["cwnds"]]
        ns = st.get(k, (0, None, 0))
        lines.append(
            f"| {k} | {med[k]:.0f} | {per_run} | {statistics.median(x['retrans'] for x in c[k]):.0f} | "
            f"{statistics.median(x['us_per_mb'] for x in c[k]):.0f} | "
            f"{statistics.median(x['us_per_ack'] for x in c[k]):.1f} | "
            f"{statistics.median(x['acks'] for x in c[k]):.0f} | {statistics.median(cw) if cw else 0:.0f} | "
            f"{f'{ns[1]:.0f}' if ns[1] else '–'} | {ns[2] if ns[1] else '–'} |")
    lines.append("")
    for k in ("mpcc_ewtcp", "mpcc_balia"):
        paired = [b["mbps"] / r["mbps"] for r, b in zip(c["reno"], c[k])]
        lo, hi = bootstrap_ci(paired)
        lines.append(f"* **{k}/reno: median of {len(paired)} paired per-round ratios {statistics.median(paired):.3f} "
                     f"(95 % bootstrap CI {lo:.3f}–{hi:.3f})**; ratio of medians {med[k] / med['reno']:.3f}; "
                     f"paired ratios: {', '.join(f'{x:.2f}' for x in paired)}")
    lines += ["", "Target: BPF Balia ≥ 0.98 of Reno.", ""]
    return lines


def share(algos: list[str], runs: int, secs: float, lab_kw: dict) -> dict:
    """One MPTCP connection (or, for the control "tcp2", two plain TCP Reno flows) against one
    TCP Reno flow through one bottleneck; per run: goodput ratio, per-flow loss rate
    (retransmitted / data segments sent) and subflow windows (ss sampled every 0.5 s)."""
    import share_diag
    out = {algo: {"ratios": [], "cwnds": [], "ns_per_cong_avoid": [], "loss_mp": [], "loss_sp": []}
           for algo in algos}
    for i in range(runs):
        for algo in (algos if i % 2 == 0 else algos[::-1]):          # alternate the order
            v = out[algo]
            if algo == "tcp2":
                flows = [(7101, "tcp", "reno"), (7102, "tcp", "reno"), (7103, "tcp", "reno")]
            else:
                ca = "reno" if algo == "reno" else bpf.kernel_name(algo)
                flows = [(7101, "mptcp", ca), (7103, "tcp", "reno")]
            prefix = f"{bpf.spec(algo).algorithm}_cong_avoid" if algo not in ("reno", "tcp2") else "-"
            ctx = bpf.load(algo) if algo not in ("reno", "tcp2") else None
            try:
                with bpf_stats(), share_diag.Lab(**lab_kw) as lab:
                    st0 = prog_stats(prefix)
                    r = share_diag.run(lab, secs, flows)
                    st1 = prog_stats(prefix)
            finally:
                if ctx:
                    ctx.release()
            if prefix in st1:
                dc, dt = st1[prefix][0] - st0.get(prefix, (0, 0))[0], st1[prefix][1] - st0.get(prefix, (0, 0))[1]
                if dc:
                    v["ns_per_cong_avoid"].append(dt / dc)
            rec = r["received"]
            mp, sp = rec[7101] + rec.get(7102, 0), rec[7103]
            v["ratios"].append(mp / max(sp, 1))
            f_mp = [f for (loc, peer), f in r["flows"].items() if not peer.endswith(":7103")]
            f_sp = [f for (loc, peer), f in r["flows"].items() if peer.endswith(":7103")]
            seg = lambda fs: (sum(f["retrans"] for f in fs), sum(f["segs_out"] for f in fs))  # noqa: E731
            (rm, sm), (rs, ss_) = seg(f_mp), seg(f_sp)
            v["loss_mp"].append(rm / max(sm, 1))
            v["loss_sp"].append(rs / max(ss_, 1))
            v["cwnds"].append([round(statistics.median(f["cwnd_samples"])) for f in f_mp])
            print(f"  {algo:<12} run {i + 1}/{runs}: multipath {mp * 8 / secs / 1e6:6.1f} Mb/s, "
                  f"Reno {sp * 8 / secs / 1e6:6.1f} Mb/s, ratio {v['ratios'][-1]:.2f}, loss mp/sp "
                  f"{100 * v['loss_mp'][-1]:.2f}%/{100 * v['loss_sp'][-1]:.2f}%, median cwnds {v['cwnds'][-1]}",
                  flush=True)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--secs", type=float, default=4.0)
    ap.add_argument("--share-secs", type=float, default=15.0)
    ap.add_argument("--share-runs", type=int, default=2)
    ap.add_argument("--skip-share", action="store_true")
    ap.add_argument("--skip-cost", action="store_true")
    ap.add_argument("--share-algos", default="tcp2,reno,ewtcp,coupled,semicoupled,lia,olia,balia,generalized")
    ap.add_argument("--share-burst", type=int, default=3000, help="tbf burst (bytes) of the shared bottleneck")
    ap.add_argument("--share-default-bufs", action="store_true",
                    help="keep the namespaces' default tcp_rmem/tcp_wmem (else 32 MB max, as the testbed)")
    ap.add_argument("--modes", default=";".join(MODES), help="cost setups, ';'-separated (see MODES)")
    ap.add_argument("--no-pin", action="store_true", help="do not pin sender/receiver to CPUs 0/1")
    ap.add_argument("--out", type=Path, default=HERE / "RESULTS.md")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench/kernel needs root")
    bpf.check_environment()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))      # clean up namespaces and holds
    signal.signal(signal.SIGINT, signal.default_int_handler)      # even when started in background
    bpf.cleanup_stale()
    netlab.remove_stale()
    pin = None if a.no_pin or (os.cpu_count() or 1) < 2 else (0, 1)
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load0 = Path("/proc/loadavg").read_text().split()[:3]
    lines = [
        "# bench/kernel — BPF congestion controls on the real kernel", "",
        f"Machine: {machine()}. Date: {when}. Load average at start {' '.join(load0)} (end: see the bottom). "
        f"Command: `sudo flock /tmp/mpcc-bench.lock .venv/bin/python bench/kernel/run.py {' '.join(sys.argv[1:])}`. "
        "Other jobs (compilers, other helpers' tests) may share the 2 CPUs.", "",
        "## 1. Cost and throughput: BPF mpcc_balia (and mpcc_ewtcp = Reno's rule as BPF) vs built-in reno "
        "(two-path MPTCP over veth, 2 subflows)", "",
        f"Method: {a.runs} rounds of {a.secs:g} s per setup; each round runs the three arms back to back, "
        "in an order rotated every round, so each round gives a *paired* ratio (arm ÷ reno of the same "
        "round) taken under the same machine state; we report the median of the paired ratios with a 95 % "
        "percentile-bootstrap interval over rounds (4000 resamples). "
        + ("Sender pinned to CPU 0, receiver to CPU 1 (taskset). " if pin else "No CPU pinning. ")
        + "Setups: veth defaults (offloads on: GRO/TSO, ACKs rare), tso/gso/gro off (MTU-sized "
        "segments), and tso/gso/gro off with a 300 Mb/s tbf (100-packet buffer) on each path — below what "
        "the two CPUs carry, so that setup measures the congestion control rather than CPU starvation. "
        "CPU/ACK = non-idle CPU of the whole machine ÷ ACKs received by the sender (an upper bound "
        "on the sender's per-ACK cost). The BPF program's own cost (`ns/call`) and the number of "
        "ssthresh calls (loss events) come from one extra round with kernel.bpf_stats_enabled.", "",
    ]
    if not a.skip_cost:
        for label in a.modes.split(";"):
            mode = MODES[label]
            print(f"cost, {label}: {a.runs} rounds × {a.secs:g} s, two-path MPTCP", flush=True)
            c = cost(a.runs, a.secs, mode, pin)
            lines += cost_section(label, c, a.runs, a.secs)
    if not a.skip_share:
        algos = a.share_algos.split(",")
        lab_kw = {"rate_mbit": 100, "buffer_pkts": 100, "burst": a.share_burst, "bufs": not a.share_default_bufs}
        print(f"coupling: {a.share_runs} runs × {a.share_secs:g} s per algorithm, {lab_kw}", flush=True)
        s = share(algos, a.share_runs, a.share_secs, lab_kw)
        lines += [
            "## 2. Coupling: one MPTCP connection (2 subflows) vs one TCP Reno through one bottleneck", "",
            f"Router namespace, kernel tbf 100 Mb/s, 100-packet buffer, burst {a.share_burst} B, offloads off"
            + ("" if a.share_default_bufs else ", socket buffers tcp_rmem/tcp_wmem max 32 MB (as the testbed)")
            + f"; {a.share_runs} runs × {a.share_secs:g} s per row, rows alternate order. Ratio = multipath "
            "goodput ÷ Reno goodput. `tcp2` is the control: two plain TCP Reno flows from one host instead of "
            "the MPTCP connection. Loss = retransmitted ÷ data segments sent (from `ss -ti`, sampled every "
            "0.5 s). Design expectation: about 2 for uncoupled (tcp2, kernel reno on each subflow, EWTCP), "
            "about 1 or less for the coupled algorithms.", "",
            "| multipath side | ratio per run | mean ratio (95 % bootstrap CI) | loss multipath / Reno (mean) "
            "| subflow cwnds, median over the run | BPF cong_avoid ns/call |",
            "|---|---|---|---|---|---|",
        ]
        names = {"reno": "kernel reno (uncoupled MPTCP)", "tcp2": "tcp2 (control: 2 TCP Reno flows)"}
        for algo, v in s.items():
            ratios = ", ".join(f"{x:.2f}" for x in v["ratios"])
            lo, hi = bootstrap_ci(v["ratios"], statistics.mean)
            cwnds = "; ".join(str(x) for x in v["cwnds"])
            ns = f"{statistics.median(v['ns_per_cong_avoid']):.0f}" if v["ns_per_cong_avoid"] else "–"
            lines.append(f"| {names.get(algo, bpf.spec(algo).describe() if algo.startswith('generalized') else algo)} "
                         f"| {ratios} | {statistics.mean(v['ratios']):.2f} ({lo:.2f}–{hi:.2f}) | "
                         f"{100 * statistics.mean(v['loss_mp']):.2f} % / {100 * statistics.mean(v['loss_sp']):.2f} % "
                         f"| {cwnds} | {ns} |")
        lines.append("")
    lines.append(f"Load average at the end: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}.")
    a.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
