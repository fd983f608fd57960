"""Gaussian privacy-loss distributions exactly as dp-accounting builds them, faster.

``dp_accounting.pld.privacy_loss_distribution.from_gaussian_mechanism`` (connect-the-
dots, pessimistic) evaluates the mechanism's hockey-stick profile δ(ε) on its ε grid by
inverting the privacy loss one ε at a time in a Python loop: for a DP-SGD step that loop
costs about a third of the whole 2,000-step composition.  Here the same inverse, the
same formulas in the same order, is applied to the whole grid at once; the PMF is then
made by dp-accounting's own connect-the-dots routine (Doroshenko et al. 2022, Alg. 1).
``tests/test_gaussian_pld.py`` checks that the result equals the library's.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from dp_accounting.pld import pld_pmf
from dp_accounting.pld import privacy_loss_distribution as plds
from dp_accounting.pld import privacy_loss_mechanism as plm


def _portable(function: np.ufunc, values: Any) -> Any:
    """``function`` (exp, expm1, log1p) evaluated in long double and rounded to double.

    numpy's double-precision exp and log have vector implementations chosen by the CPU
    (AVX-512, AVX2 + FMA, baseline) that differ in the last bit; composing thousands of
    steps amplifies such differences in a step's PMF into the fourth digit of a report.
    The long-double loops have one implementation everywhere, and are at least as
    accurate as the library's scalar ``math`` calls."""
    return np.asarray(function(np.asarray(values, dtype=np.longdouble)), dtype=np.float64)


class _GridGaussianLoss(plm.GaussianPrivacyLoss):  # type: ignore[misc]
    """dp-accounting's (subsampled) Gaussian privacy loss, with ``get_delta_for_epsilon``
    vectorised for the add and remove adjacencies."""

    def __init__(self, standard_deviation: float, **options: Any) -> None:
        super().__init__(standard_deviation, **options)
        self.variance = standard_deviation**2  # kept here: the library's copy is private

    def get_delta_for_epsilon(self, epsilon: Any) -> Any:
        """δ(ε) = μ_upper(X > x_ε) − e^ε μ_lower(X > x_ε) at x_ε = the inverse privacy loss,
        as the library computes it (``MonotonePrivacyLoss.get_delta_for_epsilon``)."""
        if (self.adjacency_type not in (plm.AdjacencyType.ADD, plm.AdjacencyType.REMOVE)
                or np.ndim(epsilon) == 0):
            return super().get_delta_for_epsilon(epsilon)
        epsilons = np.asarray(epsilon, dtype=float)
        q, add = self.sampling_prob, self.adjacency_type == plm.AdjacencyType.ADD
        deltas = np.zeros_like(epsilons)
        if q == 1.0:
            inverse = np.ones(epsilons.shape, dtype=bool)
            base_loss = epsilons  # the privacy loss without subsampling
        else:
            # Subsampling maps a loss ε to log(1 + (e^{±ε} − 1)/q) without it, computed as
            # the library's log_a_times_exp_b_plus_c(1/q, ±ε, 1 − 1/q); at the edge of
            # the support (math.isclose, as there) the inverse is ∓∞.
            # The library splits the grid at ±log1p(−q) and tests math.isclose against
            # ±log(1 − q): both are kept as they are there.
            split = -math.log1p(-q) if add else math.log1p(-q)
            edge = -math.log(1 - q) if add else math.log(1 - q)
            inverse = epsilons < split if add else epsilons > split
            if not add:
                deltas[~inverse] = -_portable(np.expm1, epsilons[~inverse])
            inverted = epsilons[inverse]
            at_edge = np.abs(inverted - edge) <= 1e-9 * np.maximum(np.abs(inverted), abs(edge))
            b = -inverted if add else inverted
            a, c = 1 / q, 1 - 1 / q
            with np.errstate(divide="ignore", invalid="ignore"):
                d = b + math.log(a)
                moved = np.where(b == 0, math.log(a + c),
                                 d + _portable(np.log1p, -_portable(np.exp, math.log(-c) - d)))
            moved[at_edge] = -math.inf  # e^{±ε} = 1 − q: no loss left to subsample
            base_loss = np.empty_like(epsilons)
            base_loss[inverse] = -moved if add else moved
        x = -0.5 * self.sensitivity - base_loss[inverse] * self.variance / self.sensitivity
        if add:
            x = self.sensitivity + x
        deltas[inverse] = (self.mu_upper_cdf(x)
                           - _portable(np.exp, epsilons[inverse] + self.mu_lower_log_cdf(x)))
        if not np.all(np.isfinite(deltas)):
            # Past what double precision resolves (q within ~1e-12 of 1) the library's
            # scalar loop raises; never let a NaN through: do exactly what it does.
            return super().get_delta_for_epsilon(epsilon)
        return np.clip(deltas, 0, 1)


def _connect_the_dots(loss: plm.GaussianPrivacyLoss, discretization: float) -> Any:
    """The pessimistic connect-the-dots PMF of a continuous monotone privacy loss, as
    ``privacy_loss_distribution._create_pld_pmf_from_monotone_privacy_loss`` makes it."""
    bounds = loss.connect_dots_bounds()
    upper = math.ceil(bounds.epsilon_upper / discretization)
    lower = math.floor(bounds.epsilon_lower / discretization)
    deltas = loss.get_delta_for_epsilon(np.arange(lower, upper + 1) * discretization)
    return pld_pmf.create_pmf_pessimistic_connect_dots_fixed_gap(discretization, lower, upper,
                                                                 deltas)


def gaussian_pld(standard_deviation: float, *, sensitivity: float = 1.0,
                 sampling_prob: float = 1.0, discretization: float,
                 replace_one: bool = False) -> Any:
    """``from_gaussian_mechanism(standard_deviation, sensitivity=…, sampling_prob=…,
    value_discretization_interval=discretization, use_connect_dots=True, …)``.

    Under add-or-remove the result is symmetric when nothing is subsampled and has a
    remove and an add direction otherwise; replace-one is left to the library.
    """
    if replace_one:
        return plds.from_gaussian_mechanism(
            standard_deviation, sensitivity=sensitivity, sampling_prob=sampling_prob,
            value_discretization_interval=discretization, use_connect_dots=True,
            neighboring_relation=plds.NeighborRel.REPLACE_ONE)

    def direction(adjacency: plm.AdjacencyType) -> Any:
        loss = _GridGaussianLoss(standard_deviation, sensitivity=sensitivity,
                                 sampling_prob=sampling_prob, adjacency_type=adjacency)
        return _connect_the_dots(loss, discretization)

    remove = direction(plm.AdjacencyType.REMOVE)
    if sampling_prob == 1.0:
        return plds.PrivacyLossDistribution(remove)
    return plds.PrivacyLossDistribution(remove, direction(plm.AdjacencyType.ADD))
