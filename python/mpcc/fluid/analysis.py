"""Analyses of §III of Peng et al. over the fluid model: conditions C0–C5, the linearisation (12)
and Theorem III.5, and the window-oscillation metric D_s (eq. 13). Friendliness on the Fig. 1
network and the (β, η, n) design space, which run whole scenarios, are in :mod:`.design`.

All functions take numpy arrays and return small records; ∂Φ/∂x is computed by central
differences of ``algo.fluid_phi`` (relative step 1e-6, accuracy ~1e-9 relative).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla

from .. import algorithms as algs
from .network import SourceClass
from .solver import Equilibrium, phi_jac


def _cls(algo, tau):
    return SourceClass(algs.get(algo), np.asarray(tau, float), 0, 0)


def jacobian(algo, x, tau) -> np.ndarray:
    """∂Φ_s/∂x_s at x (…, n): J[…, r, k] = ∂φ_r/∂x_k."""
    x = np.asarray(x, float)
    shape = x.shape
    xb = x.reshape(-1, shape[-1])
    tb = np.broadcast_to(np.asarray(tau, float), shape).reshape(-1, shape[-1])
    _, J = phi_jac(_cls(algo, tb), xb)
    return J.reshape(*shape, shape[-1])


def phi(algo, x, tau) -> np.ndarray:
    x = np.asarray(x, float)
    return algs.get(algo).fluid_phi(x, np.broadcast_to(np.asarray(tau, float), x.shape))


# --- C0–C5 ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Conditions:
    """C0–C5 at each point of a batch (arrays over the batch). The measured quantities:
    ``asymmetry`` = ‖J − Jᵀ‖/‖J‖ (C0), ``max_eig_sym`` = largest eigenvalue of [J]^+ divided by
    ‖J‖ (C2: < 0), ``c1_worst`` = max over route subsets S of 1_Sᵀ J⁻¹ 1_S scaled (C1: ≤ 0),
    ``c4_worst`` = largest column sum of J⁻¹ scaled (C4: ≤ 0)."""

    c0: np.ndarray
    c1: np.ndarray
    c2: np.ndarray
    c3: np.ndarray
    c4: np.ndarray
    c5: np.ndarray
    asymmetry: np.ndarray
    max_eig_sym: np.ndarray
    c1_worst: np.ndarray
    c4_worst: np.ndarray

    def summary(self) -> dict:
        return {k: float(np.mean(getattr(self, k))) for k in ("c0", "c1", "c2", "c3", "c4", "c5")}


def conditions(algo, x, tau, *, tol: float = 1e-7) -> Conditions:
    """Check C0–C5 numerically at the points x (…, n) (n ≥ 1 routes, RTTs tau).

    C1 is checked in its local form: at x the source's response to prices is ∂x/∂q = J⁻¹
    (implicit function theorem on Φ_s(x_s) = q_s), so for any link l shared by a set S of the
    source's routes ∂y_l^s/∂p_l = 1_Sᵀ J⁻¹ 1_S ≤ 0; every nonempty S is checked.
    C3: φ_r(x_r → 0) → ∞ (φ_r at x_r·1e-8 exceeds 1e4·φ_r(x) and still grows from x_r·1e-4).
    C5: φ_r(x_r → ∞) → 0 (φ_r at x_r·1e8 below 1e-4·φ_r(x)). C3's rank condition on H is a
    property of the network, not of the algorithm, and is not part of this check."""
    algo = algs.get(algo)
    x = np.asarray(x, float)
    n = x.shape[-1]
    xb = x.reshape(-1, n)
    tb = np.broadcast_to(np.asarray(tau, float), x.shape).reshape(-1, n)
    J = jacobian(algo, xb, tb)
    norm = np.linalg.norm(J, axis=(-2, -1))
    asym = np.linalg.norm(J - np.swapaxes(J, -1, -2), axis=(-2, -1)) / norm
    sym = 0.5 * (J + np.swapaxes(J, -1, -2))
    emax = np.linalg.eigvalsh(sym)[:, -1] / norm
    sv = np.linalg.svd(J, compute_uv=False)
    singular = sv[:, -1] <= 1e-9 * sv[:, 0]
    Jinv = np.full_like(J, np.nan)
    if np.any(~singular):
        Jinv[~singular] = np.linalg.inv(J[~singular])   # C4's D_s exists only when J is invertible
    scale = 1.0 / norm
    col = Jinv.sum(axis=-2) / scale[:, None]
    c4w = col.max(axis=-1)
    c1w = np.full(xb.shape[0], -np.inf)
    for size in range(1, n + 1):
        for S in itertools.combinations(range(n), size):
            idx = list(S)
            v = Jinv[:, idx][:, :, idx].sum(axis=(-2, -1)) / scale
            c1w = np.maximum(c1w, v)
    f0 = algo.fluid_phi(xb, tb)
    c3 = np.ones(xb.shape[0], bool)
    c5 = np.ones(xb.shape[0], bool)
    with np.errstate(all="ignore"):
        for r in range(n):
            small4, small8, big = xb.copy(), xb.copy(), xb.copy()
            small4[:, r] *= 1e-4
            small8[:, r] *= 1e-8
            big[:, r] *= 1e8
            f4 = algo.fluid_phi(small4, tb)[:, r]
            f8 = algo.fluid_phi(small8, tb)[:, r]
            fb = algo.fluid_phi(big, tb)[:, r]
            c3 &= (f8 > 1e4 * f0[:, r]) & (f8 > 10 * f4)
            c5 &= fb < 1e-4 * f0[:, r]
    finite = np.all(np.isfinite(Jinv), axis=(-2, -1))
    out = Conditions(
        c0=asym <= tol, c1=finite & (c1w <= tol), c2=emax < -tol, c3=c3, c4=finite & (c4w <= tol), c5=c5,
        asymmetry=asym, max_eig_sym=emax, c1_worst=c1w, c4_worst=c4w)
    shape = x.shape[:-1]
    return Conditions(**{k: getattr(out, k).reshape(shape) for k in out.__dataclass_fields__})


def sample_region(n_routes: int, samples: int, *, seed: int = 0, decades: float = 2.0,
                  x_scale: float = 100.0) -> np.ndarray:
    """Random rate vectors, each component log-uniform over ``decades`` decades around x_scale."""
    rng = np.random.default_rng(seed)
    return x_scale * 10.0 ** rng.uniform(-decades / 2, decades / 2, size=(samples, n_routes))


def conditions_region(algo, n_routes: int, *, tau=0.1, samples: int = 2000, seed: int = 0,
                      decades: float = 2.0) -> tuple[dict, Conditions, np.ndarray]:
    """C0–C5 over a random sample of the region; returns (fraction satisfied per condition,
    the per-point record, the points)."""
    x = sample_region(n_routes, samples, seed=seed, decades=decades)
    cond = conditions(algo, x, tau)
    return cond.summary(), cond, x


# --- linearisation (12) and Theorem III.5 ------------------------------------------------------------
@dataclass
class Linearization:
    J: np.ndarray                 # Jacobian (12) over active routes and priced links
    eigenvalues: np.ndarray
    max_real: float               # slowest mode (responsiveness)
    pencil_min: float             # λ_min of ([∂Φ/∂x]^+, Λ_k⁻¹): lower bound on Re λ
    pencil_max: float             # λ_max of the same pencil (the quotient with p = 0)
    rayleigh_error: float         # max |Re λ − quotient at its eigenvector| (proof of Thm III.5)
    routes: np.ndarray
    links: np.ndarray
    asymmetry: float = 0.0        # ‖D − Dᵀ‖/‖D‖ of ∂Φ/∂x over the active routes (C0: 0)

    @property
    def bound_holds(self) -> bool:
        """Re λ ≤ 0 for all λ (Thm III.5, λ̄ ≤ 0) and λ_min(pencil) ≤ Re λ."""
        re = self.eigenvalues.real
        tol = 1e-9 * max(1.0, abs(self.pencil_min))
        return bool(np.all(re <= tol) and np.all(re >= self.pencil_min - tol))


def linearization(eq: Equilibrium, gamma) -> Linearization:
    """J* of (12) at the equilibrium, restricted to routes with x_r > 0 and links with p_l > 0:

        J* = [[Λ_k ∂Φ/∂x, −Λ_k Hᵀ], [Λ_γ H, 0]]

    Theorem III.5 defines λ̄(J*) = max over unit z = (x, p) of
    xᴴ[∂Φ/∂x]^+x / (xᴴΛ_k⁻¹x + pᴴΛ_γ⁻¹p); taken literally the maximum is 0 (z = (0, p)), so the
    informative checks are: Re λ < 0 for every eigenvalue; Re λ equals that quotient at its own
    eigenvector (the identity the proof rests on, ``rayleigh_error``); and
    λ_min(pencil) ≤ Re λ, the pencil being ([∂Φ/∂x]^+, Λ_k⁻¹) (scipy.linalg.eigh)."""
    net = eq.network
    routes = np.flatnonzero(eq.x > 0)
    links = np.flatnonzero(eq.p > 0)
    R = net.n_routes
    dphi = np.zeros((R, R))
    from .dynamics import k_all
    k = k_all(net, np.where(eq.x > 0, eq.x, 1e-300))
    for c in net.classes:
        B, n = c.shape
        _, Jb = phi_jac(c, np.maximum(eq.x[c.routes].reshape(B, n), 1e-300))
        for b in range(B):
            sl = slice(c.route0 + b * n, c.route0 + (b + 1) * n)
            dphi[sl, sl] = Jb[b]
    # a group of m identical flows: each flow's route is a separate route of (12); the
    # symmetric modes are what the aggregate sees, so use the per-flow Jacobian with H·m
    Hm = net.Hm.toarray()[np.ix_(links, routes)]
    H = net.H.toarray()[np.ix_(links, routes)]
    D = dphi[np.ix_(routes, routes)]
    Lk = np.diag(k[routes])
    g = np.broadcast_to(np.asarray(gamma, float), (net.n_links,))[links]
    Lg = np.diag(g)
    J = np.block([[Lk @ D, -Lk @ H.T], [Lg @ Hm, np.zeros((links.size, links.size))]])
    lam, vecs = np.linalg.eig(J)
    sym = 0.5 * (D + D.T)
    # pencil in the per-flow inner product weighted by multiplicity (symmetrises H vs Hm)
    mvec = net.multiplicity[routes]
    Mx = np.diag(mvec)
    pen = sla.eigh(Mx @ sym, Mx @ np.diag(1.0 / k[routes]), eigvals_only=True)
    nr = routes.size
    err = 0.0
    for i in range(lam.size):
        z = vecs[:, i]
        xv, pv = z[:nr], z[nr:]
        num = np.real(np.conj(xv) @ (Mx @ sym) @ xv)
        den = np.real(np.conj(xv) @ (Mx / k[routes][:, None]) @ xv + np.conj(pv) @ (pv / g))
        if den > 0:
            err = max(err, abs(lam[i].real - num / den) / max(1.0, abs(lam[i].real)))
    asym = float(np.linalg.norm(D - D.T) / max(np.linalg.norm(D), 1e-300)) if D.size else 0.0
    return Linearization(J, lam, float(lam.real.max()), float(pen.min()), float(pen.max()), err, routes, links,
                         asym)


@dataclass(frozen=True)
class ResponsivenessBound:
    """A computable form of Theorem III.5's bound (see docs/fluid.md, "Theorem III.5").

    Taken literally, λ̄(J*) = max over unit z = (x, p) of xᴴ[∂Φ/∂x]^+x / (xᴴΛk⁻¹x + pᴴΛγ⁻¹p) is 0
    (z = (0, p)). The proof only evaluates the quotient at eigenvectors, which obey
    λΛk⁻¹x = ∂Φ/∂x·x − Hᵀp and λΛγ⁻¹p = Hx. With a = xᴴΛk⁻¹x, b = pᴴΛγ⁻¹p these give
    λa + λ̄b = xᴴ(∂Φ/∂x)x. When ∂Φ/∂x is symmetric (C0) the right side is real, so a non-real λ
    has a = b, hence Re λ = xᴴ[∂Φ/∂x]^+x / (2a) ≤ ½ λ_max([∂Φ/∂x]^+, Λk⁻¹) =: ``lam_bar`` < 0
    (C2). Real eigenvalues only obey Re λ < 0 (b may dominate a: slow price modes), and every
    eigenvalue obeys Re λ ≥ λ_min of the pencil (``pencil_min``)."""

    lam_bar: float          # ½ λ_max([∂Φ/∂x]^+, Λk⁻¹): bound on Re λ of non-real λ (under C0)
    pencil_min: float       # λ_min of the pencil: lower bound on every Re λ
    symmetric: bool         # C0 at x* (‖D − Dᵀ‖/‖D‖ ≤ 1e-6): lam_bar applies
    max_real_complex: float  # max Re λ over the non-real eigenvalues (−inf if none)
    max_real_real: float     # largest real eigenvalue (−inf if none)

    min_real: float = -np.inf  # smallest Re λ

    @property
    def applies(self) -> bool:
        """C0 and C2 at x* (symmetric ∂Φ/∂x, λ_max of the pencil < 0): lam_bar is a bound."""
        return self.symmetric and self.lam_bar < 0

    @property
    def holds(self) -> bool:
        """Re λ < 0 and Re λ ≥ pencil_min for all λ; Re λ ≤ lam_bar < 0 for non-real λ when it
        applies."""
        tol = 1e-9 * max(1.0, abs(self.pencil_min))
        ok = self.max_real_complex < 0 and self.max_real_real < 0 and self.min_real >= self.pencil_min - tol
        if self.applies:
            ok = ok and self.max_real_complex <= self.lam_bar + tol
        return bool(ok)


def responsiveness_bound(lin: Linearization, *, imag_tol: float = 1e-9) -> ResponsivenessBound:
    """Theorem III.5's bound λ̄ for the non-real eigenvalues of J* (valid when C0 holds)."""
    lam = lin.eigenvalues
    scale = max(np.abs(lam).max(initial=0.0), 1e-300)
    cplx = np.abs(lam.imag) > imag_tol * scale
    return ResponsivenessBound(0.5 * lin.pencil_max, lin.pencil_min, lin.asymmetry <= 1e-6,
                               float(lam.real[cplx].max(initial=-np.inf)),
                               float(lam.real[~cplx].max(initial=-np.inf)), float(lam.real.min(initial=np.inf)))


# --- window oscillation, eq. (13) -------------------------------------------------------------------
def oscillation(eq: Equilibrium) -> np.ndarray:
    """D_s of eq. (13) for every source: (1/‖x_s‖₁) Σ τ_r q_r k_r / Σ τ_r q_r x_r (Reno: 1/2)."""
    from .dynamics import k_all

    net = eq.network
    k = k_all(net, np.where(eq.x > 0, eq.x, 1e-300))
    k = np.where(eq.x > 0, k, 0.0)
    tau = net.tau
    S = len(net.source_names) if net.source_names else int(net.source_of_route.max()) + 1
    src = net.source_of_route
    num = np.bincount(src, tau * eq.q * k, minlength=S)
    den = np.bincount(src, tau * eq.q * eq.x, minlength=S)
    tot = np.bincount(src, eq.x, minlength=S)
    return num / den / tot
