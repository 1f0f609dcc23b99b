"""The Newton machinery of the equilibrium solver (:mod:`mpcc.fluid.solver`): φ and its Jacobian
batched per source class (finite differences of ``algo.fluid_phi``), the Schur complement on the
links solved by GMRES preconditioned with stale LU factors (or assembled and factorised at every
step, ``direct=True``), and :class:`NewtonSystem`, the barrier system in log variables."""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from .network import Network, SourceClass

_FD_STEP = 1e-6      # relative central-difference step for ∂φ/∂x
_FD_FORWARD = 1e-8   # relative forward-difference step (Newton steps of the fast path)
DEBUG = bool(__import__("os").environ.get("MPCC_FLUID_DEBUG"))
ZERO = 1e-20        # a "zero" route is evaluated at x_r = ZERO·x⁰_r (φ has a limit there)


class SolverFailure(RuntimeError):
    pass


# --- φ and its Jacobian, batched per class -------------------------------------------------------
def phi_jac(cls: SourceClass, x: np.ndarray, jac: bool = True, central: bool = True):
    """φ (B, n) and ∂φ/∂x (B, n, n) at x (B, n) > 0, J[b, r, k] = ∂φ_r/∂x_k; central
    differences (error ~1e-10 relative), or forward ones (~1e-8, n + 1 evaluations of φ instead
    of 2n + 1: enough for Newton steps, whose accuracy only sets the convergence rate)."""
    B, n = x.shape
    algo = cls.algorithm
    with np.errstate(all="ignore"):
        if not jac:
            return algo.fluid_phi(x, cls.tau), None
        if not central:
            X = np.repeat(x[None], n + 1, axis=0)
            for k in range(n):
                X[1 + k, :, k] *= 1.0 + _FD_FORWARD
            T = np.broadcast_to(cls.tau, X.shape)
            out = algo.fluid_phi(X.reshape(-1, n), T.reshape(-1, n)).reshape(n + 1, B, n)
            J = np.empty((B, n, n))
            for k in range(n):
                J[:, :, k] = (out[1 + k] - out[0]) / (X[1 + k, :, k, None] - x[:, k, None])
            return out[0], J
        X = np.repeat(x[None], 2 * n + 1, axis=0)
        for k in range(n):
            X[1 + 2 * k, :, k] *= 1.0 + _FD_STEP
            X[2 + 2 * k, :, k] *= 1.0 - _FD_STEP
        T = np.broadcast_to(cls.tau, X.shape)
        out = algo.fluid_phi(X.reshape(-1, n), T.reshape(-1, n)).reshape(2 * n + 1, B, n)
        J = np.empty((B, n, n))
        for k in range(n):
            J[:, :, k] = (out[1 + 2 * k] - out[2 + 2 * k]) / (2.0 * _FD_STEP * x[:, k, None])
        return out[0], J


def phi_all(net: Network, x: np.ndarray, jac: bool = True, central: bool = True):
    phi = np.empty(net.n_routes)
    Js = []
    for c in net.classes:
        f, J = phi_jac(c, x[c.routes].reshape(c.shape), jac, central)
        phi[c.routes] = f.ravel()
        Js.append(J)
    return phi, Js


def _block_index(net: Network):
    rows, cols = [], []
    for c in net.classes:
        B, n = c.shape
        base = c.route0 + np.arange(B)[:, None, None] * n
        rows.append(np.broadcast_to(base + np.arange(n)[None, :, None], (B, n, n)).ravel())
        cols.append(np.broadcast_to(base + np.arange(n)[None, None, :], (B, n, n)).ravel())
    return np.concatenate(rows), np.concatenate(cols)


GMRES_RTOL = 1e-12  # relative residual of the Schur solve in the exact (polish) Newton steps
GMRES_STAGE_RTOL = 1e-3   # at most, inside a barrier stage (inexact Newton; stage tolerance 1e-3)
_GMRES_MAX = 20      # beyond this many iterations the preconditioner is stale: refactorise


def _gmres(A, M, b, rtol, maxiter):
    """Right-preconditioned GMRES (no restart) for A M y = b, x = M y, modified Gram–Schmidt.
    Returns (x, iterations); x is None when the true residual ‖b − A x‖ > 10·rtol‖b‖ after
    ``maxiter`` iterations."""
    beta = np.linalg.norm(b)
    if beta == 0 or not np.isfinite(beta):
        return (np.zeros_like(b) if beta == 0 else None), 0
    V = np.empty((maxiter + 1, b.size))
    Z = np.empty((maxiter, b.size))
    Hh = np.zeros((maxiter + 1, maxiter))
    V[0] = b / beta
    for j in range(maxiter):
        Z[j] = M(V[j])
        w = A(Z[j])
        if not np.all(np.isfinite(w)):
            return None, j + 1
        for i in range(j + 1):
            Hh[i, j] = w @ V[i]
            w = w - Hh[i, j] * V[i]
        Hh[j + 1, j] = np.linalg.norm(w)
        e = np.zeros(j + 2)
        e[0] = beta
        y, *_ = np.linalg.lstsq(Hh[:j + 2, :j + 1], e, rcond=None)
        res = np.linalg.norm(Hh[:j + 2, :j + 1] @ y - e)
        if res <= rtol * beta or Hh[j + 1, j] <= 1e-300 * beta:
            x = y @ Z[:j + 1]
            if np.linalg.norm(A(x) - b) <= 10 * rtol * beta:
                return x, j + 1
            return None, j + 1
        V[j + 1] = w / Hh[j + 1, j]
    return None, maxiter


def _inv_small(A: np.ndarray) -> np.ndarray:
    """Inverse of a batch (B, n, n) of small matrices: closed forms (adjugate/determinant) for
    n ≤ 3, ``np.linalg.inv`` otherwise. Raises LinAlgError on a singular block."""
    n = A.shape[-1]
    if n > 3:
        return np.linalg.inv(A)
    with np.errstate(all="ignore"):
        if n == 1:
            det = A[:, 0, 0]
            inv = 1.0 / A
        elif n == 2:
            a, b, c, d = A[:, 0, 0], A[:, 0, 1], A[:, 1, 0], A[:, 1, 1]
            det = a * d - b * c
            inv = np.stack([np.stack([d, -b], -1), np.stack([-c, a], -1)], -2) / det[:, None, None]
        else:
            C = np.empty_like(A)   # cofactors, C[i, j] = (−1)^{i+j} minor(i, j); A⁻¹ = Cᵀ/det
            for i in range(3):
                i1, i2 = (i + 1) % 3, (i + 2) % 3
                for j in range(3):
                    j1, j2 = (j + 1) % 3, (j + 2) % 3
                    C[:, i, j] = A[:, i1, j1] * A[:, i2, j2] - A[:, i1, j2] * A[:, i2, j1]
            det = np.einsum("bj,bj->b", A[:, 0, :], C[:, 0, :])
            inv = np.swapaxes(C, 1, 2) / det[:, None, None]
    if not np.all(np.isfinite(inv)) or np.any(det == 0):
        raise np.linalg.LinAlgError("singular route block")
    return inv


# --- the Newton machinery ---------------------------------------------------------------------------
class NewtonSystem:
    def __init__(self, net: Network, direct: bool = False):
        self.net = net
        self.H = net.H.tocsr()
        self.HT = net.H.T.tocsr()
        self.Hm = net.Hm
        self.c = net.capacity
        self.ell = net.route_loss     # random loss of each route: q = Hᵀp + ℓ
        self.rows, self.cols = _block_index(net)
        # K = Hm M Hᵀ summed entry by entry: for every pair (r, k) of routes of one source and
        # every l ∈ r, l' ∈ k, K[l, l'] += m_r M[r, k]. Precompute the (entry, l·L + l') lists.
        HT = self.HT
        deg = np.diff(HT.indptr)
        pair = np.arange(self.rows.size)
        nr, nk = deg[self.rows], deg[self.cols]
        cnt = nr * nk
        self._pair = np.repeat(pair, cnt)
        within = np.arange(cnt.sum()) - np.repeat(np.cumsum(cnt) - cnt, cnt)
        nk_rep = np.repeat(nk, cnt)
        li = HT.indices[np.repeat(HT.indptr[self.rows], cnt) + within // nk_rep]
        lk = HT.indices[np.repeat(HT.indptr[self.cols], cnt) + within % nk_rep]
        L = net.n_links
        self._lin = li * L + lk
        self._mrow = net.multiplicity[self.rows]
        # CSR row pointer of the block-diagonal route matrix (each route's row holds its source's n)
        self._indptr = np.concatenate([[0], np.cumsum(np.concatenate(
            [np.full(c.tau.size, c.shape[1]) for c in net.classes] or [np.zeros(0, int)]))]).astype(np.int64)
        self.direct = direct          # True: assemble and LU-factorise S at every step (no GMRES)
        self._lu = None               # LU factors of the last assembled S (GMRES preconditioner)
        self.rtol = None              # GMRES tolerance override (looser inside barrier stages)
        self.factorizations = 0
        self.krylov_iterations = 0
        self.steps = 0                # Newton steps (barrier path, polish, continuation)

    def route_price(self, p):
        """q = Hᵀp + ℓ, as Network.route_price with the transpose kept."""
        return self.HT @ p + self.ell

    def residual(self, x, p, t, m, nl, free_r=None, free_l=None):
        net = self.net
        phi, Js = phi_all(net, x, jac=False)
        q = self.route_price(p)
        y = self.Hm @ x
        with np.errstate(all="ignore"):
            phit = phi + t * m / x
            G = np.log(phit) - np.log(q)
            pt = np.where(p > 0, p, 1.0)
            yt = y + (t * nl / pt if t > 0 else 0.0)
            F = np.log(yt) - np.log(self.c)
        if free_r is not None:
            G = np.where(free_r, G, 0.0)
            F = np.where(free_l, F, 0.0)
        return G, F

    # --- the |L|×|L| Schur system S dv = rhs ------------------------------------------------------
    #   S = diag(1/y) K diag(p) + diag(d),   K = Hm diag(x) A⁻¹ diag(1/q) Hᵀ
    # (A the block-diagonal route matrix). K is dense (a source couples all links of all its
    # routes), but applying S costs two sparse products and the batched n×n blocks. S changes
    # slowly from one Newton step to the next, so S is solved by GMRES preconditioned with the LU
    # factors of an earlier S; when GMRES needs more than ``_GMRES_MAX`` iterations S is
    # assembled and factorised afresh (``direct``: at every step, the reference path).
    def _apply(self, Ainv_all, x, p, q, yt, d, free_l, v):
        vv = v if free_l is None else np.where(free_l, v, 0.0)
        out = (self.Hm @ (x * (Ainv_all @ ((self.HT @ (p * vv)) / q)))) / yt + d * vv
        return out if free_l is None else np.where(free_l, out, v)

    def _assemble(self, blocks, p, yt, d, free_l):
        data = np.concatenate([(xs[:, :, None] * Ai / qs[:, None, :]).ravel() for Ai, xs, qs, _ in blocks])
        L = self.net.n_links
        K = np.bincount(self._lin, weights=(data * self._mrow)[self._pair], minlength=L * L).reshape(L, L)
        S = (K / yt[:, None]) * p[None, :]
        S[np.diag_indices_from(S)] += d
        if free_l is not None:
            S[~free_l, :] = 0.0
            S[:, ~free_l] = 0.0
            S[~free_l, ~free_l] = 1.0
        return S

    def _link_solve(self, blocks, Ainv_all, x, p, q, yt, d, rhs, free_l):
        if free_l is not None:
            rhs = np.where(free_l, rhs, 0.0)
        dv = None
        if not self.direct and self._lu is not None:
            dv, its = _gmres(lambda v: self._apply(Ainv_all, x, p, q, yt, d, free_l, v),
                             lambda v: sla.lu_solve(self._lu, v, check_finite=False), rhs,
                             rtol=GMRES_RTOL if self.rtol is None else self.rtol, maxiter=_GMRES_MAX)
            self.krylov_iterations += its
        if dv is None:
            S = self._assemble(blocks, p, yt, d, free_l)
            self._lu = sla.lu_factor(S, overwrite_a=True, check_finite=False)
            self.factorizations += 1
            dv = sla.lu_solve(self._lu, rhs, check_finite=False)
        return dv

    def step(self, x, p, t, m, nl, free_r=None, free_l=None, lam=0.0):
        """Newton step (Δu, Δv) and the residual (G, F) at (x, p). ``lam`` > 0 regularises the
        step (proximal term −λ on the diagonal of both blocks, the sign of a monotone descent
        direction) when the plain Newton step fails the line search."""
        G, F, solve = self.linearize(x, p, t, m, nl, free_r, free_l, lam)
        du, dv = solve(G, F)
        return du, dv, G, F

    def linearize(self, x, p, t, m, nl, free_r=None, free_l=None, lam=0.0):
        """Residual (G, F) at (x, p) and ``solve(g, f)`` → (Δu, Δv) = −J⁻¹(g, f), J the Jacobian
        of (G, F) in (u, v) = (log x, log p) (one Schur solve per call)."""
        net = self.net
        self.steps += 1
        phi, Js = phi_all(net, x, central=self.direct)
        q = self.route_price(p)
        y = self.Hm @ x
        with np.errstate(all="ignore"):
            bar = t * m / x
            phit = phi + bar
            G = np.log(phit) - np.log(q)
            pt = np.where(p > 0, p, 1.0)
            lbar = t * nl / pt if t > 0 else np.zeros_like(p)
            yt = y + lbar
            F = np.log(yt) - np.log(self.c)
            Dd = -lbar / yt
        if free_r is not None:
            G = np.where(free_r, G, 0.0)
            F = np.where(free_l, F, 0.0)
        if not (np.all(np.isfinite(G)) and np.all(np.isfinite(F))):
            raise SolverFailure("non-finite residual")
        blocks, AinvG = [], np.empty(net.n_routes)
        for c, J in zip(net.classes, Js):
            B, n = c.shape
            sl = c.routes
            xs = x[sl].reshape(B, n)
            A = J * xs[:, None, :]
            A[:, np.arange(n), np.arange(n)] -= bar[sl].reshape(B, n)
            A /= phit[sl].reshape(B, n)[:, :, None]
            if lam:
                A[:, np.arange(n), np.arange(n)] -= lam
            if free_r is not None:  # fixed routes: Δu_r = 0
                fr = free_r[sl].reshape(B, n)
                A = np.where(fr[:, :, None], A, 0.0)
                idx = np.arange(n)
                A[:, idx, idx] = np.where(fr, A[:, idx, idx], 1.0)
            Ainv = _inv_small(A)
            blocks.append((Ainv, xs, q[sl].reshape(B, n), sl))
        # A⁻¹ as one sparse block-diagonal matrix (rows in route order, n entries per row)
        Ainv_all = sp.csr_matrix((np.concatenate([b[0].ravel() for b in blocks]), self.cols, self._indptr),
                                 shape=(net.n_routes, net.n_routes))

        def solve(g, f):
            if free_r is not None:
                g, f = np.where(free_r, g, 0.0), np.where(free_l, f, 0.0)
            rhs = -f + (self.Hm @ (x * (Ainv_all @ g))) / yt
            dv = self._link_solve(blocks, Ainv_all, x, p, q, yt, Dd - lam, rhs, free_l)
            w = (self.HT @ (p * dv)) / q
            return Ainv_all @ (-g + w), dv

        return G, F, solve
