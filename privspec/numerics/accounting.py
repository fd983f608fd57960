"""Stage 2: lower a validated mechanism tree to its releases and compose them.

Every single release becomes dp-accounting's pessimistic, connect-the-dots
privacy-loss distribution on one shared discretization interval (MATH.md §6); the
releases, each with how often it runs, are composed once by ``composition.compose``.
Exact algebra is used where it is exact: plain (unsampled) Gaussian releases merge into
a single Gaussian with μ² = Σ (Δᵢ/σᵢ)² (Dong, Roth & Su, Cor. 3.3), and equal releases
are merged by their PMFs, so repeats and phases are counts, not compositions.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import numpy as np
from dp_accounting import privacy_accountant
from dp_accounting.pld import common as pld_common
from dp_accounting.pld import pld_pmf
from dp_accounting.pld import privacy_loss_distribution as plds

from privspec.numerics.composition import TARGET_RELATIVE_ERROR, compose
from privspec.numerics.curve import LossPMF, delta_for_epsilons, pmfs_from_pld, points_from_pmf
from privspec.numerics.portable_pld import (
    LOG_TAIL_MASS,
    discrete_gaussian_pld,
    gaussian_pld,
    laplace_pld,
)
from privspec.spec import models as s

#: dp-accounting ships no type hints; a PrivacyLossDistribution is Any to the checker.
PLD: TypeAlias = Any
ReplaceOne = privacy_accountant.NeighboringRelation.REPLACE_ONE

#: Tail mass a composition may move to +∞ (at most; the floor may ask for less).
TAIL_MASS_TRUNCATION = 1e-15


#: Relative error aimed at for a stage's own composition: it only gives the stage's μ,
#: printed to three digits (any error reached is still added towards the attacker).
STAGE_TARGET = 1e-4


#: Sampling rates closer to 1 than this are accounted as 1 (no amplification).
RATE_ONE_TOLERANCE = 1e-9


def accountable_rate(rate: float) -> float:
    """The sampling rate to account: 1 when within ``RATE_ONE_TOLERANCE`` of it.

    dp-accounting's subsampled privacy losses cannot resolve 1 − q at double precision
    (they fail near q = 1 − 10⁻¹²), and subsampling only helps, so accounting such a rate
    as 1 is pessimistic by an amount of order 1 − q.
    """
    return 1.0 if rate > 1.0 - RATE_ONE_TOLERANCE else rate


def tail_mass_truncation(spec: s.Spec) -> float:
    """Per-composition truncation, small enough that all of them together stay a tenth
    of the floor τ: each one moves its mass to +∞, and mass at +∞ above τ would leave
    no finite μ (MATH.md §2)."""
    operations = 2
    for _, kind, fields in s.walk(spec.mechanism):
        operations += 1
        if kind == "compose":  # a repeated stage self-composes, at any depth
            operations += sum(stage.repeat > 1 for stage in fields.compose)
    return min(TAIL_MASS_TRUNCATION, spec.accounting.floor / (10 * operations))


#: One release's PMFs (one if symmetric, else remove and add) and how often it runs.
Release: TypeAlias = tuple[tuple[LossPMF, ...], int]


def _fingerprint(pmfs: tuple[LossPMF, ...]) -> str:
    """Equal PMFs, equal fingerprint: releases are merged by what they are, whichever
    kind of spec wrote them (a DP-SGD step and a Poisson-sampled Gaussian alike)."""
    digest = hashlib.sha256()
    for pmf in pmfs:
        digest.update(repr((pmf.grid, pmf.infinity_mass, pmf.probs.size)).encode())
        digest.update(np.ascontiguousarray(pmf.probs).tobytes())
    return digest.hexdigest()


@dataclass
class _Lowered:
    """A partly composed mechanism: Gaussian μ² kept exact, every other release as its
    PMFs with a count.  Equal releases are merged, so however a run is written (one
    stage, phases, ``repeat``) it becomes the same releases and the same computation."""

    gaussian_mu_squared: float = 0.0
    releases: dict[str, Release] = field(default_factory=dict)

    def add(self, other: _Lowered, times: int = 1) -> None:
        """Compose ``times`` copies of ``other`` into this one."""
        self.gaussian_mu_squared += times * other.gaussian_mu_squared
        for key, (pmfs, count) in other.releases.items():
            previous = self.releases.get(key, (pmfs, 0))[1]
            self.releases[key] = (pmfs, previous + times * count)

    def repeated(self, times: int) -> _Lowered:
        """``times`` runs of this: μ² and counts scale exactly."""
        out = _Lowered()
        out.add(self, times)
        return out


@dataclass(frozen=True)
class StageAccount:
    """One top-level stage on its own: an exact μ when it is all plain Gaussians,
    otherwise its composed PMFs."""

    exact_mu: float | None
    pmfs: tuple[LossPMF, ...] | None


@dataclass(frozen=True)
class Accounted:
    """The whole mechanism's composed PMFs, and each top-level stage's own accounting."""

    pmfs: tuple[LossPMF, ...]
    stages: tuple[StageAccount, ...]
    truncation: float  # the tail mass each composition may move to +∞


def pmfs_from_spec(spec: s.Spec) -> tuple[LossPMF, ...]:
    """The composed PMFs of the whole mechanism under the spec's relation."""
    return account(spec).pmfs


def account(spec: s.Spec) -> Accounted:
    """Lower the mechanism; for a composition, keep each top-level stage's part.

    The stages' parts are composed into the whole (Gaussian μ²'s summed exactly),
    so reporting what each stage adds costs no extra lowering.
    """
    lowering = _Lowering(spec.neighbouring, spec.accounting.discretization,
                         tail_mass_truncation(spec))
    block = spec.mechanism.block
    if not isinstance(block, s.ComposeNode):
        return Accounted(pmfs=lowering.finish(lowering.lower(spec.mechanism)), stages=(),
                         truncation=lowering.truncation)
    # Identical stages (same mechanism, same repeat) share their StageAccount; a single
    # stage needs none (the report names what each of several stages adds).
    keys = [f"{stage.repeat}:{stage.mechanism.model_dump_json()}" for stage in block.compose]
    accounts: dict[str, StageAccount] = {}
    total = _Lowered()
    for key, stage in zip(keys, block.compose, strict=True):
        part = lowering.lower(stage.mechanism).repeated(stage.repeat)
        total.add(part)
        if key not in accounts and len(keys) > 1:
            accounts[key] = (StageAccount(math.sqrt(part.gaussian_mu_squared), None)
                             if not part.releases
                             else StageAccount(None, lowering.finish(part, STAGE_TARGET)))
    return Accounted(pmfs=lowering.finish(total),
                     stages=tuple(accounts[key] for key in keys) if accounts else (),
                     truncation=lowering.truncation)


class _Lowering:
    """Recursive lowering with one relation and one discretization interval."""

    def __init__(self, relation: str, discretization: float,
                 truncation: float = TAIL_MASS_TRUNCATION) -> None:
        self.replace_one = relation == "replace-one"
        self.h = discretization
        self.truncation = truncation
        # Each Gaussian release may cut tails of at most this (log) mass to +∞: a
        # millionth of the composition's budget, so that even a million releases stay
        # within it (dp-accounting's e⁻⁵⁰ where that is smaller).
        self.log_tail_mass = min(LOG_TAIL_MASS, math.log(truncation) - math.log(1e6))
        self._lowered: dict[str, _Lowered] = {}  # equal mechanisms are lowered once

    # -- composition -------------------------------------------------------

    def releases(self, lowered: _Lowered) -> list[Release]:
        """Every release of ``lowered`` with its count, the exact Gaussian part as one
        Gaussian release (σ = 1/μ)."""
        releases = list(lowered.releases.values())
        if lowered.gaussian_mu_squared > 0:
            gaussian = gaussian_pld(1.0 / math.sqrt(lowered.gaussian_mu_squared),
                                    discretization=self.h, log_tail_mass=self.log_tail_mass)
            releases.insert(0, (pmfs_from_pld(gaussian), 1))
        if not releases:
            raise ValueError("a mechanism with no parts")
        return releases

    def finish(self, lowered: _Lowered, target: float = TARGET_RELATIVE_ERROR
               ) -> tuple[LossPMF, ...]:
        """Compose the releases of ``lowered``: one PMF per direction, a symmetric
        release's one PMF serving both (``composition.compose``, aiming at ``target``)."""
        releases = self.releases(lowered)
        directions = max(len(pmfs) for pmfs, _ in releases)
        return tuple(
            compose([(pmfs[min(d, len(pmfs) - 1)], count) for pmfs, count in releases],
                    self.h, self.truncation, target)
            for d in range(directions))

    @staticmethod
    def _release(pld: PLD) -> _Lowered:
        """One release given by a dp-accounting PLD."""
        pmfs = pmfs_from_pld(pld)
        return _Lowered(releases={_fingerprint(pmfs): (pmfs, 1)})

    def lower(self, node: s._Node) -> _Lowered:
        """The releases of ``node`` (equal mechanisms are lowered once)."""
        key = node.model_dump_json()
        if key not in self._lowered:
            self._lowered[key] = self._lower(node)
        return self._lowered[key]

    def _lower(self, node: s._Node) -> _Lowered:
        block = node.block
        if isinstance(block, s.ComposeNode):
            return self._compose(block)
        if isinstance(block, s.Repeat):
            return self.lower(block.mechanism).repeated(block.times())
        if isinstance(block, s.DPSGD):
            rate = accountable_rate(block.rate())
            step = (_Lowered(gaussian_mu_squared=self._multiplier_mu(block.noise_multiplier) ** 2)
                    if rate == 1.0  # every record in every step: plain Gaussian releases
                    else self._release(self._poisson_gaussian(block.noise_multiplier, rate)))
            return step.repeated(block.times())
        if isinstance(block, (s.PoissonSampled, s.FixedSizeSampled)):
            rate = accountable_rate(block.rate())
            if rate == 1.0:  # the whole dataset: the release itself, exact algebra included
                return self.lower(block.mechanism)
            if isinstance(block, s.PoissonSampled):
                return self._release(self._additive(block.mechanism.block, rate))
            return self._release(self._fixed_size(block.mechanism.block, rate))
        if isinstance(block, s.Gaussian):
            return _Lowered(gaussian_mu_squared=self._gaussian_mu(block) ** 2)
        return self._release(self._single(block))

    def _compose(self, block: s.ComposeNode) -> _Lowered:
        """Heterogeneous composition: the stages' parts, equal ones merged."""
        out = _Lowered()
        for stage in block.compose:
            out.add(self.lower(stage.mechanism), stage.repeat)
        return out

    # -- single releases ---------------------------------------------------

    def _multiplier_mu(self, noise_multiplier: float) -> float:
        """μ of one release of a sum with noise σ = z·C: one record moves the sum by C
        (add-or-remove) or 2C (replace-one)."""
        return (2.0 if self.replace_one else 1.0) / noise_multiplier

    def _gaussian_mu(self, block: s.Gaussian) -> float:
        """μ = Δ/σ of one unsampled Gaussian release under the spec's relation."""
        if block.noise_multiplier is not None:
            return self._multiplier_mu(block.noise_multiplier)
        assert block.sigma is not None
        return (block.sensitivity or 1.0) / block.sigma

    def _poisson_gaussian(self, noise_multiplier: float, rate: float) -> PLD:
        """One Poisson-subsampled Gaussian step; one record moves the sum by one
        clipping norm (dp-accounting's REPLACE pair moves it by ±1 under replace-one)."""
        return gaussian_pld(noise_multiplier, sampling_prob=rate, discretization=self.h,
                            replace_one=self.replace_one, log_tail_mass=self.log_tail_mass)

    def _fixed_size(self, block: object, rate: float) -> PLD:
        """One release on a batch sampled without replacement, under replace-one.

        Dong, Roth & Su (Thm 4.2): if the release is f-DP under replace-one, the
        subsampled one is C_p(f) = min(f_p, f_p⁻¹)**-DP with f_p = p·f + (1 − p)·Id and
        p = batch/dataset.  f_p is the trade-off of (P, (1 − p)P + pQ), dp-accounting's
        add-or-remove subsampled pair shifted by the replace-one sensitivity, so the
        symmetrized curve of that PLD is C_p(f).  Composition must compose C_p(f), not
        the two directions separately (that would be optimistic: Lebeda et al. 2024),
        so the step becomes one symmetric PLD built from C_p(f)'s profile.
        """
        if isinstance(block, s.Gaussian):
            sigma, shift = ((block.noise_multiplier, 2.0) if block.noise_multiplier is not None
                            else (block.sigma, block.sensitivity or 1.0))
            assert sigma is not None  # validation requires σ or a noise multiplier
            step = gaussian_pld(sigma, sensitivity=shift, sampling_prob=rate,
                                discretization=self.h, log_tail_mass=self.log_tail_mass)
        else:
            step = self._single(block, rate)
        return self._symmetric(step)

    def _symmetric(self, pld: PLD) -> PLD:
        """A symmetric pessimistic PLD whose trade-off curve covers the symmetrized curve
        of ``pld`` (MATH.md §2).

        Connect-the-dots (Doroshenko et al. 2022, Alg. 1) turns the profile
        δ(ε) = max(δ_remove, δ_add) on the grid ε = 0, h, 2h, … into masses at the
        non-negative losses; the negative losses follow from symmetry, p(−y) = e^{−y} p(y)
        (the loss of a pair and of its mirror image), and the mass at 0 makes up the rest.
        Only the masses at y > 0 enter δ(ε) for ε ≥ 0, so the result has the same profile
        there, and it is the profile of a symmetric curve by construction.
        """
        points = tuple(points_from_pmf(p) for p in pmfs_from_pld(pld))
        largest = max((float(c.losses[0]) for c in points if c.losses.size), default=0.0)
        top = max(1, math.ceil(largest / self.h))
        grid = np.arange(0, top + 1)
        profile = delta_for_epsilons(points, grid * self.h)
        profile = np.clip(np.minimum.accumulate(profile), 0.0, 1.0)
        one_sided = pld_pmf.create_pmf_pessimistic_connect_dots(self.h, grid, profile)
        (side,) = pmfs_from_pld(plds.PrivacyLossDistribution(one_sided))
        above = side.losses > 0
        losses, masses = side.losses[above], side.probs[above]
        mirrored = np.exp(-losses) * masses
        centre = max(0.0, 1.0 - side.infinity_mass - float(masses.sum()) - float(mirrored.sum()))
        lowest = round(float(losses[-1]) / self.h) if losses.size else 0
        probs = np.concatenate((mirrored[::-1], [centre], masses))
        first = round(float(losses[0]) / self.h) if losses.size else 1
        if losses.size and first != 1:  # CTD keeps the grid; a gap would misplace masses
            raise ValueError("connect-the-dots support does not start at the first grid step")
        pmf = pld_pmf.DensePLDPmf(self.h, -lowest, probs, side.infinity_mass, True)
        return plds.PrivacyLossDistribution(pmf)

    def _additive(self, block: object, rate: float) -> PLD:
        """A Poisson-subsampled noise-adding release (validation limits the kinds)."""
        if isinstance(block, s.Gaussian):
            if block.noise_multiplier is not None:
                return self._poisson_gaussian(block.noise_multiplier, rate)
            assert block.sigma is not None
            return gaussian_pld(block.sigma, sensitivity=block.sensitivity or 1.0,
                                sampling_prob=rate, discretization=self.h,
                                log_tail_mass=self.log_tail_mass)
        return self._single(block, rate)

    def _single(self, block: object, rate: float = 1.0) -> PLD:
        """A release other than a Gaussian one (those are μ² or ``_additive``), sampled
        with probability ``rate`` where given."""
        h = self.h
        if isinstance(block, s.Laplace):
            scale = block.scale if block.scale is not None else block.sensitivity / (block.epsilon or 1)
            if rate == 1.0:
                return laplace_pld(scale, sensitivity=block.sensitivity, discretization=h)
            return plds.from_laplace_mechanism(
                scale, sensitivity=block.sensitivity, sampling_prob=rate,
                value_discretization_interval=h, use_connect_dots=True)
        if isinstance(block, s.DiscreteGaussian):
            sigma = block.sigma
            if sigma is None:
                assert block.rho is not None
                sigma = block.sensitivity / math.sqrt(2 * block.rho)
            if rate == 1.0:
                return discrete_gaussian_pld(sigma, sensitivity=block.sensitivity,
                                             discretization=h)
            return plds.from_discrete_gaussian_mechanism(
                sigma, sensitivity=block.sensitivity, sampling_prob=rate,
                value_discretization_interval=h, use_connect_dots=True)
        if isinstance(block, s.DiscreteLaplace):
            # P(k) ∝ exp(−parameter·|k|); ε = parameter · sensitivity.
            parameter = (1 / block.scale if block.scale is not None
                         else (block.epsilon or 1) / block.sensitivity)
            return plds.from_discrete_laplace_mechanism(
                parameter, sensitivity=block.sensitivity, sampling_prob=rate,
                value_discretization_interval=h, use_connect_dots=True)
        if isinstance(block, s.RandomizedResponse):
            k = block.categories
            if block.flip_probability is not None:
                noise = block.flip_probability * k / (k - 1)
            else:
                assert block.epsilon is not None
                noise = k / (math.exp(block.epsilon) + k - 1)
            return plds.from_randomized_response(
                noise, k, value_discretization_interval=h, neighboring_relation=ReplaceOne)
        if isinstance(block, s.PureDP):
            return plds.from_privacy_parameters(
                pld_common.DifferentialPrivacyParameters(block.epsilon, 0.0),
                value_discretization_interval=h)
        if isinstance(block, s.ApproximateDP):
            return plds.from_privacy_parameters(
                pld_common.DifferentialPrivacyParameters(block.epsilon, block.delta),
                value_discretization_interval=h)
        raise TypeError(f"no accounting for {type(block).__name__}")  # pragma: no cover
