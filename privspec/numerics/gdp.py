"""Stage 4: Gaussian-DP numbers from a trade-off curve (docs/math.md §3–5).

* μ: the tightest μ with f ≥ G_μ − τ, a maximum over breakpoints (docs/math.md §3).
* regret: the Δ-divergence of Kaissis et al. 2024, exact on the piecewise-linear
  curve (docs/math.md §4), linear in the number of breakpoints.
* advantage η = max(1 − α − f(α)) and the Tier II values.

Φ⁻¹ is ``scipy.special.ndtri``, always applied to the small side of a probability
(Φ⁻¹(1 − α) = −Φ⁻¹(α)) so that tails keep their precision.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.special import log_ndtr, ndtr, ndtri

from privspec.numerics.curve import FloatArray, TradeoffCurve


def gaussian_tradeoff(alpha: FloatArray | float, mu: float) -> FloatArray:
    """G_μ(α) = Φ(Φ⁻¹(1 − α) − μ)."""
    return np.asarray(ndtr(-ndtri(alpha) - mu))


def gaussian_tpr(alpha: FloatArray | float, mu: float) -> FloatArray:
    """1 − G_μ(α) = Φ(Φ⁻¹(α) + μ), accurate when tiny."""
    return np.asarray(ndtr(ndtri(alpha) + mu))


def gaussian_delta(epsilon: float, mu: float) -> float:
    """δ(ε) of μ-GDP: Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (Dong, Roth & Su, Cor. 2.13),
    the second term as exp(ε + log Φ(·)) so that a large ε does not overflow."""
    if mu <= 0:
        return 0.0
    second = math.exp(min(epsilon + float(log_ndtr(-epsilon / mu - mu / 2)), 709.0))
    return float(ndtr(-epsilon / mu + mu / 2) - second)


#: Support vertices per block in ``mu_from_curve``'s branch and bound.
_MU_BLOCK = 32


def _z_fpr(alpha: FloatArray, tnr: FloatArray) -> FloatArray:
    """Φ⁻¹(1 − α), from whichever of α and 1 − α is smaller."""
    z = -ndtri(np.minimum(alpha, 0.5))
    big = alpha > 0.5
    if big.any():
        z[big] = ndtri(tnr[big])
    return np.asarray(z)


def _z_fnr(beta: FloatArray, reach: FloatArray, floor: float) -> FloatArray:
    """Φ⁻¹(β + τ) = −Φ⁻¹(1 − β − τ), from whichever side is smaller (reach = 1 − β − τ)."""
    small = reach < 0.5
    z = -ndtri(np.where(small, reach, 0.5))
    if not small.all():
        z[~small] = ndtri(np.minimum(beta[~small] + floor, 1.0))
    return np.asarray(z)


def _max_over_blocks(index: np.ndarray,
                     asks: Callable[[np.ndarray], tuple[FloatArray, FloatArray]]) -> float:
    """max over ``index`` of z₁ − z₂, where ``asks(i)`` gives (z₁, z₂) at vertices i and
    each of z₁, z₂ is monotone along ``index`` (either way), by branch and bound.

    Over a block of consecutive entries each term lies between its values at the block's
    ends, so max(z₁ at the ends) − min(z₂ at the ends) bounds the block; only blocks whose
    bound beats the best end value found are evaluated entry by entry.  The result is the
    maximum over all entries, computed with a fraction of the Φ⁻¹ calls.
    """
    if not index.size:
        return -math.inf
    starts = np.arange(0, index.size, _MU_BLOCK)
    ends = np.minimum(starts + _MU_BLOCK - 1, index.size - 1)
    z1_start, z2_start = asks(index[starts])
    z1_end, z2_end = asks(index[ends])
    best = max(float(np.max(z1_start - z2_start)), float(np.max(z1_end - z2_end)))
    bound = np.maximum(z1_start, z1_end) - np.minimum(z2_start, z2_end)
    # Only ulps of Φ⁻¹'s monotonicity are at stake: a small slack keeps the bound safe.
    open_blocks = starts[bound > best - 1e-9]
    if open_blocks.size:
        inside = (open_blocks[:, None] + np.arange(_MU_BLOCK)).ravel()
        z1, z2 = asks(index[inside[inside < index.size]])
        best = max(best, float(np.max(z1 - z2)))
    return best


def mu_from_curve(curve: TradeoffCurve, floor: float) -> float:
    """μ*_τ = max over breakpoints of Φ⁻¹(1 − α) − Φ⁻¹(β + τ) (docs/math.md §3).

    G_μ − τ is convex and the curve is linear between breakpoints, so checking them
    suffices.  The breakpoints are those of both directions for thresholds t ≥ 0
    (their hull, ``curve.support``: points above it are implied), so that μ covers
    the accountant's own δ(ε) = max(δ_remove, δ_add) and not only the symmetric curve,
    which can be slightly tighter near ε = 0.  A mirrored vertex (β, α) asks
    −Φ⁻¹(β) − Φ⁻¹(α + τ) ≤ μ, which −Φ⁻¹(α) − Φ⁻¹(β + τ) ≤ μ implies whenever α ≤ β
    and α + β ≤ 1 − 2τ (|Φ⁻¹'| grows towards 0 and 1); vertices left of the diagonal
    closer than that to the chance line are checked both ways.  Each Φ⁻¹ is taken on
    the small side of its probability.  Along the support α rises and β falls, so
    every term is monotone and the maximum is found by branch and bound over blocks.
    Returns ``math.inf`` when a vertex with α = 0 keeps a TPR above τ: mass at +∞
    (or a loss so large that e^{−y} underflows) that no finite μ covers.
    """
    alpha, beta, tpr = curve.support  # α ascending, one vertex per α
    if alpha[0] <= 0 and tpr[0] > floor:
        return math.inf
    # Vertices that ask for μ > 0 at all: α > 0, TPR > τ and α < 1, a contiguous run.
    lo = max(int(np.searchsorted(alpha, 0.0, side="right")),
             int(np.searchsorted(tpr, floor, side="right")))
    hi = int(np.searchsorted(alpha, 1.0, side="left"))

    def asks(i: np.ndarray) -> tuple[FloatArray, FloatArray]:
        a, b, t = alpha[i], beta[i], tpr[i]
        return _z_fpr(a, 1.0 - a), _z_fnr(b, t - floor, floor)

    # Mirror vertices of the final curve within 2τ of the chance line (near (0, 1));
    # breakpoints past the diagonal are not mirrored: the curve there is the mirror
    # image of the part left of α*, whose vertices are all in the support.  The mirror
    # of (α, β) is (β, α), with TPR 1 − α and TNR the original TPR.
    near = np.flatnonzero((tpr - alpha < 2 * floor) & (alpha <= beta) & (alpha > 0)
                          & (1.0 - alpha > floor) & (tpr > 0))

    def mirrored_asks(i: np.ndarray) -> tuple[FloatArray, FloatArray]:
        a, b, t = alpha[i], beta[i], tpr[i]
        return _z_fpr(b, t), _z_fnr(a, (1.0 - a) - floor, floor)

    best = max(_max_over_blocks(np.arange(lo, max(lo, hi)), asks),
               _max_over_blocks(near, mirrored_asks))
    return max(0.0, best)


def _shift_residual(a: FloatArray, b: FloatArray, shift: FloatArray, mu: float) -> FloatArray:
    """b − κ − G_μ(a − κ): positive while the point still lies above G_μ after sliding κ."""
    return np.asarray(b - shift - gaussian_tradeoff(np.clip(a - shift, 0.0, 1.0), mu))


def _shift_brackets(a: FloatArray, b: FloatArray, mu: float, low: FloatArray,
                    tolerance: float = 1e-15) -> tuple[FloatArray, FloatArray]:
    """Brackets [lo, hi] ∋ κ, the root of b − κ = G_μ(a − κ), for each point, by
    vectorised bisection on [low, a] until hi − lo ≤ ``tolerance``·max(1, hi)."""
    lo = low.copy()
    hi = np.maximum(a, lo)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        above = _shift_residual(a, b, mid, mu) > 0
        lo = np.where(above, mid, lo)
        hi = np.where(above, hi, mid)
        if np.all(hi - lo <= tolerance * np.maximum(1.0, hi)):
            break
    return lo, hi


def regret(curve: TradeoffCurve, mu: float) -> float:
    """Δ = inf{κ ≥ 0 : f(α + κ) − κ ≤ G_μ(α) ∀α} on the piecewise-linear curve, exactly.

    The shift needed is maximal at a vertex or where a segment of slope s, once
    slid, touches G_μ: at x_s = Φ(−z), z = (ln(−s) + μ²/2)/μ, with
    κ = (G_μ(x_s) − s·x_s − c)/(s − 1) for the segment's line y = s·x + c
    (docs/math.md §4).  Tangent candidates are closed-form; vertices are solved exactly
    only where they could beat the best candidate found so far.
    """
    if not math.isfinite(mu):
        raise ValueError("regret needs a finite μ")
    # The curve and G_μ are both symmetric about the diagonal, and so is the slide:
    # the left half (up to α*) decides Δ.
    half = int(np.searchsorted(curve.alpha, curve.alpha_star, side="right")) + 1
    a, b = curve.alpha[:half], curve.beta[:half]
    # A lower bound from a few hundred vertices; a point at α needs a shift of at most α
    # (at α − κ = 0, G_μ = 1 ≥ f − κ), so nothing left of the bound can beat it.
    # Only a bound is needed here, so the bisection stops early and keeps its lower end;
    # the vertices that set it are solved exactly below.
    step = max(1, a.size // 512)
    sample = slice(0, a.size, step)
    low = float(np.max(_shift_brackets(a[sample], b[sample], mu, np.zeros(a[sample].size),
                                       tolerance=1e-6)[0]))
    first = int(np.searchsorted(a, low, side="right")) - 1
    a, b = a[max(first, 0):], b[max(first, 0):]
    # Tangent candidates, one per segment of finite negative slope.
    da, db = np.diff(a), np.diff(b)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = db / da
    ok = (da > 0) & (s < 0) & np.isfinite(s)
    best = low
    if mu > 0 and ok.any():
        s_ok = s[ok]
        c = b[:-1][ok] - s_ok * a[:-1][ok]
        z = (np.log(-s_ok) + mu * mu / 2) / mu
        x_s = ndtr(-z)
        kappa = (ndtr(z - mu) - s_ok * x_s - c) / (s_ok - 1)  # G_μ(x_s) = Φ(z − μ)
        touch = x_s + kappa
        valid = (kappa > 0) & (touch >= a[:-1][ok]) & (touch <= a[1:][ok])
        if valid.any():
            best = max(best, float(np.max(kappa[valid])))
    # Vertices: only those still above G_μ after sliding by the best candidate.
    pending = a > best
    pending[pending] = _shift_residual(a[pending], b[pending], np.full(int(pending.sum()), best),
                                       mu) > 0
    if pending.any():
        _, shifts = _shift_brackets(a[pending], b[pending], mu, np.full(int(pending.sum()), best))
        best = max(best, float(np.max(shifts)))  # the upper ends: never understate regret
    return best


@dataclass(frozen=True)
class GaussianSummary:
    """μ, regret and the operational numbers of one curve."""

    mu: float
    regret: float | None
    advantage: float
    alpha_star: float


def summarize(curve: TradeoffCurve, floor: float) -> GaussianSummary:
    """μ (with floor τ), exact regret, best advantage η = δ(0) and its α*.

    η is the larger of the curve's δ(0) and the accountant's Σ_{y>0}(1 − e^{−y})p + p∞ per
    direction (the same tail sums): the symmetric curve can be slightly tighter near ε = 0
    (docs/math.md §5), and the report keeps the pessimistic one.  The curve is known to within
    its composition's relative error, so a regret below that is reported as that.
    """
    mu = mu_from_curve(curve, floor)
    accountant = max(float(c.tpr[-1] - c.alpha[-1]) for c in curve.points)
    advantage = max(float(np.max(curve.tpr - curve.alpha)), accountant)
    return GaussianSummary(
        mu=mu,
        regret=max(regret(curve, mu), curve.relative_error) if math.isfinite(mu) else None,
        advantage=max(0.0, advantage),
        alpha_star=curve.alpha_star,
    )


def mu_from_epsilon_delta(epsilon: float, delta: float) -> float:
    """The μ of the Gaussian mechanism that is exactly (ε, δ)-DP (Gomez et al. 2025, Table 3).

    Solves δ = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) for μ (δ grows with μ); the
    bracket is returned from its upper end, so the answer never understates μ.
    """
    from scipy.optimize import brentq

    if not (epsilon >= 0 and 0 < delta < 1):
        raise ValueError("need ε ≥ 0 and 0 < δ < 1")
    high = 1.0
    while gaussian_delta(epsilon, high) < delta:
        high *= 2
        if high > 1e6:
            raise ValueError("no Gaussian mechanism is that weak")
    root = brentq(lambda mu: gaussian_delta(epsilon, mu) - delta, 1e-12, high,
                  xtol=1e-14, rtol=1e-14)
    return float(root) + 4e-14


def epsilon_from_mu_delta(mu: float, delta: float) -> float:
    """ε(δ) of μ-GDP: the smallest ε ≥ 0 with δ_{G_μ}(ε) ≤ δ (Dong, Roth & Su, Cor. 2.13)."""
    from scipy.optimize import brentq

    if not (mu >= 0 and 0 < delta < 1):
        raise ValueError("need μ ≥ 0 and 0 < δ < 1")
    if gaussian_delta(0.0, mu) <= delta:
        return 0.0
    high = 1.0
    while gaussian_delta(high, mu) > delta:
        high *= 2
        if high > 1e300:  # pragma: no cover - δ below double precision
            return math.inf
    root = brentq(lambda eps: gaussian_delta(eps, mu) - delta, 0.0, high, xtol=1e-14, rtol=1e-14)
    return float(root) * (1 + 1e-13) + 4e-14  # the bracket's upper side, and more
