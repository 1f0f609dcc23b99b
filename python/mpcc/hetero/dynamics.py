"""Dual dynamics (5), Algorithm 1 (two timescales) and the Theorem-11 optimum.

* Dual dynamics (5): ṗ_l = y_l(p) − c_l, projected on p_l ≥ 0.  Integrated by the linearly
  implicit (Rosenbrock) Euler step  (I − Δt J_AA) Δp_A = Δt f_A  on the links A that are not
  held at p_l = 0 (p_l > 0 or f_l > 0), then p ← max(p + Δp, 0).  The step is A-stable, so the
  stiffness of α-fair rates near small prices needs no tiny Δt, and its fixed points are exactly
  the equilibria (7).  Everything is batched: arrays may carry a leading axis of independent
  networks (Example 4 runs its 1000 trials as one batch per worker).
* Algorithm 1: sources use x = U'^{-1}(q/μ) (30); every period T the prices evolve by (5) and
  then each source (all of them: "sync"; each with probability ``prob``: "async") moves
      μ ← μ + κ ( (1/w) Σ_l m_l^j(p_l) / Σ_l p_l − μ )            (Algorithm 1, step 2; (34))
  It stops when μ is a fixed point of that update and the prices are an equilibrium.
* Theorem 11 target: max Σ U_i/w_i s.t. Rx ≤ c, solved directly (independently of the
  dynamics) as the convex dual  min_{p ≥ 0} Σ_i max_x [U_i(x)/w_i − x q_i] + c·p  with
  L-BFGS-B, then polished on its active set by Newton (hybr) and checked against KKT.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .model import Arrays, Network, aggregate_prices, evaluate, utility


# --- dual dynamics ------------------------------------------------------------------------------
def _step(a: Arrays, p, mu, dt, max_log_step: float = 2.0):
    """One linearly implicit Euler step of (5) for a batch p (…, L).

    Positive prices are stepped in u = log p (u̇ = f/p is the same ODE, and positivity is kept):
        (I − Δt P⁻¹ J P) Δu = Δt P⁻¹ f,   p ← p·exp(Δu)   (|Δu| ≤ ``max_log_step``);
    P⁻¹JP has the eigenvalues of J, so the step is A-stable on the stable equilibria, and its
    fixed points are exactly those of (5).  A link at p_l = 0 with excess load (f_l > 0) is
    restarted at a tiny positive price; a price falling below 1e-13 × the largest price of its
    network with f_l < 0 is set to 0 (the projection of (5))."""
    _, y, J = evaluate(a, p, mu, jacobian=True)
    f = y - a.c
    pos = p > 0
    ps = np.where(pos, p, 1.0)
    Jh = np.nan_to_num(J * ps[..., None, :] / ps[..., :, None], nan=0.0, posinf=1e12, neginf=-1e12)
    Jh = np.where(pos[..., :, None] & pos[..., None, :], Jh, 0.0)
    g = np.where(pos, f / ps, 0.0)
    L = p.shape[-1]
    dt = np.asarray(dt, float)
    # An implicit step with Δt·λ > 2 on an unstable mode (Re λ > 0) damps it: the step would then
    # converge to saddles and other unstable equilibria that the ODE (5) leaves (the mode is scaled
    # by 1/(1 − λΔt)). Cap Δt at 0.5/λ⁺ (λ⁺ = the largest positive real part of J's eigenvalues
    # here): an unstable mode then grows ×2 per step, as it must, while stable stiff modes keep the
    # large step.
    lam = np.max(np.linalg.eigvals(Jh).real, axis=-1)
    dt = np.where(lam > 0, np.minimum(dt, 0.5 / np.where(lam > 0, lam, 1.0)), dt)
    A = np.eye(L) - dt[..., None, None] * Jh
    du = np.linalg.solve(A, (dt[..., None] * g)[..., None])[..., 0]
    du = np.clip(du, -max_log_step, max_log_step)
    top = np.max(p, axis=-1, keepdims=True)
    top = np.where(top > 0, top, 1.0)
    new = np.where(pos, p * np.exp(du), np.where(f > 0, 1e-6 * top, 0.0))
    new = np.where(pos & (f < 0) & (new < 1e-13 * top), 0.0, new)
    return new, f


def integrate(a: Arrays, p0, duration: float, *, mu=1.0, dt: float = 0.05, record: bool = False):
    """Integrate ṗ = y(p) − c for ``duration`` time units from p0. Returns (p, times, trajectory)
    (the last two None unless ``record``)."""
    p = np.array(p0, float)
    n = max(1, int(round(duration / dt)))
    h = duration / n
    ts, ps = ([0.0], [p.copy()]) if record else (None, None)
    for k in range(n):
        p, _ = _step(a, p, mu, h)
        if record:
            ts.append((k + 1) * h)
            ps.append(p.copy())
    if record:
        return p, np.array(ts), np.array(ps)
    return p, None, None


def residual(a: Arrays, p, mu=1.0):
    """Largest violation of (7) relative to capacity: |y − c| on p > 0, (y − c)^+ on p = 0."""
    _, y = evaluate(a, p, mu)
    g = (y - a.c) / a.c
    return np.max(np.where(p > 0, np.abs(g), np.maximum(g, 0.0)), axis=-1)


def settle(a: Arrays, p0, *, mu=1.0, dt: float = 0.05, tol: float = 1e-10, max_time: float = 1e5):
    """Run (5) until the equilibrium residual is below ``tol`` (growing the step once the
    trajectory is close). Returns the final prices and the time used."""
    p = np.array(p0, float)
    t, h = 0.0, dt
    while t < max_time:
        p = integrate(a, p, 50 * h, mu=mu, dt=h)[0]
        t += 50 * h
        r = residual(a, p, mu)
        if np.all(r < tol):
            break
        h = min(h * 2.0, 10.0)
    return p, t


# --- Algorithm 1 ----------------------------------------------------------------------------------
def mu_target(a: Arrays, p):
    """(34): μ_i = (1/w_i) Σ_l R_li m_l^{j(i)}(p_l) / Σ_l R_li p_l."""
    q = aggregate_prices(a, p)[0]
    s = np.einsum("...li,...l->...i", a.R, p)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(s > 0, q / (a.w * s), 1.0 / a.w)


@dataclass
class Alg1Result:
    prices: np.ndarray          # (…, L) final prices
    rates: np.ndarray           # (…, N)
    mu: np.ndarray              # (…, N)
    iterations: np.ndarray      # (…,) μ-update periods until convergence (max if not converged)
    converged: np.ndarray       # (…,) bool
    times: np.ndarray | None = None       # (K,) when recorded (unbatched runs)
    trajectory: np.ndarray | None = None  # (K, L)
    mu_trajectory: np.ndarray | None = None  # (iterations+1, N)


def fast_equilibrium(a: Arrays, p, mu=1.0, *, dt: float = 1.0, tol: float = 1e-10, max_steps: int = 80):
    """Bring the fast timescale to steady state: implicit steps of (5) with a step that grows
    ×4 per step (from a dynamics step to, in the limit, a projected Newton step on (7)), per
    batch element until its residual is below ``tol``. Returns (p, residual)."""
    p = np.array(p, float)
    h = np.full(a.c.shape[:-1], float(dt))
    if np.any(p <= 0):
        p = np.where(p > 0, p, 1e-6 * np.max(p, axis=-1, keepdims=True) + 1e-300)
    r = residual(a, p, mu)
    for _ in range(max_steps):
        todo = r >= tol
        if not np.any(todo):
            break
        p_new, _ = _step(a, p, mu, h)
        p = np.where(todo[..., None], p_new, p)
        r = residual(a, p, mu)
        h = np.where(todo, np.minimum(h * 4.0, 1e12), h)
    return p, r


def algorithm1(a: Arrays, p0, *, mode: str = "sync", kappa=0.5, prob: float = 1.0,
               period: float = 20.0, dt: float = 0.5, max_iterations: int = 5000,
               tol: float = 1e-7, rng: np.random.Generator | None = None,
               record: bool = False, mu0=None, fast: str = "dynamics") -> Alg1Result:
    """Algorithm 1 (two timescales) on a network or a batch of networks.

    ``fast="dynamics"``: between μ updates the prices follow (5) for ``period`` time units
    (step ``dt``), as in the paper's Examples 3 and 4.  ``fast="equilibrium"``: the fast
    timescale is taken to steady state every period (the "T large enough" of Algorithm 1),
    by :func:`fast_equilibrium` warm-started from the previous prices."""
    if mode not in ("sync", "async"):
        raise ValueError(f"mode must be sync or async, got {mode!r}")
    if fast not in ("dynamics", "equilibrium"):
        raise ValueError(f"fast must be dynamics or equilibrium, got {fast!r}")
    rng = rng if rng is not None else np.random.default_rng(1)
    p = np.array(np.broadcast_to(np.asarray(p0, float), a.c.shape))
    mu = np.ones(a.alpha.shape) if mu0 is None else np.array(np.broadcast_to(mu0, a.alpha.shape), float)
    batch = a.c.shape[:-1]
    done = np.zeros(batch, bool)
    iters = np.full(batch, max_iterations)
    ts, ps, mus = ([0.0], [p.copy()], [mu.copy()]) if record else (None, None, None)
    n_sub = max(1, int(round(period / dt)))
    h = period / n_sub
    for k in range(max_iterations):
        if fast == "dynamics":
            for s in range(n_sub):
                p_new, _ = _step(a, p, mu, h)
                p = np.where(done[..., None], p, p_new)
                if record:
                    ts.append(k * period + (s + 1) * h)
                    ps.append(p.copy())
        else:
            p_new, _ = fast_equilibrium(a, p, mu, dt=period, tol=tol * 1e-2)
            p = np.where(done[..., None], p, p_new)
            if record:
                ts.append((k + 1) * period)
                ps.append(p.copy())
        target = mu_target(a, p)
        conv = (np.max(np.abs(target / mu - 1.0), axis=-1) < tol) & (residual(a, p, mu) < tol)
        newly = conv & ~done
        iters = np.where(newly, k + 1, iters)
        done |= conv
        if np.all(done):
            break
        upd = np.ones(mu.shape, bool) if mode == "sync" else rng.random(mu.shape) < prob
        upd &= ~done[..., None]
        mu = np.where(upd, mu + kappa * (target - mu), mu)
        if record:
            mus.append(mu.copy())
    x, _ = evaluate(a, p, mu)
    return Alg1Result(p, x, mu, iters, done,
                      np.array(ts) if record else None, np.array(ps) if record else None,
                      np.array(mus) if record else None)


# --- Theorem 11: the target optimum, solved directly ---------------------------------------------
@dataclass
class Optimum:
    prices: np.ndarray
    rates: np.ndarray
    utility: float
    kkt: float  # largest KKT violation (relative)


def optimum(net_or_arrays, weights=None) -> Optimum:
    """max Σ_i U_i(x_i)/w_i s.t. Rx ≤ c (31)–(32), solved through its convex dual
        D(p) = Σ_i max_x [U_i(x)/w_i − x q_i] + c·p,   q = Rᵀp,   min over p ≥ 0,
    (∇D = c − y(p), ∇²D = −∂y/∂p symmetric positive semidefinite) by a projected Newton method
    with Armijo backtracking (Bertsekas 1982), then checked against the KKT conditions.
    No price mappings and no dynamics are involved."""
    a = net_or_arrays.arrays() if isinstance(net_or_arrays, Network) else net_or_arrays
    w = a.w if weights is None else np.broadcast_to(np.asarray(weights, float), a.alpha.shape)
    L, N = a.R.shape
    h = a._replace(is_red=np.zeros((N, L), bool), scale=np.ones((N, L)), expo=np.ones((N, L)),
                   beta=a.beta / w, w=np.ones(N))

    def dual(p):
        x, y, J = evaluate(h, p, jacobian=True)
        return np.sum(utility(h, x) - x * (h.R.T @ p)) + a.c @ p, a.c - y, -J

    # start: the price at which each link's flows would share it equally, U'(c_l / n_l)
    n = np.maximum(h.R.sum(axis=1), 1)
    p = np.array([np.max(h.beta[h.R[l] > 0] * (a.c[l] / n[l]) ** (-h.alpha[h.R[l] > 0])) for l in range(L)])
    p = p / np.maximum(n, 1)
    val, g, H = dual(p)
    for _ in range(500):
        # ε-active bound constraints: p_l ≈ 0 with ∂D/∂p_l > 0 stay at 0
        eps = min(1e-12, float(np.linalg.norm(p - np.maximum(p - g, 0))))
        act = (p <= eps) & (g > 0)
        F = ~act
        d = np.zeros(L)
        if F.any():
            HF = H[np.ix_(F, F)] + 1e-14 * np.trace(H) * np.eye(F.sum())
            try:
                d[F] = -np.linalg.solve(HF, g[F])
            except np.linalg.LinAlgError:
                d[F] = -g[F]
        t = 1.0
        while True:
            pn = np.maximum(p + t * d, 0.0)
            vn, gn, Hn = dual(pn)
            if vn <= val + 1e-4 * g @ (pn - p) or abs(g @ (pn - p)) < 1e-14 * (abs(val) + 1.0):
                break
            t *= 0.5
            if t < 1e-12:
                break
        p, val, g, H = pn, vn, gn, Hn
        x, y = evaluate(h, p)
        kkt = np.max(np.where(p > 0, np.abs(y - a.c), np.maximum(y - a.c, 0)) / a.c)
        if kkt < 1e-13 or t < 1e-12:
            break
    x, y = evaluate(h, p)
    kkt = float(np.max(np.where(p > 0, np.abs(y - a.c), np.maximum(y - a.c, 0)) / a.c))
    return Optimum(p, x, float(np.sum(utility(a, x) / w)), kkt)
