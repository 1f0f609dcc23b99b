"""``mpcc testbed SCENARIO`` — run a scenario on the real kernel (network namespaces, linkem,
kernel MPTCP/TCP, BPF congestion controls)."""

from __future__ import annotations

from pathlib import Path

import click

from ..errors import MpccError
from ..options import RECEIVERS
from ..outdir import maybe_staged
from ..ranges import Number
from ..scenario import load


@click.command("testbed")
@click.argument("scenario", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the RunResult as JSON (engine \"testbed\").")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Write result.json, subflows.parquet, links.parquet and cwnd.png here.")
@click.option("--runs", type=Number("testbed.runs"), help="Repetitions (default: [testbed] runs or 1).")
@click.option("--duration", "duration_s", type=Number("testbed.duration_s"), help="Run length in seconds (group start/stop scale with it).")
@click.option("--warmup", "warmup_s", type=Number("testbed.warmup_s"), help="Seconds excluded at the start of each group (default min(10, 20%)).")
@click.option("--algorithm", help="Algorithm of the multipath groups (e.g. balia, lia, or kernel reno/cubic).")
@click.option("--sample-ms", type=Number("testbed.sample_ms"), help="Sampling interval of cwnd/srtt/bytes acked (10–1000 ms).")
@click.option("--receiver", type=click.Choice(RECEIVERS),
              help="The receivers' ACKs: linux (stock delayed ACKs, the default) or quickack (every segment ACKed).")
@click.option("--no-progress", is_flag=True, help="No progress bar.")
@click.option("--cleanup", "cleanup_only", is_flag=True, help="Only remove state left by crashed runs, then exit.")
def command(scenario, as_json, out, runs, duration_s, warmup_s, algorithm, sample_ms, receiver, no_progress,
            cleanup_only):
    """Run SCENARIO on the real kernel: one namespace per side, one linkem relay per link.

    Needs root, MPTCP, and linkem built (`cargo build --release -p linkem`).
    `mpcc testbed --cleanup` removes state left by crashed runs (every run also does this first).
    """
    if cleanup_only:
        from . import netns

        netns.check_environment()
        removed = netns.cleanup_stale()
        click.echo("removed: " + ", ".join(removed) if removed else "nothing to clean")
        return
    if scenario is None:
        raise click.UsageError("missing SCENARIO (a .toml file)")
    from . import engine

    s = load(scenario)
    st = engine.settings_from(s, runs=runs, duration_s=duration_s, warmup_s=warmup_s, algorithm=algorithm,
                              sample_ms=sample_ms, receiver=receiver)
    with maybe_staged(out, keep_partial=True) as tmp:
        try:
            res = engine.run_scenario(s, st, tmp, progress=not (no_progress or as_json))
        except MpccError as e:
            if tmp is None or str(tmp) not in str(e):
                raise
            # a log path in the staging directory: name it where it is published (--out)
            raise MpccError(str(e).replace(str(tmp), str(out))) from None
    if as_json:
        click.echo(res.to_json())
    else:
        res.print()
        from .health import line
        click.echo(line(res.extra.get("health")))
        if out:
            click.echo(f"wrote {out}/result.json, subflows.parquet, links.parquet, cwnd.png")

