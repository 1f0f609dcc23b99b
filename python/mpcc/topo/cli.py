"""``mpcc topo fattree``: write a datacenter scenario (see :mod:`mpcc.topo`)."""

from __future__ import annotations

import click


@click.group("topo")
def command():
    """Generate topologies as scenario files."""


@command.command("fattree")
@click.option("--k", "k", type=int, default=8, show_default=True, help="Switch port count (even): k³/4 hosts.")
@click.option("--subflows", type=int, default=8, show_default=True, help="ECMP paths per connection (1 = TCP).")
@click.option("--algorithm", default="lia", show_default=True, help="Congestion control of every connection.")
@click.option("--traffic", type=click.Choice(["permutation"]), default="permutation", show_default=True)
@click.option("--capacity", "capacity_mbps", type=float, default=1000.0, show_default=True, help="Link rate (Mb/s).")
@click.option("--delay", "delay_ms", type=float, default=0.005, show_default=True, help="One-way delay per hop (ms).")
@click.option("--buffer", "buffer_pkts", type=int, default=100, show_default=True, help="Buffer per link (packets).")
@click.option("--duration", "duration_s", type=float, default=1.0, show_default=True, help="Simulated seconds.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the traffic matrix and path draws.")
@click.option("--out", "out", type=click.Path(dir_okay=False), default="-", show_default=True,
              help="Scenario file to write (- for standard output).")
def fattree_cmd(k, subflows, algorithm, traffic, capacity_mbps, delay_ms, buffer_pkts, duration_s, seed, out):
    """A k-ary fat tree with permutation traffic (Raiciu et al., SIGCOMM 2011)."""
    from pathlib import Path

    from . import dumps, fattree, scenario

    doc = fattree(k, subflows=subflows, algorithm=algorithm, traffic=traffic, seed=seed, duration_s=duration_s,
                  capacity_mbps=capacity_mbps, delay_ms=delay_ms, buffer_pkts=buffer_pkts)
    scenario(doc, f"fattree(k={k})")          # the same validation as a file: one line on bad input
    text = dumps(doc)
    if out == "-":
        click.echo(text, nl=False)
        return
    from ..errors import MpccError
    path = Path(out)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_text(text)
        tmp.replace(path)
    except OSError as e:
        raise MpccError(f"cannot write {out}: {e.strerror} (fix: choose a writable path with --out)") from None
    click.echo(f"wrote {out}: {len(doc['links'])} links, {len(doc['groups'])} connections", err=True)
