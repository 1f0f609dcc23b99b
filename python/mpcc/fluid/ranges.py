"""Step 4 of the equilibrium solver (:mod:`mpcc.fluid.solver`): non-uniqueness. Sources whose
Jacobian on their tied routes is singular, and per-route [min, max] rates over the equilibrium
polytope by linear programs."""

from __future__ import annotations

import numpy as np

from .network import Network
from .newton import ZERO, phi_jac

# --- non-uniqueness ------------------------------------------------------------------------------
def degenerate_sources(net: Network, x, p, tol=1e-7):
    """Sources whose Jacobian over the tied routes is singular: (s, tied route indices, row-space
    basis R_s with φ locally a function of R_s x_s only)."""
    q = net.route_price(p)
    xe = np.where(x > 0, x, ZERO * np.maximum(net.capacity.max(), 1.0))
    out = []
    for c in net.classes:
        B, n = c.shape
        if n < 2:
            continue
        xs = xe[c.routes].reshape(B, n)
        phi, J = phi_jac(c, xs)
        qs = q[c.routes].reshape(B, n)
        tied = (x[c.routes].reshape(B, n) > 0) | (np.abs(phi - qs) <= 1e-6 * qs)
        full = tied.all(axis=1)
        cand = []
        if full.any():                        # all routes tied: one batched SVD
            idx = np.flatnonzero(full)
            sv = np.linalg.svd(J[idx], compute_uv=False)
            cand.extend(idx[sv[:, -1] <= tol * sv[:, 0]].tolist())
        cand.extend(np.flatnonzero(~full & (tied.sum(axis=1) >= 2)).tolist())
        for b in cand:
            T = np.flatnonzero(tied[b])
            Jt = J[b][np.ix_(T, T)]
            _, s_, Vt = np.linalg.svd(Jt)
            if s_[-1] <= tol * s_[0]:
                out.append((c.source0 + b, c.route0 + b * n + T, Vt[s_ > tol * s_[0]]))
    return out


def equilibrium_ranges(net: Network, x, p, degenerate, max_vars=400):
    """Per-route [min, max] over the equilibrium set with prices fixed (LP)."""
    from scipy.optimize import linprog

    lo, hi = x.copy(), x.copy()
    if not degenerate:
        return lo, hi
    var = np.concatenate([r for _, r, _ in degenerate])
    if var.size > max_vars:
        lo[var], hi[var] = np.nan, np.nan
        return lo, hi
    nv = var.size
    fixed = x.copy()
    fixed[var] = 0.0
    Hm = net.Hm.tocsc()
    Hv = Hm[:, var].toarray()
    base = Hm @ fixed
    eq_rows, eq_rhs, ub_rows, ub_rhs = [], [], [], []
    col = 0
    for _, r, Rb in degenerate:
        for row in Rb:
            a = np.zeros(nv)
            a[col:col + r.size] = row
            eq_rows.append(a)
            eq_rhs.append(row @ x[r])
        col += r.size
    touched = np.flatnonzero(np.abs(Hv).sum(axis=1) > 0)
    for l in touched:
        if p[l] > 0:
            eq_rows.append(Hv[l]); eq_rhs.append(net.capacity[l] - base[l])
        else:
            ub_rows.append(Hv[l]); ub_rhs.append(net.capacity[l] - base[l])
    kw = dict(A_eq=np.array(eq_rows) if eq_rows else None, b_eq=np.array(eq_rhs) if eq_rhs else None,
              A_ub=np.array(ub_rows) if ub_rows else None, b_ub=np.array(ub_rhs) if ub_rhs else None,
              bounds=[(0, None)] * nv, method="highs")
    for j in range(nv):
        cvec = np.zeros(nv)
        cvec[j] = 1.0
        r1 = linprog(cvec, **kw)
        r2 = linprog(-cvec, **kw)
        if r1.status == 0 and r2.status == 0:
            lo[var[j]], hi[var[j]] = max(r1.fun, 0.0), -r2.fun
    return lo, hi
