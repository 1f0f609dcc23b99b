"""The terminal rendering of a :class:`~mpcc.compare.Comparison`: one table of per-flow rates
(per group and per path, one column per engine, then the relative differences), the engines that
could not run, and the diagnosis lines."""

from __future__ import annotations

import math

from rich.console import Console
from rich.table import Table


def _cell(v, ci=None) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "—"
    return f"{v:.3g}" + (f" ± {ci:.2g}" if ci else "")


def _rel(v) -> str:
    if v is None or math.isnan(v):
        return "—"
    return ("+∞" if v > 0 else "−∞") if math.isinf(v) else f"{100 * v:+.1f}%"


def rate_table(c) -> Table:
    engines = list(c.runs)
    d = c.differences
    t = Table(title=f"{c.scenario.name}: per-flow rate (Mb/s)")
    t.add_column("group / path", justify="left")
    t.add_column("algorithm", justify="left")
    for e in engines:
        t.add_column(e, justify="right")
    for p in d["pairs"]:
        t.add_column(p, justify="right")
    cost = any("connection_cost_mbps" in g for g in d["groups"].values())
    if cost:
        t.add_column("conn. level cost (ideal − linux)", justify="right")
    for g in c.scenario.groups:
        row = [g.name, g.algorithm.describe()]
        for e in engines:
            r = c.runs[e]
            if not r.ok:
                row.append("[red]failed[/red]")
                continue
            gr = r.result.groups[g.name]
            row.append(_cell(gr.rate_mbps, gr.extra.get("ci95_mbps")))
        dg = d["groups"].get(g.name, {"rel": {}, "paths": []})
        row += [_rel(dg["rel"].get(p)) for p in d["pairs"]]
        if cost:
            row.append(f"{_cell(dg.get('connection_cost_mbps'))} ({_rel(dg.get('connection_cost_rel'))})"
                       if "connection_cost_mbps" in dg else "—")
        t.add_row(*row)
        if len(g.paths) > 1:
            for k, path in enumerate(g.paths):
                prow = [f"  path {k + 1} ({'→'.join(path)})", ""]
                for e in engines:
                    r = c.runs[e]
                    if not r.ok:
                        prow.append("")
                        continue
                    gr = r.result.groups[g.name]
                    cis = gr.extra.get("path_ci95_mbps")
                    prow.append(_cell(gr.path_rate_mbps[k], cis[k] if cis else None))
                prow += [_rel(dg["paths"][k]["rel"].get(p)) if dg["paths"] else "—" for p in d["pairs"]]
                if cost:
                    pc = dg.get("path_connection_cost_mbps")
                    prow.append(_cell(pc[k]) if pc else "—")
                t.add_row(*prow)
    return t


def link_table(c) -> Table:
    t = Table(title="links: load (Mb/s) / price (drops+marks per arrival)")
    t.add_column("link", justify="left")
    engines = [e for e, r in c.runs.items() if r.ok]
    for e in engines:
        t.add_column(e, justify="right")
    for l in c.scenario.links:
        row = [f"{l.name} ({l.capacity_mbps:g} Mb/s, {l.aqm})"]
        for e in engines:
            lr = c.runs[e].result.links[l.name]
            row.append(f"{_cell(lr.load_mbps)} / {100 * lr.price:.2f}%" if math.isfinite(lr.price) else _cell(lr.load_mbps))
        t.add_row(*row)
    return t


def print_comparison(c, console: Console | None = None) -> None:
    console = console or Console()
    console.print(rate_table(c))
    if any(r.ok for r in c.runs.values()):
        console.print(link_table(c))
    for e, r in c.runs.items():
        if not r.ok:
            console.print(f"[bold]{e}[/bold] could not run: {r.error}", markup=True, highlight=False)
        elif r.result.engine == "testbed":     # what could have touched the kernel's numbers
            from ..testbed.health import line
            console.print(f"{e} {line(r.result.extra.get('health'))}", markup=False, highlight=False)
    if c.diagnosis:
        console.print("[bold]Diagnosis[/bold] (differences above the threshold; docs/compare.md explains each quantity)")
        for line in c.diagnosis:
            console.print(line, markup=False, highlight=False)
    elif len([r for r in c.runs.values() if r.ok]) > 1:
        console.print("All engines agree within 10% per group and per path.")
