"""ε(δ) from the curve's tail sums against dp-accounting's own get_epsilon_for_delta."""

from __future__ import annotations

import math

import pytest
from dp_accounting.pld import common
from dp_accounting.pld import privacy_loss_distribution as plds

from privspec.numerics.curve import curve_from_pld, epsilon_for_delta

CASES = {
    "gaussian": lambda: plds.from_gaussian_mechanism(1.0, use_connect_dots=True),
    "laplace": lambda: plds.from_laplace_mechanism(1.0, use_connect_dots=True),
    "epsilon-delta": lambda: plds.from_privacy_parameters(
        common.DifferentialPrivacyParameters(1.0, 1e-6)),
    "randomized-response": lambda: plds.from_randomized_response(0.3, 2),
    "subsampled": lambda: plds.from_gaussian_mechanism(
        0.8, sampling_prob=0.001, use_connect_dots=True,
        value_discretization_interval=1e-3).self_compose(1000),
}
DELTAS = [0.9, 0.5, 0.1, 1e-3, 1e-5, 1e-6, 1e-9, 1e-12, 1e-20]


@pytest.mark.parametrize("name", sorted(CASES))
def test_epsilon_matches_the_accountant(name: str) -> None:
    pld = CASES[name]()
    curve = curve_from_pld(pld)
    for delta in DELTAS:
        ours = epsilon_for_delta(curve.points, delta)
        theirs = float(pld.get_epsilon_for_delta(delta))
        if math.isinf(theirs):
            assert math.isinf(ours)
            continue
        # Never smaller than the accountant's (that would flatter the mechanism) ...
        assert ours >= theirs * (1 - 1e-9) - 1e-12  # up to summation-order rounding
        # ... and the same wherever δ is above the FFT's noise floor.
        if delta >= 1e-6:
            assert ours == pytest.approx(theirs, rel=1e-6, abs=1e-12)
        else:
            assert ours == pytest.approx(theirs, rel=2e-2)
