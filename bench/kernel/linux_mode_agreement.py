#!/usr/bin/env python3
"""bench/kernel/linux_mode_agreement.py: the simulator's linux mode against the testbed over
repeated runs, per group and per path of the multipath group (issue #30's test), with the noise
of both engines measured instead of assumed.

A single 30-s run is a sample: a coupled algorithm's split between its paths flaps from run to
run on both engines (Coupled's per-path rate varies 2× between seeds), so a per-run test mixes
model error with noise. Here each cell (a generated network × the multipath group's algorithm)
has k ≥ 2 testbed runs (``conn_mechanisms.py testbed`` rows, MPCC_BPF_CONN unset) and m
simulator seeds (64 by default: the simulator's own spread is as large as the kernel's for a
coupled group's paths, and with 8 seeds its sampling error alone left quantities unresolved that
more seeds settle; bench/kernel/RESULTS.md §23). Per quantity q (the multipath group's rate,
each of its paths per flow, every single-path group):

    Δ_q = 100 (x̄ / ȳ − 1)     x: the testbed's runs, y: the linux mode's seeds
    SE(Δ_q) = 100 (x̄ / ȳ) √(s_x² / (k x̄²) + s_y² / (m ȳ²))      (delta method)

and the verdict is *within* (|Δ| ≤ 15 %), *outside* (|Δ| − h > 15 %, h = t · SE the 95 % half-width,
t the 97.5 % quantile of Student's t with Welch–Satterthwaite degrees of freedom: a real
disagreement, wrongly called so for a true |Δ| ≤ 15 % at most 2.5 % of the time) or *unresolved*
(more runs needed). A *within* quantity is also counted as *shown within* when |Δ| + h ≤ 15 %
(the whole interval inside the bound: with two or three runs per cell few are).

Two per-run rates set the scale: how often a single testbed run has every quantity within 15 %
of the linux mode's mean, and how often it has every quantity within 15 % of the mean of the
*other* testbed runs of its cell (the kernel against itself: what a perfect model would score,
short of its own noise). The ideal mode's deficit (done-when item 2) is the median over cells
of Δ for the multipath group against ``mptcp = "ideal"``.

The connection level's samples are compared as well (``CONN``: the send buffer, the data in
it, the data queued on the subflows but not sent, the share of subflow samples with a window
not full; per path, ``PATH_CONN``, the data a subflow holds and its share of samples with a
window not full): per cell the linux mode's mean over the testbed's, median per algorithm
(bench/kernel/RESULTS.md §22, §35).

Start times: a testbed run starts its flows at offsets drawn from its Settings.seed
(``tb_seed`` in the row, 1 before rows recorded it), so repetitions with one seed share one
draw, while each simulator seed draws anew. ``--starts testbed`` gives the simulator each
testbed run's offsets instead (⌈sim-seeds / runs⌉ simulator seeds per run): the comparison
conditioned on the same start (bench/kernel/RESULTS.md §21).

    .venv/bin/python bench/kernel/linux_mode_agreement.py [--starts testbed] [--sim tlp=off] \\
        bench/kernel/conn_mechanisms_tb_19.json bench/kernel/conn_mechanisms_tb_20.json ...

``--sim KEY=VALUE`` sets a ``[sim]`` option of the linux mode (repeatable), to judge a
mechanism's switch on the same runs. ``sndbuf_per_mss`` (a constant of the kernel's build) is
the rows' recorded value, else the running kernel's (mpcc.testbed.tcpmem), unless set here.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import statistics
import sys
from pathlib import Path
from typing import NoReturn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conn_mechanisms import QUICKACK_SIM, SIM_MODES, _rel, scenario_text, sysctl_sim_options  # noqa: E402

BOUND = 15.0
#: connection-level samples compared as well (testbed ``msk`` key → the linux mode's
#: ``connection_limits`` key): the send buffer, the data in it, the data queued on the subflows
#: but not yet sent, and the share of subflow samples with a window not full
CONN = {"sndbuf_kb": "sndbuf_kb", "queued_kb": "queued_kb", "mean_sub_queued_kb": "sf_notsent_kb", "idle": "idle"}
#: … and per path (key/i, same names on both engines): the data a subflow holds, in flight and
#: not yet sent (rows recorded since the sampler has each subflow's notsent), and the share of
#: its samples with a window not full
PATH_CONN = ("path_queued_kb", "path_idle")


def cells(rows: list[dict], min_runs: int, sysctls: tuple[str, ...] = (),
          sound_only: bool = True, quickack: bool = False) -> dict[tuple[int, str], list[dict]]:
    """Sound (or, ``sound_only`` false, all) testbed runs without MPCC_BPF_CONN, with the
    algorithm named, the host sysctls ``sysctls`` (none: the testbed's own) and the receivers'
    ``quickack`` route metric as given (conn_mechanisms.py testbed --quickack), by (seed, algorithm)."""
    out: dict[tuple[int, str], list[dict]] = {}
    for r in rows:
        if r.get("conn", "none") != "none" or not r.get("algorithm") or "paths" not in r:
            continue
        if tuple(r.get("sysctls", ())) != tuple(sysctls) or bool(r.get("quickack")) != quickack:
            continue
        if sound_only and not (r.get("health") or {}).get("sound", False):
            continue
        out.setdefault((r["seed"], r["algorithm"]), []).append(r)
    return {c: rs for c, rs in sorted(out.items()) if len(rs) >= min_runs}


def parse_sim_settings(kvs: list[str]) -> dict:
    """``--sim KEY=VALUE`` settings as a [sim] table: numbers and booleans decoded, anything else
    a string; ValueError names a setting that is not KEY=VALUE."""
    out = {}
    for kv in kvs:
        key, eq, value = (x.strip() for x in kv.partition("="))
        if not eq or not key:
            raise ValueError(f"--sim {kv!r}: not KEY=VALUE (fix: e.g. --sim receiver=simple)")
        try:
            value = json.loads(value)
        except ValueError:
            pass
        out[key] = value
    return out


def run_length(r: dict) -> tuple[float, float]:
    """A row's run length and warm-up, s (rows recorded before they carried them: 30 and 10)."""
    return float(r.get("secs", 30.0)), float(r.get("warmup", 10.0))


def check_length(rows: list[dict], secs: float, warmup: float, prog: str, hint: str = "") -> None:
    """Rows of another run length than the simulator is given: one line, exit 2."""
    other = sorted({run_length(r) for r in rows} - {(secs, warmup)})
    if other:
        s, w = other[0]
        fail(prog, f"rows were recorded with --secs {s:g} --warmup {w:g}, not {secs:g} and {warmup:g} "
                   f"(fix: give the same --secs and --warmup, or judge those rows' files apart{hint})")


def quantities(r: dict) -> dict[str, float]:
    """One testbed row's rates, Mb/s per flow: "mp", "mp/path i", and each single-path group."""
    return {"mp": r["testbed"], **{f"mp/path {i}": p for i, p in enumerate(r["paths"])}, **r["others"]}


def testbed_starts(s, tb_seed: int = 1):
    """``s`` with every flow its own group ("name#i"), starting when a testbed run with
    Settings.seed ``tb_seed`` starts it (``startup.start_offsets``), and no start jitter in the
    simulator."""
    from mpcc.testbed import startup
    groups = []
    for gi, g in enumerate(s.groups):
        for i, off in enumerate(startup.start_offsets(s, gi, tb_seed)):
            groups.append(dataclasses.replace(g, name=f"{g.name}#{i}", count=1, start_s=g.start_s + off))
    sim_opts = {**(s.engine.get("sim") or {}), "start_jitter_s": 0.0}
    return dataclasses.replace(s, groups=tuple(groups), engine={**s.engine, "sim": sim_opts})


def cell_scenario(seed: int, algorithm: str, secs: float, sim_options: dict, tb_seed: int | None = None):
    """The cell's generated network with ``sim_options`` in its ``[sim]`` table, with the
    simulator's own start jitter or, given ``tb_seed``, the start times of a testbed run with
    that seed (:func:`testbed_starts`)."""
    from mpcc import scenario
    s = scenario.loads(scenario_text(seed, secs, algorithm), "generated.toml")
    s = dataclasses.replace(s, engine={**s.engine, "sim": {**(s.engine.get("sim") or {}), **sim_options}})
    return s if tb_seed is None else testbed_starts(s, tb_seed)


def sim_quantities(seed: int, algorithm: str, secs: float, warmup: float, seeds: range,
                   sim_options: dict, tb_seed: int | None = None) -> list[dict[str, float]]:
    """The same quantities from simulator runs (``seeds``) of the cell with ``sim_options``
    (:func:`cell_scenario`)."""
    from mpcc import sim
    sm = cell_scenario(seed, algorithm, secs, sim_options, tb_seed)
    # a group's rate per flow: the mean over its flows (one group per flow with testbed starts)
    members: dict[str, list[str]] = {}
    for g in sm.groups:
        members.setdefault(g.name.split("#")[0], []).append(g.name)
    out = []
    for k in seeds:
        g = sim.run(sm, seed=k, sample_interval_s=0, measure=(warmup, secs)).result.groups
        flows = {name: [g[n] for n in ns] for name, ns in members.items()}
        mp = flows["mp"]
        lim = [f.extra["connection_limits"] for f in mp if "connection_limits" in f.extra]
        out.append({**{f"conn:{key}": statistics.mean(x[sk] for x in lim) for key, sk in CONN.items() if lim},
                    **{f"conn:{key}/{i}": statistics.mean(x[key][i] for x in lim)
                       for key in PATH_CONN if lim and key in lim[0] for i in range(len(lim[0][key]))},
                    "mp": statistics.mean(f.rate_mbps for f in mp),
                    **{f"mp/path {i}": statistics.mean(f.path_rate_mbps[i] for f in mp)
                       for i in range(len(mp[0].path_rate_mbps))},
                    **{n: statistics.mean(f.rate_mbps for f in fs) for n, fs in flows.items() if n != "mp"}})
    return out


def tb_path_conn(runs: list[dict]) -> dict[str, float]:
    """The testbed's per-path connection-level samples (``PATH_CONN``) as key/i → mean over
    the ``runs`` that recorded them (rows from before the sampler had a subflow's notsent carry
    none, or NaN)."""
    out = {}
    for k in PATH_CONN:
        per_run = [v for r in runs if (v := r.get("msk", {}).get(k))]
        for i in range(max((len(v) for v in per_run), default=0)):
            xs = [v[i] for v in per_run if i < len(v) and not math.isnan(v[i])]
            if xs:
                out[f"{k}/{i}"] = statistics.mean(xs)
    return out


def sim_at_testbed_starts(seed: int, algorithm: str, secs: float, warmup: float, runs: list[dict], per: int,
                          sim_options: dict) -> list[dict[str, float]]:
    """:func:`sim_quantities` with each testbed run's start draw (its row's ``tb_seed``; 1 before
    rows recorded it), ``per`` simulator seeds each, alike weighted."""
    return [q for j, r in enumerate(runs) for q in sim_quantities(
        seed, algorithm, secs, warmup, range(j * per, (j + 1) * per), sim_options, r.get("tb_seed", 1))]


def set_per_mss(linux: dict, rows: list[dict], prog: str) -> None:
    """Set the linux mode's ``sndbuf_per_mss`` (the kernel's tcp_sndbuf_expand per_mss, a build
    constant) from the rows (the testbed records it), else from the running kernel (rows recorded
    before it did were recorded on this machine). Rows of kernels that differ: one line, exit 2."""
    seen = {r["sndbuf_per_mss"] for r in rows if r.get("sndbuf_per_mss")}
    if len(seen) > 1:
        fail(prog, f"the rows come from kernels with different sndbuf_per_mss {sorted(seen)} "
                   f"(fix: compare one kernel's rows at a time, or set --sim sndbuf_per_mss=N)")
    from mpcc.testbed.tcpmem import sim_per_mss_or_none
    per_mss, origin = (next(iter(seen)), "recorded with the rows") if seen else \
        (sim_per_mss_or_none(1500), "the running kernel's")
    if per_mss is not None:
        linux["sndbuf_per_mss"] = per_mss
        print(f"sndbuf_per_mss: {per_mss} ({origin})", flush=True)


def t_quantile(df: float) -> float:
    from scipy import stats
    return float(stats.t.ppf(0.975, df)) if df > 0 and math.isfinite(df) else 1.96


@dataclasses.dataclass
class Verdict:
    delta: float      # %, testbed mean against simulator mean
    half: float       # %, the 95 % half-width of delta
    verdict: str      # "within" | "outside" | "unresolved"

    @property
    def shown(self) -> bool:
        """The whole 95 % interval inside the bound."""
        return abs(self.delta) + self.half <= BOUND


def compare(x: list[float], y: list[float]) -> Verdict:
    """Testbed samples ``x`` against simulator samples ``y`` (each ≥ 2)."""
    mx, my = statistics.mean(x), statistics.mean(y)
    if my <= 0 or mx <= 0:
        return Verdict(float("inf"), float("inf"), "unresolved")
    vx, vy = statistics.variance(x) / (len(x) * mx * mx), statistics.variance(y) / (len(y) * my * my)
    ratio = mx / my
    delta = 100 * (ratio - 1)
    se = 100 * ratio * math.sqrt(vx + vy)
    # Welch–Satterthwaite on the relative variances
    df = (vx + vy) ** 2 / ((vx * vx / (len(x) - 1) if vx else 0) + (vy * vy / (len(y) - 1) if vy else 0)) \
        if vx + vy > 0 else math.inf
    half = t_quantile(df) * se
    if abs(delta) <= BOUND:
        v = "within"
    elif abs(delta) - half > BOUND:
        v = "outside"
    else:
        v = "unresolved"
    return Verdict(delta, half, v)


COUNTS = ("cells", "runs", "cells_within", "model_ok", "ideal_ok", "self_ok")
VERDICTS = ("within", "outside", "unresolved", "shown")


def tally() -> dict:
    """An algorithm's (or all algorithms') counts; the lists feed the medians and the outside column."""
    return {**dict.fromkeys(COUNTS, 0), "q": dict.fromkeys(VERDICTS, 0), "ideal": [], "linux_mp": [], "outside": [],
            "conn": {}}


def row(name: str, al: dict) -> str:
    """One line of the summary table (medians only where there are deltas)."""
    q = al["q"]
    med = lambda xs: f"{statistics.median(xs):+.1f} %" if xs else ""  # noqa: E731
    return (f"| {name} | {al['cells']} | {al['runs']} | {q['within']} ({q['shown']}) / {q['unresolved']} / {q['outside']} "
            f"| {al['cells_within']} / {al['cells']} | {al['model_ok']} / {al['runs']} | {al['ideal_ok']} / {al['runs']} "
            f"| {al['self_ok']} / {al['runs']} | {med(al['linux_mp'])} | {med(al['ideal'])} "
            f"| {'; '.join(al['outside']) or ('—' if al['linux_mp'] else '')} |")


def fail(prog: str, why: str) -> NoReturn:
    """One line on stderr, exit 2 (bad input)."""
    print(f"{prog}: {why}", file=sys.stderr)
    sys.exit(2)


def load_rows(files: list[Path], prog: str) -> list[dict]:
    """The rows of ``conn_mechanisms.py testbed`` JSON files; a missing or unreadable file is one
    line naming it and the fix, exit 2."""
    rows = []
    for f in files:
        try:
            data = json.loads(f.read_text())
        except OSError as e:
            fail(prog, f"{f}: {e.strerror or e} (fix: give conn_mechanisms.py testbed JSON files, e.g. "
                       "bench/kernel/conn_mechanisms_tb_27.json)")
        except ValueError as e:
            fail(prog, f"{f}: not JSON ({e}) (fix: give conn_mechanisms.py testbed JSON files)")
        if not isinstance(data, list) or not all(isinstance(r, dict) and "seed" in r for r in data):
            fail(prog, f"{f}: not a list of conn_mechanisms.py testbed rows (fix: give the files "
                       "`conn_mechanisms.py testbed --json` wrote)")
        rows += data
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", type=Path, help="conn_mechanisms.py testbed JSON files")
    ap.add_argument("--secs", type=float, default=30.0)
    ap.add_argument("--warmup", type=float, default=10.0)
    ap.add_argument("--sim-seeds", type=int, default=64)
    ap.add_argument("--min-runs", type=int, default=2)
    ap.add_argument("--starts", choices=("sim", "testbed"), default="sim",
                    help="the simulator's flow start times: its own jitter per seed, or each testbed run's "
                         "(⌈sim-seeds / runs⌉ simulator seeds per run)")
    ap.add_argument("--json", type=Path, help="write every cell's comparison here")
    ap.add_argument("--sim", action="append", default=[], metavar="KEY=VALUE",
                    help="a [sim] option of the linux mode, e.g. tlp=off or host_jitter_s=0 (repeatable)")
    ap.add_argument("--testbed-sysctl", action="append", default=[], metavar="KEY=VALUE",
                    help="judge the rows recorded with these host sysctls (conn_mechanisms.py testbed --sysctl, "
                         "in the same order), the linux mode with the same; default: the rows without")
    ap.add_argument("--testbed-quickack", action="store_true",
                    help="judge the rows recorded with the receivers' quickack route metric (conn_mechanisms.py "
                         "testbed --quickack), the linux mode with receiver = \"simple\"; default: the rows without")
    ap.add_argument("--with-unsound", action="store_true",
                    help="also the runs whose health is unsound (a host that delays its link emulator); "
                         "the output says so")
    a = ap.parse_args()
    if a.min_runs < 2:
        fail("linux_mode_agreement", f"--min-runs {a.min_runs}: a cell's mean needs its spread, so 2 runs at least "
                                     "(fix: --min-runs 2, or record more runs with conn_mechanisms.py testbed)")
    modes = {"linux": dict(SIM_MODES["linux"]), "ideal": SIM_MODES["ideal"]}
    try:
        modes["linux"].update(sysctl_sim_options(a.testbed_sysctl))
    except ValueError as e:
        fail("linux_mode_agreement", f"--testbed-sysctl {e} (fix: give the rows' sysctls as recorded)")
    if a.testbed_quickack:
        modes["linux"].update(QUICKACK_SIM)
    try:
        modes["linux"].update(parse_sim_settings(a.sim))
    except ValueError as e:
        fail("linux_mode_agreement", str(e))
    rows = load_rows(a.files, "linux_mode_agreement")
    if "sndbuf_per_mss" not in modes["linux"]:
        set_per_mss(modes["linux"], rows, "linux_mode_agreement")
    cs = cells(rows, a.min_runs, tuple(a.testbed_sysctl), sound_only=not a.with_unsound, quickack=a.testbed_quickack)
    check_length([r for rs in cs.values() for r in rs], a.secs, a.warmup, "linux_mode_agreement")
    if a.with_unsound:
        print("runs judged: sound and unsound (--with-unsound)", flush=True)
    if not cs:
        fail("linux_mode_agreement", f"no cell has {a.min_runs} {'' if a.with_unsound else 'sound '}runs (fix: record more with "
                                     "conn_mechanisms.py testbed, or lower --min-runs)")
    from mpcc.errors import MpccError
    from mpcc.sim.engine import sim_options
    try:  # a bad --sim option: one line, before anything runs
        sim_options(cell_scenario(*next(iter(cs)), a.secs, modes["linux"]))
    except MpccError as e:
        print(f"linux_mode_agreement: --sim: {e}", file=sys.stderr)
        sys.exit(2)
    per_alg: dict[str, dict] = {}
    records = []
    for (seed, algo), runs in cs.items():
        tb = [quantities(r) for r in runs]
        if a.starts == "sim":
            sims = {m: sim_quantities(seed, algo, a.secs, a.warmup, range(a.sim_seeds), o) for m, o in modes.items()}
        else:   # each testbed run's start draw (its row's tb_seed; 1 before rows recorded it), alike weighted
            per = max(2, math.ceil(a.sim_seeds / len(runs)))
            sims = {m: sim_at_testbed_starts(seed, algo, a.secs, a.warmup, runs, per, o) for m, o in modes.items()}
        names = list(tb[0])
        # the connection level's samples: the linux mode's mean over the testbed's, per key
        tb_conn = {k: statistics.mean(r["msk"][k] for r in runs) for k in CONN if all(k in r.get("msk", {}) for r in runs)}
        tb_conn |= tb_path_conn(runs)
        conn = {k: statistics.mean(x[f"conn:{k}"] for x in sims["linux"]) / m for k, m in tb_conn.items() if m > 0}
        sim_mean = {q: statistics.mean(s[q] for s in sims["linux"]) for q in names}
        ideal_mean = {q: statistics.mean(s[q] for s in sims["ideal"]) for q in names}
        v = {q: compare([t[q] for t in tb], [s[q] for s in sims["linux"]]) for q in names}
        ideal = compare([t["mp"] for t in tb], [s["mp"] for s in sims["ideal"]])
        # per run: every quantity within the bound of the linux mode's mean / of the other runs' mean
        model_ok = [all(abs(_rel(t[q], sim_mean[q])) <= BOUND for q in names) for t in tb]
        ideal_ok = [all(abs(_rel(t[q], ideal_mean[q])) <= BOUND for q in names) for t in tb]
        self_ok = [all(abs(_rel(t[q], statistics.mean(o[q] for j, o in enumerate(tb) if j != i))) <= BOUND
                       for q in names) for i, t in enumerate(tb)]
        al = per_alg.setdefault(algo, tally())
        al["cells"] += 1
        al["runs"] += len(tb)
        for q, x in v.items():
            al["q"][x.verdict] += 1
            al["q"]["shown"] += x.shown
            if x.verdict == "outside":
                al["outside"].append(f"{seed}:{q} {x.delta:+.0f}±{x.half:.0f}")
        al["cells_within"] += all(x.verdict == "within" for x in v.values())
        al["model_ok"] += sum(model_ok)
        al["ideal_ok"] += sum(ideal_ok)
        al["self_ok"] += sum(self_ok)
        al["ideal"].append(ideal.delta)
        al["linux_mp"].append(v["mp"].delta)
        for k, x in conn.items():
            al["conn"].setdefault(k, []).append(x)
        records.append({"seed": seed, "algorithm": algo, "runs": len(tb),
                        "linux": {q: dataclasses.asdict(x) for q, x in v.items()},
                        "ideal_mp": dataclasses.asdict(ideal), "conn_ratio": conn, "model_ok": model_ok, "ideal_ok": ideal_ok,
                        "self_ok": self_ok})
        per_path = [f"{k} {x:.2f}" for k, x in conn.items() if "/" in k]
        print(f"{seed}/{algo}: {len(tb)} runs; " + ", ".join(f"{q} {x.delta:+.0f}±{x.half:.0f} {x.verdict[0]}"
                                                              for q, x in v.items())
              + (f"; linux / testbed: {', '.join(per_path)}" if per_path else ""), file=sys.stderr, flush=True)
    print(f"| MP algorithm | cells | testbed runs | quantities within {BOUND:g} % (shown within) / unresolved / outside "
          f"| cells with every quantity within | single runs: all within {BOUND:g} % of the linux mode | "
          f"… of the ideal mode | … of the other runs (kernel vs itself) | MP median vs linux | MP median vs ideal | outside (seed:quantity Δ±95 %) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    tot = tally()
    for algo, al in sorted(per_alg.items()):
        print(row(algo, al))
        for k in COUNTS:
            tot[k] += al[k]
        for k in VERDICTS:
            tot["q"][k] += al["q"][k]
        for k, xs in al["conn"].items():
            tot["conn"].setdefault(k, []).extend(xs)
    print(row("all", tot))
    # the connection level: median over cells of (linux mode's mean) / (testbed's mean)
    keys = [*CONN, *(f"{k} (every path)" for k in PATH_CONN)]
    print(f"\n| MP algorithm | " + " | ".join(f"{k}: linux / testbed, median (range)" for k in keys) + " |")
    print("|---|" + "---|" * len(keys))
    for name, al in [*sorted(per_alg.items()), ("all", tot)]:
        pooled = {**al["conn"], **{f"{k} (every path)": [x for key, xs in al["conn"].items()
                                                         if key.startswith(k + "/") for x in xs] for k in PATH_CONN}}
        print(f"| {name} | " + " | ".join(
            f"{statistics.median(xs):.2f} ({min(xs):.2f}–{max(xs):.2f})" if (xs := pooled.get(k)) else ""
            for k in keys) + " |")
    if a.json:
        a.json.write_text(json.dumps(records, indent=1))


if __name__ == "__main__":
    main()
