"""``mpcc reproduce PAPER``."""

from __future__ import annotations

from pathlib import Path

import click

from ..outdir import maybe_staged
from ..ranges import Number
from ..errors import MpccError
from .peng2016.paper import PENG_COLUMNS

ENGINES = ("fluid", "sim", "testbed")


@click.group("reproduce")
def command():
    """Reproduce a paper's tables and figures, paper | fluid | sim | kernel side by side."""


@command.command("peng2016")
@click.option("--engine", "engines", multiple=True, type=click.Choice(ENGINES + ("all",)), default=("all",),
              show_default=True, help="Engines to run (repeatable).")
@click.option("--full", is_flag=True,
              help="The paper's run lengths: 20 runs per cell, 100 s (Table V 200 s); the kernel column takes hours. "
                   "Default: a quick budget, every engine in about 10 minutes, shortened cells marked †.")
@click.option("--runs", type=click.IntRange(1, 1000), default=None,
              help="Simulator runs per cell (default: 5 quick, 20 with --full).")
@click.option("--kernel-runs", type=click.IntRange(1, 100), default=None,
              help="Kernel runs per cell of Tables III–V (default: 1 quick, 20 with --full).")
@click.option("--seed", type=Number("seed"), default=1, show_default=True)
@click.option("--algorithms", default=",".join(PENG_COLUMNS), show_default=True,
              help="Comma-separated algorithms (the paper's columns).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Directory for REPORT.md (open it first), figures/ (PNG + SVG), results.json/.md and "
                   "per-engine time series.")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
@click.option("--no-progress", is_flag=True)
def peng2016(engines, full, runs, kernel_runs, seed, algorithms, out, as_json, no_progress):
    """Peng, Walid, Hwang, Low — Tables III–V and Fig. 3 (Balia). With --out, open OUT/REPORT.md first."""
    from dataclasses import replace

    from rich.console import Console

    from .. import algorithms as registry
    from . import peng2016 as p

    algos = []
    for name in (a.strip() for a in algorithms.split(",") if a.strip()):
        try:
            algos.append(registry.get(name).name)
        except registry.AlgorithmSpecError as e:
            raise click.BadParameter(f"{name!r}: {e.problem} ({e.fix})", param_hint="--algorithms")
    engines = ENGINES if "all" in engines else tuple(dict.fromkeys(engines))
    console = Console(stderr=as_json)
    budget = p.FULL if full else p.QUICK
    if runs is not None:
        budget = replace(budget, sim_runs=runs, fig3_sim_runs=min(runs, budget.fig3_sim_runs))
    if kernel_runs is not None:
        budget = replace(budget, table3=replace(budget.table3, runs=kernel_runs),
                         table4=replace(budget.table4, runs=kernel_runs), table5=replace(budget.table5, runs=kernel_runs))
    with maybe_staged(out, keep_partial=True) as tmp:
        rep, errors = p.reproduce(engines, algos, budget, seed, tmp, progress=not no_progress)
    if as_json:
        click.echo(rep.to_json())
    else:
        rep.print(console)
        if out:
            console.print(f"wrote {out}/REPORT.md (open it first: tables, figures), results.md, results.json")
    if errors:
        raise MpccError("; ".join(errors) + " — every other cell was computed and kept")


JIANG_ENGINES = ("model", "sim", "testbed")


@command.command("jiang2011")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="results/jiang2011", show_default=True)
@click.option("--quick", is_flag=True, help="Shorter model and simulator runs.")
@click.option("--format", "fmt", type=click.Choice(["png", "svg"]), default="png", show_default=True)
@click.option("--engine", "engines", multiple=True, type=click.Choice(JIANG_ENGINES + ("all", "none")),
              default=("all",), show_default=True,
              help="Columns of the paper | model | sim | kernel table (repeatable; testbed = the kernel, root).")
@click.option("--kernel-budget", type=click.Choice(["quick", "full"]), default="quick", show_default=True,
              help="Kernel run lengths: quick = one short run per cell (about 6 min), full = 3 runs × 120 s / 300 s "
                   "per cell (hours).")
@click.option("--kernel-lock", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Shared testbed: each kernel cell holds an flock on this file while it runs (as `flock FILE CMD`), "
                   "so other users' runs go between cells; the model and the simulator run without it.")
@click.option("--no-progress", is_flag=True)
@click.pass_context
def jiang2011(ctx, out_dir, quick, fmt, engines, kernel_budget, kernel_lock, no_progress):
    """Jiang, Cai, Towsley — utilization closed forms, path usage, flappiness (Figs. 3–13), and
    utilisation (Figs. 9–10) and flappiness as paper | model | sim | kernel."""
    from rich.console import Console

    from ..mtc.cli import figures_cmd
    from .jiang2011 import budget as jb, columns

    ctx.invoke(figures_cmd, out_dir=out_dir, quick=quick, fmt=fmt)
    engines = () if "none" in engines else JIANG_ENGINES if "all" in engines else tuple(dict.fromkeys(engines))
    errors: list[str] = []
    if engines:
        with maybe_staged(out_dir, keep_partial=True) as tmp:
            rep, errors = columns.reproduce(engines, budget=jb.BUDGETS[kernel_budget], level="quick" if quick else "full",
                                            out=tmp, progress=not no_progress, kernel_lock=kernel_lock)
        console = Console()
        console.width = max(console.width, 110)
        rep.print(console)
    from .index import write_index

    intro = ("Figures 3–13 of the report (file names follow its figure numbers) and, as engines_*, "
             "utilisation and flappiness as paper | model | sim | kernel (the tables below, also results.md); "
             "see docs/mtc.md for what each shows and how it compares with the report.")
    table = Path(out_dir) / "results.md"
    if engines and table.exists():  # the engine table first, without its title
        intro += "\n\n" + table.read_text().split("\n", 1)[-1].strip() + "\n\n# Figures"
    bars = ("Grouped bars of the table above (hatched † = shorter than the report's runs; a cell without a bar is "
            "0 or n/a, see the table; error bars = 95 % intervals where a cell has ≥ 2 runs or replicas).")
    path = write_index(out_dir, "Jiang, Cai, Towsley (2011): reproduction report", intro,
                       {"engines_fig9_10": bars, "engines_flappiness": bars,
                        "engines_flappiness_traces": "One run's subflow windows per engine, smoothed over 2 s "
                                                     "(the series the flappiness metric reads)."})
    click.echo(f"wrote {path} (open it first)")
    if errors:
        raise MpccError("; ".join(errors) + " — every other cell was computed and kept")


@command.command("tang2010")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="results/tang2010", show_default=True)
@click.option("--trials", type=click.IntRange(1), default=1000, show_default=True, help="Example 4 random trials.")
@click.option("--runs", type=click.IntRange(1), default=20, show_default=True,
              help="Packet-level seeds per Example 1 configuration (Table I).")
@click.option("--runs2", type=click.IntRange(1), default=5, show_default=True,
              help="Packet-level seeds per Example 2 configuration.")
@click.option("--workers", type=click.IntRange(1), default=2, show_default=True,
              help="Parallel packet-level simulations.")
@click.option("--no-packet", is_flag=True, help="Skip the packet-level Examples 1 and 2.")
@click.option("--no-kernel", is_flag=True, help="Skip the kernel column of Table I (root, BPF struct_ops).")
@click.option("--full", is_flag=True,
              help="Kernel Table I at the paper's length scaled by 1/10: 20 runs × 540 s, the four cells side by "
                   "side (3 h). Default: a quick budget, 1 run × 240 s (≈ 4 min), cells marked †.")
@click.option("--kernel-runs", type=click.IntRange(1, 100), default=None,
              help="Kernel runs per Table I cell (default: 1 quick, 20 with --full).")
@click.option("--kernel-lock", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Shared testbed: the kernel runs hold an flock on this file (as `flock FILE CMD`); the model "
                   "and the simulator run without it.")
@click.pass_context
def tang2010(ctx, out_dir, trials, runs, runs2, workers, no_packet, no_kernel, full, kernel_runs, kernel_lock):
    """Tang, Wei, Low, Chiang — Example 3 (multiple equilibria, Algorithm 1), Example 4
    (1000 random trials), Examples 1a/1b (Table I, at the paper's w and at w calibrated on B = 400) and
    2a/2b (Fig. 4 network) at packet level and in the analytic model (RED mapping, α sweep, Algorithm 2);
    then Table I side by side, paper | sim | kernel (kernel Reno vs BPF FAST, the network scaled by 1/10;
    docs/hetero.md)."""
    from dataclasses import replace

    from rich.console import Console

    from .tang2010 import kernel as tang_kernel
    from .tang2010.table1 import reproduce as table1
    from ..hetero.cli import example1_cmd, example2_cmd, example2_model_cmd, example3_cmd, example4_cmd

    ctx.invoke(example3_cmd, as_json=False, plot_dir=out_dir)
    ctx.invoke(example4_cmd, trials=trials, workers=None, seed=2010, as_json=False, plot_dir=out_dir)
    from .common import SCENARIO_DIR

    ctx.invoke(example2_model_cmd, path=str(SCENARIO_DIR / "tang2010" / "example2-model.toml"),
               reno_beta=None, capacity_scale=1.0, as_json=False)
    sim1 = None
    if not no_packet:
        sim1 = ctx.invoke(example1_cmd, runs=runs, duration=None, measure=(1800.0, 5400.0), workers=workers,
                          scenario_dir=str(SCENARIO_DIR / "tang2010"), plot_dir=out_dir, as_json=False, w="calibrate")
        ctx.invoke(example2_cmd, runs=runs2, duration=None, workers=workers,
                   scenario_dir=str(SCENARIO_DIR / "tang2010"), plot_dir=out_dir, as_json=False)
    from .index import write_index

    budget = tang_kernel.FULL if full else tang_kernel.QUICK
    if kernel_runs is not None:
        budget = replace(budget, runs=kernel_runs)
    rep, errors = table1(sim1, None if no_kernel else budget, Path(out_dir) / "table1", progress=True,
                         kernel_lock=kernel_lock)
    rep.print(Console())
    path = write_index(out_dir, "Tang, Wei, Low, Chiang (2010): reproduction report",
                       "Examples 3 and 4 (multiple equilibria, Algorithm 1, 1000 random trials) and, unless "
                       "--no-packet, the packet-level Examples 1 and 2; file names follow the paper's figure "
                       "numbers. Table I paper | sim | kernel: table1/results.md. See bench/hetero/RESULTS.md for the "
                       "comparison with the paper.")
    click.echo(f"wrote {path} (open it first)")
    if errors:
        raise MpccError("; ".join(errors) + " — every other cell was computed and kept")
