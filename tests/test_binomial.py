"""Exact self-composition of ε-DP releases (``privspec.numerics.binomial``) against
independent oracles: scipy's binomial distribution, the optimal-composition δ(ε) of
Kairouz, Oh & Viswanath (2015, Thm 3.3), and the closed-form bounds."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import comb
from scipy.stats import binom

import privspec
from privspec.numerics.binomial import composed_pmf
from privspec.numerics.bounds import mu_of_pure_epsilon


def _delta(losses: np.ndarray, probs: np.ndarray, infinity: float, epsilon: float) -> float:
    """δ(ε) = p∞ + Σ p(y)(1 − e^{ε − y})₊ of a PMF."""
    above = losses > epsilon
    return infinity + float(np.sum(probs[above] * -np.expm1(epsilon - losses[above])))


@settings(max_examples=60, deadline=None)
@given(epsilon=st.floats(1e-4, 5.0), runs=st.integers(1, 60), delta=st.sampled_from(
    [0.0, 1e-9, 1e-3]))
def test_the_pmf_is_the_binomial(epsilon: float, runs: int, delta: float) -> None:
    pmf = composed_pmf(epsilon, delta, runs)
    assert pmf is not None
    # Only the bulk is kept; the far lower tail is added to the lowest kept loss.
    first = round((pmf.losses[0] / epsilon + runs) / 2)
    j = np.arange(first, first + pmf.losses.size)
    p = math.exp(epsilon) / (1 + math.exp(epsilon))
    expected = binom.pmf(j, runs, p) * (1 - delta) ** runs
    np.testing.assert_allclose(pmf.losses, (2 * j - runs) * epsilon, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(pmf.probs[1:], expected[1:], rtol=1e-9, atol=1e-300)
    assert pmf.probs[0] >= expected[0] * (1 - 1e-9)
    assert binom.cdf(first - 1, runs, p) < 1e-60 and j[-1] <= runs
    assert pmf.infinity_mass == pytest.approx(-math.expm1(runs * math.log1p(-delta)),
                                              rel=1e-12, abs=1e-300)


@pytest.mark.parametrize(("epsilon", "runs"), [(0.1, 10), (1.0, 5), (0.5, 40)])
def test_delta_is_the_optimal_composition_theorem(epsilon: float, runs: int) -> None:
    """δ(ε') of the PMF at ε' = (k − 2i)ε equals KOV's closed form
    Σ_{ℓ<i} C(k, ℓ)(e^{(k−ℓ)ε} − e^{(k−2i+ℓ)ε}) / (1 + e^ε)^k."""
    pmf = composed_pmf(epsilon, 0.0, runs)
    assert pmf is not None
    for i in range(runs // 2 + 1):
        at = (runs - 2 * i) * epsilon
        kov = sum(comb(runs, ell) * (math.exp((runs - ell) * epsilon)
                                     - math.exp((runs - 2 * i + ell) * epsilon))
                  for ell in range(i)) / (1 + math.exp(epsilon)) ** runs
        assert _delta(pmf.losses, pmf.probs, pmf.infinity_mass, at) == pytest.approx(
            kov, rel=1e-9, abs=1e-15)


def test_the_bulk_keeps_every_mass_that_matters() -> None:
    """10⁷ runs keep only the binomial's bulk; the rest is counted, not lost."""
    pmf = composed_pmf(1e-6, 0.0, 10**7)
    assert pmf is not None and pmf.losses.size < 200_000
    assert float(pmf.probs.sum()) + pmf.infinity_mass >= 1 - 1e-12
    assert pmf.relative_error <= 1e-6


def test_too_many_runs_fall_back() -> None:
    assert composed_pmf(1e-6, 0.0, 10**9) is None


def _spec(mechanism: dict[str, object]) -> dict[str, object]:
    return {"privspec": 1, "title": "t", "unit": "one record",
            "neighbouring": "add-or-remove", "mechanism": mechanism}


@pytest.mark.parametrize("runs", [1, 100, 10_000, 10_000_000])
def test_many_small_releases_are_exact_and_tighter_than_the_bounds(runs: int) -> None:
    """k runs of ε = 10⁻⁶: the closed form √k·μ(ε) bounds μ, and for many runs the
    exact μ approaches the CLT's √k·ε (25 % below the bound; the grid read 10× more)."""
    report = privspec.evaluate(_spec({"repeat": {"count": runs, "mechanism": {
        "pure_dp": {"epsilon": 1e-6}}}}))
    mu = report.gdp.mu
    assert mu is not None and report.accounting.method.startswith("exact")
    assert mu <= math.sqrt(runs) * mu_of_pure_epsilon(1e-6) * (1 + 1e-9)
    if runs >= 10_000:
        assert mu == pytest.approx(math.sqrt(runs) * 1e-6, rel=1e-2)
    assert report.warnings == []


def test_an_approximate_dp_release_repeated_keeps_its_delta_at_infinity() -> None:
    report = privspec.evaluate(_spec({"repeat": {"count": 10, "mechanism": {
        "approximate_dp": {"epsilon": 0.5, "delta": 1e-6}}}}))
    assert report.gdp.mass_at_infinity == pytest.approx(1 - (1 - 1e-6) ** 10, rel=1e-9)


def test_stages_of_one_epsilon_share_the_exact_form_and_name_their_own_mu() -> None:
    split = privspec.evaluate(_spec({"compose": [
        {"name": "a", "repeat": 30, "mechanism": {"pure_dp": {"epsilon": 0.1}}},
        {"name": "b", "repeat": 70, "mechanism": {"pure_dp": {"epsilon": 0.1}}}]}))
    whole = privspec.evaluate(_spec({"repeat": {"count": 100, "mechanism": {
        "pure_dp": {"epsilon": 0.1}}}}))
    assert split.gdp.mu == whole.gdp.mu
    assert [stage.mu is not None for stage in split.mechanism.stages] == [True, True]
