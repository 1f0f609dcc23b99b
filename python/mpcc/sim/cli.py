"""``mpcc sim SCENARIO``: simulate a scenario at packet level and print the result table."""

from __future__ import annotations

import sys

import click

from ..errors import MpccError
from ..ranges import Number


@click.command(name="sim")
@click.argument("scenario_file", metavar="SCENARIO", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the output contract as JSON.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default=None,
              help="Write result.json, Parquet time series and PNG plots into DIR.")
@click.option("--runs", type=Number("runs"), default=1, show_default=True, help="Independent runs (seeds S, S+1, …).")
@click.option("--seed", type=Number("seed"), default=0, show_default=True, help="Seed of the first run.")
@click.option("--scheduler", default=None, metavar="ADDR", help="Dask scheduler address (default: local cores).")
@click.option("--algorithm", default=None, metavar="NAME",
              help="Override the algorithm of the multipath groups (e.g. balia, olia).")
@click.option("--sample-interval", type=Number("sim.sample_interval_s"), default=0.1, show_default=True,
              help="Time-series sampling (s) for --out; 0 = none.")
@click.option("--measure", nargs=2, type=Number("time_s"), default=None, metavar="T0 T1", help="Measurement window (s).")
@click.option("--force", is_flag=True, help="Run even when the cost estimate exceeds the limits (docs/scenario.md).")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def command(scenario_file, as_json, out_dir, runs, seed, scheduler, algorithm, sample_interval, measure, force, quiet):
    """Packet-level discrete-event simulation of SCENARIO (Rust core)."""
    from .. import cost
    from .. import scenario as scenario_mod
    from .engine import measurement_window, sim_options, with_algorithm
    from .parallel import aggregate, run_many

    sc = scenario_mod.load(scenario_file)
    if algorithm:
        sc = with_algorithm(sc, algorithm)
    sim_options(sc)
    measurement_window(sc, tuple(measure) if measure else None)
    if not out_dir:
        # only --out writes the time series: without it, sampling would be work and memory for
        # nothing (the summary and --json do not use it; a scenario's own [sim] sample_interval_s
        # still applies)
        sample_interval = 0.0
    cost.guard(cost.sim(sc, runs=runs, sample_interval_s=sample_interval), f"{scenario_file}", force,
               "shorten duration_s, lower capacities, flows or --runs, or raise --sample-interval")
    show = not quiet and sys.stderr.isatty()
    done = []
    try:
        results = run_many(sc, runs, seed, scheduler=scheduler, progress=show, sample_interval_s=sample_interval,
                           measure=tuple(measure) if measure else None, on_done=done.append)
    except BaseException as e:  # Ctrl-C or a failed run: keep every completed run
        if out_dir and done:
            from .output import write_outputs
            done.sort(key=lambda r: r.seed)
            reason = "interrupted" if isinstance(e, KeyboardInterrupt) else f"failed: {type(e).__name__}"
            write_outputs(out_dir, done, aggregate(done) if len(done) > 1 else done[0].result,
                          partial=(len(done), runs, reason))
            e.mpcc_kept = f"kept the {len(done)} completed of {runs} runs in {out_dir}/ (marked partial: PARTIAL.json)"
        raise
    result = aggregate(results) if runs > 1 else results[0].result
    if not result.finite():
        raise MpccError(f"{scenario_file}: the simulation produced a non-finite number (fix: report this "
                        f"scenario as a bug; check its ranges in docs/scenario.md)")
    if out_dir:
        from .output import write_outputs  # pyarrow, matplotlib: only when writing files

        write_outputs(out_dir, list(results), result)
    if as_json:
        click.echo(result.to_json())
    else:
        result.print()
        if out_dir:
            click.echo(f"wrote {out_dir}/ (result.json, subflows.parquet, links.parquet, cwnd.png, queues.png)")
