"""``mpcc fluid`` — equilibrium (default), dynamics, conditions, jacobian, friendliness, sweep."""

from __future__ import annotations

import json
import math
from pathlib import Path

import click
import numpy as np
from rich.console import Console
from rich.table import Table

from ..outdir import staged, staged_file
from ..ranges import Number, number_list
from .. import algorithms as algs
from ..errors import MpccError
from ..progress import bar
from ..results import dumps
from ..scenario import load

_SUB = ("equilibrium", "dynamics", "conditions", "jacobian", "friendliness", "sweep")
_REPO = Path(__file__).resolve().parents[3]


class _DefaultGroup(click.Group):
    """``mpcc fluid SCENARIO`` means ``mpcc fluid equilibrium SCENARIO``."""

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = ["equilibrium", *args]
        return super().parse_args(ctx, args)


def _algorithm(name, params=()):
    if name is None:
        return None
    spec = {"name": name}
    for kv in params:
        if "=" not in kv:
            raise MpccError(f"--param {kv!r}: expected KEY=VALUE (fix: e.g. --param beta=0.2)")
        k, v = kv.split("=", 1)
        try:
            spec[k] = float(v) if v.lower() not in ("inf", "infinity") else "inf"
        except ValueError:
            raise MpccError(f"--param {kv!r}: {v!r} is not a number (fix: e.g. --param beta=0.2)") from None
    try:
        algo = algs.get(spec)
    except algs.AlgorithmSpecError as e:
        raise MpccError(f"--algorithm: {e.field}: {e.problem} (fix: {e.fix})") from None
    if not algo.fluid_model:
        raise MpccError(f"--algorithm {name}: {name} has no fluid model of the form (3) "
                        f"(Peng et al. §II-B) (fix: run it with `mpcc sim`)")
    return algo


def _bundled(name: str) -> str:
    return str(_REPO / "scenarios" / "peng2016" / name)


@click.group(cls=_DefaultGroup, context_settings={"help_option_names": ["-h", "--help"]})
def command():
    """Fluid model of Peng et al. (eqs. 3–4): equilibrium (8)–(9), dynamics and the §III analyses.

    `mpcc fluid SCENARIO` prints the equilibrium (same as `mpcc fluid equilibrium SCENARIO`).
    """


@command.command("equilibrium")
@click.argument("scenario", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the RunResult contract as JSON.")
@click.option("--plot", "plot_dir", type=click.Path(file_okay=False), help="Write PNG/SVG figures here.")
@click.option("--algorithm", help="Override the algorithm of every multipath group.")
@click.option("--param", multiple=True, help="Algorithm parameter KEY=VALUE (repeatable).")
@click.option("--at", "at_s", type=Number("fluid.at_s"), help="Only the groups active at this time (s).")
@click.option("--rtt", type=click.Choice(["propagation", "propagation+queue"]), help="RTT model.")
def equilibrium_cmd(scenario, as_json, plot_dir, algorithm, param, at_s, rtt):
    """Equilibrium (8)–(9): per-flow route rates, link prices, residuals, uniqueness."""
    from . import equilibrium, to_result

    sc = load(scenario)
    eq = equilibrium(sc, algorithm=_algorithm(algorithm, param), at_s=at_s, rtt=rtt)
    res = to_result(sc, eq)
    if plot_dir:
        from . import plots
        with staged(plot_dir, "--plot") as tmp:
            plots.equilibrium_bars(sc, eq, tmp)
    if as_json:
        click.echo(res.to_json())
        return
    con = Console()
    res.print(con)
    verdict = "unique" if eq.unique else "NOT unique (ranges over the equilibrium set below)"
    con.print(f"equilibrium {verdict}; max residual of (8)–(9): {eq.residual:.1e}; "
              f"{eq.iterations} Newton steps")
    if not eq.unique:
        for s, g in enumerate(eq.groups):
            r = np.flatnonzero(eq.network.source_of_route == s)
            rng = ", ".join(f"[{sc.pps_to_mbps(a):.4g}, {sc.pps_to_mbps(b):.4g}]"
                            for a, b in zip(eq.x_min[r], eq.x_max[r]))
            con.print(f"  {g.name}: per-path rate ranges (Mb/s) {rng}")


@command.command("dynamics")
@click.argument("scenario", type=click.Path(dir_okay=False))
@click.option("--t-end", type=Number("fluid.t_end"), help="Horizon in seconds (default [fluid] t_end or duration_s).")
@click.option("--gamma", type=Number("fluid.gamma"), help="Price gain γ_l of (4) for every link, 1/packet.")
@click.option("--algorithm", help="Override the algorithm of every multipath group.")
@click.option("--param", multiple=True, help="Algorithm parameter KEY=VALUE (repeatable).")
@click.option("--plot", "plot_dir", type=click.Path(file_okay=False), help="Write PNG/SVG figures here.")
@click.option("--parquet", type=click.Path(dir_okay=False), help="Write the time series (Parquet).")
@click.option("--json", "as_json", is_flag=True, help="Print the final state as JSON.")
@click.option("--force", is_flag=True, help="Run even when the cost estimate exceeds the limits (docs/scenario.md).")
def dynamics_cmd(scenario, t_end, gamma, algorithm, param, plot_dir, parquet, as_json, force):
    """Integrate (3)–(4) and report/plot the trajectories."""
    from . import dynamics

    if gamma is not None and gamma <= 0:
        raise MpccError(f"--gamma {gamma}: must be > 0 (fix: e.g. --gamma 0.02)")
    if t_end is not None and t_end <= 0:
        raise MpccError(f"--t-end {t_end}: must be > 0 (fix: e.g. --t-end 20)")
    sc = load(scenario)
    from .. import cost
    from .network import settings
    st = settings(sc)
    horizon = t_end or st.t_end or sc.duration_s
    algo = _algorithm(algorithm, param)
    from . import equilibrium
    try:   # the equilibrium prices set the stiffness of (3)–(4); a failure shows up in the run itself
        p_max = float(np.max(equilibrium(sc, algorithm=algo).p))
    except MpccError:
        p_max = 1.0
    cost.guard(cost.fluid_dynamics(sc, horizon, gamma if gamma is not None else st.gamma, p_max), scenario, force,
               "shorten --t-end / [fluid] t_end or lower --gamma")
    with bar("integrating (3)–(4)", horizon, enabled=not as_json, unit="s", stderr=False) as prog:
        tr = dynamics(sc, t_end, gamma, algorithm=algo, progress=prog.update)
    net, groups = tr.network, tr.groups
    mb = sc.pps_to_mbps
    if parquet:
        import pyarrow as pa
        import pyarrow.parquet as pq
        cols = {"t_s": tr.t}
        for s, g in enumerate(groups):
            for i, r in enumerate(np.flatnonzero(net.source_of_route == s)):
                cols[f"{g.name}.path{i + 1}_mbps"] = mb(1.0) * tr.x[:, r]
        for l, name in enumerate(net.link_names):
            cols[f"{name}.price"] = tr.p[:, l]
        with staged_file(parquet, "--parquet") as tmp:
            pq.write_table(pa.table(cols), tmp)
    if plot_dir:
        from . import plots
        with staged(plot_dir, "--plot") as tmp:
            plots.trajectories(sc, tr, tmp)
    final = {g.name: [mb(float(tr.x[-1, r])) for r in np.flatnonzero(net.source_of_route == s)]
             for s, g in enumerate(groups)}
    if as_json:
        click.echo(dumps({"engine": "fluid", "scenario": sc.name, "t_end": float(tr.t[-1]),
                          "final_path_rate_mbps": final,
                          "final_price": {n: float(tr.p[-1, l]) for l, n in enumerate(net.link_names)},
                          "gamma": [float(g) for g in tr.gamma]}))
        return
    t = Table(title=f"fluid dynamics: {sc.name}, state at t = {tr.t[-1]:.4g} s")
    t.add_column("group"); t.add_column("per path (Mb/s)", justify="right")
    for name, v in final.items():
        t.add_row(name, ", ".join(f"{a:.4g}" for a in v))
    Console().print(t)


@command.command("conditions")
@click.argument("algorithm")
@click.option("--param", multiple=True, help="Algorithm parameter KEY=VALUE (repeatable).")
@click.option("--routes", type=Number("routes"), default=2, show_default=True, help="Routes per source (1–8).")
@click.option("--rates", help="Check at one point: comma-separated rates (packets/s).")
@click.option("--rtt", "rtts", help="Comma-separated RTTs in seconds (default 0.1 for all).")
@click.option("--samples", type=Number("samples"), default=2000, show_default=True, help="Random points of the region.")
@click.option("--decades", type=Number("decades"), default=2.0, show_default=True, help="Spread of the region.")
@click.option("--seed", type=Number("seed"), default=0)
@click.option("--json", "as_json", is_flag=True)
def conditions_cmd(algorithm, param, routes, rates, rtts, samples, decades, seed, as_json):
    """Check conditions C0–C5 (§III-A) at a point or over a random region."""
    from . import analysis

    algo = _algorithm(algorithm, param)
    if rates:
        x = np.array(number_list(rates, "rates_pps", "--rates"))
        routes = x.size
    if not 1 <= routes <= 8:
        raise MpccError(f"--routes {routes}: must be between 1 and 8 (fix: e.g. --routes 2)")
    tau = np.full(routes, 0.1)
    if rtts:
        tau = np.array(number_list(rtts, "rtt_s", "--rtt"))
        if tau.size != routes or np.any(tau <= 0):
            raise MpccError(f"--rtt: need {routes} positive RTTs (fix: e.g. --rtt {','.join(['0.02'] * routes)})")
    if rates:
        cond = analysis.conditions(algo, x[None], tau)
        summary = cond.summary()
    else:
        xs = analysis.sample_region(routes, samples, seed=seed, decades=decades)
        cond = analysis.conditions(algo, xs, tau)
        summary = cond.summary()
    if as_json:
        click.echo(dumps({"algorithm": algo.describe(), "routes": routes, "rtt_s": tau.tolist(),
                          "points": 1 if rates else samples, "fraction_satisfied": summary,
                          "worst_max_eig_sym": float(np.max(cond.max_eig_sym)),
                          "worst_asymmetry": float(np.max(cond.asymmetry))}))
        return
    t = Table(title=f"conditions C0–C5: {algo.describe()}, {routes} routes, "
                    f"{'one point' if rates else f'{samples} random points'}")
    t.add_column("condition"); t.add_column("satisfied", justify="right"); t.add_column("meaning")
    meaning = {"c0": "∂Φ/∂x symmetric (utility exists)", "c1": "∂y_l/∂p_l ≤ 0 (local form)",
               "c2": "[∂Φ/∂x]^+ negative definite", "c3": "φ_r → ∞ as x_r → 0",
               "c4": "column sums of (∂Φ/∂x)⁻¹ ≤ 0", "c5": "φ_r → 0 as x_r → ∞"}
    for k, v in summary.items():
        t.add_row(k.upper(), f"{100 * v:.1f}%", meaning[k])
    Console().print(t)


@command.command("jacobian")
@click.argument("scenario", type=click.Path(dir_okay=False))
@click.option("--gamma", type=Number("fluid.gamma"), help="Price gain γ_l for every link (1/packet).")
@click.option("--algorithm", help="Override the algorithm of every multipath group.")
@click.option("--param", multiple=True)
@click.option("--json", "as_json", is_flag=True)
def jacobian_cmd(scenario, gamma, algorithm, param, as_json):
    """Jacobian J* of (12) at equilibrium, its eigenvalues, Theorem III.5 checks."""
    from . import analysis, default_gamma, equilibrium

    sc = load(scenario)
    algo = _algorithm(algorithm, param)
    eq = equilibrium(sc, algorithm=algo)
    g = default_gamma(sc, algo) if gamma is None else gamma
    lin = analysis.linearization(eq, g)
    bound = analysis.responsiveness_bound(lin)
    rec = {"scenario": sc.name, "max_real": lin.max_real, "pencil_min": lin.pencil_min,
           "pencil_max": lin.pencil_max, "rayleigh_identity_error": lin.rayleigh_error,
           "bound_holds": lin.bound_holds, "lambda_bar": bound.lam_bar, "lambda_bar_applies": bound.applies,
           "max_real_nonreal": bound.max_real_complex, "theorem_III5_holds": bound.holds,
           "eigenvalues": [[float(v.real), float(v.imag)] for v in lin.eigenvalues]}
    if as_json:
        click.echo(dumps(rec))
        return
    con = Console()
    con.print(f"J* ({lin.J.shape[0]}×{lin.J.shape[0]}) eigenvalues: " +
              ", ".join(f"{v.real:.4g}{v.imag:+.4g}i" for v in sorted(lin.eigenvalues, key=lambda z: -z.real)))
    con.print(f"max Re λ = {lin.max_real:.4g} /s; pencil bounds [{lin.pencil_min:.4g}, {lin.pencil_max:.4g}]; "
              f"Re λ = Rayleigh quotient to {lin.rayleigh_error:.1e}; Theorem III.5 checks "
              f"{'hold' if lin.bound_holds else 'FAIL'}")
    if bound.applies:
        con.print(f"λ̄ = ½ λ_max([∂Φ/∂x]^+, Λk⁻¹) = {bound.lam_bar:.4g} /s bounds Re λ of the non-real "
                  f"eigenvalues (max {bound.max_real_complex:.4g}; -inf: all real): {'holds' if bound.holds else 'FAIL'}")
    else:
        con.print("λ̄ (Theorem III.5, non-real eigenvalues) needs ∂Φ/∂x symmetric (C0) and C2 at the "
                  "equilibrium; not the case here (see docs/fluid.md)")


@command.command("friendliness")
@click.argument("scenario", required=False, type=click.Path(dir_okay=False))
@click.option("--equal-rtt/--as-is", default=True, show_default=True,
              help="Give both multipath routes the same RTT (the setting of §IV-A).")
@click.option("--json", "as_json", is_flag=True)
@click.option("--plot", "plot_dir", type=click.Path(file_okay=False))
def friendliness_cmd(scenario, equal_rtt, as_json, plot_dir):
    """Throughput of each algorithm against Reno on the Fig 1 network (Theorem III.4)."""
    from . import design

    sc = load(scenario or _bundled("fig1.toml"))
    rows = design.friendliness(sc, equal_rtt=equal_rtt)
    order = [r.algorithm for r in sorted(rows, key=lambda r: -r.mp_mbps)]
    if plot_dir:
        from . import plots
        with staged(plot_dir, "--plot") as tmp:
            plots.friendliness(rows, tmp)
    if as_json:
        click.echo(dumps({"scenario": sc.name, "equal_rtt": equal_rtt,
                          "rows": [r.__dict__ for r in rows], "order": order}))
        return
    t = Table(title=f"friendliness on {sc.name} ({'equal' if equal_rtt else 'scenario'} RTTs)")
    for c in ("algorithm", "multipath (Mb/s)", "Reno (Mb/s)", "multipath share", "unique"):
        t.add_column(c, justify="left" if c == "algorithm" else "right")
    for r in rows:
        t.add_row(r.algorithm, f"{r.mp_mbps:.4g}", f"{r.sp_mbps:.4g}", f"{r.share:.3f}", str(r.unique))
    Console().print(t)
    Console().print("order (most to least aggressive): " + " ≥ ".join(order))


@command.command("sweep")
@click.argument("scenario", required=False, type=click.Path(dir_okay=False))
@click.option("--beta", "betas", default="0.1,0.2,0.5,1", show_default=True)
@click.option("--eta", "etas", default="0,0.5,1", show_default=True)
@click.option("--n", "ns", default="1,2,inf", show_default=True)
@click.option("--json", "as_json", is_flag=True)
@click.option("--plot", "plot_dir", type=click.Path(file_okay=False))
def sweep_cmd(scenario, betas, etas, ns, as_json, plot_dir):
    """Generalized (β, η, n) design space (Table II): friendliness, responsiveness, oscillation."""
    from . import design

    B = tuple(number_list(betas, "generalized.beta", "--beta"))
    E = tuple(number_list(etas, "generalized.eta", "--eta"))
    N = tuple(number_list(ns, "generalized.n", "--n", allow_inf=True))
    if any(not math.isinf(n) and n != int(n) for n in N):
        raise MpccError("--n: n must be a positive integer or inf (fix: e.g. --n 1,2,inf)")
    if len(B) * len(E) * len(N) > 1000:
        raise MpccError(f"--beta/--eta/--n: {len(B) * len(E) * len(N)} points; at most 1000 (fix: give fewer values)")
    sc = load(scenario or _bundled("table3.toml"))
    if not any(g.multipath for g in sc.groups) or all(g.multipath for g in sc.groups):
        raise MpccError(f"{scenario}: groups: the sweep compares multipath groups with single-path ones; this "
                        f"scenario lacks one kind (fix: a scenario with both, e.g. scenarios/peng2016/table3.toml)")
    from .solver import SolverFailure
    with bar("sweeping (β, η, n)", len(B) * len(E) * len(N), enabled=not as_json, stderr=False) as prog:
        try:
            pts = design.sweep(sc, B, E, N, progress=prog.advance)
        except SolverFailure as e:
            raise MpccError(f"{scenario}: the fluid equilibrium solver did not converge ({e}) (fix: check the "
                            f"scenario's capacities and delays, or narrow --beta/--eta/--n)") from None
    if plot_dir:
        from . import plots
        with staged(plot_dir, "--plot") as tmp:
            plots.sweep(pts, tmp)
    if as_json:
        click.echo(dumps({"scenario": sc.name, "points": [{**p.__dict__, "n": "inf" if math.isinf(p.n) else p.n}
                                                          for p in pts]}))
        return
    t = Table(title=f"generalized (β, η, n) on {sc.name}")
    for c in ("β", "η", "n", "MP share", "max Re λ (1/s)", "D_s"):
        t.add_column(c, justify="right")
    for p in pts:
        t.add_row(f"{p.beta:g}", f"{p.eta:g}", "∞" if math.isinf(p.n) else f"{p.n:g}", f"{p.mp_share:.4f}",
                  f"{p.max_real:.4g}", f"{p.oscillation:.4f}")
    Console().print(t)
