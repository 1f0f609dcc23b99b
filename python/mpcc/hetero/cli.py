"""``mpcc hetero``: heterogeneous congestion control (Tang, Wei, Low, Chiang, ToN 2010).

    mpcc hetero FILE [--json] [--plot DIR] [--algorithm1 sync|async --kappa K --prob P]
    mpcc hetero example3 [--json] [--plot DIR]
    mpcc hetero example4 [--trials N] [--workers W] [--json] [--plot DIR]
    mpcc hetero example2-model [--reno-beta B] [--capacity-scale S] [--json]
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import click
import numpy as np

from ..outdir import maybe_staged, relocate, staged
from ..ranges import Number
from ..errors import MpccError
from . import model


class _FileOrCommand(click.Group):
    """``mpcc hetero FILE`` runs the ``run`` subcommand; ``example3``/``example4`` are commands."""

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


@click.group("hetero", cls=_FileOrCommand, context_settings={"help_option_names": ["-h", "--help"]})
def command():
    """Heterogeneous congestion control: all equilibria of a network FILE, their stability and
    efficiency, Algorithm 1 and the Theorem-11 optimum (Tang, Wei, Low, Chiang 2010).

    Usage: mpcc hetero FILE [OPTIONS] | mpcc hetero example3 | mpcc hetero example4 --trials N
    """


def _clean(obj):
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if isinstance(obj, np.generic):
        return _clean(obj.item())
    return obj


def _nulls(obj, path=""):
    """Paths of the numbers that _clean turned into null (they were nan/inf)."""
    if obj is None:
        return [path]
    if isinstance(obj, float) and not math.isfinite(obj):
        return [path]
    if isinstance(obj, dict):
        return [p for k, v in obj.items() for p in _nulls(v, f"{path}.{k}")]
    if isinstance(obj, (list, tuple)):
        return [p for i, v in enumerate(obj) for p in _nulls(v, f"{path}[{i}]")]
    return []


def analyse(net: model.Network, *, mode=None, kappa=None, prob=None, period=None, seed=None,
            fast="dynamics") -> dict:
    """Everything ``mpcc hetero FILE`` reports, as the --json contract (a plain dict)."""
    from .dynamics import algorithm1, optimum
    from .equilibria import find_equilibria

    cfg = dict(net.settings.get("algorithm1", {}))
    mode = mode or cfg.get("mode", "sync")
    kappa = kappa if kappa is not None else cfg.get("kappa", 0.5)
    prob = prob if prob is not None else cfg.get("prob", 1.0 if mode == "sync" else 0.5)
    period = period if period is not None else cfg.get("period", 20.0)
    seed = seed if seed is not None else cfg.get("seed", 1)
    a = net.arrays()
    opt = optimum(net)
    if not opt.kkt <= OPTIMUM_KKT_TOL:
        raise MpccError(f"{net.name}: the convex optimum (Theorem 11) could not be computed to tolerance (largest "
                        f"relative KKT violation {opt.kkt:.2g}): the utilities are too ill-conditioned "
                        f"(fix: use utility_alpha ≤ 10 and utility_weight within a few decades of each other)")
    unweighted = optimum(net, weights=1.0)
    search = find_equilibria(net, optimum_rates=unweighted.rates)
    p0 = np.array((net.settings.get("dynamics", {}).get("starts") or [[1.0] * len(net.links)])[0])
    r = algorithm1(a, p0, mode=mode, kappa=kappa, prob=prob, period=period, dt=cfg.get("dt", 0.5),
                   max_iterations=cfg.get("max_iterations", 5000), tol=cfg.get("tol", 1e-7),
                   rng=np.random.default_rng(seed), fast=fast)
    names = net.source_names
    return _clean({
        "network": net.name,
        "links": net.link_names,
        "equilibria": [e.to_dict(net) for e in search.equilibria],
        "index_sum": search.index_sum,
        "search_complete": search.complete,
        "notes": search.notes,
        "algorithm1": {"prices": r.prices.tolist(), "rates": dict(zip(names, r.rates.tolist())),
                       "mu": dict(zip(names, r.mu.tolist())), "iterations": int(r.iterations),
                       "converged": bool(r.converged), "mode": mode, "kappa": kappa, "prob": prob,
                       "period": period},
        "optimum": {"prices": opt.prices.tolist(), "rates": dict(zip(names, opt.rates.tolist())),
                    "utility": opt.utility, "kkt_violation": opt.kkt},
    })


#: Largest relative KKT violation of an optimum reported as such (the solver reaches ~1e-13).
OPTIMUM_KKT_TOL = 1e-6


def run_cost(net: model.Network, period=None, *, plot: bool, where: str, force: bool):
    """Worst-case price steps of ``mpcc hetero FILE``: Algorithm 1 runs up to max_iterations
    periods of period/dt implicit steps (and, with --plot, once more at dt = 0.05 plus the
    [dynamics] trajectories)."""
    from .. import cost
    cfg = net.settings.get("algorithm1", {})
    period = period if period is not None else cfg.get("period", 20.0)
    iters = cfg.get("max_iterations", 5000)
    steps = iters * max(1.0, period / cfg.get("dt", 0.5))
    if plot:
        dyn = net.settings.get("dynamics", {})
        steps += iters * max(1.0, period / 0.05)
        steps += len(dyn.get("starts") or [0]) * dyn.get("duration", 200.0) / dyn.get("dt", 0.05)
    cost.guard(cost.hetero(len(net.links), steps), where, force,
               "lower algorithm1.max_iterations or period, or raise dt")


def _print_report(net: model.Network, rep: dict):
    from rich.console import Console
    from rich.table import Table

    con = Console()
    con.print(f"[bold]{net.describe()}[/bold]")
    t = Table(title=f"Equilibria of (3), (6), (7): {len(rep['equilibria'])} found, "
                    f"index sum {rep['index_sum']} (1 for a regular network)")
    t.add_column("#")
    t.add_column("prices p")
    t.add_column("bottlenecks")
    t.add_column("stable")
    t.add_column("max Re λ(∂y/∂p)")
    t.add_column("Thm 6 (22)")
    t.add_column("γmin/γmax (17)")
    t.add_column("Û/U*")
    for k, e in enumerate(rep["equilibria"]):
        lam = max((v[0] for v in e["eigenvalues"]), default=float("nan"))
        t.add_row(str(k + 1), " ".join(f"{v:.4g}" for v in e["prices"]), ",".join(e["bottlenecks"]),
                  "yes" if e["stable"] else "NO", f"{lam:.3g}",
                  {True: "holds", False: "fails", None: "n/a"}[e["theorem6"]],
                  f"{e['efficiency_bound']:.3f}",
                  f"{e['utility_ratio']:.4f}" + ("" if e["corollary3_applies"] else " (U<0: bound n/a)")
                  if e["utility_ratio"] is not None else "-")
    con.print(t)
    t = Table(title="Source rates: equilibria, Algorithm 1, Theorem-11 optimum")
    t.add_column("source")
    for k in range(len(rep["equilibria"])):
        t.add_column(f"eq {k + 1}")
    a1 = rep["algorithm1"]
    t.add_column(f"Algorithm 1 ({a1['mode']}, κ={a1['kappa']:g}, {a1['iterations']} it.)")
    t.add_column("optimum")
    t.add_column("μ")
    for s in net.source_names:
        t.add_row(s, *[f"{e['rates'][s]:.4g}" for e in rep["equilibria"]], f"{a1['rates'][s]:.4g}",
                  f"{rep['optimum']['rates'][s]:.4g}", f"{a1['mu'][s]:.4g}")
    con.print(t)
    con.print("optimum prices: " + " ".join(f"{v:.4g}" for v in rep["optimum"]["prices"])
              + "   Algorithm 1 prices: " + " ".join(f"{v:.4g}" for v in a1["prices"])
              + ("" if a1["converged"] else "   [red](Algorithm 1 did not converge)[/red]"))
    for n in rep["notes"]:
        con.print(f"[yellow]note:[/yellow] {n}")


def _plot_file(net: model.Network, rep: dict, out: Path, kappa, mode, prob, period, seed) -> list[str]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from .dynamics import algorithm1, integrate

    out.mkdir(parents=True, exist_ok=True)
    a = net.arrays()
    dyn = net.settings.get("dynamics", {})
    starts = dyn.get("starts") or [[1.0] * len(net.links)]
    duration = dyn.get("duration", 200.0)
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
    for s in starts:
        _, t, p = integrate(a, np.array(s), duration, dt=dyn.get("dt", 0.05), record=True)
        for l, ln in enumerate(net.link_names):
            axes[0].plot(t, p[:, l], lw=1, label=f"{ln} from {s}" if len(starts) > 1 else ln)
    for e in rep["equilibria"]:
        for v in e["prices"]:
            axes[0].axhline(v, color="k" if e["stable"] else "r", ls=":", lw=0.6)
    axes[0].set_title("dual dynamics ṗ = y(p) − c (dotted: equilibria, red = unstable)")
    axes[0].set_xlabel("time")
    axes[0].set_ylabel("price")
    axes[0].legend(fontsize=7)
    r = algorithm1(a, np.array(starts[0]), mode=mode, kappa=kappa, prob=prob, period=period, dt=0.05,
                   record=True, rng=np.random.default_rng(seed))
    for l, ln in enumerate(net.link_names):
        axes[1].plot(r.times, r.trajectory[:, l], lw=1, label=ln)
        axes[1].axhline(rep["optimum"]["prices"][l], color="k", ls=":", lw=0.6)
    axes[1].set_title(f"Algorithm 1 ({mode}, κ = {kappa:g}); dotted: Theorem-11 optimum")
    axes[1].set_xlabel("time")
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    from ..plotting import save_figure

    return [str(f) for f in save_figure(fig, out, f"{net.name}_hetero")]


@command.command("run")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the JSON contract instead of tables.")
@click.option("--plot", "plot_dir", type=click.Path(file_okay=False), help="Write PNG/SVG plots here.")
@click.option("--algorithm1", "mode", type=click.Choice(["sync", "async"]), default=None,
              help="Algorithm 1 updates: all sources every period, or each with probability --prob.")
@click.option("--kappa", type=Number("hetero.kappa"), default=None, help="Algorithm 1 step size κ in (0, 1].")
@click.option("--prob", type=Number("hetero.prob"), default=None, help="Update probability per period (async).")
@click.option("--period", type=Number("hetero.period"), default=None, help="Time units between μ updates (T).")
@click.option("--seed", type=Number("seed"), default=None, help="Seed of the asynchronous updates.")
@click.option("--force", is_flag=True, help="Run even when the cost estimate exceeds the limits (docs/scenario.md).")
def run(file, as_json, plot_dir, mode, kappa, prob, period, seed, force):
    """Analyse the network FILE (see scenarios/tang2010/)."""
    for name, v, lo, hi in (("--kappa", kappa, 0, 1), ("--prob", prob, 0, 1)):
        if v is not None and not (lo < v <= hi):
            raise MpccError(f"{name} must be in (0, 1], got {v:g} (fix: e.g. {name} 0.5)")
    if period is not None and not period > 0:
        raise MpccError(f"--period must be > 0, got {period:g} (fix: e.g. --period 20)")
    net = model.load(file)
    run_cost(net, period, plot=bool(plot_dir), where=file, force=force)
    rep = analyse(net, mode=mode, kappa=kappa, prob=prob, period=period, seed=seed)
    bad = [f"{k}{p}" for k in ("optimum", "algorithm1", "equilibria") for p in _nulls(rep.get(k))]
    if bad:
        raise MpccError(f"{file}: {bad[0]}: not a finite number — the computation overflows with this file's values "
                        f"(fix: bring capacities, utility and mapping parameters closer to 1)")
    if plot_dir:
        a1 = rep["algorithm1"]
        with staged(plot_dir, "--plot") as tmp:
            files = _plot_file(net, rep, tmp, a1["kappa"], a1["mode"], a1["prob"], a1["period"],
                               seed if seed is not None else 1)
        rep["plots"] = relocate(files, tmp, plot_dir)
    if as_json:
        click.echo(json.dumps(rep, indent=2))
    else:
        _print_report(net, rep)
        for f in rep.get("plots", []):
            click.echo(f"wrote {f}")


@command.command("example3")
@click.option("--json", "as_json", is_flag=True)
@click.option("--plot", "plot_dir", type=click.Path(file_okay=False), help="Write Figs. 8/9-style plots here.")
def example3_cmd(as_json, plot_dir):
    """Example 3: three links, three protocols, three equilibria; Algorithm 1 from Cases 1 and 2."""
    from ..reproduce.tang2010.example3 import example3
    with maybe_staged(plot_dir, "--plot") as tmp:
        rep = relocate(_clean(example3(None if tmp is None else str(tmp))), tmp, plot_dir)
    if as_json:
        click.echo(json.dumps(rep, indent=2))
        return
    from rich.console import Console
    from rich.table import Table
    con = Console()
    t = Table(title=f"Example 3: {len(rep['equilibria'])} equilibria (index sum {rep['index_sum']})")
    for col in ("#", "prices p", "stable", "eigenvalues of ∂y/∂p", "Thm 6", "γmin/γmax"):
        t.add_column(col)
    for k, e in enumerate(rep["equilibria"]):
        t.add_row(str(k + 1), " ".join(f"{v:.4f}" for v in e["prices"]), "yes" if e["stable"] else "NO",
                  " ".join(f"{re:.3g}{im:+.2g}i" for re, im in e["eigenvalues"]),
                  {True: "holds", False: "fails", None: "n/a"}[e["theorem6"]], f"{e['efficiency_bound']:.3f}")
    con.print(t)
    t = Table(title=f"Cases 1 and 2: equilibrium after the first period, paper vs ours "
                    f"(optimum p1*: paper {rep['paper']['p1_optimum']}, ours {rep['optimum']['prices'][0]:.4f})")
    for col in ("case", "start", "paper", "ours"):
        t.add_column(col)
    for case, v in rep["cases"].items():
        t.add_row(case, str(v["start"]), str(rep["paper"][case]), " ".join(f"{x:.4f}" for x in v["first_equilibrium"]))
    con.print(t)
    t = Table(title="Algorithm 1 (μ updated every 20 time units)")
    for col in ("case", "κ", "final p", "periods", "converged", "max rate error vs optimum"):
        t.add_column(col)
    for case, v in rep["cases"].items():
        for k, r in v["algorithm1"].items():
            t.add_row(case, k.split("=")[1], " ".join(f"{x:.4f}" for x in r["prices"]), str(r["iterations"]),
                      "yes" if r["converged"] else "NO", f"{r['max_rate_error']:.2e}")
    con.print(t)
    for f in rep.get("plots", []):
        click.echo(f"wrote {f}")


@command.command("example4")
@click.option("--trials", type=Number("trials"), default=1000, show_default=True)
@click.option("--workers", type=Number("workers"), default=None, help="Processes (default: all cores).")
@click.option("--seed", type=Number("seed"), default=2010, show_default=True)
@click.option("--json", "as_json", is_flag=True)
@click.option("--plot", "plot_dir", type=click.Path(file_okay=False), help="Write a Fig. 10-style plot here.")
def example4_cmd(trials, workers, seed, as_json, plot_dir):
    """Example 4: random 5-link, 15-flow networks, asynchronous Algorithm 1 (prob 0.6 and 0.3)."""
    from ..reproduce.tang2010.example4 import example4
    with maybe_staged(plot_dir, "--plot") as tmp:
        rep = relocate(_clean(example4(trials, workers, progress=not as_json, seed=seed,
                                       out_dir=None if tmp is None else str(tmp))), tmp, plot_dir)
    if as_json:
        click.echo(json.dumps(rep, indent=2))
        return
    from rich.console import Console
    from rich.table import Table
    t = Table(title=f"Example 4: {trials} random trials (paper: all 1000 converge)")
    for col in ("update prob.", "converged to optimum (≤1 %)", "max rate error", "median / max periods"):
        t.add_column(col)
    for prob, v in rep["by_prob"].items():
        t.add_row(prob, f"{v['converged_to_optimum']}/{v['trials']}", f"{v['max_rate_error']:.2e}",
                  f"{v['median_iterations']:.0f} / {v['max_iterations']}")
    Console().print(t)
    for f in rep.get("plots", []):
        click.echo(f"wrote {f}")


def _w_option(value):
    """--w: "calibrate", "paper" or seconds > 0."""
    v = str(value).strip().lower()
    if v in ("calibrate", "paper"):
        return v
    try:
        w = float(v)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not 'calibrate', 'paper' or a number of seconds") from None
    if not w > 0:
        raise click.BadParameter(f"{value!r}: w must be > 0 seconds")
    return w


@command.command("example1")
@click.option("--runs", type=Number("runs"), default=20, show_default=True, help="Seeds per configuration.")
@click.option("--duration", type=Number("testbed.duration_s"), default=None,
              help="Override duration_s of the scenario files (s).")
@click.option("--measure", nargs=2, type=Number("time_s"), default=(1800.0, 5400.0), show_default=True,
              help="Measurement window (s).")
@click.option("--workers", type=Number("workers"), default=1, show_default=True, help="Parallel simulations.")
@click.option("--scenarios", "scenario_dir", type=click.Path(file_okay=False, exists=True),
              default="scenarios/tang2010", show_default=True)
@click.option("--w", "w", default="calibrate", show_default=True, metavar="calibrate|paper|SECONDS",
              callback=lambda ctx, param, value: _w_option(value),
              help="Algorithm 2's w for two extra 1b rows (both buffers at one w): 'calibrate' derives it "
                   "from the B = 400, w = 125 s runs (equal Reno/FAST rates, footnote 6; B = 80 held out), "
                   "SECONDS uses it as given, 'paper' shows only the paper's w = 125 s rows.")
@click.option("--plot", "plot_dir", type=click.Path(file_okay=False), default=None,
              help="Write rate / α(t) plots (PNG+SVG) here.")
@click.option("--json", "as_json", is_flag=True)
def example1_cmd(runs, duration, measure, workers, scenario_dir, plot_dir, as_json, w="calibrate"):
    """Examples 1a/1b (Table I): Reno vs FAST at packet level, with and without Algorithm 2.
    Returns the result dict (for ``mpcc reproduce tang2010``'s side-by-side table)."""
    from ..reproduce.tang2010.example1 import example1
    w = _w_option(w)
    with maybe_staged(plot_dir, "--plot") as tmp:
        rep = relocate(_clean(example1(scenario_dir, runs=runs, duration_s=duration, measure=tuple(measure),
                                       workers=workers, progress=not as_json, out_dir=None if tmp is None else str(tmp),
                                       w=None if w == "paper" else w)), tmp, plot_dir)
    if as_json:
        click.echo(json.dumps(rep, indent=2))
        return rep
    from rich.console import Console
    from rich.table import Table
    m = rep["measure_s"]
    t = Table(title=f"Table I: Reno / FAST rates (packets/ms), {runs} runs, window {m[0]:g}–{m[1]:g} s")
    for col in ("configuration", "w (s)", "paper Reno/FAST", "paper ratio", "sim Reno/FAST",
                "sim ratio (seed range)", "sim utilization", "sim α (q ms, l)"):
        t.add_column(col)
    for name, r in rep["rows"].items():
        a = f"{r['alpha']:.0f} ({r['alg2_q_ms']:.1f}, {r['alg2_l']:.1e})" if r.get("alpha") is not None else "50 (fixed)"
        paper = (f"{r['paper_reno']}/{r['paper_fast']}", f"{r['paper_ratio']}") if r["paper_reno"] is not None \
            else ("—", "target 1")
        lo, hi = r["ratio_range"]
        t.add_row(name, f"{r['w_s']:.0f}" if r.get("w_s") else "—", *paper, f"{r['reno']:.2f}/{r['fast']:.2f}",
                  f"{r['ratio']:.2f} ({lo:.2f}–{hi:.2f})", f"{r['utilization']:.1%}", a)
    Console().print(t)
    if "calibration" in rep:
        c = rep["calibration"]
        click.echo(f"calibrated w = {c['w_s']:.1f} s from {c['calibration_rows']} at w = {c['w_cal_s']:g} s "
                   f"(Reno {c['reno_cal']:.2f}, FAST {c['fast_cal']:.2f} packets/ms): l_cal = α₀/(w·x_F) = "
                   f"{c['l_cal']:.3g} (Algorithm 2's mean l {c['l_alg2_mean']:.3g}, FAST's drops/sent "
                   f"{c['l_fast_pooled']:.3g}), equal-rate target x* = {c['target_rate']:.2f} packets/ms, "
                   f"l* = l_cal·(x_R/x*)² = {c['l_target']:.3g}, w = α₀/(l*·x*); "
                   f"with l unchanged it would be {c['w_fixed_l_s']:.1f} s")
    for f in rep.get("plots", []):
        click.echo(f"wrote {f}")
    return rep


@command.command("example2")
@click.option("--runs", type=Number("runs"), default=5, show_default=True, help="Seeds per configuration.")
@click.option("--duration", type=Number("testbed.duration_s"), default=None,
              help="Override duration_s of the scenario files (s); the windows are then the last half.")
@click.option("--workers", type=Number("workers"), default=1, show_default=True, help="Parallel simulations.")
@click.option("--scenarios", "scenario_dir", type=click.Path(file_okay=False, exists=True),
              default="scenarios/tang2010", show_default=True)
@click.option("--plot", "plot_dir", type=click.Path(file_okay=False), default=None,
              help="Write rate / α(t) / queue plots (PNG+SVG) here.")
@click.option("--json", "as_json", is_flag=True)
def example2_cmd(runs, duration, workers, scenario_dir, plot_dir, as_json):
    """Examples 2a/2b (Fig. 4 three-link RED network): FAST-first vs Reno-first, without and with
    Algorithm 2 (w = 1820 s)."""
    from ..reproduce.tang2010.example2 import EXAMPLE2_MEASURE, example2
    measure = None if duration is None else {k: (duration / 2, duration) for k in EXAMPLE2_MEASURE}
    with maybe_staged(plot_dir, "--plot") as tmp:
        rep = relocate(_clean(example2(scenario_dir, runs=runs, duration_s=duration, measure=measure, workers=workers,
                                       progress=not as_json, out_dir=None if tmp is None else str(tmp))), tmp, plot_dir)
    if as_json:
        click.echo(json.dumps(rep, indent=2))
        return
    from rich.console import Console
    from rich.table import Table
    t = Table(title=f"Examples 2a/2b: per-flow rates (packets/ms), {runs} runs")
    for col in ("configuration", "paper", "window (s)", "sim Reno", "sim FAST", "sim α",
                "bottlenecks ≥95 % (mean queue)", "Reno regime", "regime switches (t s → regime, α), seed 1"):
        t.add_column(col)
    for name, r in rep["rows"].items():
        p = r["paper"]
        ptxt = (f"Reno {p['reno']}, FAST {p['fast']}, α≈{p['alpha']:.0f}, {p['bottlenecks']}" if "reno" in p
                else p["text"])
        q = ", ".join(f"{l} {v:.0f}" for l, v in r["mean_queue"].items())
        t.add_row(name, ptxt, f"{r['measure_s'][0]:g}–{r['measure_s'][1]:g}", f"{r['reno']:.2f}",
                  f"{r['fast']:.2f}", f"{r['alpha']:.1f}" if "alpha" in r else "50 (fixed)",
                  f"{', '.join(r['bottlenecks']) or '-'} ({q})", f"{r['reno_regime_fraction']:.0%}",
                  "; ".join(f"{w['t']:.0f}→{w['to']}" + (f" α {w['alpha']:.1f}" if w['alpha'] is not None else "")
                            for w in r["switches"][0]) or "-")
    Console().print(t)
    for f in rep.get("plots", []):
        click.echo(f"wrote {f}")


@command.command("example2-model")
@click.option("--file", "path", type=click.Path(dir_okay=False, exists=True),
              default="scenarios/tang2010/example2-model.toml", show_default=True)
@click.option("--reno-beta", type=Number("hetero.utility"), default=None,
              help="Reno's β = const²/T² (ms⁻²) instead of the file's 2/180² (e.g. 2/330² for the RTT with queueing).")
@click.option("--capacity-scale", type=Number("capacity_scale"), default=1.0, show_default=True,
              help="Scale the capacities (0.9: the packet runs' 10 % noise).")
@click.option("--json", "as_json", is_flag=True)
def example2_model_cmd(path, reno_beta, capacity_scale, as_json):
    """Example 2 (Fig. 4) in the analytic model: equilibria at α = 50, the α range of each, the
    Reno state's basin, Algorithm 2 in the model (w = 1820 s) and the Theorem-11 optimum."""
    from ..reproduce.tang2010.example2_model import example2_model
    rep = _clean(example2_model(path, reno_beta=reno_beta, capacity_scale=capacity_scale))
    if as_json:
        click.echo(json.dumps(rep, indent=2))
        return
    from rich.console import Console
    from rich.table import Table
    con = Console()
    t = Table(title=f"Example 2 in the model ({path}), α = 50: per-flow rates (packets/ms), queues (packets)")
    for col in ("state", "bottlenecks", "Reno", "FAST", "queues l12/l23/l34", "stable (max Re λ, 1/ms)",
                "Thm 6 (22)", "index", "residual (7)"):
        t.add_column(col)
    for e in rep["alpha50"]:
        q = e["queues"]
        t.add_row(e["state"], ",".join(e["bottlenecks"]), f"{e['reno']:.3f}", f"{e['fast']:.3f}",
                  f"{q['l12']:.1f} / {q['l23']:.1f} / {q['l34']:.1f}",
                  f"{'yes' if e['stable'] else 'NO'} ({e['max_re_eig']:.2g})",
                  {True: "holds", False: "fails", None: "n/a"}[e["theorem6"]], str(e["index"]), f"{e['residual']:.1e}")
    con.print(t)
    grid = [g["alpha"] for g in rep["sweep"]["grid"]]
    for st, r in rep["sweep"]["ranges"].items():
        if r is None:
            con.print(f"{st} state: none for α in {grid[0]:g}…{grid[-1]:g}")
            continue
        lo = f"≤ {r['min']:g}" if r["below_grid"] else f"{r['min']:.3g}"
        hi = f"≥ {r['max']:g}" if r["above_grid"] else f"{r['max']:.3g}"
        stab = "stable at every grid α" if len(r["stable_on_grid"]) == sum(
            any(e["state"] == st for e in g["equilibria"]) for g in rep["sweep"]["grid"]) else \
            f"stable at α = {r['stable_on_grid']}"
        con.print(f"{st} state exists for α from {lo} to {hi} ({stab}; grid {grid[0]:g}…{grid[-1]:g})")
    for b in rep["basin"]:
        if b.get("critical_l12") is None and not b["critical_l23"]:
            continue
        con.print(f"α = {b['alpha']:g}: Reno state l12 = l34 = {b['reno_queues']['l12']:.0f}, saddle l12 = "
                  f"{b['saddle_queues']['l12']:.0f}; FAST state reached from l23 = {b['l23_kick']:g} when l12 = l34 < "
                  f"{b['critical_l12']:.0f}; l23 queue needed with l12/l34 intact {b['critical_l23'].get('1') or float('nan'):.0f},"
                  f" with l12/l34 empty {b['critical_l23'].get('0') or float('nan'):.1f}")
    o = rep["optimum"]
    con.print(f"Theorem-11 optimum (w = 1820 s): Reno {o['reno']:.3f}, FAST {o['fast']:.3f} packets/ms, "
              f"l12/l34 queue {o['queues']['l12']:.0f}, α = x·q = {o['alpha']:.1f}")
    for s, r in rep.get("alg2", {}).items():
        sw = "; ".join(f"{w['t_s']:.0f} s → {w['to']} at α {w['alpha']:.2f}" for w in r["switches"]) or "no switch"
        con.print(f"Algorithm 2 in the model from the {s} state: {'converged' if r['converged'] else 'NOT converged'} "
                  f"after {r['updates']} updates ({r['updates'] * 2} min) to α = {r['alpha']:.2f}, {r['state']} state, "
                  f"Reno {r['reno']:.3f}, FAST {r['fast']:.3f} ({sw})")
