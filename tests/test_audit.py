"""The audit's statistics (numerics/audit.py): seeded scores from N(0, 1) and N(μ, 1) at
known μ, so that each promise can be counted: the lower bounds hold in at least the
promised fraction of repetitions, come close at 10⁵ scores, are about 0 on null scores
in both directions, and a break of the certificate (everywhere, or at low FPR only) is
found while an honest mechanism is never contradicted."""

from __future__ import annotations

import numpy as np
import pytest

from privspec.numerics.audit import (
    AuditStatistics,
    CertifiedCurve,
    _counts,
    _merged_order_statistics,
    audit,
    candidate_thresholds,
)
from privspec.numerics.gdp import epsilon_from_mu_delta, gaussian_tpr


def _scores(mu: float, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(mu, 1.0, n), rng.normal(0.0, 1.0, n)


def _certifying(mu: float) -> CertifiedCurve:
    """What a report of a μ-GDP mechanism certifies, sampled as reports sample it."""
    alpha = np.array(sorted({*np.logspace(-12, -1, 221).tolist(),
                             *np.linspace(0.1, 1.0, 91).tolist()}))
    return CertifiedCurve(alpha, gaussian_tpr(alpha, mu), mu, 1e-12)


def test_counts_are_exact_with_ties() -> None:
    rng = np.random.default_rng(0)
    scores = rng.integers(0, 7, 500).astype(float)  # many ties, thresholds on them
    higher, lower = np.array([0.0, 2.0, 3.0, 6.0]), np.array([1.0, 3.0, 5.5])
    at_least, at_most = _counts(np.sort(scores), higher, lower)
    assert at_least.tolist() == [int((scores >= t).sum()) for t in higher]
    assert at_most.tolist() == [int((scores <= t).sum()) for t in lower]


def test_thresholds_do_not_look_at_the_labels() -> None:
    members, non_members = np.sort(_scores(1.0, 1000, 1), axis=1)
    swapped = candidate_thresholds(non_members, members)
    for mine, theirs in zip(candidate_thresholds(members, non_members), swapped, strict=True):
        assert np.array_equal(mine, theirs)


def test_pooled_order_statistics_come_from_the_sorted_classes() -> None:
    rng = np.random.default_rng(3)
    for _ in range(300):
        first, second = (np.sort(rng.integers(0, 20, rng.integers(1, 30)).astype(float))
                         for _ in range(2))
        pooled = np.sort(np.concatenate([first, second]))
        counts = np.arange(1, pooled.size + 1)
        assert np.array_equal(_merged_order_statistics(first, second, counts), pooled)
        assert np.array_equal(_merged_order_statistics(second, first, counts), pooled)


@pytest.mark.parametrize("mu", [0.5, 1.0, 2.0])
def test_the_lower_bounds_hold_in_at_least_the_promised_fraction(mu: float) -> None:
    """200 repetitions at 95 %: μ_lb ≤ μ and ε_lb(δ) ≤ ε(δ) of μ-GDP in at least 95 %."""
    delta = 1e-5
    epsilon = epsilon_from_mu_delta(mu, delta)
    mu_misses = epsilon_misses = 0
    for seed in range(200):
        statistics = audit(*_scores(mu, 2000, seed), 0.95)
        mu_misses += statistics.mu_lower > mu
        epsilon_misses += statistics.epsilon_lower(delta) > epsilon
    assert mu_misses <= 10 and epsilon_misses <= 10


@pytest.mark.parametrize("holdout", [False, True])
def test_the_mu_bound_comes_within_a_tenth_at_1e5_scores(holdout: bool) -> None:
    """docs/audit.md states it: μ = 1 and 10⁵ scores (half in), μ_lb ≥ 0.9."""
    for seed in range(5):
        statistics = audit(*_scores(1.0, 50_000, seed), 0.95, holdout=holdout)
        assert 0.9 <= statistics.mu_lower <= 1.0


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_null_scores_prove_nothing_in_either_direction(sign: float) -> None:
    """No effect: μ_lb about 0 whichever way the scores point (one frontier per
    direction, both under one error budget; jax_privacy PR 270's pitfall)."""
    for seed in range(20):
        members, non_members = _scores(0.0, 20_000, seed)
        statistics = audit(sign * members, sign * non_members, 0.95)
        assert statistics.mu_lower <= 0.05
        assert statistics.epsilon_lower(1e-5) <= 0.1
        assert not statistics.contradictions(_certifying(0.1))


def test_an_honest_mechanism_is_never_contradicted() -> None:
    misses = 0
    for seed in range(100):
        statistics = audit(*_scores(1.0, 5000, seed), 0.95)
        misses += bool(statistics.contradictions(_certifying(1.0)))
    assert misses <= 5


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_a_stronger_attack_contradicts_the_certificate(sign: float) -> None:
    """Scores from μ = 2 against a report certifying μ = 1, whichever way they point."""
    members, non_members = _scores(2.0, 5000, 7)
    statistics = audit(sign * members, sign * non_members, 0.95)
    found = statistics.contradictions(_certifying(1.0))
    assert found
    box, allowed = found[0]
    assert box.direction == ("higher" if sign > 0 else "lower")
    assert box.tpr_low > allowed
    assert statistics.mu_lower > 1.5


def test_a_break_at_low_fpr_only_is_found() -> None:
    """1 % of members with far higher scores: μ = 1 is met at every FPR but the lowest."""
    members, non_members = _scores(1.0, 50_000, 3)
    members[:500] += 5.0
    statistics = audit(members, non_members, 0.95)
    found = statistics.contradictions(_certifying(1.0))
    assert found and found[0][0].fpr_high < 1e-3
    # The same scores with the break undone are within the certificate.
    members[:500] -= 5.0
    assert not audit(members, non_members, 0.95).contradictions(_certifying(1.0))


def test_the_curve_is_rounded_up_between_its_samples() -> None:
    certified = _certifying(1.0)
    fpr = np.random.default_rng(2).uniform(1e-9, 1.0, 10_000)
    assert (certified.tpr_bound(fpr) >= gaussian_tpr(fpr, 1.0)).all()
    coarse = CertifiedCurve(certified.alpha[::40], certified.tpr[::40], None, 0.0)
    assert (coarse.tpr_bound(fpr) >= gaussian_tpr(fpr, 1.0)).all()


def test_boxes_are_simultaneous_over_both_directions() -> None:
    """The error budget is split over every box of both directions (Bonferroni)."""
    statistics = audit(*_scores(1.0, 1000, 0), 0.95)
    boxes = statistics.boxes
    assert {box.direction for box in boxes} == {"higher", "lower"}
    single = AuditStatistics(1000, 1000, 0.95, False, boxes[:1])
    assert single.mu_lower <= statistics.mu_lower
    for box in boxes:
        assert box.fpr_low <= box.fpr <= box.fpr_high and box.tpr_low <= box.tpr <= box.tpr_high


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="at least 10 scores"):
        audit(np.zeros(5), np.zeros(100))
    with pytest.raises(ValueError, match="strictly between"):
        audit(np.zeros(100), np.zeros(100), 1.0)


def test_the_one_run_p_value_without_delta_is_the_binomial_tail() -> None:
    from scipy.stats import binom

    from privspec.numerics.audit import one_run_p_value

    q = np.exp(1.5) / (1 + np.exp(1.5))
    assert one_run_p_value(1000, 200, 150, 1.5, 0.0) == pytest.approx(binom.sf(149, 200, q))
    assert one_run_p_value(1000, 200, 150, 1.5, 1e-6) > one_run_p_value(1000, 200, 150, 1.5, 0)


def test_the_one_run_bound_holds_in_the_promised_fraction() -> None:
    """Laplace noise of scale 1 is 1-DP: the one-run ε_lb at δ = 0 exceeds 1 in at most
    5 % of 100 seeded runs; randomized response at ε = 4 is found above 2."""
    from privspec.numerics.audit import one_run

    rng = np.random.default_rng(0)
    over = 0
    for _ in range(100):
        (bound,) = one_run(rng.laplace(1.0, 1.0, 2000), rng.laplace(0.0, 1.0, 2000), [0.0])
        over += bound.epsilon_lower > 1.0
    assert over <= 5
    p = np.exp(4.0) / (1 + np.exp(4.0))
    members = (rng.random(2000) < p).astype(float)
    non_members = (rng.random(2000) < 1 - p).astype(float)
    (bound,) = one_run(members, non_members, [0.0])
    assert 2.0 < bound.epsilon_lower <= 4.0 and bound.guesses == 4000
    (null,) = one_run(rng.normal(size=2000), rng.normal(size=2000), [1e-5])
    assert null.epsilon_lower <= 0.1
