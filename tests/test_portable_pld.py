"""privspec.numerics.portable_pld builds the PLDs dp-accounting builds for single releases.

Not bit for bit: privspec evaluates exp, expm1 and log1p in long double, which gives
the same result on every CPU, where numpy's double-precision loops (and so the library's
PMFs) differ in the last bit with the CPU's vector units.  Connect-the-dots masses are
second differences of δ(ε), so one ulp of δ moves some masses far more than one ulp;
the profile and the PMF's own δ(ε) are what must agree, to rounding.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution as plds

from privspec.numerics.portable_pld import (
    _GridGaussianLoss,
    _PortableDiscreteGaussianLoss,
    discrete_gaussian_pld,
    gaussian_pld,
    laplace_pld,
)

SIGMAS, RATES = [0.5, 1.0, 9.4, 30.0], [1.0, 0.3277, 0.01, 1e-4, 0.999]
CASES = [
    *itertools.product(SIGMAS, RATES, [1e-4, 1e-2], [1.0]),  # σ, q, discretization, Δ
    *itertools.product(SIGMAS, RATES, [1e-2], [2.0]),        # Δ scales like 1/σ: coarse h suffices
]


def directions(pld: object) -> list[object]:
    return [pld._pmf_remove] + ([] if pld._symmetric else [pld._pmf_add])  # type: ignore[attr-defined]


@pytest.mark.parametrize(("sigma", "q", "h", "sensitivity"), [
    *CASES,
    (2.0, -math.expm1(-0.0007), 1e-4, 1.0),  # a grid point on the support's edge
])
def test_equals_the_library(sigma: float, q: float, h: float, sensitivity: float) -> None:
    theirs = plds.from_gaussian_mechanism(sigma, sensitivity=sensitivity, sampling_prob=q,
                                          value_discretization_interval=h, use_connect_dots=True)
    ours = gaussian_pld(sigma, sensitivity=sensitivity, sampling_prob=q, discretization=h)
    assert ours._symmetric == theirs._symmetric
    for mine, reference in zip(directions(ours), directions(theirs), strict=True):
        mine, reference = mine.to_dense_pmf(), reference.to_dense_pmf()
        assert mine._lower_loss == reference._lower_loss
        assert mine._probs.size == reference._probs.size
        assert mine._infinity_mass == pytest.approx(reference._infinity_mass, rel=1e-12)
        # The library's total holds connect-the-dots' excess mass (up to ≈ 10⁻⁸ at
        # h = 10⁻⁴), rounding of second differences where δ is near 1 − e^ε, clipped at
        # 0; ours is 1 to rounding, never less.
        total = math.fsum(mine._probs) + mine._infinity_mass
        assert 1 - 1e-15 <= total <= 1 + 1e-11
        assert total <= math.fsum(reference._probs) + reference._infinity_mass + 1e-11
    epsilons = np.linspace(0.0, 20.0, 201)
    mine_delta = np.array([ours.get_delta_for_epsilon(e) for e in epsilons])
    their_delta = np.array([theirs.get_delta_for_epsilon(e) for e in epsilons])
    np.testing.assert_allclose(mine_delta, their_delta, rtol=1e-11, atol=1e-300)


@pytest.mark.parametrize("adjacency", ["ADD", "REMOVE"])
@pytest.mark.parametrize("q", [1.0, 0.2, 0.9])
def test_the_profile_equals_the_library_one_epsilon_at_a_time(adjacency: str, q: float) -> None:
    """Including ε at and beyond the edge of a subsampled direction's support."""
    from dp_accounting.pld import privacy_loss_mechanism as plm

    loss = _GridGaussianLoss(1.3, sampling_prob=q, adjacency_type=plm.AdjacencyType[adjacency])
    edge = -np.log1p(-q) if q < 1 else 1.0
    epsilons = np.concatenate((np.linspace(-3, 3, 61), [edge, -edge, edge * (1 + 1e-12),
                                                         edge * (1 - 1e-12)]))
    vectorised = loss.get_delta_for_epsilon(epsilons)
    one_by_one = [plm.GaussianPrivacyLoss.get_delta_for_epsilon(loss, float(e)) for e in epsilons]
    # δ = μ_upper(…) − e^ε μ_lower(…): one ulp of e^{…} is relative to the larger term.
    np.testing.assert_allclose(vectorised, one_by_one, rtol=1e-12, atol=1e-300)


def test_replace_one_is_left_to_the_library() -> None:
    theirs = plds.from_gaussian_mechanism(
        2.0, sampling_prob=0.1, value_discretization_interval=1e-3, use_connect_dots=True,
        neighboring_relation=plds.NeighborRel.REPLACE_ONE)
    ours = gaussian_pld(2.0, sampling_prob=0.1, discretization=1e-3, replace_one=True)
    for epsilon in (0.0, 0.5, 2.0):
        assert ours.get_delta_for_epsilon(epsilon) == theirs.get_delta_for_epsilon(epsilon)


@pytest.mark.parametrize("q", [1 - 1e-12, 1 - 1e-13])
def test_where_the_library_fails_so_does_this_never_with_nan(q: float) -> None:
    """1 − q below what the library's subsampled loss resolves: it raises; so must we
    (privspec.numerics.accounting never asks: it accounts such rates as 1)."""
    with pytest.raises(ValueError) as theirs:
        plds.from_gaussian_mechanism(0.3, sampling_prob=q, value_discretization_interval=1e-3,
                                     use_connect_dots=True)
    with pytest.raises(ValueError) as ours:
        gaussian_pld(0.3, sampling_prob=q, discretization=1e-3)
    assert str(ours.value) == str(theirs.value)


def test_rates_within_a_billionth_of_one_are_accounted_as_one() -> None:
    import privspec

    def spec(batch: int) -> dict[str, object]:
        return {"privspec": 1, "title": "t", "unit": "one record", "neighbouring": "replace-one",
                "mechanism": {"fixed_size_sampled": {
                    "batch_size": batch, "dataset_size": 10**12,
                    "mechanism": {"gaussian": {"sigma": 0.3}}}},
                "accounting": {"discretization": 1e-3}}

    almost, whole = privspec.evaluate(spec(10**12 - 1)), privspec.evaluate(spec(10**12))
    assert almost.gdp.mu == whole.gdp.mu and almost.gdp.mu is not None
    assert almost.gdp.mu >= 1 / 0.3


def symmetric_profiles(ours: Any, theirs: Any) -> tuple[np.ndarray, np.ndarray]:
    """Both PLDs symmetric on the same grid; their δ(ε) for ε from 0 to 20."""
    assert ours._symmetric and theirs._symmetric
    mine_pmf, their_pmf = ours._pmf_remove.to_dense_pmf(), theirs._pmf_remove.to_dense_pmf()
    assert mine_pmf._lower_loss == their_pmf._lower_loss
    assert mine_pmf._probs.size == their_pmf._probs.size
    epsilons = np.linspace(0.0, 20.0, 201)
    return (np.array([ours.get_delta_for_epsilon(e) for e in epsilons]),
            np.array([theirs.get_delta_for_epsilon(e) for e in epsilons]))


@pytest.mark.parametrize(("sigma", "sensitivity", "h"), [
    (3.1622776601683795, 1, 1e-4), (10.0, 1, 1e-4), (2.0, 2, 1e-3), (0.5, 1, 1e-4),
    (50.0, 3, 1e-2),
])
def test_discrete_gaussian_equals_the_library(sigma: float, sensitivity: int, h: float) -> None:
    """The same tables (to rounding: the library's are in double precision), the same
    grid and the same δ(ε), far into the tail."""
    from dp_accounting.pld import privacy_loss_mechanism as plm

    mine = _PortableDiscreteGaussianLoss(sigma, sensitivity)
    library = plm.DiscreteGaussianPrivacyLoss(sigma, sensitivity=sensitivity)
    for name in ("_pmf_array", "_cdf_array"):
        np.testing.assert_allclose(getattr(mine, name), getattr(library, name), rtol=1e-12,
                                   atol=1e-300)
    mine_delta, their_delta = symmetric_profiles(
        discrete_gaussian_pld(sigma, sensitivity=sensitivity, discretization=h),
        plds.from_discrete_gaussian_mechanism(sigma, sensitivity=sensitivity,
                                              value_discretization_interval=h,
                                              use_connect_dots=True))
    # Where δ is ~10⁻³⁰ the library's double-precision tables keep ~7 digits.
    np.testing.assert_allclose(mine_delta, their_delta, rtol=1e-6, atol=1e-300)
    big = their_delta > 1e-12
    np.testing.assert_allclose(mine_delta[big], their_delta[big], rtol=1e-9)


@pytest.mark.parametrize(("scale", "sensitivity", "h"), [
    (1.0, 1.0, 1e-4), (2.0, 1.0, 1e-4), (0.3, 1.0, 1e-3), (5.0, 2.0, 1e-2),
])
def test_laplace_equals_the_library(scale: float, sensitivity: float, h: float) -> None:
    mine_delta, their_delta = symmetric_profiles(
        laplace_pld(scale, sensitivity=sensitivity, discretization=h),
        plds.from_laplace_mechanism(scale, sensitivity=sensitivity,
                                    value_discretization_interval=h, use_connect_dots=True))
    np.testing.assert_allclose(mine_delta, their_delta, rtol=1e-11, atol=1e-15)
