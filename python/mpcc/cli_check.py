"""``mpcc check SCENARIO...``: validate scenario files without running anything."""

from __future__ import annotations

import click

from . import scenario as sc


@click.command("check")
@click.argument("scenarios", nargs=-1, required=True, type=click.Path(dir_okay=False))
def command(scenarios):
    """Validate SCENARIO files; print one line per file."""
    for path in scenarios:
        s = sc.load(path)
        routes = sum(g.count * len(g.paths) for g in s.groups)
        click.echo(f"ok  {path}: {s.name}: {len(s.links)} links, {len(s.groups)} groups, {routes} routes")
