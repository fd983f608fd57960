"""Exact regret (docs/math.md §4) against an independent brute force.

The brute force knows nothing of tangents or vertices: it walks a dense α grid (plus the
curve's breakpoints), and for each point (a, f(a)) finds the slide κ with
f(a) − κ = G_μ(a − κ) by ``scipy.optimize.brentq``.  Its maximum is a lower bound of the
true regret, so the exact value must be at least it and, on a dense grid, within 1e-6.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution as plds
from scipy.optimize import brentq
from scipy.special import ndtr, ndtri

from privspec.numerics.curve import LossPMF, TradeoffCurve, curve_from_pld, curve_from_pmfs
from privspec.numerics.gdp import mu_from_curve, regret


def g_mu(x: float, mu: float) -> float:
    """G_μ(x) = Φ(Φ⁻¹(1 − x) − μ), with G_μ = 1 left of 0."""
    if x <= 0:
        return 1.0
    if x >= 1:
        return 0.0
    return float(ndtr(ndtri(1.0 - x) - mu))


def brute_regret(curve: TradeoffCurve, mu: float, n: int = 4001) -> float:
    grid = np.unique(np.concatenate((
        np.linspace(0.0, 1.0, n),
        np.logspace(-9, 0, n // 4),
        curve.alpha if curve.alpha.size <= 5000 else curve.alpha[:: curve.alpha.size // 5000],
    )))
    best = 0.0
    for a in grid:
        b = float(curve.beta_at(a))

        def residual(k: float, a: float = float(a), b: float = b) -> float:
            return b - k - g_mu(a - k, mu)

        if residual(0.0) <= 0:
            continue
        best = max(best, brentq(residual, 0.0, float(a), xtol=1e-15, rtol=1e-15))
    return best


def curve_from_vertices(left: list[tuple[float, float]]) -> TradeoffCurve:
    """A symmetric convex curve from its vertices left of the diagonal, built directly."""
    a = np.array([p[0] for p in left])
    b = np.array([p[1] for p in left])
    # The diagonal crossing of the last segment (or of the slope −1 extension).
    g0, g1 = b[-2] - a[-2], b[-1] - a[-1]
    star = a[-2] + g0 / (g0 - g1) * (a[-1] - a[-2]) if g1 <= 0 else 0.5 * (a[-1] + b[-1])
    keep = a < star
    a, b = a[keep], b[keep]
    alpha = np.concatenate((a, [star], b[::-1], [1.0]))
    beta = np.concatenate((b, [star], a[::-1], [0.0]))
    if alpha[-2] >= 1.0:
        alpha, beta = alpha[:-1], beta[:-1]
    return TradeoffCurve(alpha=alpha, beta=beta, tpr=1 - beta, tnr=1 - alpha,
                         alpha_star=float(star), infinity_mass=1.0 - float(beta[0]), points=(),
                         support=(a, b, 1 - b))


def mirror_pair_curve(p: list[float]) -> TradeoffCurve:
    """The curve of P against its mirror image Q(i) = P(k − 1 − i): a symmetric pair."""
    prob = np.asarray(p, dtype=float) / sum(p)
    losses = np.log(prob / prob[::-1])
    order = np.argsort(losses)
    return curve_from_pmfs((LossPMF(losses[order], prob[order], 0.0),))


def pure_dp_curve(epsilon: float) -> TradeoffCurve:
    pld = plds.from_randomized_response(2 / (math.exp(epsilon) + 1), 2,
                                        value_discretization_interval=1e-4)
    return curve_from_pld(pld)


CURVES = {
    "rr-eps0.5": lambda: pure_dp_curve(0.5),
    "rr-eps1": lambda: pure_dp_curve(1.0),
    "rr-eps3": lambda: pure_dp_curve(3.0),
    "laplace-b1-coarse": lambda: curve_from_pld(plds.from_laplace_mechanism(
        1.0, value_discretization_interval=1e-2, use_connect_dots=True)),
    "subsampled-laplace-coarse": lambda: curve_from_pld(plds.from_laplace_mechanism(
        0.5, sampling_prob=0.3, value_discretization_interval=2e-2, use_connect_dots=True)),
    "gaussian-coarse": lambda: curve_from_pld(plds.from_gaussian_mechanism(
        1.0, value_discretization_interval=5e-2, use_connect_dots=True)),
    "hand-three-vertices": lambda: curve_from_vertices(
        [(0.0, 1.0), (0.05, 0.5), (0.2, 0.2)]),
    "hand-kinked": lambda: curve_from_vertices(
        [(0.0, 1.0), (0.001, 0.8), (0.01, 0.6), (0.1, 0.3), (0.35, 0.1)]),
    "mirror-pair": lambda: mirror_pair_curve([0.05, 0.1, 0.15, 0.3, 0.4]),
}


@pytest.mark.parametrize("name", list(CURVES))
def test_exact_regret_matches_brute_force(name: str) -> None:
    curve = CURVES[name]()
    mu = mu_from_curve(curve, 1e-12)
    assert math.isfinite(mu)
    for m in (mu, mu * 1.1):
        exact = regret(curve, m)
        brute = brute_regret(curve, m)
        assert exact >= brute - 1e-12, (name, m, exact, brute)
        assert exact <= brute + 1e-6, (name, m, exact, brute)


def test_randomized_response_regret_is_far_above_threshold() -> None:
    # A uniform α grid with 1000 points is what the reference code uses; the exact value
    # is well above the Tier I threshold (docs/math.md §4).
    curve = pure_dp_curve(1.0)
    mu = mu_from_curve(curve, 1e-12)
    assert regret(curve, mu) == pytest.approx(brute_regret(curve, mu), abs=1e-6)
    assert regret(curve, mu) > 0.05


def test_regret_of_gaussian_curve_under_its_own_mu_is_zero() -> None:
    curve = CURVES["gaussian-coarse"]()
    mu = mu_from_curve(curve, 1e-12)
    assert 0 <= regret(curve, mu) <= 1e-3
    # G_{μ/2} lies above the curve: nothing to slide (up to rounding of β ≈ 1 near α = 0).
    assert regret(curve, mu / 2) <= 1e-15
    # G_{2μ} lies far below: the curve must slide a long way.
    assert regret(curve, 2 * mu) == pytest.approx(brute_regret(curve, 2 * mu), abs=1e-6)
    assert regret(curve, 2 * mu) > 0.1


def test_regret_needs_finite_mu() -> None:
    with pytest.raises(ValueError, match="finite"):
        regret(CURVES["rr-eps1"](), math.inf)
