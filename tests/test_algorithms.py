"""The Python reference against independent scalar transcriptions of the papers' rules, and
the committed test vectors against the reference."""

import json
import math

import numpy as np
import pytest

from mpcc import algorithms, vectors
from mpcc.algorithms import AlgorithmSpecError


# --- independent scalar transcriptions (plain floats, loops; written from the papers) ---------
def ref_increase(name, w, t, r, p):
    n = len(w)
    x = [w[k] / t[k] for k in range(n)]
    X = sum(x)
    if name == "reno":
        return 1 / w[r]
    if name == "ewtcp":
        return p.get("a", 1.0) / w[r]
    if name == "coupled":  # Peng §II-B
        return (w[r] / t[r] ** 2) / X**2
    if name == "semicoupled":
        return 1 / (t[r] * X)
    if name == "lia":  # RFC 6356: min(alpha/cwnd_total, 1/cwnd_r)
        total = sum(w)
        alpha = total * max(w[k] / t[k] ** 2 for k in range(n)) / X**2
        return min(alpha / total, 1 / w[r])
    if name == "balia":  # eq. (1)
        a = max(x) / x[r]
        return x[r] / (t[r] * X**2) * (1 + a) / 2 * (4 + a) / 5
    if name == "generalized":  # from eq. (16) via eq. (7): I = phi * D
        beta, eta, nn = p["beta"], p["eta"], p["n"]
        norm = max(x) if math.isinf(nn) else sum(v**nn for v in x) ** (1 / nn)
        phi = 2 * ((1 - beta) * x[r] + beta * norm) / (t[r] ** 2 * x[r] * X**2)
        k = 0.5 * x[r] * (x[r] + eta * (max(x) - x[r]))
        return phi * t[r] * k / x[r]
    if name == "mstcp":
        return p["a"]
    if name == "mtcp":
        return p.get("a", 1.0) / ((1 - p["alpha"]) * w[r] + p["alpha"] * sum(w))
    if name == "scalable":  # Kelly 2003: w <- w + a per ACK
        return p.get("a", 0.01)
    if name == "epsilon":  # htsim mtcp.cpp COUPLED_EPSILON: inflate_window with compute_alfa's a
        e, total = p.get("epsilon", 1.0), sum(w)
        a = 1.0
        if 0 < e < 2:
            maxt = max(w[k] ** (e / 2) / t[k] for k in range(n))
            a = total * maxt ** (1 / (1 - e / 2)) / X ** (1 / (1 - e / 2))
        return min(a * (a * w[r]) ** (1 - e) / total ** (2 - e), 1 / w[r])
    raise KeyError(name)


def ref_decrease(name, w, t, r, p):
    n = len(w)
    x = [w[k] / t[k] for k in range(n)]
    if name == "balia":  # eq. (2)
        return w[r] / 2 * min(max(x) / x[r], 1.5)
    if name == "generalized":
        k = 0.5 * x[r] * (x[r] + p["eta"] * (max(x) - x[r]))
        return t[r] * k / x[r]
    if name == "mstcp":  # Jiang (1): w <- max(w - bW, 1)
        return w[r] - max(w[r] - p["b"] * sum(w), 1.0) if w[r] >= 1 else 0.0
    if name == "mtcp":  # Jiang (2)
        cut = p.get("b", 0.5) * ((1 - p["beta"]) * w[r] + p["beta"] * sum(w))
        return w[r] - max(w[r] - cut, 1.0) if w[r] >= 1 else 0.0
    if name == "scalable":  # Kelly 2003: w <- w - b w per loss
        return p.get("b", 0.125) * w[r]
    return w[r] / 2


SCALAR = ["reno", "ewtcp", "coupled", "semicoupled", "lia", "balia", "generalized", "mstcp", "mtcp",
          "scalable", "epsilon"]
#: Algorithms with state beyond (w, τ), checked against their papers by the named tests below.
STATEFUL = {"olia": "test_olia_epsilon_sets", "fast": "test_fast_update_equilibrium"}


def test_every_registry_algorithm_has_an_independent_transcription():
    """A new algorithm cannot pass on vectors its own reference generated: every name in the
    registry has a scalar transcription here (SCALAR, with vectors) or a named paper test
    (STATEFUL). Fix for a failure: add the paper's rule to ref_increase / ref_decrease and the
    name to SCALAR, and a variant to mpcc.vectors.VECTOR_ALGORITHMS."""
    missing = sorted(set(algorithms.REGISTRY) - set(SCALAR) - set(STATEFUL))
    assert not missing, f"no independent transcription for {missing}"
    assert all(callable(globals().get(test)) for test in STATEFUL.values())
    covered = {c["algorithm"]["name"] for c in _cases()}
    assert set(SCALAR) <= covered, f"no vectors for {sorted(set(SCALAR) - covered)}"


def _cases():
    doc = vectors.build()
    return [c for c in doc["cases"] if c["algorithm"]["name"] in SCALAR]


@pytest.mark.parametrize("case", _cases(), ids=lambda c: c["id"])
def test_reference_matches_scalar_transcription(case):
    spec = dict(case["algorithm"])
    name = spec["name"]
    p = {k: (math.inf if v == "inf" else v) for k, v in spec.items() if k != "name"}
    algo = algorithms.get(case["algorithm"])
    p = {**algo.params, **p}
    w, t = case["cwnd"], case["rtt"]
    inc = algo.on_ack(w, t)
    dec = algo.on_loss(w, t)
    for r in range(len(w)):
        assert inc[r] == pytest.approx(ref_increase(name, w, t, r, p), rel=1e-12)
        assert dec[r] == pytest.approx(ref_decrease(name, w, t, r, p), rel=1e-12, abs=1e-12)


def test_olia_epsilon_sets():
    olia = algorithms.get("olia")
    t = [0.1, 0.1, 0.1]
    # route 0 has the max window; route 1 is best (largest l/τ²) and not max → collected
    w = [30.0, 10.0, 10.0]
    ell = [100.0, 900.0, 50.0]
    eps = olia.epsilon(w, t, ell)
    assert eps.tolist() == pytest.approx([-1 / 3, 1 / 3, 0.0])
    inc = olia.on_ack(w, t, loss_interval=ell)
    X = sum(wi / 0.1 for wi in w)
    assert inc[1] == pytest.approx((10 / 0.01) / X**2 + (1 / 3) / 10)
    # best path is the max-window path → B∖M empty → all ε = 0
    assert olia.epsilon(w, t, [900.0, 100.0, 50.0]).tolist() == [0.0, 0.0, 0.0]


def test_single_route_reduces_to_reno():
    for name in ["ewtcp", "coupled", "semicoupled", "lia", "balia", "generalized", "epsilon",
                 {"name": "epsilon", "epsilon": 0.0}, {"name": "epsilon", "epsilon": 0.5}, {"name": "epsilon", "epsilon": 2.0}]:
        a = algorithms.get(name)
        assert a.on_ack([17.0], [0.05])[0] == pytest.approx(1 / 17)
        assert a.on_loss([17.0], [0.05])[0] == pytest.approx(8.5)


def test_fluid_parameters_follow_eq7():
    # Reno: k = x²/2, φ = 2/(τ² x²)  (Peng §II-B)
    reno = algorithms.get("reno")
    x, tau = np.array([800.0]), np.array([0.02])
    assert reno.fluid_k(x, tau)[0] == pytest.approx(0.5 * 800**2)
    assert reno.fluid_phi(x, tau)[0] == pytest.approx(2 / (0.02**2 * 800**2))
    # Generalized family: eq. (16) k and φ
    g = algorithms.get({"name": "generalized", "beta": 0.3, "eta": 0.7, "n": 2})
    x, tau = np.array([300.0, 100.0, 50.0]), np.array([0.02, 0.02, 0.02])
    norm2 = math.sqrt(sum(v * v for v in x))
    for r in range(3):
        phi = 2 * (0.7 * x[r] + 0.3 * norm2) / (tau[r] ** 2 * x[r] * x.sum() ** 2)
        k = 0.5 * x[r] * (x[r] + 0.7 * (x.max() - x[r]))
        assert g.fluid_phi(x, tau)[r] == pytest.approx(phi)
        assert g.fluid_k(x, tau)[r] == pytest.approx(k)


def test_balia_is_generalized_increase_at_02_05_inf():
    b = algorithms.get("balia")
    g = algorithms.get({"name": "generalized", "beta": 0.2, "eta": 0.5, "n": "inf"})
    w, t = [40.0, 7.0, 19.0], [0.03, 0.03, 0.03]
    assert np.allclose(b.on_ack(w, t), g.on_ack(w, t))


def test_min_cwnd_rules():
    assert algorithms.get("balia").min_cwnd(2) == 1.0
    assert algorithms.get("coupled").min_cwnd(2) == 1.0
    assert algorithms.get("balia").min_cwnd(1) == 2.0
    assert algorithms.get("lia").min_cwnd(3) == 2.0
    after = algorithms.get("balia").cwnd_after_loss([1.5, 30.0], [0.01, 0.01])
    assert after[0] == 1.0  # 1.5 − 0.75·1.5 clamps at 1 with two routes


def test_fast_update_uses_the_window_the_rtt_samples_were_sent_under():
    # Tang et al. (1) with the window of one RTT ago (as cc/fast.rs): γ = 0.5, base 20 ms, RTT 40 ms,
    # window 160 now and 100 when the sampled packets were sent: 160/2 + (0.5·100 + 50)/2 = 130
    fast = algorithms.get({"name": "fast", "alpha": 50, "gamma": 0.5})
    assert fast.on_update([160.0], [0.04], [0.02], old_cwnd=[100.0])[0] == pytest.approx(130.0)
    assert fast.on_update([160.0], [0.04], [0.02])[0] == pytest.approx(145.0)  # w_old = w by default


def test_fast_update_equilibrium():
    fast = algorithms.get({"name": "fast", "alpha": 50, "gamma": 1.0})
    # at w = α·RTT/q the update is a fixed point: w·base/RTT + α = w
    base, rtt = 0.05, 0.06
    w = 50 * rtt / (rtt - base)
    assert fast.on_update([w], [rtt], [base])[0] == pytest.approx(w)


@pytest.mark.parametrize("spec,field", [
    ("nosuch", "algorithm"),
    ({"name": "generalized", "beta": "x"}, "algorithm.beta"),
    ({"name": "generalized", "n": 1.5}, "algorithm.n"),
    ({"name": "balia", "beta": 0.2}, "algorithm.beta"),
    ({"beta": 0.2}, "algorithm.name"),
    ({"name": "mtcp", "alpha": 2}, "algorithm.alpha"),
])
def test_bad_specs(spec, field):
    with pytest.raises(AlgorithmSpecError) as e:
        algorithms.get(spec)
    assert e.value.field == field


def test_aliases():
    assert algorithms.get("max").name == "lia"
    fc = algorithms.get("fully-coupled")
    assert (fc.name, fc.params["alpha"], fc.params["beta"]) == ("mtcp", 1.0, 1.0)


def test_committed_vectors_match_reference():
    committed = json.loads(vectors.SPEC_PATH.read_text())
    assert vectors.compare(committed, vectors.build()) == []
    names = {c["algorithm"]["name"] for c in committed["cases"]}
    assert {"reno", "ewtcp", "coupled", "semicoupled", "lia", "olia", "balia", "generalized"} <= names
    sizes = {len(c["cwnd"]) for c in committed["cases"]}
    assert sizes == set(range(1, 9))


def test_scalable_is_kellys_rule_per_route():
    """Scalable TCP (Kelly 2003), the walkthrough's example: I_r = a, D_r = b·w_r on every
    route, whatever the other routes do (independent transcription of the paper's rule)."""
    from mpcc.algorithms import get
    s = get({"name": "scalable", "a": 0.02, "b": 0.25})
    w, tau = [40.0, 8.0, 1.0], [0.1, 0.3, 0.05]
    assert list(s.on_ack(w, tau)) == [0.02, 0.02, 0.02]
    assert list(s.on_loss(w, tau)) == [10.0, 2.0, 0.25]
    assert list(s.cwnd_after_loss(w, tau)) == [30.0, 6.0, 2.0]   # min cwnd 2
    # eq. (7): φ_r = a/(b·w_r), k_r = b·x_r²
    x = [400.0, 80.0]
    assert s.fluid_phi(x, [0.1, 0.1]) == pytest.approx([0.02 / (0.25 * 40.0), 0.02 / (0.25 * 8.0)])
    assert s.fluid_k(x, [0.1, 0.1]) == pytest.approx([0.25 * 400.0 ** 2, 0.25 * 80.0 ** 2])


def test_every_registry_parameter_has_a_physical_range():
    """A new algorithm's parameters get bounds in mpcc.ranges (docs/scenario.md "Ranges"), so a
    hostile value (1e300, inf) is one line, never a run without bounds."""
    from mpcc import ranges
    from mpcc.algorithms import REGISTRY
    missing = [f"{name}.{p}" for name, (_, schema) in REGISTRY.items() for p in schema
               if f"{name}.{p}" not in ranges.R]
    assert not missing, f"parameters without a range in mpcc/ranges.py: {missing}"


def test_olia_per_ack_counter_reference_by_hand():
    """mptcp_olia.c's counter (scale 10), worked by hand: I = 0.1 adds ⌊102.4⌋ = 102 per ACK and
    the 11th ACK reaches 1122 ≥ 1023; I = −0.5 adds −512, the 2nd ACK reaches −1024 ≤ −1023;
    I = 0.9/1024 rounds to 0 (never moves); I = 1 adds 1024 (a step every ACK)."""
    from mpcc.algorithms.olia import per_ack_counter
    assert per_ack_counter(0.1) == (102, 11)
    assert per_ack_counter(-0.5) == (-512, 2)
    assert per_ack_counter(0.9 / 1024) == (0, 0)
    assert per_ack_counter(1.0) == (1024, 1)
    assert per_ack_counter(-2.5 / 1024) == (-2, 512)


def test_vectors_of_one_algorithm_do_not_depend_on_the_others(monkeypatch):
    """Each variant's random inputs are seeded from its own tag: inserting a variant before
    another, or reordering the list, leaves every other variant's cases unchanged."""
    before = {c["id"]: c for c in vectors.build()["cases"]}
    shuffled = [{"name": "ewtcp", "a": 0.75}] + list(reversed(vectors.VECTOR_ALGORITHMS))
    monkeypatch.setattr(vectors, "VECTOR_ALGORITHMS", shuffled)
    after = {c["id"]: c for c in vectors.build()["cases"]}
    assert set(after) - set(before) and set(before) <= set(after)
    assert all(after[cid] == case for cid, case in before.items())
