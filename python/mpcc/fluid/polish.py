"""Step 3 of the equilibrium solver (:mod:`mpcc.fluid.solver`): the exact active-set Newton
"polish" of a barrier solution, and the residuals of (8)–(9)."""

from __future__ import annotations

import numpy as np

from .network import Network
from .newton import DEBUG, GMRES_RTOL, ZERO, NewtonSystem, SolverFailure, phi_all

def kkt_residuals(net: Network, x, p, phi=None) -> dict:
    """Relative violations of (8)–(9)."""
    if phi is None:
        xe = np.where(x > 0, x, ZERO * np.maximum(net.capacity.max(), 1.0))
        phi, _ = phi_all(net, xe, jac=False)
    q = net.route_price(p)
    y = net.Hm @ x
    c = net.capacity
    pos = x > 0
    with np.errstate(all="ignore"):
        rel = (phi - q) / q
    return {
        "route_equality": float(np.abs(rel[pos]).max(initial=0.0)),        # φ_r = q_r if x_r > 0
        "route_inequality": float(np.maximum(rel, 0).max(initial=0.0)),    # φ_r ≤ q_r
        "link_capacity": float(np.maximum((y - c) / c, 0).max(initial=0.0)),  # y_l ≤ c_l
        "link_equality": float(np.abs((y - c) / c)[p > 0].max(initial=0.0)),  # y_l = c_l if p_l > 0
        "nonnegativity": float(max(np.maximum(-x, 0).max(initial=0), np.maximum(-p, 0).max(initial=0))),
    }


def polish_exact(sysm: NewtonSystem, x, p, x0, p0, rounds: int = 6, hint=None):
    """Exact active-set Newton from a barrier solution: zero-rate routes Z (x_r = 0) and priced
    links A (p_l > 0) are read off the complementarity pairs; after each solve, violated
    inequalities (y_l > c_l off A, φ_r > q_r on Z, p_l < 0 on A) move between the sets."""
    net = sysm.net
    phi, _ = phi_all(net, x, jac=False)
    q = sysm.route_price(p)
    y = sysm.Hm @ x
    if hint is None:
        zero_r = (x / x0) < np.maximum((q - phi) / q, 0.0)
        active_l = (p / p0) >= np.maximum((net.capacity - y) / net.capacity, 0.0)
    else:
        zero_r, active_l = hint[0].copy(), hint[1].copy()
    xs, ps = np.where(zero_r, ZERO * x0, x), p.copy()
    for _ in range(rounds):
        # every used route without random loss needs a priced link: price its most congested one
        q_act = sysm.HT @ active_l.astype(float)
        for r in np.flatnonzero(~zero_r & (q_act == 0) & (sysm.ell == 0)):
            links = sysm.HT.indices[sysm.HT.indptr[r]:sysm.HT.indptr[r + 1]]
            active_l[links[np.argmax(p[links] / p0[links])]] = True
        ok, xs, ps = _polish_newton(sysm, np.where(zero_r, ZERO * x0, xs),
                                    np.where(active_l, np.maximum(ps, 1e-300), 0.0), ~zero_r, active_l,
                                    over=lambda xx: bool(np.any(~active_l & (
                                        sysm.Hm @ np.where(zero_r, 0.0, xx) > net.capacity * (1 + 1e-4)))))
        if not ok:
            # Newton drives a wrongly priced link's p_l (or a wrongly used route's x_r) to 0
            # in log space: move those between the sets and retry
            drop_l = active_l & (ps < 1e-9 * np.maximum(p, p0 * 1e-3))
            drop_r = ~zero_r & (xs < 1e-9 * np.maximum(x, x0 * 1e-3))
            if DEBUG:
                print(f"  polish retry: unprice {drop_l.sum()} links, zero {drop_r.sum()} routes")
            if not drop_l.any() and not drop_r.any():
                return None
            active_l &= ~drop_l
            zero_r |= drop_r
            continue
        xe = np.where(zero_r, ZERO * x0, xs)
        phi, _ = phi_all(net, xe, jac=False)
        q = sysm.route_price(ps)
        y = sysm.Hm @ np.where(zero_r, 0.0, xs)
        over = (~active_l) & (y > net.capacity * (1 + 1e-11))
        wake = zero_r & (phi > q * (1 + 1e-11))
        if DEBUG:
            print(f"  polish round: |Z|={zero_r.sum()} |A|={active_l.sum()} over={over.sum()} wake={wake.sum()} "
                  f"negative p={(ps[active_l] <= 0).sum()}")
        if not over.any() and not wake.any():
            return np.where(zero_r, 0.0, xs), ps
        active_l |= over
        zero_r &= ~wake
        # a route or link joining its set restarts from the barrier point (the margin: x_r or
        # p_l is small there, which x⁰/p⁰-based guesses are not); the others keep this round's
        xs = np.where(wake, np.maximum(x, 1e-300), xs)
        ps = np.where(over, np.maximum(p, 1e-300), ps)
    return None


def _polish_newton(sysm, x, p, free_r, free_l, steps: int = 30, over=None):
    m0, n0 = np.zeros_like(x), np.zeros_like(p)
    u = np.log(x)
    v = np.log(np.where(free_l, p, 1.0))
    u_floor = np.log(np.maximum(x, 1e-300)) - 25.0
    v_floor = np.log(np.where(free_l, np.maximum(p, 1e-300), 1.0)) - 25.0
    best = None
    res = 1.0
    for _ in range(steps):
        xx, pp = np.exp(u), np.where(free_l, np.exp(v), 0.0)
        try:
            # inexact Newton: Schur solve to 1e-2·‖residual‖ (still quadratic convergence)
            sysm.rtol = min(1e-3, max(GMRES_RTOL, 1e-2 * res))
            du, dv, G, F = sysm.step(xx, pp, 0.0, m0, n0, free_r, free_l)
            sysm.rtol = None
        except (np.linalg.LinAlgError, SolverFailure, ValueError) as e:
            sysm.rtol = None
            if DEBUG:
                print("polish step failed:", e)
            break
        res = max(np.abs(G).max(initial=0), np.abs(F).max(initial=0))
        if DEBUG:
            print(f"    polish step res={res:.2e} min dv={np.where(free_l, dv, 0).min():.2e} "
                  f"min du={np.where(free_r, du, 0).min():.2e} max|du|={np.abs(du).max():.2e}")
        if best is None or res < best[0]:
            best = (res, xx, pp)
        if res < 1e-14 or not (np.all(np.isfinite(du)) and np.all(np.isfinite(dv))):
            break
        if over is not None and res < 1e-5 and over(xx):
            # an unpriced link is clearly over capacity: this active set is wrong, stop here
            # (the caller prices it and starts the next round; it never returns this point)
            return True, xx, pp
        # a price (rate) whose Newton step divides it by e⁸ heads to 0: the link (route) is in
        # the wrong set; return at once with it zeroed so that the caller moves it
        gone_l, gone_r = free_l & (dv < -8.0), free_r & (du < -8.0)
        if gone_l.any() or gone_r.any():
            return False, np.where(gone_r, 0.0, xx), np.where(gone_l, 0.0, pp)
        big = max(np.abs(du).max(initial=0), np.abs(dv).max(initial=0))
        a = min(1.0, 1.0 / big) if big > 0 else 1.0
        u = u + a * np.where(free_r, du, 0.0)
        v = v + a * np.where(free_l, dv, 0.0)
        if np.any(free_l & (v < v_floor)) or np.any(free_r & (u < u_floor)):
            break   # a price or rate heads to 0: wrong active set, let the caller fix it
    if best is None:
        return False, x, p
    if best[0] > 1e-10:
        if DEBUG:
            print("  polish newton: no convergence", best[0])
        return False, np.exp(u), np.where(free_l, np.exp(v), 0.0)
    return True, best[1], best[2]
