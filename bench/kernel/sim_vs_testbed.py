#!/usr/bin/env python3
"""bench/kernel/sim_vs_testbed.py: the packet simulator against the kernel testbed, per group, on
random RED scenarios that are in no paper (root).

Scenarios (``generate(seed)``): 2–3 RED links (10–30 Mb/s, 5–40 ms one way, 100-packet buffers,
RED min 10 / max 40 / max_p 0.1), one multipath group (1–4 flows, an algorithm drawn from the
BPF set) with two routes — each route one or two links — and 1–4 single-path Reno flows on
every link. Each is run once on the testbed and with 2 seeds in the simulator, same duration
and warm-up; the testbed's payload rate is converted to packets (× packet_bytes / 1448) so both
count the same bytes. Relative difference = (testbed − sim) / sim per group.

    sudo flock /tmp/mpcc-bench.lock .venv/bin/python bench/kernel/sim_vs_testbed.py [--n 4] [--secs 40]
        [--host-sysctl K=V (sender hosts)] [--sysctl K=V (sender hosts and the server)] [--out DIR]

With ``--out`` each seed's testbed run is kept (DIR/seed<N>/run0: sender.csv, msk.csv, linkem
stats) and the multipath group's MPTCP connection level is summarised (``msk_limits``): why its
subflows sat idle — no data left at the connection level, or its shared receive window full.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "python"))

ALGORITHMS = ("ewtcp", "semicoupled", "lia", "olia", "balia", "coupled")
PAYLOAD = 1448  # TCP payload of a 1500-byte packet with timestamps


def generate(seed: int, secs: float = 40.0) -> str:
    rng = random.Random(seed)
    n = rng.choice((2, 3))
    links = [(f"l{i}", rng.choice((10.0, 15.0, 20.0, 25.0, 30.0)), float(rng.randrange(5, 41, 5))) for i in range(n)]
    text = [f'name = "rand-red-{seed}"', f"duration_s = {secs}"]
    for name, cap, d in links:
        text += ["[[links]]", f'name = "{name}"', f"capacity_mbps = {cap}", f"delay_ms = {d}", "buffer_pkts = 100",
                 'aqm = "red"', "red = {min_th = 10, max_th = 40, max_p = 0.1}"]
    names = [l[0] for l in links]
    a, b = rng.sample(names, 2)
    r1 = [a] if n == 2 or rng.random() < 0.5 else [a, rng.choice([x for x in names if x not in (a, b)])]
    r2 = [b]
    paths = ", ".join("[" + ", ".join(f'"{x}"' for x in r) + "]" for r in (r1, r2))
    text += ["[[groups]]", 'name = "mp"', f"count = {rng.randint(1, 4)}", f'algorithm = "{rng.choice(ALGORITHMS)}"',
             f"paths = [{paths}]"]
    for name in names:
        text += ["[[groups]]", f'name = "sp-{name}"', f"count = {rng.randint(1, 4)}", 'algorithm = "reno"',
                 f'paths = [["{name}"]]']
    return "\n".join(text) + "\n"


COUNTERS = ("TCPTimeouts", "TCPLossProbes", "TCPFastRetrans", "TCPSpuriousRTOs", "RetransSegs", "OutSegs")


def host_counters(ns: str) -> dict[str, int]:
    """TCP counters of a host namespace (/proc/net/netstat TcpExt and /proc/net/snmp Tcp)."""
    out: dict[str, int] = {}
    for f in ("/proc/net/netstat", "/proc/net/snmp"):
        p = subprocess.run(["ip", "netns", "exec", ns, "cat", f], capture_output=True, text=True)
        lines = p.stdout.splitlines()
        for head, vals in zip(lines[::2], lines[1::2]):
            for k, v in zip(head.split()[1:], vals.split()[1:]):
                if k in COUNTERS or (head.startswith("MPTcpExt") and int(v) > 0):
                    out[k] = int(v)
    return out


MSS = 1448


def msk_limits(run_dir: Path, gi: int, a: float, b: float) -> dict[str, float]:
    """A multipath group's MPTCP connection level in [a, b] (the testbed sender's ``msk.csv``):
    shares of the samples with data not yet handed to any subflow (``waiting``), with the
    connection's bytes in flight within 2 MSS of the peer's shared receive window
    (``rwnd_full``), with data queued on a subflow behind its window (``sub_queued``); means in KB;
    the split of the idle subflow samples, :func:`mpcc.testbed.engine.connection_limits`; per
    route, the share of subflow samples with window room (``path_idle``) and the mean data a
    subflow holds, in flight and not yet sent (``path_queued_kb``; NaN from a run recorded
    before the sampler had the subflows' ``notsent``)."""
    import numpy as np
    from mpcc.testbed import engine as tb
    m = tb._read_csv(run_dir / "msk.csv", tb.MSK_DT)
    sd = tb._read_csv(run_dir / "sender.csv", tb.SENDER_DT)
    m, sd = m[m["group"] == gi], sd[sd["group"] == gi]
    d = m[(m["t"] >= a) & (m["t"] <= b)]
    if len(d) == 0:
        return {}
    inflight = d["outq"] - d["notsent"]
    return {"waiting": float(np.mean(d["notsent"] > 0)), "rwnd_full": float(np.mean(inflight >= d["snd_wnd"] - 2 * MSS)),
            "sub_queued": float(np.mean(d["sub_notsent"] > 0)), "mean_wnd_kb": float(np.mean(d["snd_wnd"]) / 1024),
            "mean_inflight_kb": float(np.mean(inflight) / 1024), "mean_sub_queued_kb": float(np.mean(d["sub_notsent"]) / 1024),
            **tb.connection_limits(sd, m, a, b, MSS),
            **path_limits(sd, a, b, "notsent" in _header(run_dir / "sender.csv"))}


def _header(path: Path) -> list[str]:
    """The column names of a sampler CSV (its first line)."""
    with open(path) as f:
        return f.readline().rstrip("\n").split(",")


def path_limits(sd, a: float, b: float, sampled: bool) -> dict[str, list[float]]:
    """Per route of a multipath group's subflow samples ``sd`` in [a, b], all its flows together
    (:func:`mpcc.testbed.engine.route_limits`): ``path_idle`` (share with unacked < cwnd, 1 −
    ``cwnd_limited``) and ``path_queued_kb`` (NaN unless ``sampled``: the file has the notsent
    column)."""
    from mpcc.testbed import engine as tb
    w = sd[(sd["t"] >= a) & (sd["t"] <= b) & (sd["route"] >= 0)]
    lims = [tb.route_limits(sd[sd["route"] == j], a, b, MSS) for j in range(int(w["route"].max()) + 1 if len(w) else 0)]
    return {"path_idle": [1 - x["cwnd_limited"] for x in lims],
            "path_queued_kb": [x["queued_kb"] if sampled else math.nan for x in lims]}


def set_sysctls(namespaces, sysctls: tuple[str, ...]) -> None:
    """Each "KEY=VALUE" of ``sysctls`` in each namespace (a run's on_built: after the network is
    up, before the connections open)."""
    for ns in namespaces:
        for kv in sysctls:
            subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-qw", kv], check=True)


def compare(text: str, warmup_s: float, sim_seeds: int = 2, host_sysctls: tuple[str, ...] = (),
            sysctls: tuple[str, ...] = (), out_dir: Path | None = None) -> dict:
    import numpy as np
    from mpcc import scenario
    from mpcc.sim import engine as sim
    from mpcc.testbed import engine as tb
    s = scenario.loads(text, "generated.toml")
    t_sim = time.monotonic()
    sims = [sim.run(s, seed=k, sample_interval_s=0, measure=(warmup_s, s.duration_s)).result for k in range(sim_seeds)]
    t_sim = time.monotonic() - t_sim
    counters: dict[int, dict[str, int]] = {}

    def watch(topo):  # the hosts' TCP counters just before the run ends (one host per group)
        set_sysctls(topo.hosts.values(), host_sysctls + sysctls)
        set_sysctls([topo.server_ns], sysctls)
        def read():
            time.sleep(2.0 + s.duration_s - 0.5)
            for gi, ns in topo.hosts.items():
                counters[gi] = host_counters(ns)
            counters[-1] = host_counters(topo.server_ns)
        threading.Thread(target=read, daemon=True).start()

    res = tb.run_detailed(s, tb.settings_from(s, warmup_s=warmup_s), out_dir, progress=False, on_built=watch)[0]
    out = {"scenario": text, "groups": {}, "links": {}, "sim_wall_s": t_sim}
    for g in s.groups:
        sv = float(np.mean([r.groups[g.name].rate_mbps for r in sims]))
        tv = res.groups[g.name].rate_mbps * s.packet_bytes / PAYLOAD
        sp = np.mean([r.groups[g.name].path_rate_mbps for r in sims], axis=0).tolist()
        tp = [x * s.packet_bytes / PAYLOAD for x in res.groups[g.name].path_rate_mbps]
        out["groups"][g.name] = {"algorithm": g.algorithm.name, "count": g.count, "paths": [list(p) for p in g.paths],
                                 "sim_mbps": sv, "testbed_mbps": tv, "rel": (tv - sv) / sv,
                                 "sim_paths": sp, "testbed_paths": tp,
                                 "testbed_counters": counters.get(s.groups.index(g), {}),
                                 "sim_timeouts": float(np.mean([r.groups[g.name].extra["timeouts"] for r in sims])),
                                 "sim_retransmits": float(np.mean([r.groups[g.name].extra["retransmits"] for r in sims])),
                                 "sim_sent": float(np.mean([r.groups[g.name].extra["sent_pkts"] for r in sims])),
                                 "testbed_route_limits": res.groups[g.name].extra.get("route_limits")}
        if out_dir and g.multipath:
            t0 = json.loads((out_dir / "run0" / "connect.json").read_text())["t0"]  # traffic.send
            out["groups"][g.name]["testbed_msk"] = msk_limits(out_dir / "run0", s.groups.index(g),
                                                              t0 + warmup_s, t0 + s.duration_s)
    out["server_counters"] = counters.get(-1, {})
    for l in s.links:
        out["links"][l.name] = {"sim_load": float(np.mean([r.links[l.name].load_mbps for r in sims])),
                                "testbed_load": res.links[l.name].load_mbps,
                                "sim_price": float(np.mean([r.links[l.name].price for r in sims])),
                                "testbed_price": res.links[l.name].price, "capacity": l.capacity_mbps}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=4)
    ap.add_argument("--first-seed", type=int, default=1)
    ap.add_argument("--secs", type=float, default=40.0)
    ap.add_argument("--warmup", type=float, default=10.0)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--host-sysctl", action="append", default=[], help="KEY=VALUE set in every sender host namespace")
    ap.add_argument("--sysctl", action="append", default=[],
                    help="KEY=VALUE set in every sender host namespace and the receiver's (server) namespace")
    ap.add_argument("--out", type=Path, help="keep each seed's testbed run here (OUT/seed<N>/run0/msk.csv ...)")
    a = ap.parse_args()
    rows = []
    for seed in range(a.first_seed, a.first_seed + a.n):
        r = compare(generate(seed, a.secs), a.warmup, host_sysctls=tuple(a.host_sysctl), sysctls=tuple(a.sysctl),
                    out_dir=a.out / f"seed{seed}" if a.out else None)
        r["seed"] = seed
        rows.append(r)
        for name, g in r["groups"].items():
            c = g["testbed_counters"]
            print(f"seed {seed} {name:6s} {g['algorithm']:11s} n={g['count']} paths={g['paths']}: sim {g['sim_mbps']:.2f} "
                  f"testbed {g['testbed_mbps']:.2f} Mb/s ({100 * g['rel']:+.1f} %); testbed RTOs {c.get('TCPTimeouts')} "
                  f"fast retransmits {c.get('TCPFastRetrans')} TLPs {c.get('TCPLossProbes')} "
                  f"retrans/out {c.get('RetransSegs')}/{c.get('OutSegs')} (whole run); sim in the window: "
                  f"RTOs {g['sim_timeouts']:.0f} retrans/sent {g['sim_retransmits']:.0f}/{g['sim_sent']:.0f}", flush=True)
            lim = g["testbed_route_limits"] or []
            print(f"seed {seed} {name:6s} testbed per route (cwnd-limited samples, rwnd-, sndbuf-limited time): "
                  + "; ".join(f"{x['cwnd_limited']:.2f}, {x['rwnd_limited']:.2f}, {x['sndbuf_limited']:.2f}" for x in lim),
                  flush=True)
            if g.get("testbed_msk"):
                print(f"seed {seed} {name:6s} testbed MPTCP connection level: "
                      + ", ".join(f"{k} {v:.2f}" for k, v in g["testbed_msk"].items()), flush=True)
            mp = {k: v for k, v in c.items() if k not in COUNTERS}
            if mp:
                print(f"seed {seed} {name:6s} MPTCP counters: {mp}", flush=True)
        for name, l in r["links"].items():
            print(f"seed {seed} link {name} C={l['capacity']:g}: load sim {l['sim_load']:.2f} testbed {l['testbed_load']:.2f}; "
                  f"price sim {l['sim_price']:.4f} testbed {l['testbed_price']:.4f}", flush=True)
        print(f"seed {seed} server MPTCP counters: {r['server_counters']}", flush=True)
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
