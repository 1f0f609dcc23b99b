"""``mpcc reproduce PAPER``."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console

from ..errors import MpccError
from .peng2016.paper import PENG_COLUMNS

ENGINES = ("fluid", "sim", "testbed")


@click.group("reproduce")
def command():
    """Reproduce a paper's tables and figures, paper | fluid | sim | kernel side by side."""


@command.command("peng2016")
@click.option("--engine", "engines", multiple=True, type=click.Choice(ENGINES + ("all",)), default=("all",),
              show_default=True, help="Engines to run (repeatable).")
@click.option("--runs", type=click.IntRange(1, 1000), default=20, show_default=True, help="Simulator runs per cell.")
@click.option("--kernel-runs", type=click.IntRange(1, 100), default=3, show_default=True, help="Testbed runs per cell.")
@click.option("--seed", type=int, default=1, show_default=True)
@click.option("--algorithms", default=",".join(PENG_COLUMNS), show_default=True,
              help="Comma-separated algorithms (the paper's columns).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Directory for results.json, results.md, Parquet time series and plots.")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
@click.option("--no-progress", is_flag=True)
def peng2016(engines, runs, kernel_runs, seed, algorithms, out, as_json, no_progress):
    """Peng, Walid, Hwang, Low — Tables III–V and Fig. 3 (Balia)."""
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
    rep, errors = p.reproduce(engines, algos, runs, kernel_runs, seed, out, progress=not no_progress)
    if as_json:
        click.echo(rep.to_json())
    else:
        rep.print(console)
        if out:
            console.print(f"wrote {out}/results.md and results.json")
    if errors:
        raise MpccError("; ".join(errors) + " — the other columns were computed and kept")


@command.command("jiang2011")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="results/jiang2011", show_default=True)
@click.option("--quick", is_flag=True, help="Shorter simulations.")
@click.option("--format", "fmt", type=click.Choice(["png", "svg"]), default="png", show_default=True)
@click.pass_context
def jiang2011(ctx, out_dir, quick, fmt):
    """Jiang, Cai, Towsley — utilization closed forms, path usage, flappiness (Figs. 3–13)."""
    from ..mtc.cli import figures_cmd

    ctx.invoke(figures_cmd, out_dir=out_dir, quick=quick, fmt=fmt)


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
@click.pass_context
def tang2010(ctx, out_dir, trials, runs, runs2, workers, no_packet):
    """Tang, Wei, Low, Chiang — Example 3 (multiple equilibria, Algorithm 1), Example 4
    (1000 random trials), Examples 1a/1b (Table I, at the paper's w and at w calibrated on B = 400) and
    2a/2b (Fig. 4 network) at packet level and in the analytic model (RED mapping, α sweep, Algorithm 2)."""
    from ..hetero.cli import example1_cmd, example2_cmd, example2_model_cmd, example3_cmd, example4_cmd

    ctx.invoke(example3_cmd, as_json=False, plot_dir=out_dir)
    ctx.invoke(example4_cmd, trials=trials, workers=None, seed=2010, as_json=False, plot_dir=out_dir)
    from .common import SCENARIO_DIR

    ctx.invoke(example2_model_cmd, path=str(SCENARIO_DIR / "tang2010" / "example2-model.toml"),
               reno_beta=None, capacity_scale=1.0, as_json=False)
    if not no_packet:
        ctx.invoke(example1_cmd, runs=runs, duration=None, measure=(1800.0, 5400.0), workers=workers,
                   scenario_dir=str(SCENARIO_DIR / "tang2010"), plot_dir=out_dir, as_json=False, w="calibrate")
        ctx.invoke(example2_cmd, runs=runs2, duration=None, workers=workers,
                   scenario_dir=str(SCENARIO_DIR / "tang2010"), plot_dir=out_dir, as_json=False)
