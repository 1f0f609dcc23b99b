"""Trajectories of the fluid model (3)–(4) of Peng et al.:

    ẋ_r = k_r(x_s) (φ_r(x_s) − q_r)^+_{x_r}          (3)
    ṗ_l = γ_l (y_l − c_l)^+_{p_l}                      (4)

with (a)^+_z = a if z > 0 and max(0, a) if z ≤ 0, so x, p stay ≥ 0. k_r and φ_r come from the
algorithm's ``fluid_k``/``fluid_phi`` (eq. 7). Integrated with ``scipy.integrate.solve_ivp``
(explicit RK45 by default: the max/min in the algorithms (e.g. Balia at α_r = 1) make φ non-smooth, which stalls implicit stiff solvers; ``method=`` selects another solve_ivp method).

Price gain γ_l (units: loss probability per packet of excess traffic, i.e. 1/packet): (4) is
the RED-like model "p proportional to backlog", ṗ = γ·(backlog growth rate). Default: see
:func:`mpcc.fluid.engine.default_gamma`; ``[fluid] gamma`` overrides all links.

Groups are present only in [start_s, stop_s): before the start their routes carry nothing; at the
start each route begins at one packet per RTT (x_r = 1/τ_r); at the stop it drops to 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.integrate import solve_ivp

from .network import Network
from .solver import phi_all


@dataclass
class Trajectory:
    t: np.ndarray          # (T,) seconds
    x: np.ndarray          # (T, R) per-flow route rates, packets/s
    p: np.ndarray          # (T, L) link prices
    network: Network
    groups: list | None = None
    gamma: np.ndarray | None = None

    def y(self) -> np.ndarray:
        return (self.network.Hm @ self.x.T).T


def k_all(net: Network, x: np.ndarray) -> np.ndarray:
    k = np.empty(net.n_routes)
    with np.errstate(all="ignore"):
        for c in net.classes:
            k[c.routes] = c.algorithm.fluid_k(x[c.routes].reshape(c.shape), c.tau).ravel()
    return k


def rhs_factory(net: Network, gamma: np.ndarray, active: np.ndarray):
    """Right-hand side of (3)–(4) with routes outside ``active`` frozen at 0."""
    H, HT, Hm = net.H, net.H.T.tocsr(), net.Hm
    ell = net.route_loss                   # random loss of each route: q = Hᵀp + ℓ
    R = net.n_routes
    floor = 1e-12 * net.capacity.max()

    def f(_t, z):
        x = np.where(active, np.maximum(z[:R], 0.0), 0.0)
        p = np.maximum(z[R:], 0.0)
        xe = np.maximum(x, floor)
        phi, _ = phi_all(net, xe, jac=False)
        k = k_all(net, xe)
        q = HT @ p + ell
        with np.errstate(all="ignore"):
            dx = k * (phi - q)
        dx = np.where(np.isfinite(dx), dx, 0.0)
        dx = np.where((x <= floor) & (dx < 0), 0.0, dx)            # (·)^+_{x_r}
        dx = np.where(active, dx, 0.0)
        y = Hm @ x
        dp = gamma * (y - net.capacity)
        dp = np.where((p <= 0) & (dp < 0), 0.0, dp)                 # (·)^+_{p_l}
        return np.concatenate([dx, dp])

    return f


def integrate(net: Network, gamma, t_end: float, *, starts=None, stops=None, x0=None, p0=None,
              n_points: int = 400, method: str = "RK45", rtol: float = 1e-6, progress=None) -> Trajectory:
    """Integrate (3)–(4) on [0, t_end]. ``starts``/``stops`` per route (seconds)."""
    R, L = net.n_routes, net.n_links
    tau = net.tau
    starts = np.zeros(R) if starts is None else np.asarray(starts, float)
    stops = np.full(R, np.inf) if stops is None else np.asarray(stops, float)
    gamma = np.broadcast_to(np.asarray(gamma, float), (L,)).copy()
    events = sorted({0.0, t_end, *[s for s in starts if 0 < s < t_end], *[s for s in stops if 0 < s < t_end]})
    x = np.where(starts <= 0, 1.0 / tau, 0.0) if x0 is None else np.asarray(x0, float).copy()
    p = np.zeros(L) if p0 is None else np.asarray(p0, float).copy()
    ts, xs, ps = [], [], []
    grid = np.linspace(0.0, t_end, n_points)
    for a, b in zip(events[:-1], events[1:]):
        active = (starts <= a) & (stops > a)
        x = np.where(active & (x <= 0) & (starts == a) & (a > 0), 1.0 / tau, x)   # a group starts
        x = np.where(active, x, 0.0)                                              # a group stopped
        f = rhs_factory(net, gamma, active)
        pts = grid[(grid >= a) & (grid <= b)]
        if pts.size == 0 or pts[0] > a:
            pts = np.concatenate([[a], pts])
        if pts[-1] < b:
            pts = np.concatenate([pts, [b]])
        sol = solve_ivp(f, (a, b), np.concatenate([x, p]), method=method, t_eval=pts, rtol=rtol,
                        atol=np.concatenate([1e-6 * np.maximum(x, 1.0 / tau), np.full(L, 1e-9)]))
        if not sol.success:
            from ..errors import MpccError
            raise MpccError(f"fluid dynamics: integration failed at t = {sol.t[-1]:.3g} s ({sol.message}) "
                            f"(fix: lower [fluid] gamma or shorten t_end)")
        z = np.maximum(sol.y, 0.0)
        ts.append(sol.t); xs.append(np.where(active[:, None], z[:R], 0.0).T); ps.append(z[R:].T)
        x, p = z[:R, -1], z[R:, -1]
        if progress is not None:
            progress(b)
    t = np.concatenate(ts)
    keep = np.concatenate([np.diff(t) > 0, [True]])   # at an event keep the state after it
    return Trajectory(t[keep], np.concatenate(xs)[keep], np.concatenate(ps)[keep], net, gamma=gamma)


#: Time constant of the default price gain: a link whose load is 1 % above capacity raises its
#: price by 1 % of its equilibrium value in GAMMA_TIME_S·1 % … i.e. ṗ/p* = (y − c)/c / GAMMA_TIME_S.
GAMMA_TIME_S = 0.1
