"""Operational risk from a trade-off curve f: what an attacker who knows every other
record can achieve (docs/risk.md derives each bound).

Each bound holds for any attack and comes from f alone:

* membership: the best TPR at FPR α is 1 − f(α); the best advantage TPR − FPR is
  1 − min_α (α + f(α));
* membership with base rate π (a prior probability π that the record is in): the best
  accuracy is 1 − min_α [(1 − π)α + π f(α)], and precision at FPR α is
  π(1 − f(α)) / (π(1 − f(α)) + (1 − π)α);
* attribute inference among k equally likely values, re-identification among N
  candidates, or any reconstruction whose baseline success (a guess without the
  output) is κ: success at most 1 − f(κ) with κ = 1/k, 1/N or the stated baseline
  (Kulynych et al., "Unifying re-identification, attribute inference, and data
  reconstruction risks in differential privacy", NeurIPS 2025, Thm 3.2; Hayes,
  Mahloujifar & Balle 2023 for reconstruction).

The same bounds under μ-GDP use G_μ (1 − G_μ(κ) = Φ(Φ⁻¹(κ) + μ)), and under (ε, δ)-DP
the curve f_{ε,δ}(α) = max(0, 1 − δ − e^ε α, e^{−ε}(1 − δ − α)).  On a piecewise-linear
curve they are exact: 1 − f(κ) interpolates between vertices, and a linear function is
smallest at a vertex.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from scipy.special import ndtr

from privspec.numerics.curve import TradeoffCurve
from privspec.numerics.gdp import gaussian_tpr


class RiskCurve(Protocol):
    """What the bounds need of a trade-off curve."""

    def success(self, kappa: float) -> float:
        """1 − f(κ): the best TPR at FPR κ, or success against a baseline κ."""

    def least_error(self, weight_alpha: float, weight_beta: float) -> float:
        """min over α of a·α + b·f(α): the Bayes error of the best test with priors a, b."""


@dataclass(frozen=True)
class ExactCurve:
    """A mechanism's own piecewise-linear curve (already widened towards the attacker by
    its composition's error bound)."""

    curve: TradeoffCurve

    def success(self, kappa: float) -> float:
        return min(1.0, float(self.curve.tpr_at(kappa)))

    def least_error(self, weight_alpha: float, weight_beta: float) -> float:
        values = weight_alpha * self.curve.alpha + weight_beta * self.curve.beta
        return max(0.0, float(np.min(values)))


@dataclass(frozen=True)
class GaussianCurve:
    """G_μ, less the floor τ under which μ-GDP is claimed (f ≥ G_μ − τ)."""

    mu: float
    floor: float = 0.0

    def success(self, kappa: float) -> float:
        return min(1.0, float(gaussian_tpr(kappa, self.mu)) + self.floor)

    def least_error(self, weight_alpha: float, weight_beta: float) -> float:
        """At 1 − α = Φ(z) with φ(z − μ)/φ(z) = a/b, i.e. z = (log(a/b) + μ²/2)/μ."""
        a, b, mu = weight_alpha, weight_beta, self.mu
        if mu <= 0:
            return min(a, b)
        z = (math.log(a / b) + mu * mu / 2) / mu
        value = a * float(ndtr(-z)) + b * float(ndtr(z - mu))
        return max(0.0, value - b * self.floor)


@dataclass(frozen=True)
class EpsilonDeltaCurve:
    """f_{ε,δ}(α) = max(0, 1 − δ − e^ε α, e^{−ε}(1 − δ − α)) (Kairouz et al. 2015); ε = ∞
    (an unbounded ε(δ)) bounds nothing."""

    epsilon: float
    delta: float

    def success(self, kappa: float) -> float:
        if not math.isfinite(self.epsilon):
            return 1.0
        # min(1, δ + e^ε κ, 1 − e^{−ε}(1 − δ − κ)), e^ε κ kept from overflowing
        direct = self.delta + math.exp(min(self.epsilon + math.log(kappa), 1.0))
        other = 1 - math.exp(-self.epsilon) * (1 - self.delta - kappa)
        return min(1.0, direct, other)

    def least_error(self, weight_alpha: float, weight_beta: float) -> float:
        if not math.isfinite(self.epsilon):
            return 0.0
        a, b, keep = weight_alpha, weight_beta, 1 - self.delta
        # where the two lines meet, α = β = (1 − δ)/(1 + e^ε), without overflow at any ε
        kink = keep * math.exp(-float(np.logaddexp(0.0, self.epsilon)))
        return max(0.0, min(b * keep, (a + b) * kink, a * keep))


def best_accuracy(curve: RiskCurve, base_rate: float) -> float:
    """The best membership attack's accuracy when the record is in with probability π."""
    return min(1.0, 1 - curve.least_error(1 - base_rate, base_rate))


def precision(curve: RiskCurve, base_rate: float, fpr: float) -> float:
    """The best precision (positive predictive value) at FPR α with base rate π."""
    tpr = curve.success(fpr)
    found = base_rate * tpr
    return found / (found + (1 - base_rate) * fpr) if found > 0 else 0.0
