"""Random allocation ("balls in bins"): each epoch accounted by the dominating pair of
Chua et al. 2025 (arXiv:2412.16802), pessimistically (numerics/random_allocation.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate
from scipy.special import ndtr

import privspec
from privspec.numerics.curve import delta_for_epsilons, points_from_pmf
from privspec.numerics.random_allocation import epoch_pmfs


def _spec(z: float, batch: int, size: int, epochs: int, relation: str = "add-or-remove"
          ) -> dict[str, object]:
    block = {"sampling": "random-allocation", "noise_multiplier": z, "batch_size": batch,
             "dataset_size": size, "epochs": epochs}
    return {"privspec": 1, "title": "t", "unit": "one example", "neighbouring": relation,
            "mechanism": {"dpsgd": block}}


def _deltas(z: float, k: int, epsilons: list[float]) -> tuple[np.ndarray, np.ndarray]:
    remove, add = epoch_pmfs(z, k, 1e-4, 1e-16, 1e-16)
    eps = np.asarray(epsilons)
    return (delta_for_epsilons((points_from_pmf(remove),), eps),
            delta_for_epsilons((points_from_pmf(add),), eps))


def test_one_step_an_epoch_is_the_gaussian_within_half_a_percent_above() -> None:
    """k = 1 (the pair is two Gaussians μ = 1/z apart) through the convolution code: δ(ε)
    at or above the Gaussian's, within 0.5 % (the loss grid's rounding up)."""
    z, eps = 2.0, np.array([0.5, 1.0, 2.0])
    mu = 1 / z
    exact = ndtr(-eps / mu + mu / 2) - np.exp(eps) * ndtr(-eps / mu - mu / 2)
    for ours in _deltas(z, 1, list(eps)):
        assert np.all(ours >= exact) and np.all(ours <= exact * 1.005 + 1e-15)


@pytest.mark.parametrize(("z", "k", "lower", "upper"), [(1.0, 10, 2.187, 2.190),
                                                        (2.0, 100, 0.169, 0.177)])
def test_one_epoch_lies_within_the_published_bounds(z: float, k: int, lower: float,
                                                    upper: float) -> None:
    """Feldman & Shenfeld 2025's lower and upper ε(10⁻⁵) of one epoch (their package's
    figures, a sanity range only); well below the no-amplification ε."""
    report = privspec.evaluate(_spec(z, 10, 10 * k, 1))
    epsilon = next(e.epsilon for e in report.epsilons if e.delta == 1e-5)
    assert epsilon is not None and lower <= epsilon <= upper * 1.02
    assert report.gdp.mu is not None and report.gdp.mu <= 1 / z


@pytest.mark.parametrize("eps", [0.0, 0.25, 0.5, 1.0])
def test_two_steps_match_the_pair_integrated_independently(eps: float) -> None:
    """k = 2, z = 2: δ(ε) of the pair by numerical integration over x₁, the integral
    over x₂ in closed form (E_Q[W; x₂ > y] = Φ̄((y − 1)/z)), both directions: ours is at
    or above it, within 1 % (+10⁻⁹)."""
    z, k, cut = 2.0, 2, math.exp(eps)

    def w(x: float) -> float:
        return math.exp((2 * x - 1) / (2 * z * z))

    def inverse(v: float) -> float:  # the x₂ with W(x₂) = v
        return z * z * math.log(v) + 0.5

    def remove(x: float) -> float:  # E over x₂ of (S/k − e^ε)₊
        rest = k * cut - w(x)
        y = inverse(rest) if rest > 0 else -math.inf
        return float((w(x) / k - cut) * ndtr(-y / z) + ndtr(-(y - 1) / z) / k)

    def add(x: float) -> float:  # E over x₂ of (1 − e^ε S/k)₊
        rest = k / cut - w(x)
        if rest <= 0:
            return 0.0
        y = inverse(rest)
        return float((1 - cut * w(x) / k) * ndtr(y / z) - cut / k * ndtr((y - 1) / z))

    def expected(f: object) -> float:
        value, _ = integrate.quad(lambda x: f(x) * math.exp(-x * x / (2 * z * z))  # type: ignore[operator]
                                  / math.sqrt(2 * math.pi * z * z), -14, 14, limit=400,
                                  epsabs=1e-14, epsrel=1e-11)
        return float(value)

    ours_remove, ours_add = _deltas(z, k, [eps])
    for exact, ours in ((expected(remove), ours_remove[0]), (expected(add), ours_add[0])):
        assert exact <= ours <= exact * 1.01 + 1e-9


def test_an_attack_by_sampling_never_beats_the_certified_curve() -> None:
    """k = 3, z = 1: the likelihood-ratio test, 200,000 seeded samples of each side;
    the empirical δ(ε) less a Hoeffding margin (10⁻⁶ failure) stays below ours."""
    z, k, n = 1.0, 3, 200_000
    rng = np.random.default_rng(20251126)
    nulls = rng.normal(0.0, z, (n, k))
    alts = rng.normal(0.0, z, (n, k))
    alts[np.arange(n), rng.integers(0, k, n)] += 1.0

    def likelihood(x: np.ndarray) -> np.ndarray:
        return np.exp((2 * x - 1) / (2 * z * z)).sum(axis=1) / k

    margin = 2 * math.sqrt(math.log(2 / 1e-6) / (2 * n))
    for eps in (0.0, 0.5, 1.0):
        cut = math.exp(eps)
        remove = np.mean(likelihood(alts) > cut) - cut * np.mean(likelihood(nulls) > cut)
        add = np.mean(likelihood(nulls) < 1 / cut) - cut * np.mean(likelihood(alts) < 1 / cut)
        ours_remove, ours_add = _deltas(z, k, [eps])
        assert remove - (1 + cut) * margin <= ours_remove[0]
        assert add - (1 + cut) * margin <= ours_add[0]
        assert remove + (1 + cut) * margin >= ours_remove[0] * 0.9  # and is not far off


@pytest.mark.parametrize("relation", ["add-or-remove", "zero-out"])
def test_the_report_names_the_route_and_amplifies(relation: str) -> None:
    """N = 1,050, batch 100: 10 steps an epoch, 3 epochs: amplified, far below √3/z, and
    the route in the summary (Markdown and JSON); replace-one is not amplified."""
    z = 2.0
    spec = _spec(z, 100, 1050, 3, relation)
    report = privspec.evaluate(spec)
    assert report.gdp.mu is not None and report.gdp.mu < 0.5 * math.sqrt(3) / z
    assert ("random allocation: the dominating pair of Chua et al. 2025, accounted "
            "numerically, pessimistic") in report.mechanism.summary
    from privspec.render import render

    assert "dominating pair of Chua et al. 2025" in render(report, "json")
    # no pair is proved under replace-one: one step an epoch in full, shift 2
    replaced = privspec.evaluate(_spec(z, 100, 1050, 3, "replace-one"))
    assert replaced.gdp.mu == pytest.approx(2 * math.sqrt(3) / z, rel=1e-12)


def test_an_epoch_too_costly_to_compose_falls_back_to_no_amplification_and_says_so() -> None:
    """Batches of 1 from 100,000: 100,000 steps an epoch, beyond the budgets: μ is the
    no-amplification bound 1/z, with the caveat that the accounting was too costly."""
    report = privspec.evaluate(_spec(1.0, 1, 100_000, 1))
    assert report.gdp.mu == pytest.approx(1.0, rel=1e-12)
    assert "accounting/too-costly" in [caveat.code for caveat in report.warnings]
