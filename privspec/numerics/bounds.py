"""Cheap sound bounds computed beside the numerical accounting, from each release alone.

Every release is bounded by a closed form that holds for its exact trade-off curve:

* a Gaussian release with shift Δ and noise σ is μ-GDP with μ = Δ/σ;
* an ε-DP release (pure DP, Laplace with ε = Δ/b, discrete Laplace, randomized response)
  has a curve at least f_ε, the curve of randomized response with ε (Kairouz, Oh &
  Viswanath 2015), which lies above G_μ with μ = 2Φ⁻¹(e^ε/(1 + e^ε)): G_μ is convex and
  meets f_ε's kink at α = β = 1/(1 + e^ε), so it stays below both of f_ε's segments;
* sampling a release (Poisson or a fixed-size batch) only raises its curve, so the
  unsampled release bounds it.

μ-GDP releases compose to √Σμᵢ²-GDP (Dong, Roth & Su 2022, Cor. 3.3) and ε-DP ones to
(Σεᵢ)-DP (basic composition).  For a unit of k records accounted by group privacy on
the whole curve, the whole mechanism's bounds hold as kμ and kε (``Bound.for_group``).
A report never prints a figure looser than these.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass

from scipy.special import ndtri_exp

from privspec.spec import events as ev

#: Below this ε, μ(ε) is taken from its series (ndtri near 1/2 would lose digits).
_SERIES_BELOW = 1e-3
#: Relative margin added to μ(ε) computed with scipy (its error is a few ulps).
_ROUNDING_MARGIN = 1e-12


def mu_of_pure_epsilon(epsilon: float) -> float:
    """The smallest μ with G_μ ≤ f_ε: μ = 2Φ⁻¹(e^ε/(1 + e^ε)), rounded up.

    For small ε, with x = tanh(ε/2)/2 ≤ ε/4, 2Φ⁻¹(1/2 + x) = 2√(2π)(x + (π/3)x³ + …),
    at most √(2π)·(ε/2)·(1 + ε²)."""
    if epsilon <= 0:
        return 0.0
    if epsilon < _SERIES_BELOW:
        return math.sqrt(2 * math.pi) * (epsilon / 2) * (1 + epsilon * epsilon)
    log_tail = -epsilon - math.log1p(math.exp(-epsilon))  # log 1/(1 + e^ε), any ε
    return float(-2 * ndtri_exp(log_tail)) * (1 + _ROUNDING_MARGIN)


def gaussian_mu_squared(event: ev.GaussianEvent, replace_one: bool) -> float:
    """μ² = (Δ/σ)² of a Gaussian release, rounded up where it falls below double range
    (never to 0 for a release that reveals anything); ∞ without noise."""
    shift = event.shift(replace_one)
    mu = shift / event.sigma if event.sigma > 0 else math.inf
    squared = mu * mu
    if shift > 0 and squared < sys.float_info.min:  # subnormal or 0 (μ itself may be 0)
        squared = math.nextafter(squared, math.inf)
    return squared


@dataclass(frozen=True)
class Bound:
    """μ² of a μ-GDP bound and ε of an ε-DP bound (∞ where a release has none)."""

    mu_squared: float = 0.0
    epsilon: float = 0.0

    @property
    def mu(self) -> float:
        return math.sqrt(self.mu_squared)

    def __add__(self, other: Bound) -> Bound:
        return Bound(self.mu_squared + other.mu_squared, self.epsilon + other.epsilon)

    def times(self, count: int) -> Bound:
        return Bound(count * self.mu_squared if self.mu_squared else 0.0,
                     count * self.epsilon if self.epsilon else 0.0)

    def for_group(self, records: int) -> Bound:
        """The bounds for groups of ``records``: μ-GDP gives kμ-GDP and ε-DP kε-DP (Dong,
        Roth & Su 2022, Thm 2.14: G_μ's group curve is G_{kμ}, f_ε's is f_{kε})."""
        return Bound(records * records * self.mu_squared if self.mu_squared else 0.0,
                     records * self.epsilon if self.epsilon else 0.0)


NONE = Bound(math.inf, math.inf)


def _pure(epsilon: float) -> Bound:
    return Bound(mu_of_pure_epsilon(epsilon) ** 2, epsilon)


def bound_of(event: ev.Event, replace_one: bool) -> Bound:
    """The closed-form bounds of ``event`` under the spec's relation (``replace_one``)."""
    if isinstance(event, ev.ComposedEvent):
        total = Bound()
        for stage, repeat in event.stages:
            total += bound_of(stage, replace_one).times(repeat)
        return total
    if isinstance(event, ev.RepeatedEvent):
        return bound_of(event.event, replace_one).times(event.count)
    if isinstance(event, ev.SampledEvent):
        return bound_of(event.event, replace_one)
    if isinstance(event, ev.MixtureGaussianEvent):  # at least as private as its whole unit's
        return bound_of(event.whole, replace_one)
    if isinstance(event, ev.GaussianEvent):
        return Bound(gaussian_mu_squared(event, replace_one), math.inf)
    if isinstance(event, ev.RandomAllocationEvent):  # no amplification: one step in full
        return Bound(gaussian_mu_squared(event.step, replace_one), math.inf)
    if isinstance(event, ev.TruncatedPoissonEvent):
        # Truncation may swap another record into the batch: sensitivity 2 clipping norms
        # (1 when no batch can be cut).
        shift = 1.0 if event.truncated_batch >= event.dataset_size else 2.0
        return Bound(gaussian_mu_squared(ev.GaussianEvent(event.sigma, shift), False), math.inf)
    if isinstance(event, ev.PureDPEvent):
        return _pure(event.epsilon)
    if isinstance(event, ev.ApproximateDPEvent):
        return _pure(event.epsilon) if event.delta == 0 else NONE
    if isinstance(event, ev.LaplaceEvent):
        return _pure(event.sensitivity / event.scale)
    if isinstance(event, ev.DiscreteLaplaceEvent):
        return _pure(event.parameter * event.sensitivity)
    if isinstance(event, ev.RandomizedResponseEvent):
        return _pure(event.loss) if math.isfinite(event.loss) else NONE
    return NONE  # the discrete Gaussian: no closed form used
