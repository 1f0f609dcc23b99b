"""``mpcc kernel``: build, load, unload and inspect the BPF struct_ops congestion controls.

    mpcc kernel list              algorithms with a BPF implementation and their kernel names
    mpcc kernel build [NAME]      compile bpf/<name>.bpf.c against the running kernel's BTF
    mpcc kernel load NAME         register (stays registered until `mpcc kernel unload NAME`)
    mpcc kernel unload NAME|all   unregister
    mpcc kernel status [--json]   what is registered, who holds it
    mpcc kernel cleanup           unregister what only dead processes held
    mpcc kernel pm [--source ADDR]...  a user-space MPTCP path manager that re-joins lost paths

Parameters are set per load; every parameter set is one program, the defaults under the
file's kernel name, any other set under a hashed name:
    mpcc kernel load ewtcp -p a=0.25                   (or: mpcc kernel load "ewtcp(a=0.25)")
    mpcc kernel load generalized --beta 0.2 --eta 0.5 --n inf
"""

from __future__ import annotations

import json
import os

import click

from ..ranges import Number
from ..errors import MpccError
from . import bpf
from ..pm.policy import MAX_RETRY_S, RETRY_S   # stdlib only at import: pyroute2 loads when the PM runs

_PARAM_OPTIONS = [
    click.option("--param", "-p", "param", multiple=True, metavar="NAME=VALUE",
                 help="A parameter of the algorithm's BPF program (repeatable), e.g. -p a=0.25 for ewtcp."),
    click.option("--beta", type=Number("generalized.beta"), default=None, help="generalized: β in [0, 1] (default 0.2)."),
    click.option("--eta", type=Number("generalized.eta"), default=None, help="generalized: η ≥ 0 (default 0.5)."),
    click.option("--n", "norm", default=None, help="generalized: n of ‖x‖_n: 1, 2 or inf (default inf)."),
]


def _param_options(f):
    for opt in reversed(_PARAM_OPTIONS):
        f = opt(f)
    return f


def _target(name, param=(), beta=None, eta=None, norm=None):
    """NAME, or NAME with the parameters given by -p NAME=VALUE (and --beta/--eta/--n)."""
    given = {k: v for k, v in (("beta", beta), ("eta", eta), ("n", norm)) if v is not None}
    for item in param:
        k, sep, v = item.partition("=")
        if not sep or not k.strip():
            raise MpccError(f"-p {item!r}: expected NAME=VALUE (fix: e.g. -p a=0.25)")
        given[k.strip()] = v.strip()
    if not given:
        return name
    if name is None:
        raise MpccError("parameters need an algorithm name (fix: e.g. mpcc kernel load ewtcp -p a=0.25)")
    d = bpf._sources._parse_call(name)
    return bpf.make_spec(d.pop("name").lower(), {**d, **given})


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
        specs += [g for g in bpf.param_sets_in_use() if g.kernel_name not in {s.kernel_name for s in specs}]
    except Exception:
        pass
    for sp in specs:
        state = "registered" if sp.kernel_name in loaded else ""
        extra = f"({_params(dict(sp.params))})" if sp.params else ""
        click.echo(f"{sp.algorithm:<12} {sp.kernel_name:<16} {state:<11} {extra}".rstrip())
    for src in bpf.sources().values():
        if src.params:
            shown = {"NORM": "{1, 2, inf}", "FLAG": "{0, 1}"}
            ranges = ", ".join(f"{p.name} in {shown.get(p.encoding, f'[{p.lo:g}, {p.hi:g}]')}" for p in src.params)
            click.echo(f"({src.algorithm}: {ranges}: mpcc kernel load {src.algorithm} "
                       + " ".join(f"-p {p.name}=…" for p in src.params) + ")")


@command.command("build")
@click.argument("name", required=False)
@click.option("--force", is_flag=True, help="Rebuild even if up to date.")
@click.option("--build", "which", type=click.Choice(["auto", *bpf.BUILDS]), default=None,
              help="Which build: default (the kernel's own loss recovery), compat (bpf/compat/, for a kernel that "
                   "skips struct_ops programs while PID 1 runs) or compat-diag; auto (default): detect. "
                   "Also MPCC_BPF_BUILD.")
@_param_options
def build_cmd(name, force, which, param, beta, eta, norm):
    """Compile the BPF objects (all, or NAME) into bpf/.output/."""
    build, why = bpf.selected_build(override=None if which in (None, "auto") else which)
    click.echo(bpf.build_notice(build, why))
    for obj in bpf.build(_target(name, param, beta, eta, norm), force=force, build=build):
        click.echo(f"built {obj}")


@command.command("load")
@click.argument("name")
@click.option("--build", "which", type=click.Choice(["auto", *bpf.BUILDS]), default=None,
              help="Which build: default (the kernel's own loss recovery), compat (bpf/compat/, for a kernel that "
                   "skips struct_ops programs while PID 1 runs) or compat-diag (compat with the diagnostic maps); "
                   "auto (default): detect from the running kernel. Also MPCC_BPF_BUILD.")
@_param_options
def load_cmd(name, which, param, beta, eta, norm):
    """Register NAME's struct_ops; it stays registered after this command exits."""
    reg = bpf.load(_target(name, param, beta, eta, norm), persistent=True,
                   build=None if which in (None, "auto") else which)
    click.echo(reg.notice())
    verb = "registered" if reg.created else "already registered"
    what = f" = {reg.algorithm}({_params(dict(reg.params))})" if reg.params else ""
    click.echo(f"{reg.kernel_name}{what} {verb} (struct_ops map id {reg.map_id}); select it with "
               f"setsockopt(TCP_CONGESTION, \"{reg.kernel_name}\") or "
               f"sysctl net.ipv4.tcp_congestion_control={reg.kernel_name}")


@command.command("unload")
@click.argument("name")
@_param_options
def unload_cmd(name, param, beta, eta, norm):
    """Unregister NAME (or `all`, every parameter set included)."""
    if name == "all":
        names = [bpf.spec(a) for a in bpf.algorithms()]
        names += [g for g in bpf.param_sets_in_use() if g.kernel_name not in {s.kernel_name for s in names}]
    else:
        names = [_target(name, param, beta, eta, norm)]
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
        params = _params(r.params) if r.params else ("unknown" if bpf.sources().get(r.algorithm) is None
                                                      or bpf.sources()[r.algorithm].params else "")
        t.add_row(r.algorithm, params, r.kernel_name, "yes" if r.registered else "no",
                  str(r.map_id or ""), "yes" if r.available else "no", held, "yes" if r.built else "no")
    Console().print(t)


@command.command("cleanup")
def cleanup_cmd():
    """Unregister mpcc struct_ops whose holders have all exited."""
    removed = bpf.cleanup_stale()
    click.echo("removed: " + (", ".join(removed) if removed else "nothing"))


@command.command("pm")
@click.option("--retry", type=float, default=RETRY_S, show_default=True,
              help="Seconds before a refused or closed join is tried again (doubles each time).")
@click.option("--max-retry", type=float, default=MAX_RETRY_S, show_default=True, help="Ceiling of the retry back-off, s.")
@click.option("--source", "sources", multiple=True, metavar="ADDR",
              help="A local IPv4 or IPv6 address to join from, to peer addresses of its family "
                   "(repeatable; default: the routing table's source).")
@click.option("--log", "log_path", type=click.Path(dir_okay=False), default=None,
              help="Append one JSON line per event and join to this file.")
def pm_cmd(retry, max_retry, sources, log_path):
    """Run a user-space MPTCP path manager in this network namespace until Ctrl-C: it keeps one
    subflow per peer address (and per --source), and re-joins a path whose join was refused or
    whose subflow closed (docs/kernel.md, "A path manager that re-joins")."""
    from .. import pm as pathmanager

    summary = pathmanager.run(retry, max_retry, sources, log_path)
    click.echo(json.dumps(summary))
