"""``mpcc sim SCENARIO``: simulate a scenario at packet level and print the result table."""

from __future__ import annotations

import sys

import click

from ..errors import MpccError


@click.command(name="sim")
@click.argument("scenario_file", metavar="SCENARIO", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the output contract as JSON.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default=None,
              help="Write result.json, Parquet time series and PNG plots into DIR.")
@click.option("--runs", type=int, default=1, show_default=True, help="Independent runs (seeds S, S+1, …).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the first run.")
@click.option("--scheduler", default=None, metavar="ADDR", help="Dask scheduler address (default: local cores).")
@click.option("--algorithm", default=None, metavar="NAME",
              help="Override the algorithm of the multipath groups (e.g. balia, olia).")
@click.option("--sample-interval", type=float, default=0.1, show_default=True, help="Time-series sampling (s).")
@click.option("--measure", nargs=2, type=float, default=None, metavar="T0 T1", help="Measurement window (s).")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def command(scenario_file, as_json, out_dir, runs, seed, scheduler, algorithm, sample_interval, measure, quiet):
    """Packet-level discrete-event simulation of SCENARIO (Rust core)."""
    from .. import scenario as scenario_mod
    from .engine import measurement_window, sim_options, with_algorithm
    from .parallel import aggregate, run_many

    sc = scenario_mod.load(scenario_file)
    if algorithm:
        sc = with_algorithm(sc, algorithm)
    sim_options(sc)
    measurement_window(sc, tuple(measure) if measure else None)
    if runs < 1:
        raise MpccError(f"--runs must be ≥ 1, got {runs} (fix: use --runs 1 or more)")
    if sample_interval < 0:
        raise MpccError(f"--sample-interval must be ≥ 0, got {sample_interval}")
    show = not quiet and sys.stderr.isatty()
    results = run_many(sc, runs, seed, scheduler=scheduler, progress=show, sample_interval_s=sample_interval,
                       measure=tuple(measure) if measure else None)
    result = aggregate(results) if runs > 1 else results[0].result
    if out_dir:
        from .output import write_outputs  # pyarrow, matplotlib: only when writing files

        write_outputs(out_dir, list(results), result)
    if as_json:
        click.echo(result.to_json())
    else:
        result.print()
        if out_dir:
            click.echo(f"wrote {out_dir}/ (result.json, subflows.parquet, links.parquet, cwnd.png, queues.png)")
