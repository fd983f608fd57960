"""What a mechanism releases, as data: the events the numerics account.

After dp-accounting's ``DpEvent`` algebra: each mechanism kind turns its validated
fields into these (defaults resolved once, in the kind's module), and
``privspec.numerics.accounting`` accounts each event type.  A new kind that releases
what an existing event describes needs no numerical code.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, TypeAlias


@dataclass(frozen=True)
class GaussianEvent:
    """One release with N(0, σ²) noise.  ``clipped``: σ is a noise multiplier z and one
    record moves the released sum by one clipping norm (add-or-remove) or two
    (replace-one); otherwise ``sensitivity`` Δ holds under the spec's relation."""

    sigma: float
    sensitivity: float = 1.0
    clipped: bool = False

    def shift(self, replace_one: bool) -> float:
        """How far one record moves the released value: one clipping norm under
        add-or-remove and two under replace-one for clipped sums; Δ otherwise."""
        return 2.0 * self.sensitivity if self.clipped and replace_one else self.sensitivity


@dataclass(frozen=True)
class LaplaceEvent:
    """One release with Laplace noise of scale b, L1 sensitivity Δ."""

    scale: float
    sensitivity: float


@dataclass(frozen=True)
class DiscreteGaussianEvent:
    """One release of an integer query with discrete Gaussian noise of scale σ."""

    sigma: float
    sensitivity: int


@dataclass(frozen=True)
class DiscreteLaplaceEvent:
    """One release with P(noise = k) ∝ exp(−parameter·|k|)."""

    parameter: float
    sensitivity: int


@dataclass(frozen=True)
class RandomizedResponseEvent:
    """k-ary randomized response: the true answer is replaced by a uniformly random one
    with probability ``noise`` (dp-accounting's parameterisation); ``epsilon``, its
    privacy loss, when the spec gives it (``noise`` underflows to 0 from ε ≈ 745)."""

    noise: float
    categories: int
    epsilon: float | None = None

    @property
    def loss(self) -> float:
        """Its privacy loss: the true answer against the replacement's,
        log(1 + (1 − noise)/(noise/k)) (∞ without noise)."""
        if self.epsilon is not None:
            return self.epsilon
        share = self.noise / self.categories
        return math.log1p((1 - self.noise) / share) if share > 0 else math.inf


@dataclass(frozen=True)
class PureDPEvent:
    """Any ε-DP release, accounted by its worst case."""

    epsilon: float


@dataclass(frozen=True)
class ApproximateDPEvent:
    """Any (ε, δ)-DP release, accounted by its worst case."""

    epsilon: float
    delta: float


@dataclass(frozen=True)
class SampledEvent:
    """``event`` run once on a batch: Poisson-sampled with rate q, or of a fixed size
    (a fraction q of the dataset) sampled without replacement."""

    event: Event
    rate: float
    scheme: Literal["poisson", "fixed-size"]


@dataclass(frozen=True)
class MixtureGaussianEvent:
    """One Gaussian release (σ, ``sensitivity`` Δ a record) on a Poisson-sampled batch
    (rate q) where one unit holds ``records`` k records: Binomial(k, q) of them are in
    the batch, so the release is a mixture of Gaussians shifted by j·Δ, j = 0…k, with
    binomial weights (Ganesh 2024, arXiv:2401.10294, Thm 3.1); add-or-remove only."""

    sigma: float
    sensitivity: float
    rate: float
    records: int

    @property
    def whole(self) -> GaussianEvent:
        """The release with every record of the unit in the batch (shift k·Δ), whose
        guarantee the mixture keeps: hockey-stick divergences are convex in the mixture,
        and each component's (shift j·Δ ≤ k·Δ) is at most this one's."""
        return GaussianEvent(self.sigma, self.records * self.sensitivity)


@dataclass(frozen=True)
class TruncatedPoissonEvent:
    """One DP-SGD step (noise multiplier ``sigma``) on a Poisson-sampled batch (rate q of
    ``dataset_size`` records) of which at most ``truncated_batch`` records, a random
    subset, are kept: dp-accounting's ``TruncatedSubsampledGaussianDpEvent``, under
    zero-out neighbours (McKenna et al. 2025, arXiv:2508.15089)."""

    sigma: float
    rate: float
    dataset_size: int
    truncated_batch: int


@dataclass(frozen=True)
class RandomAllocationEvent:
    """One epoch of DP-SGD with random allocation ("balls in bins"): ``steps`` Gaussian
    steps (noise multiplier ``sigma``, clipping norm 1), each record in exactly one of
    them, chosen uniformly at random (Chua et al. 2025, arXiv:2412.16802)."""

    sigma: float
    steps: int

    @property
    def step(self) -> GaussianEvent:
        """One step with the record in it: what the epoch releases about it at most."""
        return GaussianEvent(self.sigma, 1.0, clipped=True)


@dataclass(frozen=True)
class RepeatedEvent:
    """``event`` run ``count`` times on the same dataset."""

    event: Event
    count: int


@dataclass(frozen=True)
class ComposedEvent:
    """Stages run one after another on the same dataset, each ``(event, repeat)``."""

    stages: tuple[tuple[Event, int], ...]


Event: TypeAlias = (GaussianEvent | LaplaceEvent | DiscreteGaussianEvent | DiscreteLaplaceEvent
                    | RandomizedResponseEvent | PureDPEvent | ApproximateDPEvent | SampledEvent
                    | MixtureGaussianEvent | TruncatedPoissonEvent | RandomAllocationEvent
                    | RepeatedEvent | ComposedEvent)
