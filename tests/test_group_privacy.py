"""f-DP group privacy on a trade-off curve (``privspec.numerics.group_privacy``; Dong,
Roth & Su 2022, Thm 2.14): against kμ for Gaussians, the exact iteration for randomized
response and (ε, δ) black boxes (in fractions, e^ε = 2), Vadhan's group bound, the
mixture of Gaussians where both routes apply, and monotonicity in k."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import privspec
from privspec.numerics.accounting import pmfs_from_spec
from privspec.numerics.bounds import mu_of_pure_epsilon
from privspec.numerics.curve import (
    LossPMF,
    TradeoffCurve,
    curve_from_pld,
    curve_from_pmfs,
    delta_from_curve,
    epsilons_from_curve,
)
from privspec.numerics.gdp import gaussian_tpr, mu_from_curve
from privspec.numerics.group_privacy import group_curve
from privspec.numerics.portable_pld import gaussian_pld
from privspec.spec.models import Spec

LN2 = math.log(2.0)
FLOOR = 1e-12
#: The bound between nodes costs at most the node ratio's excess (1.002) on 1 − f.
NODE_SLACK = 2.5e-3


def _spec(mechanism: dict[str, Any], records: int, relation: str = "add-or-remove",
          **report: Any) -> Spec:
    data: dict[str, Any] = {"privspec": 1, "title": "t", "unit": "one user",
                            "neighbouring": relation, "records_per_unit": records,
                            "mechanism": mechanism}
    if report:
        data["report"] = report
    return Spec.model_validate(data)


def _two_point(delta: float = 0.0) -> TradeoffCurve:
    """The curve of randomized response with e^ε = 2 (an (ε, δ) black box's worst case,
    with δ at +∞): f(α) = max(0, 1 − δ − 2α, (1 − δ − α)/2)."""
    pmf = LossPMF(np.array([-LN2, LN2]), np.array([(1 - delta) / 3, 2 * (1 - delta) / 3]),
                  delta)
    return curve_from_pmfs((pmf,))


def _iterated(alpha: Fraction, records: int, delta: Fraction = Fraction(0)) -> Fraction:
    """g^{∘k}(α) exactly, g(α) = min(1, δ + 2α, 1 − (1 − δ − α)/2)."""
    for _ in range(records):
        alpha = min(Fraction(1), delta + 2 * alpha, 1 - (1 - delta - alpha) / 2)
    return alpha


ALPHAS = [*np.geomspace(1e-9, 0.49, 60).tolist(), 0.6, 0.8, 0.95]


@pytest.mark.parametrize("mu, records", [(0.5, 2), (1.0, 3), (0.3, 5), (0.2, 8)])
def test_a_gaussian_curve_through_group_privacy_gives_k_mu(mu: float, records: int) -> None:
    """G_μ's group curve is G_{kμ}: the numerical route lands within 0.05 % above kμ and
    never below it, and never above G_{kμ}'s TPR."""
    curve = curve_from_pld(gaussian_pld(1 / mu, discretization=1e-4))
    group = group_curve(curve, records)
    ours = mu_from_curve(group, FLOOR)
    assert records * mu - 1e-9 <= ours <= records * mu * (1 + 5e-4)
    alphas = np.geomspace(1e-9, 0.5, 50)
    assert np.all(group.tpr_at(alphas) >= gaussian_tpr(alphas, records * mu) * (1 - 1e-9))


@pytest.mark.parametrize("records", [2, 3, 5])
def test_randomized_response_matches_the_exact_iteration(records: int) -> None:
    """1 − g^{∘k} computed in fractions: the curve is at or below it (pessimistic) and
    within the nodes' slack, and at least f_{kε} (Dong, Roth & Su 2022, Thm 2.14)."""
    group = group_curve(_two_point(), records)
    for alpha in ALPHAS:
        exact = float(1 - _iterated(Fraction(alpha), records))
        ours = float(group.beta_at(alpha))
        assert ours <= exact + 1e-15
        assert ours >= exact - NODE_SLACK * (1 - exact) - 1e-15
        k_epsilon = max(0.0, 1 - 2.0**records * alpha, (1 - alpha) / 2.0**records)
        assert ours >= k_epsilon - NODE_SLACK * (1 - k_epsilon) - 1e-15
    # ε at tiny δ is kε, less about δ/α at the first kink (its first slope is −e^{kε}).
    (epsilon,) = epsilons_from_curve(group, [1e-12])
    assert records * LN2 - 1e-10 <= epsilon <= records * LN2 * (1 + 1e-9)


def test_an_approximate_dp_black_box_is_within_vadhans_group_bound() -> None:
    """(ε, δ)-DP is (kε, k·e^{(k−1)ε}·δ)-DP for groups (Vadhan 2017, Lemma 2.2): the
    iterated curve's δ at kε is at most that, and at least the exact iteration's."""
    records, delta = 3, 1e-9
    group = group_curve(_two_point(delta), records)
    epsilon = records * LN2
    vadhan = records * 2.0 ** (records - 1) * delta
    ours = delta_from_curve(group, epsilon)
    exact = max(float(_iterated(Fraction(a), records, Fraction(1, 10**9)) - Fraction(2**records)
                      * Fraction(a)) for a in [0.0, *ALPHAS])
    assert exact <= ours <= vadhan * (1 + 1e-9)
    (at_vadhan,) = epsilons_from_curve(group, [vadhan])
    assert at_vadhan <= epsilon * (1 + 1e-9)


def test_an_epsilon_dp_black_box_reports_k_epsilon() -> None:
    """A unit of k records of an ε-DP release: pure ε = kε, μ between one record's and
    the closed form kμ(ε) (before: refused)."""
    mechanism = {"pure_dp": {"epsilon": 0.5}}
    unit, one = (privspec.evaluate(_spec(mechanism, k), cache=False) for k in (3, 1))
    assert unit.pure_epsilon == pytest.approx(1.5, rel=1e-12)
    assert one.gdp.mu is not None and unit.gdp.mu is not None
    assert one.gdp.mu < unit.gdp.mu <= 3 * mu_of_pure_epsilon(0.5)
    assert all(row.epsilon is not None and row.epsilon <= 1.5 for row in unit.epsilons)
    assert unit.unit_routes == ["group-privacy"]


def test_shuffled_batches_of_a_unit_scale_their_sensitivity() -> None:
    """Shuffled DP-SGD (before: refused for k > 1) is an exact Gaussian composition, so
    a unit's sensitivity is k clipping norms: μ = k·μ₁."""
    mechanism = {"dpsgd": {"noise_multiplier": 4.0, "sampling": "shuffled",
                           "batch_size": 50, "dataset_size": 100, "steps": 4}}
    unit, one = (privspec.evaluate(_spec(mechanism, k, "zero-out"), cache=False)
                 for k in (3, 1))
    assert unit.unit_routes == ["scaled"]
    assert one.gdp.mu is not None
    assert unit.gdp.mu == pytest.approx(3 * one.gdp.mu, rel=1e-12)


def test_the_mixture_is_never_looser_than_group_privacy_and_is_used() -> None:
    """Where both apply (a Poisson-sampled Gaussian under add-or-remove) the mixture of
    Gaussians is at least as tight as f-DP group privacy on one record's curve, pointwise
    and in μ, and the report uses it."""
    mechanism = {"repeat": {"count": 20, "mechanism": {"poisson_sampled": {
        "sampling_rate": 0.05, "mechanism": {"gaussian": {"noise_multiplier": 2.0}}}}}}
    records = 3
    report = privspec.evaluate(_spec(mechanism, records), cache=False)
    assert report.unit_routes == ["mixture"]
    iterated = group_curve(curve_from_pmfs(pmfs_from_spec(_spec(mechanism, 1))), records)
    assert report.gdp.mu is not None
    assert report.gdp.mu <= mu_from_curve(iterated, FLOOR)
    for point in report.curve:
        assert point.tpr <= float(iterated.tpr_at(point.alpha)) + 1e-12


@settings(max_examples=6, deadline=None)
@given(gaussian=st.booleans(), strength=st.floats(0.05, 1.5))
def test_the_group_curve_falls_and_mu_rises_with_k(gaussian: bool, strength: float) -> None:
    """For k = 1…4: the curve at k is at or below the curve at k − 1 everywhere, and μ
    never falls (a Gaussian with μ = ``strength``, or randomized response with ε)."""
    if gaussian:
        curve = curve_from_pld(gaussian_pld(1 / strength, discretization=1e-3))
    else:
        odds = math.exp(strength)
        curve = curve_from_pmfs((LossPMF(np.array([-strength, strength]),
                                         np.array([1 / (1 + odds), odds / (1 + odds)]), 0.0),))
    alphas = np.array([0.0, *np.geomspace(1e-12, 1.0, 300)])
    previous, previous_mu = curve, mu_from_curve(curve, FLOOR)
    for records in range(2, 5):
        group = group_curve(curve, records)
        assert np.all(group.beta_at(alphas) <= previous.beta_at(alphas) + 1e-15)
        group_mu = mu_from_curve(group, FLOOR)
        assert group_mu >= previous_mu
        previous, previous_mu = group, group_mu
