"""Heterogeneous congestion control (Tang, Wei, Low, Chiang 2010).

Expected values come from closed forms, scipy's SLSQP on the primal problem, scipy's solve_ivp
on the dual dynamics, and brute-force enumeration of permutations — never from the code under
test."""

import itertools
import json
import math
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from mpcc.errors import ScenarioError
from mpcc.hetero import model
from mpcc.hetero.dynamics import algorithm1, optimum
from mpcc.hetero.equilibria import find_equilibria, theorem6_condition
from mpcc.hetero.model import PriceMapping as PM, Source, network
from mpcc.reproduce.tang2010.example3 import example3_network
from mpcc.reproduce.tang2010.example4 import random_network
from mpcc.reproduce.tang2010.paper import EXAMPLE3_CASES

ROOT = Path(__file__).resolve().parents[2]


def primal_optimum(net, weights=None):
    """max Σ U_i/w_i s.t. Rx ≤ c for networks where every link carries a single-link source (so
    every link is a bottleneck): solve the KKT system R x(p) = c with x_i = (β_i/(w_i Σ_{l∈i} p_l))^{1/α_i}
    by scipy's fsolve on log p — an implementation independent of mpcc's dual solver."""
    from scipy.optimize import fsolve
    L = len(net.links)
    R = np.array([[1.0 if l in s.links else 0.0 for s in net.sources] for l in net.link_names])
    c = np.array([l.capacity for l in net.links])
    al = np.array([s.utility_alpha for s in net.sources])
    w = np.array([s.fairness_weight for s in net.sources]) if weights is None else np.asarray(weights, float)
    be = np.array([s.utility_weight for s in net.sources]) / w
    assert np.all(R[:, R.sum(axis=0) == 1].sum(axis=1) >= 1), "every link needs a single-link source"

    def x_of(u):
        with np.errstate(over="ignore", divide="ignore"):
            return (be / (R.T @ np.exp(u))) ** (1 / al)

    best = None
    for u0 in (np.zeros(L), np.full(L, -3.0), np.full(L, 3.0), np.full(L, -8.0)):
        with np.errstate(all="ignore"):
            u, info, ier, _ = fsolve(lambda u: R @ x_of(u) / c - 1, u0, xtol=1e-14, full_output=True)
        err = np.max(np.abs(R @ x_of(u) / c - 1))
        if best is None or err < best[1]:
            best = (u, err)
    assert best[1] < 1e-9
    return x_of(best[0])


def one_link_two_protocols(k=3.0, exponent=1.0):
    return network({"l": 1.0}, {"a": {}, "b": {"l": PM("power", k, exponent)}},
                   [Source("x", "a", ("l",), 1.0, 1.0), Source("y", "b", ("l",), 1.0, 1.0)], "one-link")


# --- model ----------------------------------------------------------------------------------------
def test_red_mapping_is_eq2():
    m = PM("red", min_th=300, max_th=1500, max_p=1e-4)
    for b, want in ((0, 0), (300, 0), (900, 1e-4 * 600 / 1200), (1500, 1e-4), (4000, 1e-4)):
        assert m(b) == pytest.approx(want, abs=1e-18)
    assert m.slope(900) == pytest.approx(1e-4 / 1200)
    assert m.slope(100) == 0 and m.slope(2000) == 0


def test_power_mapping_and_default():
    net = one_link_two_protocols(k=2.0, exponent=3.0)
    assert net.mapping("b", "l")(0.5) == pytest.approx(2 * 0.125)
    assert net.mapping("a", "l")(0.7) == pytest.approx(0.7)  # missing link: scale 1, exponent 1


# --- equilibria: closed forms and independent solvers ----------------------------------------------
@pytest.mark.parametrize("k", [1.0, 3.0, 0.2])
def test_one_link_linear_closed_form(k):
    # x = 1/p, y = 1/(k p), x + y = 1  =>  p = 1 + 1/k
    s = find_equilibria(one_link_two_protocols(k))
    assert len(s.equilibria) == 1
    e = s.equilibria[0]
    p = 1 + 1 / k
    assert e.prices[0] == pytest.approx(p, rel=1e-9)
    assert e.rates == pytest.approx([1 / p, 1 / (k * p)], rel=1e-9)
    assert e.gamma == pytest.approx([1.0, 1 / k], rel=1e-9)  # (15)
    assert e.efficiency_bound == pytest.approx(min(1, 1 / k) / max(1, 1 / k))
    assert e.stable and e.index == 1 and e.theorem6


def test_one_link_power_closed_form():
    # x = 1/p, y = 1/p^2, x + y = 1  =>  p = golden ratio
    e = find_equilibria(one_link_two_protocols(1.0, 2.0)).equilibria
    assert len(e) == 1
    phi = (1 + math.sqrt(5)) / 2
    assert e[0].prices[0] == pytest.approx(phi, rel=1e-9)
    assert e[0].gamma[1] == pytest.approx(1 / phi, rel=1e-9)


def test_single_protocol_equilibrium_is_the_num_optimum():
    rng = np.random.default_rng(7)
    for trial in range(3):
        links = {f"l{l}": float(rng.uniform(1, 10)) for l in range(4)}
        src = [Source(f"s{i}", "only", tuple(f"l{l}" for l in np.flatnonzero(rng.random(4) < 0.5) if True) or ("l0",),
                      float(rng.choice([0.5, 1.0, 2.0])), float(rng.uniform(0.5, 2))) for i in range(6)]
        src += [Source(f"single{l}", "only", (f"l{l}",), 1.0, 1.0) for l in range(4)]
        net = network(links, {"only": {}}, src, "homogeneous")
        s = find_equilibria(net)
        assert len(s.equilibria) == 1 and s.index_sum == 1
        e = s.equilibria[0]
        assert e.rates == pytest.approx(primal_optimum(net), rel=2e-4)
        assert e.gamma == pytest.approx(np.ones(len(src)))
        assert e.stable and e.theorem6


def test_nonbottleneck_link_gets_zero_price():
    # l2 has capacity 10 and only the two-link source: l1 (c = 1) is the only bottleneck
    net = network({"l1": 1.0, "l2": 10.0}, {"a": {}, "b": {"l1": PM("power", 2.0, 1.0)}},
                  [Source("x", "a", ("l1",), 1.0, 1.0), Source("y", "b", ("l1", "l2"), 1.0, 1.0)], "nb")
    s = find_equilibria(net)
    assert len(s.equilibria) == 1
    e = s.equilibria[0]
    # x = 1/p, y = 1/(2p), sum = 1 => p = 1.5
    assert e.prices == pytest.approx([1.5, 0.0], abs=1e-9)
    assert e.bottlenecks == (0,)


# --- Example 3 ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def ex3():
    net = example3_network()
    return net, find_equilibria(net)


def test_example3_three_equilibria(ex3):
    net, s = ex3
    assert len(s.equilibria) == 3
    assert s.index_sum == 1
    assert [e.stable for e in s.equilibria].count(True) == 2
    for e in s.equilibria:
        a = net.arrays()
        # each is an equilibrium (7) — checked by recomputing loads directly from (3), (6), (4)
        x = np.array([(src.utility_weight / sum(net.mapping(src.protocol, l)(e.prices[k])
                       for k, l in enumerate(net.link_names) if l in src.links)) ** (1 / src.utility_alpha)
                      for src in net.sources])
        assert a.R @ x == pytest.approx(a.c, rel=1e-8)
        assert e.theorem6 is False  # heterogeneous slopes: condition (22) fails
        # stable iff all eigenvalues in the left half plane; index = sign det(-J)
        assert e.stable == bool(np.all(e.eigenvalues.real < 0))
        assert e.index == (1 if e.stable else -1)


def test_example3_cases_reach_different_equilibria(ex3):
    net, s = ex3
    a = net.arrays()
    from mpcc.hetero.model import evaluate

    def f(t, p):
        return evaluate(a, np.maximum(p, 1e-12))[1] - a.c

    reached = []
    for start in EXAMPLE3_CASES.values():
        sol = solve_ivp(f, (0, 3000), np.array(start), method="LSODA", rtol=1e-10, atol=1e-12)
        p = sol.y[:, -1]
        k = int(np.argmin([np.linalg.norm(e.prices - p) for e in s.equilibria]))
        assert np.linalg.norm(s.equilibria[k].prices - p) < 1e-5
        assert s.equilibria[k].stable
        reached.append(k)
    assert reached[0] != reached[1]


def test_example3_algorithm1_reaches_optimum_from_both_starts(ex3):
    net, _ = ex3
    a = net.arrays()
    x_star = primal_optimum(net)
    for start in EXAMPLE3_CASES.values():
        r = algorithm1(a, np.array(start), kappa=0.9, period=20.0, dt=0.2, max_iterations=300, tol=1e-7)
        assert r.converged
        assert r.rates == pytest.approx(x_star, rel=1e-3)


# --- Algorithm 1 vs the convex optimum on fresh random networks ----------------------------------
@pytest.mark.parametrize("seed,mode,prob,alpha", [(11, "async", 0.6, 1.0), (12, "async", 0.3, 1.0),
                                                  (13, "sync", 1.0, 1.0), (14, "async", 0.6, 2.0),
                                                  (15, "async", 0.6, 0.5)])
def test_algorithm1_converges_to_optimum_on_random_networks(seed, mode, prob, alpha):
    rng = np.random.default_rng(seed)
    nets = [random_network(rng, utility_alpha=alpha) for _ in range(4)]
    a = model.stack([n.arrays() for n in nets])
    r = algorithm1(a, np.ones((4, 5)), mode=mode, prob=prob, kappa=0.5, period=5.0, dt=1.0,
                   max_iterations=4000, tol=1e-7, rng=np.random.default_rng(seed))
    assert np.all(r.converged)
    for n, x in zip(nets, r.rates):
        assert x == pytest.approx(primal_optimum(n), rel=0.01)


def test_theorem11_weights_and_mu():
    # weighted target: max Σ U/w; μ_i = (1/w_i) Σ m / Σ p at the end (34)
    net = one_link_two_protocols(k=4.0)
    w = [1.0, 3.0]
    net = network({"l": 1.0}, {"a": {}, "b": {"l": PM("power", 4.0, 1.0)}},
                  [Source("x", "a", ("l",), 1.0, 1.0, 1.0), Source("y", "b", ("l",), 1.0, 1.0, 3.0)], "w")
    # log utilities: x_i ∝ 1/w_i  =>  x = (3/4, 1/4)
    r = algorithm1(net.arrays(), np.ones(1), kappa=0.5, period=20.0, dt=0.5, tol=1e-9)
    assert r.rates == pytest.approx([0.75, 0.25], rel=1e-6)
    assert r.mu == pytest.approx([1.0, 4.0 / 3.0], rel=1e-6)
    assert optimum(net).rates == pytest.approx([0.75, 0.25], rel=1e-9)


# --- Theorem 6 and Corollary 3 --------------------------------------------------------------------
def _brute_theorem6(slopes):
    J, L = slopes.shape
    perms = list(itertools.permutations(range(L)))
    for j in itertools.product(range(J), repeat=L):
        prods = [np.prod([slopes[j[k[l]], l] for l in range(L)]) for k in perms]
        if 2 * min(prods) < max(prods) * (1 - 1e-12):
            return False
    return True


def test_theorem6_condition_matches_brute_force():
    rng = np.random.default_rng(3)
    for _ in range(40):
        J, L = rng.integers(2, 4), rng.integers(2, 4)
        slopes = np.exp(rng.normal(0, rng.choice([0.1, 0.4, 1.0]), size=(J, L)))
        assert theorem6_condition(slopes) == _brute_theorem6(slopes)
    assert theorem6_condition(np.ones((3, 3)))
    assert not theorem6_condition(np.array([[1, 1, 1], [5, 1, 5], [1, 3, 1.0]]))


def test_corollary3_bound_holds_for_nonnegative_utilities():
    # α = 0.5 utilities are ≥ 0, so (17) must hold at every equilibrium
    src = [Source(f"s1_{i}", "p1", (f"l{i}",), 0.5, 1.0) for i in range(1, 4)]
    src += [Source("s2_1", "p2", ("l1", "l2"), 0.5, 1.0), Source("s2_2", "p2", ("l2", "l3"), 0.5, 1.0),
            Source("s3_1", "p3", ("l1", "l2", "l3"), 0.5, 1.0)]
    K = {"p1": (1, 1, 1), "p2": (5, 1, 5), "p3": (1, 3, 1)}
    net = network({"l1": 1.0, "l2": 1.0, "l3": 1.0},
                  {j: {f"l{l + 1}": PM("power", float(k[l]), 1.0) for l in range(3)} for j, k in K.items()}, src)
    x_star = primal_optimum(net)
    s = find_equilibria(net, optimum_rates=x_star)
    assert s.equilibria
    U = lambda x: np.sum(x ** 0.5 / 0.5)  # noqa: E731
    for e in s.equilibria:
        assert e.corollary3_applies
        assert e.utility_ratio == pytest.approx(U(e.rates) / U(x_star), rel=1e-6)
        assert e.utility_ratio >= e.efficiency_bound
        assert e.utility_ratio <= 1 + 1e-9


# --- input validation: one error per class ---------------------------------------------------------
GOOD = textwrap.dedent("""
    name = "t"
    [[links]]
    name = "l1"
    capacity = 1.0
    [[protocols]]
    name = "reno"
    [[protocols]]
    name = "fast"
    mapping = {l1 = {scale = 2.0, exponent = 1.0}}
    [[sources]]
    name = "a"
    protocol = "reno"
    links = ["l1"]
    utility_alpha = 2.0
    utility_weight = 1.0
    [[sources]]
    name = "b"
    protocol = "fast"
    links = ["l1"]
""")


def test_good_file_loads():
    net = model.loads(GOOD)
    assert net.link_names == ["l1"] and net.source_names == ["a", "b"]
    assert net.mapping("fast", "l1")(1.5) == pytest.approx(3.0)


@pytest.mark.parametrize("old,new,field", [
    ('capacity = 1.0', 'capacity = -1.0', "links[0].capacity"),
    ('capacity = 1.0', 'capacity = "fast"', "links[0].capacity"),
    ('links = ["l1"]\nutility_alpha', 'links = ["l9"]\n    utility_alpha', "sources[0].links"),
    ('protocol = "fast"', 'protocol = "vegas"', "sources[1].protocol"),
    ('name = "b"', 'name = "a"', "sources[1].name"),
    ('utility_alpha = 2.0', 'utility_alpha = 0.0', "sources[0].utility_alpha"),
    ('utility_weight = 1.0', 'utility_weight = 1.0\ncolour = "red"', "sources[0].colour"),
    ('{l1 = {scale = 2.0, exponent = 1.0}}', '{l7 = {scale = 2.0}}', "protocols[1].mapping.l7"),
    ('{l1 = {scale = 2.0, exponent = 1.0}}', '{l1 = {kind = "red", min_th = 5, max_th = 15, K = 10, max_p = 0.1}}',
     "protocols[1].mapping.l1.K"),
    ('{l1 = {scale = 2.0, exponent = 1.0}}', '{l1 = {kind = "red", min_th = 15, max_th = 5, K = 10}}',
     "protocols[1].mapping.l1.max_th"),
    ('{l1 = {scale = 2.0, exponent = 1.0}}', '{l1 = {kind = "cubic"}}', "protocols[1].mapping.l1.kind"),
    ('name = "t"', '', "name"),
])
def test_bad_input_names_field(old, new, field):
    assert old in GOOD
    with pytest.raises(ScenarioError) as e:
        model.loads(GOOD.replace(old, new, 1), "bad.toml")
    assert e.value.field == field
    assert "\n" not in str(e.value) and "fix:" in str(e.value)


def test_syntax_error_and_missing_file():
    with pytest.raises(ScenarioError) as e:
        model.loads("name = ", "x.toml")
    assert e.value.field == "(syntax)"
    with pytest.raises(ScenarioError) as e:
        model.load("/nonexistent/net.toml")
    assert e.value.field == "(file)"


def _mpcc(*args):
    return subprocess.run([sys.executable, "-m", "mpcc.cli", *args], capture_output=True, text=True, timeout=300)


def test_cli_bad_file_one_line_exit_2(tmp_path):
    f = tmp_path / "bad.toml"
    f.write_text(GOOD.replace('protocol = "fast"', 'protocol = "vegas"'))
    r = _mpcc("hetero", str(f))
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0 and "sources[1].protocol" in r.stderr
    assert "Traceback" not in r.stderr


def test_cli_json_contract(tmp_path):
    f = tmp_path / "good.toml"
    f.write_text(GOOD)
    r = _mpcc("hetero", str(f), "--json", "--algorithm1", "async", "--kappa", "0.5", "--prob", "0.6")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert set(d) >= {"equilibria", "algorithm1", "optimum"}
    assert len(d["equilibria"]) == 1
    eq = d["equilibria"][0]
    assert isinstance(eq["stable"], bool) and len(eq["prices"]) == 1 and set(eq["rates"]) == {"a", "b"}
    a1 = d["algorithm1"]
    assert set(a1) >= {"prices", "rates", "mu", "iterations"} and isinstance(a1["iterations"], int)
    # Theorem 11 with w = 1: Algorithm 1 ends at the optimum of max U_a + U_b s.t. x_a + x_b ≤ 1
    x = primal_optimum(model.loads(GOOD))
    assert [a1["rates"]["a"], a1["rates"]["b"]] == pytest.approx(x, rel=1e-4)
    assert [d["optimum"]["rates"]["a"], d["optimum"]["rates"]["b"]] == pytest.approx(x, rel=1e-6)


def test_bundled_example_files_match_code():
    net = model.load(ROOT / "scenarios/tang2010/example3.toml")
    ref = example3_network()
    assert net.arrays().R.tolist() == ref.arrays().R.tolist()
    for f in ("alpha", "beta", "scale", "expo", "c"):
        assert np.array_equal(getattr(net.arrays(), f), getattr(ref.arrays(), f))
    assert model.load(ROOT / "scenarios/tang2010/example4-trial0.toml").describe().endswith("15 sources")


# --- Example 1a at packet level (simulator of another work package) ------------------------------
def test_example1a_bandwidth_share_depends_on_buffer():
    """The paper's Example 1a claim: Reno beats FAST with a 400-packet buffer and loses with 80."""
    sim = pytest.importorskip("mpcc.sim")
    from mpcc import scenario as sc
    ratio = {}
    for b in (400, 80):
        s = sc.load(ROOT / f"scenarios/tang2010/example1a-b{b}.toml").with_changes(duration_s=400.0)
        from dataclasses import replace
        s = s.with_changes(groups=tuple(replace(g, stop_s=400.0) for g in s.groups),
                           background=tuple(replace(x, stop_s=400.0) for x in s.background))
        r = sim.run(s, seed=3, sample_interval_s=0, measure=(100.0, 400.0))
        ratio[b] = r.result.groups["reno"].rate_mbps / r.result.groups["fast"].rate_mbps
    assert ratio[400] > 1.5 and ratio[80] < 0.5


def test_red_mapping_equilibrium_closed_form():
    # x_a = 1/p (m = p); x_b = 0.1/m_RED(p), m_RED = 0.5 (p − 1)/2 on [1, 3]:
    # 1/p + 0.4/(p − 1) = 1  =>  p² − 2.4 p + 1 = 0  =>  p = (2.4 + √1.76)/2
    net = network({"l": 1.0}, {"a": {}, "b": {"l": PM("red", min_th=1.0, max_th=3.0, max_p=0.5)}},
                  [Source("x", "a", ("l",), 1.0, 1.0), Source("y", "b", ("l",), 1.0, 0.1)], "red")
    e = find_equilibria(net).equilibria
    assert len(e) == 1
    p = (2.4 + math.sqrt(1.76)) / 2
    assert e[0].prices[0] == pytest.approx(p, rel=1e-9)
    assert e[0].rates == pytest.approx([1 / p, 0.1 / (0.25 * (p - 1))], rel=1e-9)
    assert e[0].stable


def test_run_refuses_an_optimum_not_found_to_tolerance(monkeypatch, capsys):
    """`hetero run` never reports an "optimum" whose KKT conditions fail (what utility_alpha = 20
    gave before the range was capped: violation 0.7 with exit 0)."""
    from mpcc.cli import main
    from mpcc.hetero import dynamics

    real = dynamics.optimum

    def off(net, **kw):
        o = real(net, **kw)
        return type(o)(o.prices, o.rates, o.utility, 0.7)

    monkeypatch.setattr(dynamics, "optimum", off)
    with pytest.raises(SystemExit) as e:
        main(["hetero", "run", "--json", str(ROOT / "scenarios" / "tang2010" / "example3.toml")])
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and len(err) == 1 and "KKT violation 0.7" in err[0]
