"""``mpcc compare SCENARIO`` — the same scenario on the fluid model, the simulator and the
kernel testbed, side by side, with a diagnosis of every difference (docs/compare.md)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..errors import MpccError
from ..ranges import Number
from ..scenario import load


@click.command("compare")
@click.argument("scenario", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--engines", default="fluid,sim", show_default=True,
              help="Comma-separated engines among fluid, sim, testbed (testbed needs root).")
@click.option("--runs", type=Number("runs"), default=1, show_default=True, help="Repetitions of sim and testbed (seeds seed…seed+N−1).")
@click.option("--seed", type=Number("seed"), default=0, show_default=True, help="First seed.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Write comparison.json, comparison.png/.svg and the time series (Parquet) here.")
@click.option("--json", "as_json", is_flag=True, help="Print each engine's output contract plus differences and diagnosis as JSON.")
@click.option("--threshold", type=Number("threshold"), default=0.10, show_default=True,
              help="Relative difference above which the diagnosis explains a group/path.")
@click.option("--force", is_flag=True, help="Run even when the cost estimate exceeds the limits (docs/scenario.md).")
def command(scenario, engines, runs, seed, out, as_json, threshold, force):
    """Run SCENARIO on several engines; print per group and per path each engine's per-flow rate,
    the relative differences, and why they differ (loss vs price, window vs eq. (7), RTT,
    retransmissions and timeouts)."""
    from . import compare, parse_engines
    from ..results import dumps

    names = parse_engines(engines)
    if runs < 1:
        raise MpccError(f"--runs must be ≥ 1, got {runs} (fix: e.g. --runs 3)")
    if not (threshold > 0):
        raise MpccError(f"--threshold must be > 0, got {threshold} (fix: e.g. --threshold 0.1)")
    s = load(scenario)
    n_sim = sum(n in ("sim", "sim-linux") for n in names)
    if n_sim:
        from .. import cost
        cost.guard(cost.sim(s, runs=runs * n_sim), str(scenario), force, "shorten duration_s or lower --runs")

    def progress(e):
        if not as_json:
            click.echo(f"mpcc compare: running {e} …", err=True)

    c = compare(s, engines=names, runs=runs, seed=seed, threshold=threshold, progress=progress)
    if as_json:
        click.echo(dumps(c.to_dict()))
    else:
        c.print()
    if out:
        from ..outdir import relocate, staged
        with staged(out) as tmp:
            paths = relocate(c.write(tmp), tmp, out)
        if not as_json:
            click.echo(f"wrote {', '.join(p.name for p in paths)} to {out}")
    if not c.results:
        raise MpccError(f"{s.source}: no engine could run (see the errors above) (fix: remove the failing engines "
                        f"from --engines or fix what their errors name)")
    sys.stdout.flush()
