#!/usr/bin/env python3
"""bench/kernel/conn_mechanisms.py: the connection-level mechanisms of bpf/include/mpcc_conn.h
(MPCC_BPF_CONN: sndbuf, pacing, penalise) on the generated RED scenarios of
bench/kernel/sim_vs_testbed.py: the multipath group's per-flow rate on the testbed against the
simulator's ideal and linux modes (``[sim] mptcp``; a run with sndbuf against the linux mode with
``sndbuf_expand = "mpcc"``), with the testbed's connection-level samples
(msk.csv, ``msk_limits``: send-buffer fill, idle samples with no data at the connection level).

    .venv/bin/python bench/kernel/conn_mechanisms.py sim --seeds 1,2,4,5 --secs 30 --json SIM.json
    sudo flock /tmp/mpcc-bench.lock .venv/bin/python bench/kernel/conn_mechanisms.py testbed \\
        --seeds 1,2 --conn none,all --secs 30 --json TB.json      (appends to TB.json)
    .venv/bin/python bench/kernel/conn_mechanisms.py table SIM.json TB.json [TB2.json ...]

``--algorithms coupled,balia,...`` runs each seed's network with each of these algorithms in its
multipath group instead of the generator's draw (links, paths and counts are the seed's); the
table then adds the median deficit against ideal per algorithm and mechanisms over the seeds.
The simulator is deterministic per seed (2 seeds per mode); each testbed row is one run. The
table ends with the issue's per-run test: the testbed against the linux mode for the multipath
group, each of its paths and every single-path group, all within 15 % or not (``per_group``).
The same test on the mean of repeated runs, with the noise of both engines measured:
``linux_mode_agreement.py``.

``testbed --sysctl KEY=VALUE`` sets tcp_wmem or tcp_rmem on every host; ``testbed --quickack``
runs the testbed with ``[testbed] receiver = "quickack"`` (each data segment ACKed at once: the
linux mode's ``receiver = "simple"``). Both are recorded in
the row, and ``linux_mode_agreement.py`` judges such rows apart (``--testbed-sysctl``,
``--testbed-quickack``).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "python"))
sys.path.insert(0, str(HERE))

from mpcc.options import RECEIVER_SIM  # noqa: E402

PAYLOAD = 1448


def _seeds(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def _names(text: str | None) -> list[str | None]:
    return [x.strip() for x in text.split(",") if x.strip()] if text else [None]


def scenario_text(seed: int, secs: float, algorithm: str | None) -> str:
    """The generator's network of ``seed``; ``algorithm``: in its multipath group instead of the
    drawn one (the first ``algorithm =`` line is the group "mp"'s)."""
    from sim_vs_testbed import generate
    text = generate(seed, secs)
    return text if algorithm is None else re.sub(r'algorithm = "[^"]*"', f'algorithm = "{algorithm}"', text, count=1)


def _key(seed: int, algorithm: str | None) -> str:
    return str(seed) if algorithm is None else f"{seed}/{algorithm}"


#: the simulator's modes: ideal; linux with the kernel's sndbuf_expand factor 2 (the testbed's
#: runs without sndbuf); linux with MPCC_BPF_CONN=sndbuf's factor (``[sim] sndbuf_expand``)
SIM_MODES = {"ideal": {"mptcp": "ideal"}, "linux": {"mptcp": "linux"},
             "linux_sndbuf": {"mptcp": "linux", "sndbuf_expand": "mpcc"}}


def linux_mode(conn: str) -> str:
    """The simulator mode that models a testbed run with MPCC_BPF_CONN = ``conn`` (pacing and
    penalise are not modelled)."""
    from mpcc.kernel.sources import CONN_MECHANISMS, conn_mask
    return "linux_sndbuf" if conn_mask(conn) & CONN_MECHANISMS["sndbuf"] else "linux"


def sim_rows(seeds: list[int], secs: float, warmup: float, sim_seeds: int = 2,
             algorithms: tuple | list = (None,)) -> dict:
    from mpcc import scenario, sim
    out = {}
    for seed, algo in [(x, a) for x in seeds for a in algorithms]:
        s = scenario.loads(scenario_text(seed, secs, algo), "generated.toml")
        mp = next(g for g in s.groups if g.name == "mp")
        row = {"algorithm": mp.algorithm.describe(), "count": mp.count}
        for mode, opts in SIM_MODES.items():
            sm = dataclasses.replace(s, engine={**s.engine, "sim": opts})
            rs = [sim.run(sm, seed=k, sample_interval_s=0, measure=(warmup, secs)).result for k in range(sim_seeds)]
            row[mode] = statistics.mean(r.groups["mp"].rate_mbps for r in rs)
            row[f"{mode}_paths"] = [statistics.mean(r.groups["mp"].path_rate_mbps[i] for r in rs)
                                    for i in range(len(rs[0].groups["mp"].path_rate_mbps))]
            row[f"{mode}_others"] = {g: statistics.mean(r.groups[g].rate_mbps for r in rs)
                                     for g in rs[0].groups if g != "mp"}
            if mode != "ideal":   # the connection-level samples of the first seed (scalars)
                cl = rs[0].groups["mp"].extra.get("connection_limits", {})
                row[f"{mode}_limits"] = {k: v for k, v in cl.items() if not isinstance(v, list)}
        out[_key(seed, algo)] = row
        print(_key(seed, algo), row, flush=True)
    return out


HEALTH = ("sound", "attempts", "bpf_repairs", "bpf_unrepaired", "implausible_windows", "linkem_late", "linkem_releases")


#: the sysctls a testbed row may set (``--sysctl``) → the linux mode's [sim] options for them
SYSCTL_SIM = {"net.ipv4.tcp_wmem": ("tcp_wmem_min", "tcp_wmem_default", "tcp_wmem_max"),
              "net.ipv4.tcp_rmem": ("tcp_rmem_min", "tcp_rmem_default", "tcp_rmem_max")}


#: what a row recorded with ``--quickack`` is in the linux mode: every segment ACKed at once
#: (``[testbed] receiver = "quickack"``, as ``mpcc compare`` maps it)
QUICKACK_SIM = RECEIVER_SIM["quickack"]


def sysctl_sim_options(sysctls: list[str] | tuple[str, ...]) -> dict:
    """The linux mode's [sim] options for a row's ``sysctls`` ("KEY=v1 v2 v3"); ValueError names
    one it cannot model."""
    out = {}
    for kv in sysctls:
        key, _, value = (x.strip() for x in kv.partition("="))
        keys, vals = SYSCTL_SIM.get(key), value.split()
        if keys is None or len(vals) != len(keys) or not all(v.isdigit() for v in vals):
            raise ValueError(f"{kv!r}: the linux mode models only {' and '.join(SYSCTL_SIM)} as three byte counts")
        out.update(zip(keys, map(int, vals)))
    return out


def on_built_hook(sysctls: tuple[str, ...]):
    """``run_detailed``'s on_built for a row's ``sysctls``: set in every host namespace and the
    server's (None: none)."""
    if not sysctls:
        return None
    from sim_vs_testbed import set_sysctls
    return lambda topo: set_sysctls([*topo.hosts.values(), topo.server_ns], sysctls)


def testbed_rows(seeds: list[int], conns: list[str], secs: float, warmup: float,
                 algorithms: tuple | list = (None,), tb_seed: int = 1, sysctls: tuple[str, ...] = (),
                 quickack: bool = False) -> list[dict]:
    """One row per seed × algorithm × MPCC_BPF_CONN value; ``sysctls`` ("KEY=VALUE", the linux
    mode's in ``SYSCTL_SIM``) are set on every host and recorded in the row; ``quickack``: the
    receivers ACK every segment at once (``[testbed] receiver = "quickack"``), recorded as
    ``"quickack": true``."""
    from sim_vs_testbed import msk_limits
    from mpcc import scenario
    from mpcc.testbed import engine as tb
    rows = []
    for seed, algo in [(x, a) for x in seeds for a in algorithms]:
        s = scenario.loads(scenario_text(seed, secs, algo), "generated.toml")
        gi = next(i for i, g in enumerate(s.groups) if g.name == "mp")
        for conn in conns:
            os.environ["MPCC_BPF_CONN"] = conn
            with tempfile.TemporaryDirectory() as d:
                out = Path(d)
                try:
                    res, sums = tb.run_detailed(s, tb.settings_from(s, warmup_s=warmup, seed=tb_seed,
                                                                  receiver="quickack" if quickack else None),
                                                out, progress=False, on_built=on_built_hook(sysctls))
                except Exception as e:   # noqa: BLE001 (one failed variant must not lose the others)
                    print(json.dumps({"seed": seed, "algorithm": algo, "conn": conn, "error": str(e)[:300]}), flush=True)
                    continue
                t0 = json.loads((out / "run0" / "connect.json").read_text())["t0"]
                msk = msk_limits(out / "run0", gi, t0 + warmup, t0 + secs)
            rate = res.groups["mp"].rate_mbps * s.packet_bytes / PAYLOAD
            diag = getattr(sums[0], "diag", None) or {}
            row = {"seed": seed, **({"algorithm": algo} if algo else {}), "conn": conn, "tb_seed": tb_seed,
                   "secs": secs, "warmup": warmup,
                   **({"sysctls": list(sysctls)} if sysctls else {}),
                   **({"quickack": True} if quickack else {}),
                   "testbed": rate, "msk": msk, "sndbuf_per_mss": res.extra.get("sndbuf_per_mss"),
                   "paths": [x * s.packet_bytes / PAYLOAD for x in res.groups["mp"].path_rate_mbps],
                   "health": {k: sums[0].health.get(k) for k in HEALTH},
                   "acks": diag.get("acks", {}),
                   # each group's host namespace: its TCP MIB over the whole run (TCPTimeouts,
                   # TCPLossProbes, …), to set beside the simulator's timeouts and loss_probes
                   "mib": {g: {k: v for k, v in m.items() if k.startswith("Tcp")}
                           for g, m in (diag.get("mib_groups") or {}).items()},
                   "utc": time.strftime("%H:%M:%S", time.gmtime()),
                   "others": {g.name: res.groups[g.name].rate_mbps * s.packet_bytes / PAYLOAD
                              for g in s.groups if g.name != "mp"}}
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def _health(h: dict | None) -> str:
    """linkem's late releases in ‰ of its releases, implausible windows, attempts; * = unsound."""
    if not h:
        return "—"
    late = 1000 * h["linkem_late"] / h["linkem_releases"] if h.get("linkem_late") is not None and h.get("linkem_releases") else float("nan")
    return f"{late:.1f}, {h.get('implausible_windows')}, {h.get('attempts')}{'' if h.get('sound') else ' *'}"


def _rel(tb: float, sim: float) -> float:
    """The testbed against a simulator rate, %."""
    return 100 * (tb / sim - 1) if sim > 0 else float("inf")


def table(sim: dict, tbr: list[dict]) -> None:
    """One row per testbed run, then per algorithm and mechanisms the median deficit and the
    median change against ``none`` on the same seed: the k-th run of a mechanism on a seed is
    paired with the k-th ``none`` run there (rows in the order they were run)."""
    print("| seed | MP group | mechanisms | testbed | vs ideal | vs linux | idle | idle no data | send buffer / queued KB "
          "| health: late ‰, implausible windows, attempts |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    by_seed: dict[tuple[str, str, int], list[float]] = {}     # (algorithm, conn, seed) → deficits, %
    by_linux: dict[tuple[str, str], list[float]] = {}         # (algorithm, conn) → testbed vs linux mode, %
    for r in tbr:
        s = sim[_key(r["seed"], r.get("algorithm"))]
        d = _rel(r["testbed"], s["ideal"])
        lm = linux_mode(r["conn"])
        dl = _rel(r["testbed"], s[lm])
        by_linux.setdefault((s["algorithm"], r["conn"]), []).append(dl)
        by_seed.setdefault((s["algorithm"], r["conn"], r["seed"]), []).append(d)
        m = r["msk"]
        print(f"| {r['seed']} | {s['algorithm']} ×{s['count']} | {r['conn']} | {r['testbed']:.2f} "
              f"| {d:+.1f} % (ideal {s['ideal']:.2f}) "
              f"| {dl:+.1f} % ({lm} {s[lm]:.2f}) "
              f"| {m.get('idle', float('nan')):.2f} | {m.get('idle_no_data', float('nan')):.2f} "
              f"| {m.get('sndbuf_kb', float('nan')):.0f} / {m.get('queued_kb', float('nan')):.0f} | {_health(r.get('health'))} |")
    print("\n| MP algorithm | mechanisms | runs | median vs ideal | min … max | median change vs none, same seed (pairs) "
          "| median vs linux mode | min … max |")
    print("|---|---|---|---|---|---|---|---|")
    for algo, conn in sorted({(a, c) for a, c, _ in by_seed}):
        seeds = sorted(x for a, c, x in by_seed if (a, c) == (algo, conn))
        d = [v for x in seeds for v in by_seed[(algo, conn, x)]]
        paired = [v - n for x in seeds for v, n in zip(by_seed[(algo, conn, x)], by_seed.get((algo, "none", x), []))]
        change = f"{statistics.median(paired):+.1f} points ({len(paired)})" if paired and conn != "none" else "—"
        lx = by_linux[(algo, conn)]
        print(f"| {algo} | {conn} | {len(d)} | {statistics.median(d):+.1f} % | {min(d):+.1f} … {max(d):+.1f} % | {change} "
              f"| {statistics.median(lx):+.1f} % | {min(lx):+.1f} … {max(lx):+.1f} % |")
    per_group(sim, tbr)


def per_group(sim: dict, tbr: list[dict], bound: float = 15.0) -> None:
    """The issue's test: per run, the testbed against the linux mode for the multipath group,
    each of its paths (per flow) and every single-path group; a run passes when all are within
    ``bound`` %. Runs recorded before the rows carried paths and groups are left out."""
    rows = [(r, sim[_key(r["seed"], r.get("algorithm"))], linux_mode(r["conn"])) for r in tbr if "paths" in r]
    rows = [(r, s, lm) for r, s, lm in rows if f"{lm}_paths" in s]
    if not rows:
        return
    print(f"\n| seed | MP group | mechanisms | MP | paths | single-path groups | worst | within {bound:g} % |")
    print("|---|---|---|---|---|---|---|---|")
    tally: dict[tuple[str, str], list[bool]] = {}
    for r, s, lm in rows:
        mp = _rel(r["testbed"], s[lm])
        paths = [_rel(t, x) for t, x in zip(r["paths"], s[f"{lm}_paths"])]
        others = {g: _rel(t, s[f"{lm}_others"][g]) for g, t in r["others"].items()}
        every = [mp, *paths, *others.values()]
        worst = max(every, key=abs)
        ok = all(abs(v) <= bound for v in every)
        tally.setdefault((s["algorithm"], r["conn"]), []).append(ok)
        print(f"| {r['seed']} | {s['algorithm']} ×{s['count']} | {r['conn']} | {mp:+.0f} % "
              f"| {', '.join(f'{v:+.0f}' for v in paths)} ({', '.join(f'{t:.2f}/{x:.2f}' for t, x in zip(r['paths'], s[f'{lm}_paths']))}) "
              f"| {', '.join(f'{g} {v:+.0f}' for g, v in others.items())} | {worst:+.0f} % | {'yes' if ok else 'no'} |")
    print(f"\n| MP algorithm | mechanisms | runs with every group and path within {bound:g} % of the linux mode |")
    print("|---|---|---|")
    for (algo, conn), oks in sorted(tally.items()):
        print(f"| {algo} | {conn} | {sum(oks)} / {len(oks)} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=("sim", "testbed", "table"))
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--seeds", default="1,2,4,5")
    ap.add_argument("--conn", default="none;all", help="semicolon-separated MPCC_BPF_CONN values")
    ap.add_argument("--secs", type=float, default=30.0)
    ap.add_argument("--warmup", type=float, default=10.0)
    ap.add_argument("--algorithms", help="comma list: each in the multipath group of each seed's network "
                    "(default: the generator's draw)")
    ap.add_argument("--extra-attempts", type=int, help="re-runs of an unsound testbed run (default: the "
                    "health check's, mpcc.testbed.health.EXTRA_ATTEMPTS); each row records its run's health")
    ap.add_argument("--testbed-seed", type=int, default=1, help="the testbed's Settings.seed: its flows' start "
                    "times and its links' random draws (vary it between repetitions)")
    ap.add_argument("--sysctl", action="append", default=[], metavar="KEY=VALUE",
                    help="testbed: set on every host before the connections open and record in the row; "
                         f"only {' and '.join(SYSCTL_SIM)} (the linux mode models them; repeatable)")
    ap.add_argument("--quickack", action="store_true",
                    help="testbed: the receivers ACK every segment at once ([testbed] receiver = \"quickack\"; "
                         "the linux mode's receiver = \"simple\"), recorded in the row")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    try:
        sysctl_sim_options(a.sysctl)
    except ValueError as e:
        print(f"conn_mechanisms: --sysctl {e} (fix: drop it or give e.g. "
              f"\"net.ipv4.tcp_wmem=4096 8388608 33554432\")", file=sys.stderr)
        sys.exit(2)
    if a.mode == "table":
        table(json.loads(a.files[0].read_text()), [r for f in a.files[1:] for r in json.loads(f.read_text())])
        return
    if a.mode == "sim":
        data = sim_rows(_seeds(a.seeds), a.secs, a.warmup, algorithms=_names(a.algorithms))
        if a.json:
            old = json.loads(a.json.read_text()) if a.json.exists() else {}
            a.json.write_text(json.dumps({**old, **data}, indent=1))
        return
    if a.extra_attempts is not None:   # the engine calls health.healthy_run (as tests/kernel/conftest.py)
        import functools
        from mpcc.testbed import health
        health.healthy_run = functools.partial(health.healthy_run, extra_attempts=a.extra_attempts)
    rows = testbed_rows(_seeds(a.seeds), a.conn.split(";"), a.secs, a.warmup, _names(a.algorithms), a.testbed_seed,
                        tuple(a.sysctl), a.quickack)
    if a.json:
        old = json.loads(a.json.read_text()) if a.json.exists() else []
        a.json.write_text(json.dumps(old + rows, indent=1))


if __name__ == "__main__":
    main()
