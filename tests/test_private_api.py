"""Pin ``privspec.numerics.curve.pmfs_from_pld``: the one function that reads dp-accounting privates.

If a dp-accounting release renames or re-means ``_pmf_remove``, ``_pmf_add``,
``_symmetric``, ``_lower_loss``, ``_probs``, ``_discretization`` or ``_infinity_mass``,
δ(ε) recomputed from the returned PMFs stops matching the public
``get_delta_for_epsilon`` and these tests fail.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from dp_accounting.pld import common as pld_common
from dp_accounting.pld import privacy_loss_distribution as plds

from privspec.numerics.accounting import PLD
from privspec.numerics.curve import LossPMF, pmfs_from_pld


def delta_from_pmfs(pmfs: tuple[LossPMF, ...], epsilon: float) -> float:
    """max over directions of Σ_{y>ε} (1 − e^{ε−y}) p(y) + p∞."""
    out = []
    for p in pmfs:
        above = p.losses > epsilon
        terms = -np.expm1(epsilon - p.losses[above]) * p.probs[above]
        out.append(math.fsum(terms.tolist()) + p.infinity_mass)
    return max(out)


PLDS: dict[str, tuple[Callable[[], PLD], bool]] = {
    # name: (constructor, symmetric)
    "gaussian": (lambda: plds.from_gaussian_mechanism(
        1.0, value_discretization_interval=1e-3, use_connect_dots=True), True),
    "laplace": (lambda: plds.from_laplace_mechanism(
        1.0, value_discretization_interval=1e-3, use_connect_dots=True), True),
    "randomized-response": (lambda: plds.from_randomized_response(
        0.5, 4, value_discretization_interval=1e-3), True),
    "gaussian-composed": (lambda: plds.from_gaussian_mechanism(
        2.0, value_discretization_interval=1e-3, use_connect_dots=True).self_compose(20), True),
    "pure-dp": (lambda: plds.from_privacy_parameters(
        pld_common.DifferentialPrivacyParameters(1.0, 0.0),
        value_discretization_interval=1e-3), True),
    "approximate-dp": (lambda: plds.from_privacy_parameters(
        pld_common.DifferentialPrivacyParameters(1.0, 1e-4),
        value_discretization_interval=1e-3), True),
    "subsampled-gaussian": (lambda: plds.from_gaussian_mechanism(
        1.0, sampling_prob=0.1, value_discretization_interval=1e-3,
        use_connect_dots=True), False),
    "subsampled-gaussian-composed": (lambda: plds.from_gaussian_mechanism(
        0.8, sampling_prob=0.05, value_discretization_interval=1e-3,
        use_connect_dots=True).self_compose(50), False),
    "subsampled-laplace": (lambda: plds.from_laplace_mechanism(
        0.5, sampling_prob=0.2, value_discretization_interval=1e-3,
        use_connect_dots=True), False),
    "mixed-composition": (lambda: plds.from_gaussian_mechanism(
        1.0, sampling_prob=0.1, value_discretization_interval=1e-3, use_connect_dots=True
    ).compose(plds.from_laplace_mechanism(
        2.0, value_discretization_interval=1e-3, use_connect_dots=True)), False),
}

EPSILONS = [0.0, 0.01, 0.1, 0.5, 1.0, 2.0, 3.0, 5.0, 8.0, 12.0]


@pytest.mark.parametrize("name", list(PLDS))
def test_delta_from_pmfs_equals_accountant(name: str) -> None:
    build, symmetric = PLDS[name]
    pld = build()
    pmfs = pmfs_from_pld(pld)
    assert len(pmfs) == (1 if symmetric else 2)
    for eps in EPSILONS:
        ours = delta_from_pmfs(pmfs, eps)
        theirs = float(pld.get_delta_for_epsilon(eps))
        assert ours == pytest.approx(theirs, rel=1e-9, abs=1e-17), (name, eps)


@pytest.mark.parametrize("name", list(PLDS))
def test_pmf_layout(name: str) -> None:
    pld = PLDS[name][0]()
    for p in pmfs_from_pld(pld):
        assert p.losses.shape == p.probs.shape and p.losses.ndim == 1
        steps = np.diff(p.losses)
        np.testing.assert_allclose(steps, 1e-3, rtol=1e-9)  # the discretization grid
        assert 0.0 <= p.infinity_mass < 1.0
        # Pessimistic connect-the-dots PMFs may carry a little more than mass 1.
        total = math.fsum(p.probs.tolist()) + p.infinity_mass
        assert total == pytest.approx(1.0, abs=1e-6)


def test_infinity_mass_is_read() -> None:
    pld = PLDS["approximate-dp"][0]()
    (pmf,) = pmfs_from_pld(pld)
    assert pmf.infinity_mass == pytest.approx(1e-4, rel=1e-12)
    # δ(ε) at a huge ε is the mass at +∞ alone.
    assert float(pld.get_delta_for_epsilon(50.0)) == pytest.approx(pmf.infinity_mass)


def test_both_directions_are_distinct_for_asymmetric_plds() -> None:
    pld = PLDS["subsampled-gaussian"][0]()
    remove, add = pmfs_from_pld(pld)
    deltas = [delta_from_pmfs((p,), 2.0) for p in (remove, add)]
    assert deltas[0] != deltas[1]
    assert max(deltas) == pytest.approx(float(pld.get_delta_for_epsilon(2.0)), rel=1e-9)


def test_a_pld_with_nan_masses_is_refused() -> None:
    """NaN compares false everywhere, so μ would read 0: the curve must refuse it."""
    from dp_accounting.pld import pld_pmf

    pmf = pld_pmf.DensePLDPmf(1e-2, -2, np.array([0.25, np.nan, 0.25, 0.25, 0.25]), 0.0, True)
    with pytest.raises(ValueError, match="non-finite"):
        pmfs_from_pld(plds.PrivacyLossDistribution(pmf))
