"""Flappiness as a number (Jiang, Cai, Towsley §4.2 leave it as future work; see docs/mtc.md).

Metric (a function of plain arrays, so it applies unchanged to window-model, packet-simulator and
testbed traces): given sample times t[T] and windows cwnd[T, n] of the n subflows of one flow,

* shares s_i(t) = w_i(t) / Σ_j w_j(t), optionally after a central moving average of the windows
  over ``smooth_s`` seconds (the report smooths Fig. 13 over 20 s);
* a *dominance episode* of subflow i starts when s_i ≥ ``enter`` (default 0.8: one subflow carries
  at least 80 % of the flow's window — §4.2's Scenario 1, "w_1 ≫ w_2") and lasts until s_i falls
  to ``leave`` or below (default 0.5: it no longer carries a strict majority). Since leave ≥ 1/2
  at most one subflow dominates at a time;
* ``dominance`` = fraction of time inside an episode; ``mean_dwell_s`` = mean episode length;
  ``handovers_per_ks`` = dominance changes from one subflow to a *different* one per 1000 s;
  ``concentration`` = time average of the normalized Herfindahl index
  (Σ s_i² − 1/n)/(1 − 1/n) ∈ [0, 1] (0: equal split, 1: everything on one subflow) — needs no
  threshold.

"Flappy" in the report's sense = high ``dominance`` with long dwell times *and* handovers
(concentration that alternates between subflows); with unequal paths one subflow may dominate
for ever (handovers → 0), which is concentration, not flapping.

Trace generator (until a packet simulator is used): :func:`window_trace`, a per-RTT-round
stochastic window model. In each round of length tau every subflow i sends ⌊w_i⌋ packets (plus
one more with probability frac(w_i)); each is lost independently with probability p_i. A round
with ≥ 1 loss on subflow i ends with one window decrease of subflow i (one congestion event per
window, as TCP fast recovery); the delivered packets each increase w_i by the per-ACK increase.
The increase I and decrease D are exactly ``on_ack``/``on_loss`` of :mod:`mpcc.algorithms`
(Mtcp(α, β), Mstcp); increases use the windows at the start of the round, decreases are applied
one subflow at a time in a random order with the current windows, and the window never goes
below ``min_cwnd`` (1 packet). Many independent replicas run at once (leading batch axis).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from ..algorithms import get as get_algorithm


@dataclass(frozen=True)
class Flappiness:
    dominance: float  # fraction of time one subflow dominates (inside an episode)
    mean_dwell_s: float  # mean length of a dominance episode (s); nan if none
    handovers_per_ks: float  # changes of the dominant subflow per 1000 s
    episodes: int
    concentration: float  # time-averaged normalized Herfindahl index of the shares
    duration_s: float

    def to_dict(self) -> dict:
        return asdict(self)


def moving_average(t: np.ndarray, x: np.ndarray, width: float) -> np.ndarray:
    """Central moving average of the rows of x over a time window of ``width`` (uniform t)."""
    dt = np.median(np.diff(t))
    k = int(round(width / dt))
    if k <= 1:
        return x
    kernel = np.ones(k) / k
    out = np.empty_like(x)
    for i in range(x.shape[1]):
        pad = np.pad(x[:, i], (k // 2, k - 1 - k // 2), mode="edge")
        out[:, i] = np.convolve(pad, kernel, mode="valid")
    return out


def flappiness(t, cwnd, enter: float = 0.8, leave: float = 0.5, smooth_s: float = 0.0) -> Flappiness:
    """The flappiness metric of one flow's window trace (see the module docstring).

    ``t``: sample times (s), increasing, shape (T,). ``cwnd``: windows, shape (T, n), n ≥ 2.
    Each sample holds until the next one (the last sample gets the median spacing)."""
    t = np.asarray(t, dtype=float)
    w = np.asarray(cwnd, dtype=float)
    if w.ndim != 2 or w.shape[0] != t.shape[0]:
        raise ValueError("cwnd must have shape (len(t), n_subflows)")
    if w.shape[1] < 2:
        raise ValueError("flappiness needs at least 2 subflows")
    if t.size < 2 or np.any(np.diff(t) <= 0):
        raise ValueError("t must be strictly increasing with at least 2 samples")
    if not 0.5 <= leave < enter <= 1.0:
        raise ValueError("need 0.5 ≤ leave < enter ≤ 1")
    if smooth_s > 0:
        w = moving_average(t, w, smooth_s)
    n = w.shape[1]
    total = w.sum(axis=1)
    s = w / np.where(total > 0, total, 1.0)[:, None]
    dt = np.diff(t, append=t[-1] + np.median(np.diff(t)))
    duration = float(dt.sum())
    herf = ((s ** 2).sum(axis=1) - 1.0 / n) / (1.0 - 1.0 / n)

    # Schmitt trigger: dominant subflow d (−1: none)
    dom = np.full(t.size, -1)
    cur = -1
    top = np.argmax(s, axis=1)
    top_share = s[np.arange(t.size), top]
    for k in range(t.size):
        if cur >= 0 and s[k, cur] <= leave:
            cur = -1
        if cur < 0 and top_share[k] >= enter:
            cur = int(top[k])
        dom[k] = cur
    inside = dom >= 0
    # episodes = maximal runs of a constant dominant subflow
    starts = np.flatnonzero(inside & np.r_[True, dom[1:] != dom[:-1]])
    lengths, owners = [], []
    for st in starts:
        end = st
        while end + 1 < t.size and dom[end + 1] == dom[st]:
            end += 1
        lengths.append(dt[st:end + 1].sum())
        owners.append(dom[st])
    handovers = sum(1 for x, y in zip(owners, owners[1:]) if x != y)
    return Flappiness(
        dominance=float(dt[inside].sum() / duration),
        mean_dwell_s=float(np.mean(lengths)) if lengths else float("nan"),
        handovers_per_ks=1000.0 * handovers / duration,
        episodes=len(lengths),
        concentration=float((herf * dt).sum() / duration),
        duration_s=duration,
    )


# --- stochastic per-RTT window model ------------------------------------------------------------
def window_trace(algorithm, loss, rtt: float = 0.1, rounds: int = 20000, replicas: int = 1,
                 seed: int = 0, w_init=None, record_every: int = 1):
    """Simulate ``replicas`` independent flows of the per-RTT stochastic window model.

    ``algorithm``: a name or table for :func:`mpcc.algorithms.get` ("fully-coupled", "mstcp",
    {"name": "mtcp", "alpha": .5, "beta": 1}, ...). ``loss``: per-packet loss probability of each
    path (its length is the number of subflows). Returns (t[T], cwnd[replicas, T, n])."""
    alg = get_algorithm(algorithm)
    p = np.asarray(loss, dtype=float)
    n = p.size
    if not np.all((p >= 0) & (p < 1)):
        raise ValueError("loss probabilities must be in [0, 1)")
    rng = np.random.default_rng(seed)
    w = np.full((replicas, n), 10.0) if w_init is None else np.broadcast_to(np.asarray(w_init, float), (replicas, n)).copy()
    tau = np.full((replicas, n), float(rtt))
    floor = alg.min_cwnd(n)
    keep = rounds // record_every
    out = np.empty((replicas, keep, n))
    for r in range(rounds):
        base = np.floor(w)
        sent = base + (rng.random(w.shape) < (w - base))
        lost = rng.binomial(sent.astype(np.int64), np.broadcast_to(p, w.shape))
        inc = alg.on_ack(w, tau)
        w = w + (sent - lost) * inc
        for i in rng.permutation(n):
            hit = lost[:, i] > 0
            if hit.any():
                dec = alg.on_loss(w[hit], tau[hit])[:, i]
                w[hit, i] = np.maximum(w[hit, i] - dec, floor)
        if r % record_every == record_every - 1:
            out[:, r // record_every] = w
    t = (np.arange(keep) + 1) * record_every * rtt
    return t, out


def flappiness_of_replicas(t, traces, **kw) -> dict:
    """Mean (and standard error over replicas) of each metric for traces[replica, T, n]."""
    vals = [flappiness(t, tr, **kw) for tr in traces]
    out = {}
    for key in ("dominance", "mean_dwell_s", "handovers_per_ks", "concentration"):
        x = np.array([getattr(v, key) for v in vals], float)
        x = x[np.isfinite(x)]
        out[key] = float(x.mean()) if x.size else float("nan")
        out[key + "_se"] = float(x.std(ddof=1) / np.sqrt(x.size)) if x.size > 1 else float("nan")
    out["episodes"] = int(sum(v.episodes for v in vals))
    out["replicas"] = len(vals)
    out["duration_s"] = float(vals[0].duration_s)
    return out


#: The four variants compared in §4.2 / §5.3, as :func:`mpcc.algorithms.get` specs.
VARIANTS = {
    "fully-coupled": "fully-coupled",
    "coupled-increase": "coupled-increase",
    "coupled-decrease": "coupled-decrease",
    "mstcp": "mstcp",
}


def compare(subflows=(2, 3, 4), loss: float = 0.005, rtt: float = 0.1, rounds: int = 20000,
            replicas: int = 4, seed: int = 1, engine: str = "window", **kw) -> list[dict]:
    """Flappiness of the four variants on n identical paths (loss p each), n in ``subflows``.

    engine "window": :func:`window_trace`; engine "sim": the packet simulator on
    :func:`random_loss_scenario` (``replicas`` seeds of ``rounds``·``rtt`` seconds each)."""
    rows = []
    for name, spec in VARIANTS.items():
        for n in subflows:
            if engine == "window":
                t, tr = window_trace(spec, [loss] * n, rtt, rounds, replicas, seed + 7919 * n)
            elif engine == "sim":
                runs = [packet_trace(spec, n, loss, rounds * rtt, rtt, seed + 7919 * n + k) for k in range(replicas)]
                size = min(r[0].size for r in runs)
                t, tr = runs[0][0][:size], np.stack([r[1][:size] for r in runs])
            else:
                raise ValueError(f"unknown engine {engine!r}")
            rows.append({"algorithm": name, "subflows": n, "loss": loss, "engine": engine,
                         **flappiness_of_replicas(t, tr, **kw)})
    return rows


# --- packet-level traces (mpcc.sim) -------------------------------------------------------------
def trace_from_subflows_table(table, group: str | None = None, flow: int = 0):
    """(t[T], cwnd[T, n]) of one flow from a ``subflows`` time-series frame of :mod:`mpcc.sim`
    (columns time_s, group, flow, route, cwnd_pkts). Times where not every route has a sample
    are dropped."""
    t = np.asarray(table["time_s"], float)
    route = np.asarray(table["route"], int)
    fl_ = np.asarray(table["flow"], int)
    cw = np.asarray(table["cwnd_pkts"], float)
    sel = fl_ == flow
    if group is not None:
        sel &= np.array(table["group"], dtype=object) == group
    t, route, cw = t[sel], route[sel], cw[sel]
    routes = np.unique(route)
    times = np.unique(t)
    out = np.full((times.size, routes.size), np.nan)
    ti = np.searchsorted(times, t)
    ri = np.searchsorted(routes, route)
    out[ti, ri] = cw
    ok = np.all(np.isfinite(out), axis=1)
    return times[ok], out[ok]


def random_loss_scenario(algorithm, n: int, loss: float, duration_s: float = 2000.0,
                         rtt_s: float = 0.1, capacity_mbps: float = 100.0) -> str:
    """Scenario text for the packet simulator matching :func:`window_trace`: n uncongested paths
    (large capacity and buffer) with independent random loss ``loss`` per packet."""
    links = "".join(f"""
[[links]]
name = "path{i}"
capacity_mbps = {capacity_mbps}
delay_ms = {rtt_s * 500.0}
buffer_pkts = 2000
loss = {loss}
""" for i in range(1, n + 1))
    paths = ", ".join(f'["path{i}"]' for i in range(1, n + 1))
    alg = f'"{algorithm}"' if isinstance(algorithm, str) else \
        "{ " + ", ".join(f"{k} = {v!r}" if not isinstance(v, str) else f'{k} = "{v}"' for k, v in algorithm.items()) + " }"
    return f"""name = "flappiness-{n}"
duration_s = {duration_s}
{links}
[[groups]]
name = "mtc"
count = 1
algorithm = {alg}
paths = [{paths}]
"""


def packet_trace(algorithm, n: int, loss: float, duration_s: float = 2000.0, rtt_s: float = 0.1,
                 seed: int = 1, sample_interval_s: float = 0.1, warmup_s: float = 20.0):
    """(t, cwnd[T, n]) of one flow from the packet simulator on :func:`random_loss_scenario`;
    the first ``warmup_s`` seconds (slow start on the uncongested paths) are simulated in
    addition to ``duration_s`` and dropped."""
    from .. import scenario, sim

    s = scenario.loads(random_loss_scenario(algorithm, n, loss, duration_s + warmup_s, rtt_s), "<flappiness>")
    r = sim.run(s, seed=seed, sample_interval_s=sample_interval_s)
    t, w = trace_from_subflows_table(r.timeseries["subflows"])
    keep = t >= warmup_s
    return t[keep] - warmup_s, w[keep]


def sim_available() -> bool:
    """True when the packet simulator (:mod:`mpcc.sim`, Rust core) can be imported."""
    try:
        from .. import sim  # noqa: F401

        return hasattr(sim, "run")
    except Exception:  # noqa: BLE001 - any import problem means "not available"
        return False
