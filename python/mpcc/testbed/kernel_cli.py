"""``mpcc kernel``: build, load, unload and inspect the BPF struct_ops congestion controls.

    mpcc kernel list              algorithms with a BPF implementation and their kernel names
    mpcc kernel build [NAME]      compile bpf/<name>.bpf.c against the running kernel's BTF
    mpcc kernel load NAME         register (stays registered until `mpcc kernel unload NAME`)
    mpcc kernel unload NAME|all   unregister
    mpcc kernel status [--json]   what is registered, who holds it
    mpcc kernel cleanup           unregister what only dead processes held

The generalized (β, η, n) family is one program per parameter set, named mpcc_g + a hash:
    mpcc kernel load generalized --beta 0.2 --eta 0.5 --n inf
"""

from __future__ import annotations

import json
import os

import click

from ..errors import MpccError
from . import bpf

_GEN_OPTIONS = [
    click.option("--beta", type=float, default=None, help="generalized: β in [0, 1] (default 0.2)."),
    click.option("--eta", type=float, default=None, help="generalized: η ≥ 0 (default 0.5)."),
    click.option("--n", "norm", default=None, help="generalized: n of ‖x‖_n: 1, 2 or inf (default inf)."),
]


def _gen_options(f):
    for opt in reversed(_GEN_OPTIONS):
        f = opt(f)
    return f


def _target(name, beta, eta, norm):
    """NAME, or the generalized parameter set given by --beta/--eta/--n."""
    given = {k: v for k, v in (("beta", beta), ("eta", eta), ("n", norm)) if v is not None}
    if not given:
        return name
    if name is None or name.strip().lower() != bpf.GENERALIZED:
        raise MpccError(f"--beta/--eta/--n are parameters of generalized, not of {name!r} "
                        f"(fix: mpcc kernel load generalized --beta 0.2 --eta 0.5 --n inf)")
    return bpf.generalized_spec(given.get("beta", 0.2), given.get("eta", 0.5), given.get("n", "inf"))


def _params(p: dict) -> str:
    return ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in p.items())


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
    specs = [bpf.spec(a) for a in bpf.algorithms()]
    try:
        specs += [g for g in bpf.generalized_in_use() if g.kernel_name not in {s.kernel_name for s in specs}]
    except Exception:
        pass
    for sp in specs:
        state = "registered" if sp.kernel_name in loaded else ""
        extra = f"({_params(dict(sp.params))})" if sp.params else ""
        click.echo(f"{sp.algorithm:<12} {sp.kernel_name:<16} {state:<11} {extra}".rstrip())
    click.echo("(generalized: any beta in [0, 1], eta >= 0, n in {1, 2, inf}: "
               "mpcc kernel load generalized --beta B --eta E --n N)")


@command.command("build")
@click.argument("name", required=False)
@click.option("--force", is_flag=True, help="Rebuild even if up to date.")
@_gen_options
def build_cmd(name, force, beta, eta, norm):
    """Compile the BPF objects (all, or NAME) into bpf/.output/."""
    for obj in bpf.build(_target(name, beta, eta, norm), force=force):
        click.echo(f"built {obj}")


@command.command("load")
@click.argument("name")
@_gen_options
def load_cmd(name, beta, eta, norm):
    """Register NAME's struct_ops; it stays registered after this command exits."""
    reg = bpf.load(_target(name, beta, eta, norm), persistent=True)
    verb = "registered" if reg.created else "already registered"
    what = f" = {reg.algorithm}({_params(dict(reg.params))})" if reg.params else ""
    click.echo(f"{reg.kernel_name}{what} {verb} (struct_ops map id {reg.map_id}); select it with "
               f"setsockopt(TCP_CONGESTION, \"{reg.kernel_name}\") or "
               f"sysctl net.ipv4.tcp_congestion_control={reg.kernel_name}")


@command.command("unload")
@click.argument("name")
@_gen_options
def unload_cmd(name, beta, eta, norm):
    """Unregister NAME (or `all`, every generalized parameter set included)."""
    if name == "all":
        names = [bpf.spec(a) for a in bpf.algorithms()]
        names += [g for g in bpf.generalized_in_use() if g.kernel_name not in {s.kernel_name for s in names}]
    else:
        names = [_target(name, beta, eta, norm)]
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
    for col in ("algorithm", "parameters", "kernel", "loaded", "id", "selectable", "held by", "built"):
        t.add_column(col)
    for r in rows:
        held = "persistent" if r.persistent else ", ".join(map(str, r.holders))
        if r.registered and not r.owned:
            held = "not mpcc's (no record)"
        params = _params(r.params) if r.params else ("unknown" if r.algorithm == bpf.GENERALIZED else "")
        t.add_row(r.algorithm, params, r.kernel_name, "yes" if r.registered else "no",
                  str(r.map_id or ""), "yes" if r.available else "no", held, "yes" if r.built else "no")
    Console().print(t)


@command.command("cleanup")
def cleanup_cmd():
    """Unregister mpcc struct_ops whose holders have all exited."""
    removed = bpf.cleanup_stale()
    click.echo("removed: " + (", ".join(removed) if removed else "nothing"))
