"""All equilibria of (3), (6), (7) and their properties (Theorem 1, Corollary 3, Theorem 6).

An equilibrium price p satisfies (7): P(y(p) − c) = 0, y(p) ≤ c, p ≥ 0.  We enumerate the
bottleneck set B = {l : p_l > 0} and, for each B, find *every* root of
    y_l(p) = c_l  (l ∈ B),   p_l = 0 and y_l(p) ≤ c_l  (l ∉ B)
by branch and prune on boxes [a, b] of prices.  The pruning is exact because every load y_l is
non-increasing in every price p_k (x_i is decreasing in q_i, q_i non-decreasing in p_k), so on a
box the load ranges over [y_l(b), y_l(a)].  A box is discarded when y_l(a) < c_l or
y_l(b) > c_l for some l ∈ B, or y_l(b) > c_l for some l ∉ B, and contracted by the 1-D
monotone solves
    b_l ← sup{t : y_l(t, a_{−l}) ≥ c_l},   a_l ← inf{t : y_l(t, b_{−l}) ≤ c_l}.
No root can be lost (up to floating point); the surviving boxes are bisected (in log price)
until they are tiny, and each cluster is polished by Newton's method (scipy hybr) on log p_B.
The initial box is [0, p̄] with y_l(p̄_l e_l) = c_l: every root lies inside because
y_l(p) ≤ y_l(p_l e_l).

Per equilibrium we report
  * γ of Theorem 1, eq. (15): γ_i = Σ_l R_li p_l / Σ_l R_li m_l^{j(i)}(p_l);
  * the Corollary-3 bound (17) Û/U* ≥ γ_min/γ_max (valid when all utilities are ≥ 0) next to
    the achieved Û/U*;
  * local stability of ṗ = y(p) − c: eigenvalues of J_BB = ∂y_B/∂p_B (stable iff all have
    negative real part and the non-bottleneck links have slack);
  * whether the sufficient condition (22) of Theorem 6 holds at p;
  * the index sign det(−J_BB); over all equilibria of a regular network the indices sum to 1
    (Tang et al. 2007, index theorem), which we report as a completeness check.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import linear_sum_assignment, root

from .model import Arrays, Network, aggregate_prices, evaluate, utility, mapped_prices


@dataclass
class Equilibrium:
    prices: np.ndarray
    rates: np.ndarray
    loads: np.ndarray
    bottlenecks: tuple[int, ...]
    eigenvalues: np.ndarray
    stable: bool
    index: int
    gamma: np.ndarray
    efficiency_bound: float
    utility_ratio: float
    corollary3_applies: bool
    theorem6: bool | None
    residual: float

    def to_dict(self, net: Network) -> dict:
        return {
            "prices": [float(v) for v in self.prices],
            "rates": {n: float(v) for n, v in zip(net.source_names, self.rates)},
            "stable": bool(self.stable),
            "bottlenecks": [net.link_names[l] for l in self.bottlenecks],
            "loads": [float(v) for v in self.loads],
            "eigenvalues": [[float(e.real), float(e.imag)] for e in self.eigenvalues],
            "index": int(self.index),
            "gamma": {n: float(v) for n, v in zip(net.source_names, self.gamma)},
            "efficiency_bound": float(self.efficiency_bound),
            "utility_ratio": float(self.utility_ratio),
            "corollary3_applies": bool(self.corollary3_applies),
            "theorem6": self.theorem6,
            "residual": float(self.residual),
        }


@dataclass
class Search:
    """Outcome of the enumeration: equilibria, the index sum and search statistics."""

    equilibria: list[Equilibrium]
    index_sum: int
    boxes: int
    complete: bool
    notes: list[str] = field(default_factory=list)


# --- 1-D monotone load functions used by the contractor ---------------------------------------
def _loads_along(a: Arrays, Z: np.ndarray, links: np.ndarray, t: np.ndarray, mu) -> np.ndarray:
    """y_l(t, Z_{−l}) for every box corner Z[k] and every l in ``links``; t has shape (K, nB)."""
    q, m, _ = aggregate_prices(a, Z)                         # (K, N), (K, N, L)
    RB = a.R[links, :].T                                      # (N, nB)
    base = q[:, :, None] - RB[None] * m[:, :, links]          # (K, N, nB)
    mt, _ = mapped_prices(t[:, None, :], a.is_red[:, links], a.scale[:, links], a.expo[:, links],
               a.red_lo[:, links], a.red_hi[:, links], a.red_max[:, links])
    qq = base + RB[None] * mt
    mu = np.broadcast_to(np.asarray(mu, float), a.alpha.shape)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        x = np.power((a.beta * mu)[None, :, None] / qq, 1.0 / a.alpha[None, :, None])
    x = np.where(x < a.x_cap, x, a.x_cap)
    return np.einsum("in,kin->kn", RB, x)


def _bisect(fn, lo, hi, keep_lo, iters=64):
    """Vectorized bisection (geometric when lo > 0) of a non-increasing predicate boundary:
    ``keep_lo(fn(mid))`` True moves lo up. Returns (lo, hi)."""
    lo, hi = lo.copy(), hi.copy()
    for _ in range(iters):
        mid = np.where(lo > 0, np.sqrt(lo * hi), hi * 1e-3)
        ok = keep_lo(fn(mid))
        lo = np.where(ok, mid, lo)
        hi = np.where(ok, hi, mid)
        if np.all((hi - lo) <= 1e-13 * hi):
            break
    return lo, hi


def _contract(a, c, B, NB, lo, hi, mu, floor):
    """One round of pruning + contraction of boxes [lo, hi] (K, L). Returns kept boxes."""
    yl_max = evaluate(a, lo, mu)[1]  # loads at the low corner: largest over the box
    yl_min = evaluate(a, hi, mu)[1]  # loads at the high corner: smallest over the box
    keep = np.all(yl_max[:, B] >= c[B], axis=1) & np.all(yl_min[:, B] <= c[B], axis=1)
    if NB.size:
        keep &= np.all(yl_min[:, NB] <= c[NB] * (1 + 1e-12), axis=1)
    lo, hi = lo[keep], hi[keep]
    if not len(lo):
        return lo, hi
    # upper bounds: b_l ← sup{t : y_l(t, a_{−l}) ≥ c_l}
    y_hi = _loads_along(a, lo, B, hi[:, B], mu)
    need = y_hi < c[B]
    if need.any():
        _, new = _bisect(lambda t: _loads_along(a, lo, B, t, mu), lo[:, B], hi[:, B],
                         lambda y: y >= c[B])
        hiB = hi[:, B]
        hi[:, B] = np.where(need, new, hiB)
    # lower bounds: a_l ← inf{t : y_l(t, b_{−l}) ≤ c_l}
    y_lo = _loads_along(a, hi, B, lo[:, B], mu)
    need = y_lo > c[B]
    if need.any():
        new, _ = _bisect(lambda t: _loads_along(a, hi, B, t, mu), lo[:, B], hi[:, B],
                         lambda y: y > c[B])
        loB = lo[:, B]
        lo[:, B] = np.where(need, new, loB)
    ok = np.all(hi[:, B] >= floor[B], axis=1) & np.all(lo <= hi, axis=1)
    return lo[ok], hi[ok]


def polish_root(a, c, B, p0, mu):
    """Polish a root of y_B(p) = c_B (p_{not B} = 0) by hybr on u = log p_B."""
    L = len(c)

    def full(u):
        p = np.zeros(L)
        p[B] = np.exp(u)
        return p

    def fun(u):
        p = full(u)
        _, y, J = evaluate(a, p, mu, jacobian=True)
        return y[B] / c[B] - 1.0, (J[np.ix_(B, B)] * p[B][None, :]) / c[B][:, None]

    sol = root(fun, np.log(p0[B]), jac=True, method="hybr", options={"xtol": 1e-14})
    return full(sol.x), float(np.max(np.abs(fun(sol.x)[0])))


def _upper_prices(a, c, mu):
    """p̄_l: y_l(p̄_l e_l) = c_l (load on l with every other price at 0)."""
    L = len(c)
    hi = np.ones(L)
    for _ in range(200):
        P = np.diag(hi)
        y = np.diagonal(evaluate(a, P, mu)[1])
        if np.all(y <= c):
            break
        hi = np.where(y > c, hi * 4.0, hi)
    lo = np.zeros(L)

    def fn(t):
        return np.diagonal(evaluate(a, np.diag(t[0]), mu)[1])[None, :]

    _, up = _bisect(fn, lo[None, :], hi[None, :], lambda y: y >= c)
    return up[0]


def _covers(R: np.ndarray, B: tuple[int, ...]) -> bool:
    """Every source must cross a bottleneck, else its rate is unbounded (A2)."""
    return bool(np.all(R[list(B), :].sum(axis=0) > 0))


def find_equilibria(net: Network, mu=1.0, *, tol: float = 1e-7, max_boxes: int = 400_000,
                    optimum_rates: np.ndarray | None = None) -> Search:
    """Enumerate every equilibrium of the network (μ scales the sources' prices as in (30))."""
    a = net.arrays()
    c = a.c
    L = len(c)
    mu = np.broadcast_to(np.asarray(mu, float), a.alpha.shape).copy()
    pbar = _upper_prices(a, c, mu)
    floor = pbar * 1e-14
    roots: list[tuple[tuple[int, ...], np.ndarray, float]] = []
    boxes_total, complete, notes = 0, True, []
    for size in range(1, L + 1):
        for Bset in itertools.combinations(range(L), size):
            if not _covers(a.R, Bset):
                continue
            B = np.array(Bset)
            NB = np.array([l for l in range(L) if l not in Bset], dtype=int)
            lo = np.zeros((1, L))
            hi = np.zeros((1, L))
            hi[0, B] = pbar[B]
            leaves_lo, leaves_hi = [], []
            while len(lo):
                for _ in range(3):
                    lo, hi = _contract(a, c, B, NB, lo, hi, mu, floor)
                    boxes_total += len(lo)
                    if not len(lo):
                        break
                if not len(lo):
                    break
                wid = _width(lo[:, B], hi[:, B])
                leaf = np.max(wid, axis=1) < tol
                leaves_lo.append(lo[leaf])
                leaves_hi.append(hi[leaf])
                lo, hi = lo[~leaf], hi[~leaf]
                if boxes_total > max_boxes:
                    complete = False
                    notes.append(f"bottleneck set {[net.link_names[l] for l in Bset]}: box budget "
                                 f"exhausted with {len(lo)} boxes open; equilibria there may be missing")
                    leaves_lo.append(lo)
                    leaves_hi.append(hi)
                    break
                if not len(lo):
                    break
                # bisect the widest dimension (in log price)
                wid = wid[~leaf]
                d = B[np.argmax(wid, axis=1)]
                k = np.arange(len(lo))
                a_d, b_d = lo[k, d], hi[k, d]
                mid = np.where(a_d > 0, np.sqrt(a_d * b_d), b_d * 1e-2)
                lo2, hi2 = lo.copy(), hi.copy()
                hi[k, d] = mid
                lo2[k, d] = mid
                lo, hi = np.concatenate([lo, lo2]), np.concatenate([hi, hi2])
            if not leaves_lo:
                continue
            LL, HH = np.concatenate(leaves_lo), np.concatenate(leaves_hi)
            for p0 in _cluster_centres(LL, HH, B):
                p, res = polish_root(a, c, B, p0, mu)
                y = evaluate(a, p, mu)[1]
                if res > 1e-8 or np.any(p[B] <= 0) or (NB.size and np.any(y[NB] > c[NB] * (1 + 1e-9))):
                    continue
                if not any(Bset == b and np.allclose(p, r, rtol=1e-6, atol=0) for b, r, _ in roots):
                    roots.append((Bset, p, res))
    eqs = [analyze(net, p, mu=mu, bottlenecks=b, residual=res, optimum_rates=optimum_rates)
           for b, p, res in roots]
    eqs.sort(key=lambda e: tuple(e.prices))
    return Search(eqs, int(sum(e.index for e in eqs)), boxes_total, complete, notes)


def _width(lo, hi):
    with np.errstate(divide="ignore"):
        return np.where(lo > 0, np.log(hi / np.where(lo > 0, lo, 1.0)), np.inf)


def _cluster_centres(lo, hi, B):
    """One starting point per cluster of touching leaf boxes (geometric centres)."""
    centres = np.sqrt(np.maximum(lo, 1e-300) * hi)
    centres[:, [l for l in range(lo.shape[1]) if l not in B]] = 0.0
    out: list[np.ndarray] = []
    for cpt in centres[np.lexsort(centres.T)]:
        if not any(np.allclose(cpt[B], o[B], rtol=1e-4, atol=0) for o in out):
            out.append(cpt)
    return out


# --- properties of one equilibrium --------------------------------------------------------------
def protocol_slopes(net: Network, p: np.ndarray) -> np.ndarray:
    """ṁ_l^j(p_l) for protocols that have sources: shape (J', L)."""
    used = [pr for pr in net.protocols if any(s.protocol == pr.name for s in net.sources)]
    out = np.zeros((len(used), len(net.links)))
    for j, pr in enumerate(used):
        for l, ln in enumerate(net.link_names):
            out[j, l] = float(net.mapping(pr.name, ln).slope(p[l]))
    return out


def theorem6_condition(slopes: np.ndarray, max_vectors: int = 200_000) -> bool | None:
    """Condition (22): for all j ∈ {1..J}^L and permutations σ, k, n,
        Π_l ṁ_l^{j_{k_l}} + Π_l ṁ_l^{j_{n_l}} ≥ Π_l ṁ_l^{j_{σ_l}},
    i.e. for every j: 2·min_k μ(k(j)) ≥ max_σ μ(σ(j)) with μ of (24).  min/max over permutations
    of a product are linear assignment problems on log ṁ.  ``slopes`` is (J, L) restricted to the
    bottleneck links.  Returns None when J^L is too large to enumerate."""
    J, L = slopes.shape
    if L == 0:
        return True
    if J ** L > max_vectors:
        return None
    with np.errstate(divide="ignore"):
        logm = np.where(slopes > 0, np.log(np.where(slopes > 0, slopes, 1.0)), -1e4)
    for jvec in itertools.product(range(J), repeat=L):
        if len(set(jvec)) == 1:
            continue  # all permutations give the same product
        # A[l, m] = log ṁ_l^{j_m}: choosing k_l = m assigns protocol j_m to link l
        A = logm[np.array(jvec)[None, :], np.arange(L)[:, None]]
        r, cidx = linear_sum_assignment(A)
        lo = A[r, cidx].sum()
        r, cidx = linear_sum_assignment(A, maximize=True)
        hi = A[r, cidx].sum()
        if hi < -1e3:  # every product is 0: 0 + 0 ≥ 0
            continue
        if np.log(2.0) + lo < hi - 1e-12:
            return False
    return True


def analyze(net: Network, p, mu=1.0, bottlenecks=None, residual: float = 0.0,
            optimum_rates: np.ndarray | None = None) -> Equilibrium:
    a = net.arrays()
    p = np.asarray(p, float)
    mu = np.broadcast_to(np.asarray(mu, float), a.alpha.shape)
    x, y, J = evaluate(a, p, mu, jacobian=True)
    B = tuple(int(l) for l in np.flatnonzero(p > 0)) if bottlenecks is None else tuple(bottlenecks)
    Bi = list(B)
    JB = J[np.ix_(Bi, Bi)]
    eig = np.linalg.eigvals(JB) if Bi else np.zeros(0, complex)
    slack = [l for l in range(len(p)) if l not in B]
    stable = bool((eig.real.max(initial=-np.inf) < 0) and np.all(y[slack] < a.c[slack]))
    index = int(np.sign(np.linalg.det(-JB))) if Bi else 1
    q = aggregate_prices(a, p)[0]
    gamma = (a.R.T @ p) / q  # (15)
    bound = float(gamma.min() / gamma.max())
    ratio, applies = float("nan"), False
    if optimum_rates is not None:
        Uhat, Ustar = utility(a, x), utility(a, optimum_rates)
        ratio = float(Uhat.sum() / Ustar.sum())
        applies = bool(np.all(Uhat >= 0) and np.all(Ustar >= 0))
    t6 = theorem6_condition(protocol_slopes(net, p)[:, Bi]) if Bi else True
    return Equilibrium(p, x, y, B, eig, stable, index, gamma, bound, ratio, applies, t6, residual)
