"""``mpcc mtc`` — multipath transmission control of Jiang, Cai, Towsley (UM-CS-2011-005).

    mpcc mtc utilization --algorithm mstcp --subflows 3 --flows 1 --bdp 42 --buffer-ratio 0 --decrease 0.5
    mpcc mtc paths --alpha 0.5 --beta 1 --loss 0.01,0.02,0.03,0.05
    mpcc mtc flappiness --algorithm fully-coupled --subflows 2 --loss 0.002
    mpcc mtc figures --out DIR
"""

from __future__ import annotations

import json
import math

import click

from ..outdir import relocate, staged, staged_file
from ..errors import MpccError
from ..ranges import Number, number_list
from . import equilibrium as eq
from . import flappiness as fl
from . import utilization as ut


class MtcInputError(MpccError):
    """A bad command-line value for ``mpcc mtc``."""


def _finite(x):
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite(v) for v in x]
    return x


def _drop_undefined_se(d):
    """Standard errors over one replica are undefined: the key is left out (not null)."""
    if isinstance(d, dict):
        return {k: _drop_undefined_se(v) for k, v in d.items()
                if not (k.endswith("_se") and isinstance(v, float) and not math.isfinite(v))}
    if isinstance(d, list):
        return [_drop_undefined_se(v) for v in d]
    return d


def _echo_json(d) -> None:
    from ..results import nonfinite
    d = _drop_undefined_se(d)
    bad = [p for p in nonfinite(d) if not p.endswith("trace_file")]
    if bad:
        raise MtcInputError(f"{bad[0]}: not a finite number with these values "
                            "(fix: use values nearer the defaults shown by --help)")
    click.echo(json.dumps(_finite(d), indent=2))


def _loss_list(text: str, option: str = "--loss") -> list[float]:
    return number_list(text, "loss_p", option)


def _unit(name: str, v: float) -> float:
    if not (0.0 <= v <= 1.0):
        raise MtcInputError(f"--{name}: must be in [0, 1], got {v} (fix: e.g. --{name} 0.5)")
    return v


@click.group("mtc")
def command():
    """Multipath transmission control (Jiang, Cai, Towsley): utilization, paths, flappiness."""


@command.command("utilization")
@click.option("--algorithm", required=True, type=click.Choice(ut.ALGORITHMS), help="MTC variant (§2).")
@click.option("--subflows", "n", type=Number("mtc_subflows"), default=1, show_default=True, help="n, subflows per flow.")
@click.option("--flows", "m", type=Number("mtc_flows"), default=1, show_default=True, help="m, identical flows (Table 1).")
@click.option("--bdp", "w0", type=Number("bdp_pkts"), default=42.0, show_default=True, help="W0 = C·D in packets.")
@click.option("--buffer-ratio", "gamma", type=Number("buffer_ratio"), default=0.0, show_default=True, help="gamma = B/W0.")
@click.option("--decrease", "b", type=Number("mstcp.b"), default=0.5, show_default=True, help="b, the decrease factor.")
@click.option("--json", "as_json", is_flag=True, help="Print {\"utilization\": U, \"f\": f, ...}.")
def utilization_cmd(algorithm, n, m, w0, gamma, b, as_json):
    """Link utilization U and decrease ratio f: closed forms of §3 and Table 1."""
    if n < 1:
        raise MtcInputError(f"--subflows: must be ≥ 1, got {n} (fix: e.g. --subflows 2)")
    if m < 1:
        raise MtcInputError(f"--flows: must be ≥ 1, got {m} (fix: e.g. --flows 1)")
    if not (w0 > 1.0 and math.isfinite(w0)):
        raise MtcInputError(f"--bdp: the capacity-delay product must be > 1 packet, got {w0} (fix: e.g. --bdp 42)")
    if not (gamma >= 0.0 and math.isfinite(gamma)):
        raise MtcInputError(f"--buffer-ratio: must be ≥ 0, got {gamma} (fix: e.g. --buffer-ratio 0.5)")
    if not (0.0 < b <= 1.0):
        raise MtcInputError(f"--decrease: must be in (0, 1], got {b} (fix: e.g. --decrease 0.5)")
    try:
        res = ut.utilization(algorithm, n, m, w0, gamma, b)
    except (OverflowError, ZeroDivisionError, ValueError) as e:
        raise MtcInputError(f"--subflows/--flows/--bdp: the closed forms of §3 have no finite value here ({e}) "
                            "(fix: smaller --subflows/--flows or a larger --bdp)") from None
    if not all(math.isfinite(v) for v in (res.utilization, res.f)):
        raise MtcInputError("--subflows/--flows/--bdp: the closed forms of §3 have no finite value here "
                            "(fix: smaller --subflows/--flows or a larger --bdp)")
    if as_json:
        _echo_json(res.to_dict())
        return
    click.echo(f"{algorithm}: n={n} m={m} W0={w0:g} gamma={gamma:g} b={b:g}")
    click.echo(f"  utilization U = {res.utilization:.6f}   f = {res.f:.6f}   [{res.formula}]")
    if res.note:
        click.echo(f"  note: {res.note}")


@command.command("paths")
@click.option("--alpha", type=Number("probability"), required=True, help="Increase coupling α ∈ [0, 1].")
@click.option("--beta", type=Number("probability"), required=True, help="Decrease coupling β ∈ [0, 1].")
@click.option("--loss", required=True, help="Loss probability of each path, comma-separated.")
@click.option("--a", "a", type=Number("mtcp.a"), default=1.0, show_default=True, help="Increase parameter a of (2).")
@click.option("--b", "b", type=Number("mtcp.b"), default=0.5, show_default=True, help="Decrease parameter b of (2).")
@click.option("--ode", is_flag=True, help="Also integrate the ODE (15) and show its limit.")
@click.option("--json", "as_json", is_flag=True, help="Print {\"paths_used\": N, \"windows\": [...], ...}.")
def paths_cmd(alpha, beta, loss, a, b, ode, as_json):
    """Stable equilibrium of (15): which paths carry traffic (§4.1, Cases 1–4)."""
    _unit("alpha", alpha)
    _unit("beta", beta)
    p = _loss_list(loss)
    if not a > 0:
        raise MtcInputError(f"--a: must be > 0, got {a} (fix: e.g. --a 1)")
    if not 0 < b <= 1:
        raise MtcInputError(f"--b: must be in (0, 1], got {b} (fix: e.g. --b 0.5)")
    try:
        res = eq.closed_form(alpha, beta, p, a, b)
    except (ValueError, ZeroDivisionError, OverflowError) as e:
        raise MtcInputError(f"--alpha/--beta/--loss/--a/--b: the equilibrium of (2) has no finite solution here "
                            f"({' '.join(str(e).split())[:80]}) (fix: values nearer the defaults, e.g. --b 0.5)") from None
    out = res.to_dict()
    if ode:
        o = eq.ode_equilibrium(alpha, beta, p, a, b)
        out["ode"] = {"paths_used": o.paths_used, "windows": list(o.windows)}
    if as_json:
        _echo_json(out)
        return
    click.echo(f"MTCP(alpha={alpha:g}, beta={beta:g}), case {res.case}: {res.paths_used} of {len(p)} paths used")
    for i, (pi, wi) in enumerate(zip(p, res.windows), 1):
        click.echo(f"  path {i}: p = {pi:g}   w* = {wi:.6g}")
    click.echo(f"  total window w* = {res.total_window:.6g}")
    if res.equilibrium_set:
        click.echo("  note: alpha = beta = 1 with tied best paths — every split of w* over them is an "
                   "equilibrium (a stable set); the symmetric point is shown")
    if ode:
        click.echo(f"  ODE (15) limit: {out['ode']['paths_used']} paths, windows "
                   + ", ".join(f"{v:.6g}" for v in out["ode"]["windows"]))


def _read_trace(path: str):
    """(time, windows) of a recorded trace; an unreadable file is one MtcInputError line."""
    try:
        t, w = _read_trace_file(path)
    except MtcInputError:
        raise
    except (OSError, ValueError, IndexError, TypeError, UnicodeDecodeError) as e:
        import pyarrow as pa
        kind = "Parquet" if path.endswith(".parquet") else "CSV"
        problem = " ".join(str(e).split())[:120] if not isinstance(e, pa.ArrowException) else type(e).__name__
        raise MtcInputError(f"--trace {path}: cannot read it as {kind}: {problem} "
                            "(fix: columns time,cwnd_1,cwnd_2,... as CSV or Parquet)") from None
    import numpy as np
    if t.size < 2 or not (np.all(np.isfinite(t)) and np.all(np.isfinite(w))):
        raise MtcInputError(f"--trace {path}: needs ≥ 2 rows of finite numbers "
                            "(fix: columns time,cwnd_1,cwnd_2,... with increasing time)")
    return t, w


def _read_trace_file(path: str):
    import numpy as np

    if path.endswith(".parquet"):
        import pyarrow.parquet as pq

        tab = pq.read_table(path)
        cols = tab.column_names
        data = np.column_stack([tab.column(c).to_numpy() for c in cols]).astype(float)
    else:
        with open(path) as fh:
            cols = [c.strip() for c in fh.readline().split(",")]
        data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    if "time" not in cols and "t" not in cols:
        raise MtcInputError(f"{path}: no 'time' column (fix: columns time,cwnd_1,cwnd_2,...)")
    ti = cols.index("time") if "time" in cols else cols.index("t")
    w = np.delete(data, ti, axis=1)
    return data[:, ti], w


@command.command("flappiness")
@click.option("--algorithm", default="fully-coupled", show_default=True,
              type=click.Choice(["mstcp", "coupled-decrease", "coupled-increase", "fully-coupled", "mtcp"]))
@click.option("--alpha", type=Number("probability"), default=None, help="α for --algorithm mtcp.")
@click.option("--beta", type=Number("probability"), default=None, help="β for --algorithm mtcp.")
@click.option("--subflows", "n", type=Number("subflows"), default=2, show_default=True)
@click.option("--loss", default="0.002", show_default=True,
              help="Per-packet loss probability: one value for all paths or one per path.")
@click.option("--rtt", type=Number("rtt_s"), default=0.1, show_default=True, help="Round length tau (s).")
@click.option("--rounds", type=Number("rounds"), default=20000, show_default=True, help="RTT rounds per replica.")
@click.option("--replicas", type=Number("replicas"), default=4, show_default=True)
@click.option("--seed", type=Number("seed"), default=1, show_default=True)
@click.option("--smooth-rtts", type=Number("smooth_rtts"), default=20.0, show_default=True,
              help="Central moving average of the windows over this many RTTs (× --rtt) before the metric.")
@click.option("--smooth-s", type=Number("smooth_s"), default=None, help="Smoothing window in seconds (overrides --smooth-rtts).")
@click.option("--save-trace", type=click.Path(dir_okay=False),
              help="Write the first replica's trace to this Parquet file (time, cwnd_1, ...).")
@click.option("--enter", type=Number("unit_share"), default=0.8, show_default=True, help="Share that starts dominance.")
@click.option("--leave", type=Number("unit_share"), default=0.5, show_default=True, help="Share below which it ends.")
@click.option("--engine", type=click.Choice(["window", "sim"]), default="window", show_default=True,
              help="Trace source: the per-RTT window model or the packet simulator (random link loss).")
@click.option("--trace", type=click.Path(exists=True, dir_okay=False),
              help="Measure a recorded trace instead (CSV/Parquet: time, then one column per subflow).")
@click.option("--json", "as_json", is_flag=True)
@click.option("--force", is_flag=True, help="Run even when the cost estimate exceeds the limits (docs/scenario.md).")
def flappiness_cmd(algorithm, alpha, beta, n, loss, rtt, rounds, replicas, seed, smooth_rtts, smooth_s,
                   save_trace, enter, leave, engine, trace, as_json, force):
    """Flappiness metric (docs/mtc.md) of the stochastic window model or of a recorded trace."""
    if not (0.5 <= leave < enter <= 1.0):
        raise MtcInputError(f"--enter/--leave: need 0.5 ≤ leave < enter ≤ 1, got {leave}, {enter} "
                            "(fix: e.g. --enter 0.8 --leave 0.5)")
    if smooth_rtts < 0 or (smooth_s is not None and smooth_s < 0):
        raise MtcInputError("--smooth-rtts/--smooth-s: must be ≥ 0 (fix: e.g. --smooth-rtts 20)")
    if rtt <= 0:
        raise MtcInputError(f"--rtt: must be > 0, got {rtt} (fix: e.g. --rtt 0.1)")
    smooth = smooth_rtts * rtt if smooth_s is None else smooth_s
    if trace:
        t, w = _read_trace(trace)
        if w.shape[1] < 2:
            raise MtcInputError(f"{trace}: needs at least 2 subflow columns (fix: time,cwnd_1,cwnd_2)")
        try:
            res = fl.flappiness(t, w, enter, leave, smooth).to_dict()
        except ValueError as e:
            raise MtcInputError(f"{trace}: {e} (fix: columns time,cwnd_1,cwnd_2,... with increasing time)") from None
        res.update(source=trace)
    else:
        if n < 2:
            raise MtcInputError(f"--subflows: flappiness needs ≥ 2 subflows, got {n} (fix: --subflows 2)")
        if rounds < 10 or replicas < 1:
            raise MtcInputError("--rounds must be ≥ 10 and --replicas ≥ 1 (fix: use the defaults)")
        p = _loss_list(loss)
        if len(p) == 1:
            p = p * n
        if len(p) != n:
            raise MtcInputError(f"--loss: {len(p)} values for {n} subflows (fix: give 1 or {n} values)")
        if algorithm == "mtcp":
            if alpha is None or beta is None:
                raise MtcInputError("--algorithm mtcp needs --alpha and --beta (fix: --alpha 1 --beta 0.5)")
            spec = {"name": "mtcp", "alpha": _unit("alpha", alpha), "beta": _unit("beta", beta)}
        else:
            spec = algorithm
        from .. import cost
        fix = "lower --rounds or --replicas"
        if engine == "window":
            cost.guard(cost.window_model(rounds, replicas, n), "mtc flappiness", force, fix)
            t, tr = fl.window_trace(spec, p, rtt, rounds, replicas, seed)
        else:
            if len(set(p)) != 1:
                raise MtcInputError("--engine sim: give one --loss value (same random loss on every path)")
            if not fl.sim_available():
                raise MtcInputError("--engine sim: the packet simulator (mpcc.sim) is not available "
                                    "(fix: build it with `maturin develop -r`, or use --engine window)")
            from .. import scenario as scenario_mod
            if rounds * rtt + 20.0 > 1e6:
                raise MtcInputError(f"--rounds × --rtt: {rounds * rtt:.3g} s of simulated time exceeds 1e6 s "
                                    "(fix: lower --rounds or --rtt)")
            one = scenario_mod.loads(fl.random_loss_scenario(spec, n, p[0], rounds * rtt + 20.0, rtt), "<flappiness>")
            cost.guard(cost.sim(one, runs=replicas, workers=1), "mtc flappiness --engine sim", force, fix)
            runs = [fl.packet_trace(spec, n, p[0], rounds * rtt, rtt, seed + k) for k in range(replicas)]
            size = min(r[0].size for r in runs)
            import numpy as np

            t, tr = runs[0][0][:size], np.stack([r[1][:size] for r in runs])
        res = fl.flappiness_of_replicas(t, tr, enter=enter, leave=leave, smooth_s=smooth)
        res.update(algorithm=algorithm if algorithm != "mtcp" else f"mtcp({alpha:g},{beta:g})",
                   engine=engine, subflows=n, loss=p, rtt_s=rtt, smooth_s=smooth)
        if save_trace:
            import pyarrow as pa
            import pyarrow.parquet as pq

            cols = {"time": t, **{f"cwnd_{i + 1}": tr[0][:, i] for i in range(n)}}
            with staged_file(save_trace, "--save-trace") as tmp:
                pq.write_table(pa.table(cols), tmp)
            res["trace_file"] = save_trace
    if as_json:
        _echo_json(res)
        return
    for k, v in res.items():
        click.echo(f"  {k:>20}: {v:.4g}" if isinstance(v, float) else f"  {k:>20}: {v}")


@command.command("figures")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="Output directory.")
@click.option("--quick", is_flag=True, help="Shorter simulations (for a smoke test).")
@click.option("--format", "fmt", type=click.Choice(["png", "svg"]), default="png", show_default=True)
def figures_cmd(out_dir, quick, fmt):
    """Write the report's figures (3, 4, 6–13) and print a paper-vs-ours table.

    Figs. 9/10 come from the deterministic fluid model and, when built, the packet simulator."""
    from ..reproduce import jiang2011

    with staged(out_dir) as tmp:
        res = relocate(jiang2011.reproduce(str(tmp), quick=quick, fmt=fmt), tmp, out_dir)
    from rich.console import Console
    from rich.table import Table

    tab = Table(title="Jiang, Cai, Towsley: paper vs ours")
    cols = ("paper", "closed_form", "fluid", "window_model", "sim")
    tab.add_column("quantity")
    for c in cols:
        tab.add_column(c.replace("_", " "), justify="right")
    for row in res["comparison"]:
        tab.add_row(row["quantity"], *("" if row[c] is None else (f"{row[c]:.4g}" if isinstance(row[c], float)
                                                                   else str(row[c])) for c in cols))
    console = Console()
    console.width = max(console.width, 130)
    console.print(tab)
    for f in res["files"]:
        click.echo(f)
