"""Deterministic-drop fluid simulation of MTC windows (Jiang et al. §3, Assumption 1).

An independent numerical check of the closed forms in :mod:`mpcc.mtc.utilization`, and the
"solid curves" of Figs. 9–10 when no packet simulator is at hand.

Model: ``m`` flows × ``n`` disjoint paths, each path with capacity C (packets/s), two-way
propagation delay D, buffer B = gamma·W0 (W0 = C·D). Between losses every window follows the
ACK clock of the algorithm (rules taken from :mod:`mpcc.algorithms`, nothing re-derived):

    dw_ij/dt = (w_ij / tau_i) · I_ij(w_j),    tau_i = max(P_i / C, D),   P_i = Σ_j w_ij      (3)

which is (5) for MSTCP, (9) for Coupled Decrease and (29) for Coupled Increase / Fully Coupled.
A loss occurs on path i exactly when P_i reaches W_max = W0 + B (Assumption 1); it hits the flow
with the largest window on that path, whose window becomes ``cwnd_after_loss`` of the algorithm.
The throughput of path i is min(P_i/D, C) (4). Integration: scipy ``solve_ivp`` (DOP853) with
one event function per path, restarted after each loss.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.integrate import solve_ivp

from ..algorithms import get as get_algorithm
from .utilization import cycle_utilization_aimd, cycle_utilization_mimd

VARIANTS = {
    "mstcp": {"name": "mstcp"},
    "coupled-decrease": {"name": "coupled-decrease"},
    "coupled-increase": {"name": "coupled-increase"},
    "fully-coupled": {"name": "fully-coupled"},
}


@dataclass
class CycleRun:
    """Result of :func:`simulate`: measured utilization and one record per loss (cycle start)."""

    utilization: float
    #: per loss after warm-up: time, path, flow, window before, window after, f = after/before
    loss_time: np.ndarray
    loss_path: np.ndarray
    loss_flow: np.ndarray
    w_before: np.ndarray
    w_after: np.ndarray
    extra: dict = field(default_factory=dict)

    def complete_cycle_utilization(self) -> float:
        """Measured utilization over whole cycles only: for each path, data served between its
        first and last recorded loss over C·(elapsed time); averaged with time weights. This is
        the quantity :meth:`cycle_weighted_utilization` predicts exactly when (6)/(10) hold."""
        num = den = 0.0
        served = self.extra["served_at_loss"]
        for i in np.unique(self.loss_path):
            sel = self.loss_path == i
            t, sv = self.loss_time[sel], served[sel]
            if len(t) > 1:
                num += (sv[-1] - sv[0]) / self.extra["c_pps"]
                den += t[-1] - t[0]
        return num / den

    @property
    def f(self) -> np.ndarray:
        return self.w_after / self.w_before

    def cycle_weighted_utilization(self, kind: str, kappa: float) -> float:
        """The report's dashed curves (Figs. 9–10): per-cycle utilization (6) (kind="mimd") or
        (10) (kind="aimd") at each measured f, averaged over all cycles of all paths weighted by
        cycle duration (§3.1). Single flow only (W_max is the pre-loss window of the subflow)."""
        per = cycle_utilization_mimd if kind == "mimd" else cycle_utilization_aimd
        num = den = 0.0
        for i in np.unique(self.loss_path):
            sel = self.loss_path == i
            t, fi = self.loss_time[sel], self.f[sel]
            for k in range(len(t) - 1):
                dur = t[k + 1] - t[k]
                num += dur * per(min(fi[k], 1.0), kappa)
                den += dur
        return num / den


def simulate(algorithm, n: int, m: int = 1, w0: float = 42.0, gamma: float = 0.0,
             cycles: int = 60, warmup_cycles: int = 20, d: float = 0.2, w_init=None,
             rtol: float = 1e-10) -> CycleRun:
    """Integrate the hybrid system for ``cycles`` losses per subflow (on average) and measure.

    ``algorithm``: a name of :data:`VARIANTS` or anything :func:`mpcc.algorithms.get` accepts.
    ``w_init``: (m, n) initial windows (default: staggered, all different, below W_max/m).
    Returns the time-average utilization Σ_i min(P_i/D, C) / (nC) after the warm-up losses."""
    alg = get_algorithm(VARIANTS.get(algorithm, algorithm) if isinstance(algorithm, str) else algorithm)
    c = w0 / d
    w_max = (1.0 + gamma) * w0
    if w_init is None:
        k = np.arange(m * n, dtype=float).reshape(m, n)
        w_init = (0.3 + 0.6 * (k + 0.5) / (m * n)) * w_max / m
    w = np.array(w_init, dtype=float).reshape(m, n)

    def rates(wf):
        ww = wf.reshape(m, n)
        p = ww.sum(axis=0)
        tau = np.maximum(p / c, d)
        return ww, p, tau

    def rhs(_t, y):
        ww, _p, tau = rates(y[:m * n])
        inc = alg.on_ack(ww, np.broadcast_to(tau, ww.shape))
        dw = ww / tau * inc
        thr = np.minimum(ww.sum(axis=0) / d, c)  # (4), per path
        return np.concatenate([dw.ravel(), thr])

    def make_event(i):
        def ev(_t, y):
            return y[:m * n].reshape(m, n)[:, i].sum() - w_max
        ev.terminal, ev.direction = True, 1.0
        return ev

    events = [make_event(i) for i in range(n)]
    total_losses = cycles * n * m
    warm = warmup_cycles * n * m
    t0 = 0.0
    t_start = served_start = None
    rec = []
    y = np.concatenate([w.ravel(), np.zeros(n)])  # windows, then data served per path
    horizon = 50.0 * d * w_max  # ample time for one loss to happen
    for k in range(total_losses):
        sol = solve_ivp(rhs, (t0, t0 + horizon), y, method="DOP853", events=events,
                        rtol=rtol, atol=1e-12 * w_max)
        hit = [i for i in range(n) if sol.t_events[i].size]
        if not hit:
            raise RuntimeError("no loss within the horizon; windows did not reach W_max")
        i = min(hit, key=lambda j: sol.t_events[j][0])
        t0 = float(sol.t_events[i][0])
        y = sol.y_events[i][0].copy()
        ww = y[:m * n].reshape(m, n)
        j = int(np.argmax(ww[:, i]))
        before = ww[j, i]
        after = alg.cwnd_after_loss(ww[j], np.full(n, d))[i]
        ww[j, i] = after
        y[:m * n] = ww.ravel()
        if k == warm:
            t_start, served_start = t0, y[m * n:].sum()
        if k >= warm:
            rec.append((t0, i, j, before, after, y[m * n + i]))
    r = np.array(rec)
    util = (y[m * n:].sum() - served_start) / ((t0 - t_start) * n * c)
    return CycleRun(util, r[:, 0], r[:, 1].astype(int), r[:, 2].astype(int), r[:, 3], r[:, 4],
                    extra={"w_max": w_max, "c_pps": c, "d_s": d, "served_at_loss": r[:, 5]})



@dataclass
class PeriodicOrbit:
    """The evenly spaced periodic solution of Assumption 2 (single flow), found numerically."""

    f: float
    utilization: float
    period: float  # L, the period of one subflow's window
    w_before: np.ndarray  # w_i(0), i = 1..n: windows just before subflow 1's loss
    times: np.ndarray  # a fine grid on (0, L] ...
    w1: np.ndarray  # ... and subflow 1's window on it (for plots)
    _dense: object = None
    _n: int = 1

    def w1_at(self, t) -> np.ndarray:
        """Subflow 1's window at times t ∈ (0, L] (left limits at the losses), from the dense
        solution: by (7), w_1(kL/n + s) = w_{n−k+1}(s) for k ≥ 1 and 0 < s ≤ L/n."""
        t = np.atleast_1d(np.asarray(t, float))
        step = self.period / self._n
        k = np.clip(np.ceil(t / step - 1e-12).astype(int) - 1, 0, self._n - 1)
        s = t - k * step
        out = np.empty_like(t)
        for kk in np.unique(k):
            sel = k == kk
            idx = 0 if kk == 0 else self._n - kk
            out[sel] = self._dense(s[sel])[idx]
        return out


def periodic_orbit(algorithm, n: int, w0: float = 42.0, gamma: float = 0.0, d: float = 0.2,
                   guess=None, samples: int = 4000) -> PeriodicOrbit:
    """Find the Assumption-2 orbit w_i(t) = w_1(t − (i−1)L/n) by shooting, without using any
    closed form: unknowns are w_2(0), ..., w_n(0) (w_1(0) = W_max); the return map applies the
    loss of subflow 1 (rule of :mod:`mpcc.algorithms`), integrates (3)–(5)/(9)/(29) until the
    next window reaches W_max, and relabels subflow i+1 → i. A root of (map − identity) is the
    orbit; f = w_1(0+)/W_max and U = (data served in one L/n) / (n·C·L/n)."""
    from scipy.optimize import root

    alg = get_algorithm(VARIANTS.get(algorithm, algorithm) if isinstance(algorithm, str) else algorithm)
    c = w0 / d
    w_max = (1.0 + gamma) * w0
    rtt = np.full(n, d)

    def rhs(_t, y):
        w = y[:-1]
        tau = np.maximum(w / c, d)
        dw = w / tau * alg.on_ack(w, tau)
        return np.concatenate([dw, [np.minimum(w / d, c).sum()]])

    def ev(_t, y):
        return y[1] - w_max if n > 1 else y[0] - w_max
    ev.terminal, ev.direction = True, 1.0

    def advance(x, dense=False):
        w = np.concatenate([[w_max], x])
        w = w.copy()
        w[0] = alg.cwnd_after_loss(w, rtt)[0]
        sol = solve_ivp(rhs, (0.0, 50.0 * d * w_max), np.concatenate([w, [0.0]]), method="DOP853",
                        events=[ev], rtol=1e-11, atol=1e-12 * w_max, dense_output=dense)
        if not sol.t_events[0].size:
            raise RuntimeError("subflow 2 never reached W_max")
        return sol, w[0]

    def residual(x):
        sol, _ = advance(np.clip(x, 1e-9, w_max))
        y = sol.y_events[0][0][:-1]
        shifted = np.concatenate([y[2:], [y[0]]])  # subflow i+1 → i; subflow 1 → n
        return shifted - x

    if n == 1:
        x = np.array([])
    else:
        guesses = [np.array(guess, float)] if guess is not None else [
            w_max * (1.0 - spread * np.arange(1, n) / n) for spread in (0.9, 0.5, 0.99)]
        for x0 in guesses:
            res = root(residual, x0, method="hybr", tol=1e-12)
            x = res.x
            if res.success and np.max(np.abs(residual(x))) <= 1e-6 * w_max:
                break
        else:
            raise RuntimeError(f"no Assumption-2 orbit found: {res.message}")
    sol, after = advance(x, dense=True)
    step = float(sol.t_events[0][0])  # L/n
    served = float(sol.y_events[0][0][-1])
    util = served / (n * c * step)
    # subflow 1 over a full period L: it is subflow 1 on (0, L/n], then (by the shift) the
    # trajectory of subflow n, n−1, ... on the following intervals — w_1(t + kL/n) = w_{k+1}(t)...
    # reconstruct from the dense solution of one step: w_1(kL/n + s) = w_{n−k+1}(s) for k ≥ 1.
    s = np.linspace(0.0, step, samples // n + 1)[1:]
    seg = sol.sol(s)[:-1]  # (n, len(s))
    t_all, w_all = [], []
    for k in range(n):
        idx = 0 if k == 0 else n - k
        t_all.append(k * step + s)
        w_all.append(seg[idx])
    return PeriodicOrbit(after / w_max, util, n * step, np.concatenate([[w_max], x]),
                         np.concatenate(t_all), np.concatenate(w_all), sol.sol, n)


def cycles_from_trace(t, cwnd, min_drop: float = 0.5, merge_samples: int = 3):
    """Loss cycles of one subflow from a sampled window trace (packet simulator / testbed).

    A cycle starts where the window falls (by more than ``min_drop`` packets between samples);
    falls within ``merge_samples`` samples of each other are one loss event (fast recovery).
    Returns (start_times, f) with f = window after the fall / window just before it — the
    "f measured from experiments" of the report's Figs. 9–10."""
    t = np.asarray(t, float)
    w = np.asarray(cwnd, float)
    falls = np.flatnonzero(np.diff(w) < -min_drop) + 1
    events: list[list[int]] = []
    for k in falls:
        if events and k - events[-1][1] <= merge_samples:
            events[-1][1] = k
        else:
            events.append([k - 1, k])
    starts = np.array([t[b] for _, b in events])
    f = np.array([w[b] / w[a] for a, b in events])
    return starts, f


def trace_cycle_utilization(starts_per_path, f_per_path, kind: str, kappa: float) -> float:
    """Duration-weighted mean of (6) (kind="mimd") or (10) ("aimd") over measured cycles of all
    paths (§3.1: "the average link utilization of all cycles of all paths weighted by the
    durations of the cycles"). The last, incomplete cycle of each path is dropped."""
    per = cycle_utilization_mimd if kind == "mimd" else cycle_utilization_aimd
    num = den = 0.0
    for starts, f in zip(starts_per_path, f_per_path):
        for k in range(len(starts) - 1):
            dur = starts[k + 1] - starts[k]
            num += dur * per(float(np.clip(f[k], 1e-9, 1.0)), kappa)
            den += dur
    return num / den if den > 0 else float("nan")
