"""``mpcc kernel``: build, load, unload and inspect the BPF struct_ops congestion controls.

    mpcc kernel list              algorithms with a BPF implementation and their kernel names
    mpcc kernel build [NAME]      compile bpf/<name>.bpf.c against the running kernel's BTF
    mpcc kernel load NAME         register (stays registered until `mpcc kernel unload NAME`)
    mpcc kernel unload NAME|all   unregister
    mpcc kernel status [--json]   what is registered, who holds it
    mpcc kernel cleanup           unregister what only dead processes held
"""

from __future__ import annotations

import json
import os

import click

from . import bpf


@click.group("kernel")
def command():
    """BPF struct_ops congestion controls for upstream Linux MPTCP (mpcc_balia, mpcc_lia, ...)."""


@command.command("list")
def list_cmd():
    """Algorithms with a BPF implementation and their kernel names."""
    loaded = {}
    if os.geteuid() == 0 and bpf._tool("bpftool"):
        try:
            loaded = bpf.registered()
        except Exception:
            loaded = {}
    for name in bpf.algorithms():
        k = bpf.kernel_name(name)
        state = "registered" if k in loaded else ""
        click.echo(f"{name:<12} {k:<16} {state}".rstrip())


@command.command("build")
@click.argument("name", required=False)
@click.option("--force", is_flag=True, help="Rebuild even if up to date.")
def build_cmd(name, force):
    """Compile the BPF objects (all, or NAME) into bpf/.output/."""
    for obj in bpf.build(name, force=force):
        click.echo(f"built {obj}")


@command.command("load")
@click.argument("name")
def load_cmd(name):
    """Register NAME's struct_ops; it stays registered after this command exits."""
    reg = bpf.load(name, persistent=True)
    verb = "registered" if reg.created else "already registered"
    click.echo(f"{reg.kernel_name} {verb} (struct_ops map id {reg.map_id}); select it with "
               f"setsockopt(TCP_CONGESTION, \"{reg.kernel_name}\") or "
               f"sysctl net.ipv4.tcp_congestion_control={reg.kernel_name}")


@command.command("unload")
@click.argument("name")
def unload_cmd(name):
    """Unregister NAME (or `all`)."""
    names = bpf.algorithms() if name == "all" else [name]
    for n in names:
        was = bpf.unload(n)
        if was or name != "all":
            click.echo(f"{bpf.kernel_name(n)} {'unregistered' if was else 'was not registered'}")


@command.command("status")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def status_cmd(as_json):
    """Registered mpcc congestion controls and their holders."""
    rows = bpf.status()
    if as_json:
        click.echo(json.dumps([r.to_json() for r in rows], indent=1))
        return
    from rich.console import Console
    from rich.table import Table

    t = Table(title="mpcc BPF congestion controls")
    for col in ("algorithm", "kernel", "loaded", "id", "selectable", "held by", "built"):
        t.add_column(col)
    for r in rows:
        held = "persistent" if r.persistent else ", ".join(map(str, r.holders))
        if r.registered and not r.owned:
            held = "not mpcc's (no record)"
        t.add_row(r.algorithm, r.kernel_name, "yes" if r.registered else "no",
                  str(r.map_id or ""), "yes" if r.available else "no", held, "yes" if r.built else "no")
    Console().print(t)


@command.command("cleanup")
def cleanup_cmd():
    """Unregister mpcc struct_ops whose holders have all exited."""
    removed = bpf.cleanup_stale()
    click.echo("removed: " + (", ".join(removed) if removed else "nothing"))
