"""Stage 2: lower a validated mechanism tree to its releases and compose them.

Every single release becomes dp-accounting's pessimistic, connect-the-dots
privacy-loss distribution on one shared discretization interval (docs/math.md §6); the
releases, each with how often it runs, are composed once
(``composition.compose_directions``).
Exact algebra is used where it is exact: plain (unsampled) Gaussian releases merge into
a single Gaussian with μ² = Σ (Δᵢ/σᵢ)² (Dong, Roth & Su, Cor. 3.3), and equal releases
are merged by their PMFs, so repeats and phases are counts, not compositions.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, TypeAlias

import numpy as np
from dp_accounting.pld import pld_pmf
from dp_accounting.pld import privacy_loss_distribution as plds

from privspec.errors import EvaluationError, InternalError
from privspec.numerics import progress
from privspec.numerics.binomial import composed_pmf, two_point_runs
from privspec.numerics.bounds import (
    NONE,
    Bound,
    bound_of,
    mu_of_pure_epsilon,
)
from privspec.numerics.composition import TARGET_RELATIVE_ERROR, compose_directions
from privspec.numerics.cost import (
    HELD_BYTES_PER_POINT,
    SECONDS_PER_RELEASE,
    CostError,
    hold,
    reside,
    spend,
)
from privspec.numerics.curve import LossPMF, delta_for_epsilons, pmfs_from_pld, points_from_pmf
from privspec.numerics.portable_pld import (
    LOG_TAIL_MASS,
    MAX_LOSS,
    SECONDS_PER_NOISE_VALUE,
    SLOW_SECONDS_PER_NOISE_VALUE,
    check_discrete_release,
    check_discrete_support,
    discrete_gaussian_pld,
    discrete_loss_pld,
    gaussian_pld,
    laplace_pld,
    mixture_gaussian_pld,
    refuse_loss_above_range,
    sampled_laplace_pld,
    truncated_poisson_pld,
)
from privspec.numerics.random_allocation import epoch_pmfs
from privspec.spec import events as ev
from privspec.spec import models as s
from privspec.spec.group import grouped
from privspec.spec.kinds import KINDS
from privspec.spec.upward import root_up, times_up

#: dp-accounting ships no type hints; a PrivacyLossDistribution is Any to the checker.
PLD: TypeAlias = Any

#: Tail mass a composition may move to +∞ (at most; the floor may ask for less).
TAIL_MASS_TRUNCATION = 1e-15


#: Relative error aimed at for a stage's own composition: it only gives the stage's μ,
#: printed to three digits (any error reached is still added towards the attacker).
STAGE_TARGET = 1e-4


#: Most distinct top-level stages whose own μ is computed (one composition each).
MAX_STAGE_ACCOUNTS = 32


#: A Gaussian part weaker than this μ, beside other releases, is accounted as this μ
#: (pessimistic): its σ² would overflow, and its loss is far below any grid step.
WEAKEST_GAUSSIAN_MU = 1e-100


#: Sampling rates closer to 1 than this are accounted as 1 (no amplification).
RATE_ONE_TOLERANCE = 1e-9


#: The least mass above the grid a random-allocation epoch moves to +∞ (its grid's
#: top grows as the square root of log(1/mass)).
SMALLEST_EPOCH_TAIL = 1e-300


#: Sampling rates below this are accounted as this rate (pessimistic).
SMALLEST_RATE = 1e-12


def accountable_rate(rate: float) -> float:
    """The sampling rate to account: 1 when within ``RATE_ONE_TOLERANCE`` of it, and
    ``SMALLEST_RATE`` when below it.

    dp-accounting's subsampled privacy losses cannot resolve 1 − q at double precision
    (they fail near q = 1 − 10⁻¹²), nor 1 − 1/q near q = 10⁻¹⁶ (a domain error); a larger
    rate only weakens the guarantee (the sampled curve q·f + (1 − q)·Id falls as q
    grows), so either replacement is pessimistic, by an amount far below any grid step.
    """
    if rate > 1.0 - RATE_ONE_TOLERANCE:
        return 1.0
    return max(rate, SMALLEST_RATE)


def _sampling_rates(event: ev.Event) -> Iterator[float]:
    """The rate of every Poisson or fixed-size sampling in ``event``."""
    if isinstance(event, ev.ComposedEvent):
        for stage, _ in event.stages:
            yield from _sampling_rates(stage)
    elif isinstance(event, ev.RepeatedEvent):
        yield from _sampling_rates(event.event)
    elif isinstance(event, ev.SampledEvent):
        yield event.rate
        yield from _sampling_rates(event.event)
    elif isinstance(event, ev.MixtureGaussianEvent):
        yield event.rate


def raised_rate(event: ev.Event) -> float | None:
    """The smallest sampling rate in ``event`` that ``accountable_rate`` raises to
    ``SMALLEST_RATE``, or None when there is none."""
    low = [rate for rate in _sampling_rates(event) if rate < SMALLEST_RATE]
    return min(low) if low else None


def tail_mass_truncation(spec: s.Spec) -> float:
    """Per-composition truncation, small enough that all of them together stay a tenth
    of the floor τ: each one moves its mass to +∞, and mass at +∞ above τ would leave
    no finite μ (docs/math.md §2)."""
    operations = 2
    for _, kind, fields in s.walk(spec.mechanism):
        operations += 1
        if KINDS[kind].nesting == "stages":  # a repeated stage self-composes, at any depth
            operations += sum(stage.repeat > 1 for stage in fields)
    return min(TAIL_MASS_TRUNCATION, _group_floor(spec) / (10 * operations))


#: The smallest truncation a unit's group privacy asks of one record's accounting.
SMALLEST_GROUP_TRUNCATION = 1e-300


def _group_floor(spec: s.Spec) -> float:
    """The floor one record's accounting must meet, so that group privacy over k records
    (``s.group_iterations``) keeps the unit's mass at +∞ within the floor τ: g^{∘k}(0) =
    g^{∘(k−1)}(p∞), and one record's curve lies above G_μ of its closed-form μ, whose
    g^{∘(k−1)} at p is Φ(Φ⁻¹(p) + (k − 1)μ) ≤ τ/10 for p = Φ(Φ⁻¹(τ/10) − (k − 1)μ)
    (at least ``SMALLEST_GROUP_TRUNCATION``; without a closed form, τ^k)."""
    records, floor = s.group_iterations(spec), spec.accounting.floor
    if records == 1:
        return floor
    from scipy.special import ndtr, ndtri

    mu = bound_of(s.spec_event(spec), spec.neighbouring == "replace-one").mu
    wanted = (float(ndtr(ndtri(floor / 10) - (records - 1) * mu)) if math.isfinite(mu)
              else floor ** records)
    return max(SMALLEST_GROUP_TRUNCATION, min(floor, wanted))


def _lowering(spec: s.Spec) -> _Lowering:
    """The lowering of ``spec``: its relation, discretization and truncation, and where
    in the spec each event is written (for located refusals)."""
    lowering = _Lowering(spec.neighbouring, spec.accounting.discretization,
                         tail_mass_truncation(spec))
    # Truncations together may add at most a tenth of the floor to the mass at +∞.
    lowering.negligible_truncation = spec.accounting.floor / (
        10 * max(1, _truncated_runs(s.spec_event(spec))))
    parts = 0
    records = spec.records_per_unit if s.group_iterations(spec) == 1 else 1
    for path, kind, block in s.walk(spec.mechanism):
        event = grouped(KINDS[kind].event(block, s.event_of), records)
        lowering.paths.setdefault(event, ("mechanism", *path, kind))
        parts += 1
    # Each part of the mechanism is walked, lowered and described a few times over,
    # in Python: 12,000 stages take about a second whatever the grid.
    spend(parts * SECONDS_PER_PART, f"going through the mechanism's {parts:,} parts",
          fixed=True)
    reside(parts * BYTES_PER_PART)
    return lowering


#: Estimated seconds an evaluation spends per part of the mechanism (a stage, a kind),
#: and bytes its objects take (the model, events, descriptions: measured 3.3 KB a stage).
SECONDS_PER_PART, BYTES_PER_PART = 5e-5, 4096.0


def _poisson_step(event: ev.TruncatedPoissonEvent) -> ev.SampledEvent:
    """The same DP-SGD step on the Poisson sample, never cut."""
    return ev.SampledEvent(ev.GaussianEvent(event.sigma, 1.0, clipped=True), event.rate,
                           "poisson")


def _truncated_runs(event: ev.Event) -> int:
    """How many truncated-Poisson steps ``event`` runs in all."""
    if isinstance(event, ev.ComposedEvent):
        return sum(repeat * _truncated_runs(stage) for stage, repeat in event.stages)
    if isinstance(event, ev.RepeatedEvent):
        return event.count * _truncated_runs(event.event)
    if isinstance(event, ev.SampledEvent):
        return _truncated_runs(event.event)
    return 1 if isinstance(event, ev.TruncatedPoissonEvent | ev.RandomAllocationEvent) else 0


def _largest_loss(pmfs: tuple[LossPMF, ...]) -> float:
    """The largest finite privacy loss of a release (0 when it has none)."""
    return max((float(p.losses[-1]) for p in pmfs if p.losses.size), default=0.0)


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
    """A partly composed mechanism: its plain Gaussian releases as their exact μ = Δ/σ
    (rationals) with a count, composed exactly (``gaussian_mu``), every other release as
    its PMFs with a count.  Equal releases are merged and counts are integers, so however
    a run is written (one stage, phases, ``repeat``) it becomes the same releases and the
    same computation, to the bit."""

    gaussians: dict[Fraction, int] = field(default_factory=dict)
    releases: dict[str, Release] = field(default_factory=dict)

    def add(self, other: _Lowered, times: int = 1) -> None:
        """Compose ``times`` copies of ``other`` into this one."""
        for mu, count in other.gaussians.items():
            self.gaussians[mu] = self.gaussians.get(mu, 0) + times * count
        for key, (pmfs, count) in other.releases.items():
            previous = self.releases.get(key, (pmfs, 0))[1]
            self.releases[key] = (pmfs, previous + times * count)

    def repeated(self, times: int) -> _Lowered:
        """``times`` runs of this: counts scale exactly."""
        out = _Lowered()
        out.add(self, times)
        out.gaussian_mu()
        return out

    def gaussian_mu(self) -> float:
        """μ of the plain Gaussian releases composed, √(Σ count·μ²), rounded up: exact
        up to ``EXACT_GAUSSIANS`` distinct releases, beyond them each μ² first rounded up
        to a double (exact rationals of many σ grow without bound); refused (saying why)
        beyond ``MAX_GAUSSIAN_MU``."""
        exact = len(self.gaussians) <= EXACT_GAUSSIANS
        squared = sum((count * (mu * mu if exact else Fraction(_double_up(mu * mu)))
                       for mu, count in self.gaussians.items()), Fraction(0))
        if squared > Fraction(MAX_GAUSSIAN_MU) ** 2:
            _refuse_gaussian_range()
        return root_up(squared)


def _double_up(value: Fraction) -> float:
    """The least double at or above ``value`` (≥ 0, within double range)."""
    double = float(value)
    return math.nextafter(double, math.inf) if Fraction(double) < value else double


@dataclass(frozen=True)
class StageAccount:
    """One top-level stage on its own: an exact μ when it is all plain Gaussians,
    otherwise its composed PMFs (neither past ``MAX_STAGE_ACCOUNTS`` distinct stages)."""

    exact_mu: float | None
    pmfs: tuple[LossPMF, ...] | None


@dataclass(frozen=True)
class Accounted:
    """The whole mechanism's composed PMFs (none when ``exact_mu`` is given: a mechanism
    made only of plain Gaussian releases is exactly μ-GDP), and each top-level stage's
    own accounting."""

    pmfs: tuple[LossPMF, ...]
    stages: tuple[StageAccount, ...]
    truncation: float  # the tail mass each composition may move to +∞
    exact_mu: float | None = None
    #: (largest finite privacy loss, how often it runs) of each release other than the
    #: exact Gaussian part: how many grid steps its losses span.
    reach: tuple[tuple[float, int], ...] = ()
    #: The largest finite privacy loss any outcome of the whole mechanism has: the sum of
    #: each run's largest (the composed PMFs drop losses whose probability underflows,
    #: so their own largest can be far below it); ∞ when a release's PMF has mass at +∞.
    largest_loss: float = math.inf
    #: The smallest sampling rate accounted as ``SMALLEST_RATE`` (None: no rate was).
    raised_rate: float | None = None
    #: Closed-form μ-GDP and ε-DP bounds of the whole mechanism, release by release.
    bound: Bound = NONE
    #: How ``pmfs`` were found, in words, when exactly (no grid); None when numerically.
    exact_method: str | None = None
    #: k > 1 when ``pmfs``, ``stages`` and ``reach`` are one record's, and the unit of k
    #: records is accounted by group privacy on their curve (``numerics.group_privacy``);
    #: ``bound`` and ``largest_loss`` are the unit's.
    group: int = 1


#: The grid step aimed at, as a fraction of the smallest per-run spread of privacy loss
#: among the releases that matter: rounding then costs under 0.1 % of μ (measured: the
#: excess is about 0.075·(h/spread)² relative, e.g. 0.27 % for DP-SGD with z = 2,
#: q = 0.001 at h = 10⁻⁴ and 0.003 % at 10⁻⁵; about 0.1·(h/spread)² for sampled Laplace,
#: 0.116 % for q = 0.001 over 10,000 steps at h = 10⁻⁴, 0.03 % at the 5 × 10⁻⁵ chosen).
SPREAD_FRACTION = 0.1
#: The finest grid privspec chooses by itself (the spec allows 10⁻⁶ when asked).
FINEST_CHOSEN = 1e-5


def _spreads(event: ev.Event, replace_one: bool, times: int = 1) -> list[tuple[float, int]]:
    """(standard deviation of one run's privacy loss, runs) of each release, roughly:
    only to choose a grid, never a privacy claim (Poisson sampling at rate q scales a
    release's spread to about q·√χ², with χ² its χ²-divergence: e^{μ²} − 1 for a
    Gaussian, (2e^ε + e^{−2ε})/3 − 1 for a Laplace release of ε = Δ/b)."""
    if isinstance(event, ev.ComposedEvent):
        return [pair for stage, repeat in event.stages
                for pair in _spreads(stage, replace_one, times * repeat)]
    if isinstance(event, ev.RepeatedEvent):
        return _spreads(event.event, replace_one, times * event.count)
    if isinstance(event, ev.RandomAllocationEvent):  # about Poisson sampling's at 1/k
        sampled = ev.SampledEvent(event.step, 1.0 / event.steps, "poisson")
        return _spreads(sampled, replace_one, times * event.steps)
    if isinstance(event, ev.TruncatedPoissonEvent):  # about a Poisson-sampled step's
        return _spreads(_poisson_step(event), replace_one, times)
    if isinstance(event, ev.MixtureGaussianEvent):  # at least one record's sampled step
        one = ev.GaussianEvent(event.sigma, event.sensitivity)
        return _spreads(ev.SampledEvent(one, event.rate, "poisson"), replace_one, times)
    if isinstance(event, ev.SampledEvent):
        rate = accountable_rate(event.rate)
        laplace = _laplace_epsilon(event.event)
        if laplace is not None:  # its own χ², smaller than a Gaussian's of the same μ
            chi2 = (2 * math.exp(min(laplace, MAX_LOSS)) + math.exp(-2 * laplace)) / 3 - 1
            return [(rate * math.sqrt(chi2), times)]
        inner = _spreads(event.event, replace_one, times)
        return [(rate * math.sqrt(math.expm1(min(spread * spread, MAX_LOSS))), runs)
                for spread, runs in inner]
    if isinstance(event, ev.ApproximateDPEvent):  # its δ aside, an ε-DP release
        return [(mu_of_pure_epsilon(event.epsilon), times)]
    if isinstance(event, ev.DiscreteGaussianEvent):  # about a Gaussian's
        return [(event.sensitivity / event.sigma if event.sigma > 0 else math.inf, times)]
    return [(bound_of(event, replace_one).mu, times)]


def _laplace_epsilon(event: ev.Event) -> float | None:
    """ε = Δ/b of a (discrete) Laplace release, None for any other event."""
    if isinstance(event, ev.LaplaceEvent):
        return event.sensitivity / event.scale
    if isinstance(event, ev.DiscreteLaplaceEvent):
        return event.parameter * event.sensitivity
    return None


def chosen_discretization(spec: s.Spec) -> float:
    """The grid step for a spec that sets none: the default, or finer (down to
    ``FINEST_CHOSEN``) when a release that matters (at least 1 % of the total variance
    of the privacy loss) spreads its loss over fewer than ten default steps a run."""
    root = s.spec_event(spec)
    pairs = [(spread, runs) for spread, runs in _spreads(root, spec.neighbouring == "replace-one")
             if spread > 0 and math.isfinite(spread)]
    total = sum(runs * spread * spread for spread, runs in pairs)
    relevant = [spread for spread, runs in pairs if runs * spread * spread >= 0.01 * total]
    default = s.AccountingOptions().discretization
    if not relevant or two_point_runs(root) is not None:  # (accounted without a grid)
        return default
    want = SPREAD_FRACTION * min(relevant)
    if want >= default:
        return default
    exponent = math.floor(math.log10(want))
    step = max(scale * 10.0**exponent for scale in (1.0, 2.0, 5.0)
               if scale * 10.0**exponent <= want * (1 + 1e-12))
    return max(FINEST_CHOSEN, float(f"{step:.1g}"))


def pmfs_from_spec(spec: s.Spec) -> tuple[LossPMF, ...]:
    """The composed PMFs of the whole mechanism under the spec's relation (also for a
    mechanism that is exactly μ-GDP: the PMFs of its Gaussian); one record's when a
    unit's curve is iterated from them (``s.group_iterations``)."""
    lowering = _lowering(spec)
    return lowering.finish(lowering.lower(s.spec_event(spec)))


def closed_form_bound(spec: s.Spec) -> Bound:
    """The mechanism's closed-form μ-GDP and ε-DP bounds (``privspec.numerics.bounds``),
    for the unit."""
    bound = bound_of(s.spec_event(spec), spec.neighbouring == "replace-one")
    return bound.for_group(s.group_iterations(spec))


def account(spec: s.Spec) -> Accounted:
    """Lower the mechanism; for a composition, keep each top-level stage's part.

    The stages' parts are composed into the whole (Gaussian μ²'s summed exactly),
    so reporting what each stage adds costs no extra lowering.  Plain Gaussian releases
    only: μ = √Σ(Δᵢ/σᵢ)² exactly (Dong, Roth & Su, Cor. 3.3), and no PMF is built.
    A unit of k records whose mechanism has no form of its own for it
    (``s.group_iterations``): one record's accounting, ``group`` = k for its curve, and
    the unit's bounds.
    """
    return for_group(account_one_record(spec), s.group_iterations(spec))


def for_group(accounted: Accounted, records: int) -> Accounted:
    """One record's ``accounted`` (``account_one_record``) for a group of ``records``
    of them whose curve is iterated: ``group`` = ``records``, and the group's bounds."""
    if records == 1:
        return accounted
    return dataclasses.replace(
        accounted, group=records, bound=accounted.bound.for_group(records),
        largest_loss=records * accounted.largest_loss,
        exact_mu=None if accounted.exact_mu is None else times_up(records, accounted.exact_mu))


def account_one_record(spec: s.Spec) -> Accounted:
    """``account`` of one record's mechanism when a unit's curve is iterated (its
    truncation, ``tail_mass_truncation``, the unit's)."""
    lowering = _lowering(spec)
    root = s.spec_event(spec)
    bound = bound_of(root, lowering.replace_one)
    exact = _exactly_binomial(root, bound)
    if exact is not None:
        return exact

    def own(stage: ev.Event, repeat: int, each: bool) -> StageAccount:
        part = lowering.lower(stage).repeated(repeat)
        if not part.releases:
            return StageAccount(part.gaussian_mu(), None)
        return StageAccount(None, lowering.finish(part, STAGE_TARGET) if each else None)

    stages = _stage_accounts(root, own)
    if isinstance(root, ev.ComposedEvent):  # (each stage is lowered once, then cached)
        total = _Lowered()
        for stage, repeat in root.stages:
            total.add(lowering.lower(stage), repeat)
    else:
        total = lowering.lower(root)
    if not total.releases:
        return Accounted(pmfs=(), stages=stages, truncation=0.0,
                         exact_mu=total.gaussian_mu(), bound=bound)
    reach = tuple((_largest_loss(pmfs), count) for pmfs, count in total.releases.values())
    truncated = any(pmf.infinity_mass > 0 for pmfs, _ in total.releases.values() for pmf in pmfs)
    largest = math.inf if truncated else math.fsum(loss * count for loss, count in reach)
    return Accounted(pmfs=lowering.finish(total), stages=stages,
                     truncation=lowering.truncation, reach=reach, bound=bound,
                     largest_loss=largest, raised_rate=raised_rate(root))


def _stage_accounts(root: ev.Event, own: Callable[[ev.Event, int, bool], StageAccount]
                    ) -> tuple[StageAccount, ...]:
    """Each top-level stage's own accounting, ``own(stage, repeat, each)``, once per
    distinct stage (same mechanism, same repeat); none for a single stage (the report
    names what each of several stages adds).  ``each`` is False past
    ``MAX_STAGE_ACCOUNTS`` distinct stages: their own compositions are skipped."""
    if not isinstance(root, ev.ComposedEvent) or len(root.stages) < 2:
        return ()
    distinct = dict.fromkeys(root.stages)
    each = len(distinct) <= MAX_STAGE_ACCOUNTS
    accounts = {stage: own(*stage, each) for stage in distinct}
    return tuple(accounts[stage] for stage in root.stages)


#: How a mechanism of ε-DP worst cases is accounted without a grid.
BINOMIAL_METHOD = ("exact: k runs of an ε-DP (or (ε, δ)-DP) worst case have the privacy loss "
                   "of randomized response with ε run k times, (2j − k)ε with j binomial, "
                   "and for δ an infinite loss with probability 1 − (1 − δ)ᵏ (Kairouz, Oh "
                   "& Viswanath 2015, Thm 3.3)")


def _exactly_binomial(root: ev.Event, bound: Bound) -> Accounted | None:
    """The exact accounting of a mechanism made only of runs of one ε-DP (or (ε, δ)-DP)
    worst case (``binomial.composed_pmf``), each top-level stage's too; None otherwise."""
    runs = two_point_runs(root)
    # (A loss above MAX_LOSS is refused, where the spec writes it, by the lowering.)
    whole = None if runs is None or runs[0] > MAX_LOSS else composed_pmf(*runs)
    if runs is None or whole is None:
        return None
    epsilon, delta, _ = runs

    def own(stage: ev.Event, repeat: int, each: bool) -> StageAccount:
        stage_runs = two_point_runs(stage)  # a part of a two-point mechanism is one too
        assert stage_runs is not None
        pmf = composed_pmf(epsilon, delta, stage_runs[2] * repeat) if each else None
        return StageAccount(None, None if pmf is None else (_cut_above_range(pmf),))

    return Accounted(pmfs=(_cut_above_range(whole),), stages=_stage_accounts(root, own),
                     truncation=0.0, bound=bound, exact_method=BINOMIAL_METHOD,
                     largest_loss=math.inf if delta > 0 else runs[2] * epsilon)


def internal_failure(error: BaseException) -> str:
    """The words of a failure that is privspec's own (a bug), with its original message."""
    detail = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    return (f"privspec failed on this valid spec ({detail}). This is a bug in privspec: "
            "please report it with the spec; --debug shows the traceback")




def _cut_above_range(pmf: LossPMF) -> LossPMF:
    """``pmf`` with the mass of losses above ``MAX_LOSS`` moved to +∞ (pessimistic: a
    larger loss is never safer), so that e^{−loss} stays a double in the curve's sums."""
    over = pmf.losses > MAX_LOSS
    if not over.any():
        return pmf
    return dataclasses.replace(pmf, losses=pmf.losses[~over], probs=pmf.probs[~over],
                               infinity_mass=min(1.0, pmf.infinity_mass
                                                 + float(pmf.probs[over].sum())))


#: Below this μ = Δ/σ a Gaussian's sampling is not accounted (its μ² is below 10⁻³⁰⁰).
NEGLIGIBLE_GAUSSIAN_MU = 1e-150


def _negligible(event: ev.Event, replace_one: bool) -> bool:
    """A Gaussian release so weak that sampling it can be ignored at no visible cost."""
    return (isinstance(event, ev.GaussianEvent) and event.sigma > 0
            and event.shift(replace_one) / event.sigma < NEGLIGIBLE_GAUSSIAN_MU)


#: Largest μ of Gaussian releases privspec reports (μ² must stay a double).
MAX_GAUSSIAN_MU = 1e150
#: Plain Gaussian releases of at most this many distinct μ are composed exactly.
EXACT_GAUSSIANS = 64


def _refuse_gaussian_range() -> None:
    """Refuses plain Gaussian releases beyond ``MAX_GAUSSIAN_MU``, saying why."""
    raise EvaluationError(
        f"its Gaussian releases have μ = Δ/σ·√runs above {MAX_GAUSSIAN_MU:.0e}: an "
        "output that reveals the record outright, beyond what double precision holds; "
        "more noise (a larger σ, or a smaller sensitivity) brings it within range")


def _gaussian_ratio(event: ev.GaussianEvent, replace_one: bool) -> Fraction:
    """μ = Δ/σ of one Gaussian release, exactly; refused beyond ``MAX_GAUSSIAN_MU``
    (∞ without noise)."""
    shift = event.shift(replace_one)
    if shift > 0 and not (event.sigma > 0 and shift / event.sigma <= MAX_GAUSSIAN_MU):
        _refuse_gaussian_range()
    return Fraction(shift) / Fraction(event.sigma) if shift > 0 else Fraction(0)


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
        #: A truncated-Poisson step's truncation below this probability is taken as an
        #: infinite loss (``_truncated``).
        self.negligible_truncation = 0.0
        self._lowered: dict[ev.Event, _Lowered] = {}  # equal events are lowered once
        self.built = 0  # distinct releases built so far
        #: The spec path of each event written in the spec: refusals name it.
        self.paths: dict[ev.Event, tuple[str | int, ...]] = {}

    # -- composition -------------------------------------------------------

    def releases(self, lowered: _Lowered) -> list[Release]:
        """Every release of ``lowered`` with its count, the exact Gaussian part as one
        Gaussian release (σ = 1/μ, with μ at least ``WEAKEST_GAUSSIAN_MU``)."""
        releases = list(lowered.releases.values())
        if any(mu > 0 for mu in lowered.gaussians):
            mu = max(lowered.gaussian_mu(), WEAKEST_GAUSSIAN_MU)
            gaussian = gaussian_pld(1.0 / mu, discretization=self.h,
                                    log_tail_mass=self.log_tail_mass)
            releases.insert(0, (pmfs_from_pld(gaussian), 1))
        if not releases:
            raise ValueError("a mechanism with no parts")
        return releases

    def finish(self, lowered: _Lowered, target: float = TARGET_RELATIVE_ERROR
               ) -> tuple[LossPMF, ...]:
        """Compose the releases of ``lowered``: one PMF per direction, a symmetric
        release's one PMF serving both (``composition.compose_directions``, aiming at
        ``target``)."""
        releases = self.releases(lowered)
        directions = max(len(pmfs) for pmfs, _ in releases)
        return compose_directions(
            [[(pmfs[min(d, len(pmfs) - 1)], count) for pmfs, count in releases]
             for d in range(directions)], self.h, self.truncation, target)

    def _release(self, pld: PLD) -> _Lowered:
        """One release given by a dp-accounting PLD.  All distinct releases are held
        until they are composed: their memory counts against the budget together."""
        pmfs = tuple(_cut_above_range(pmf) for pmf in pmfs_from_pld(pld))
        spend(SECONDS_PER_RELEASE, "building the releases", fixed=True)
        self.built += 1
        progress.step(f"building releases at h = {self.h:g}", self.built, len(self.paths))
        hold(sum(HELD_BYTES_PER_POINT * p.probs.size for p in pmfs), self.built,
             len(self.paths))
        return _Lowered(releases={_fingerprint(pmfs): (pmfs, 1)})

    def lower(self, event: ev.Event) -> _Lowered:
        """The releases of ``event`` (equal events are lowered once).  A failure is
        located at the innermost mechanism of the spec that it happened in."""
        if event not in self._lowered:
            try:
                self._lowered[event] = self._lower(event)
            except EvaluationError as error:
                if error.path is None:
                    error.path = self.paths.get(event)
                raise
            except MemoryError:
                # More than the estimates foresaw: a coarser grid needs less (said in
                # the report), as for any other cost above the budget.
                raise CostError("building this release ran out of memory", math.inf, 2.0,
                                self.paths.get(event)) from None
            except (ArithmeticError, ValueError, IndexError) as error:
                raise InternalError(internal_failure(error), self.paths.get(event)) from error
        return self._lowered[event]

    def _lower(self, event: ev.Event) -> _Lowered:
        if isinstance(event, ev.ComposedEvent):
            out = _Lowered()  # equal stages' releases merge
            for stage, repeat in event.stages:
                out.add(self.lower(stage), repeat)
            return out
        if isinstance(event, ev.RepeatedEvent):
            return self.lower(event.event).repeated(event.count)
        if isinstance(event, ev.SampledEvent):
            rate = accountable_rate(event.rate)
            if rate == 1.0 or _negligible(event.event, self.replace_one):
                # the whole dataset, or a Gaussian too weak for its sampled PLD (σ² would
                # overflow): the release itself, exact algebra included (sampling only helps)
                return self.lower(event.event)
            if event.scheme == "poisson":
                return self._release(self._single(event.event, rate))
            return self._release(self._fixed_size(event.event, rate))
        if isinstance(event, ev.GaussianEvent):
            return _Lowered(gaussians={_gaussian_ratio(event, self.replace_one): 1})
        if isinstance(event, ev.TruncatedPoissonEvent):
            return self._truncated(event)
        if isinstance(event, ev.MixtureGaussianEvent):
            return self._mixture(event)
        if isinstance(event, ev.RandomAllocationEvent):
            return self._random_allocation(event)
        return self._release(self._single(event))

    def _random_allocation(self, event: ev.RandomAllocationEvent) -> _Lowered:
        """One epoch of random allocation: the dominating pair of Chua et al. 2025,
        accounted numerically and pessimistically (``numerics.random_allocation``), its
        terms' tail above the grid at +∞ within ``negligible_truncation``; under
        replace-one (no pair is proved for it) one step with the record in it, in full."""
        if self.replace_one or event.steps == 1:
            return self.lower(event.step)
        self._refuse_sampled_beyond_range(1.0 / event.sigma, 1.0 / event.steps)
        # each direction's mass at +∞ (the terms' tail, the composition's truncation)
        # stays within the share of the floor each epoch has
        tail = max(self.negligible_truncation, SMALLEST_EPOCH_TAIL)
        pmfs = epoch_pmfs(event.sigma, event.steps, self.h, tail / 4, tail / 2)
        spend(SECONDS_PER_RELEASE, "building the releases", fixed=True)
        self.built += 1
        hold(sum(HELD_BYTES_PER_POINT * p.probs.size for p in pmfs), self.built,
             len(self.paths))
        return _Lowered(releases={_fingerprint(pmfs): (pmfs, 1)})

    def _mixture(self, event: ev.MixtureGaussianEvent) -> _Lowered:
        """One Poisson-sampled Gaussian release on which a unit has k records: the whole
        unit's Gaussian (exact) when every record is sampled, else the mixture of
        Gaussians shifted by 0…k records with binomial weights, both directions
        (``mixture_gaussian_pld``).  Add-or-remove only (validation refuses the rest)."""
        if self.replace_one:
            raise InternalError("a unit's mixture of Gaussians is accounted under "
                                "add-or-remove only")
        rate = accountable_rate(event.rate)
        if rate == 1.0 or _negligible(event.whole, False):
            return self.lower(event.whole)
        self._refuse_sampled_beyond_range(event.records * event.sensitivity / event.sigma, rate)
        return self._release(mixture_gaussian_pld(
            event.sigma / event.sensitivity, event.records, rate, discretization=self.h,
            log_tail_mass=self.log_tail_mass))

    def _truncated(self, event: ev.TruncatedPoissonEvent) -> _Lowered:
        """A truncated-Poisson step: the Poisson-sampled step itself when no batch is cut,
        or when a cut is so unlikely (at most ``negligible_truncation``) that it is taken
        as an infinite loss with its probability (pessimistic: the outcome may then reveal
        the record); otherwise dp-accounting's mixture, whose negligible part would spread
        over a grid many times wider."""
        from scipy import stats

        poisson = _poisson_step(event)
        # (dp-accounting's odds of a cut, given the record is sampled)
        cut = (0.0 if event.truncated_batch >= event.dataset_size else float(
            stats.binom.sf(event.truncated_batch - 1, event.dataset_size - 1, event.rate)))
        if cut == 0.0:
            return self.lower(poisson)
        self._refuse_sampled_beyond_range(1.0 / event.sigma, event.rate)
        sampled = self.lower(poisson) if cut <= self.negligible_truncation else None
        if sampled is None or not sampled.releases:  # (a rate accounted as 1: no PMF)
            return self._release(truncated_poisson_pld(
                event.sigma, event.rate, event.dataset_size, event.truncated_batch,
                discretization=self.h, log_tail_mass=self.log_tail_mass))
        ((pmfs, _),) = sampled.releases.values()
        mixed = tuple(dataclasses.replace(
            pmf, probs=pmf.probs * (1.0 - cut),
            infinity_mass=pmf.infinity_mass * (1.0 - cut) + cut) for pmf in pmfs)
        return _Lowered(releases={_fingerprint(mixed): (mixed, 1)})

    # -- single releases ---------------------------------------------------

    def _fixed_size(self, event: ev.Event, rate: float) -> PLD:
        """One release on a batch sampled without replacement, under replace-one.

        Dong, Roth & Su (Thm 4.2): if the release is f-DP under replace-one, the
        subsampled one is C_p(f) = min(f_p, f_p⁻¹)**-DP with f_p = p·f + (1 − p)·Id and
        p = batch/dataset.  f_p is the trade-off of (P, (1 − p)P + pQ), dp-accounting's
        add-or-remove subsampled pair shifted by the replace-one sensitivity, so the
        symmetrized curve of that PLD is C_p(f).  Composition must compose C_p(f), not
        the two directions separately (that would be optimistic: Lebeda et al. 2024),
        so the step becomes one symmetric PLD built from C_p(f)'s profile.
        """
        if isinstance(event, ev.GaussianEvent):
            # Only Δ/σ matters: sensitivity 1 keeps σ² and Δ² within double range.
            step = gaussian_pld(event.sigma / event.shift(self.replace_one), sampling_prob=rate,
                                discretization=self.h, log_tail_mass=self.log_tail_mass)
        else:
            step = self._single(event, rate)
        return self._symmetric(step)

    def _symmetric(self, pld: PLD) -> PLD:
        """A symmetric pessimistic PLD whose trade-off curve covers the symmetrized curve
        of ``pld`` (docs/math.md §2).

        Connect-the-dots (Doroshenko et al. 2022, Alg. 1) turns the profile
        δ(ε) = max(δ_remove, δ_add) on the grid ε = 0, h, 2h, … into masses at the
        non-negative losses; the negative losses follow from symmetry, p(−y) = e^{−y} p(y)
        (the loss of a pair and of its mirror image), and the mass at 0 makes up the rest.
        Only the masses at y > 0 enter δ(ε) for ε ≥ 0, so the result has the same profile
        there, and it is the profile of a symmetric curve by construction.
        """
        points = tuple(points_from_pmf(p) for p in pmfs_from_pld(pld))
        largest = max((float(c.losses[0]) for c in points if c.losses.size), default=0.0)
        # Losses beyond MAX_LOSS go to +∞ (pessimistic): the grid stops there, and
        # connect-the-dots puts δ(ε) at its last point at +∞.
        top = max(1, math.ceil(min(largest, MAX_LOSS) / self.h))
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

    def _refuse_sampled_beyond_range(self, ratio: float, rate: float) -> None:
        """Refuse (``RangeError``: the closed-form bound answers) a Gaussian of Δ/σ =
        ``ratio`` sampled with probability ``rate`` above the truncation budget, whose
        sampled runs lose about Δ²/(2σ²) + log q, beyond ``MAX_LOSS``: that mass is past
        the grid, so no finite μ could be shown, and building the grid up to
        ``MAX_LOSS`` only costs seconds and gigabytes."""
        if rate < 1.0 and rate > self.truncation:
            loss = ratio * ratio / 2 + math.log(rate)
            if loss > MAX_LOSS:
                refuse_loss_above_range(loss)

    def _single(self, event: ev.Event, rate: float = 1.0) -> PLD:
        """One release, Poisson-sampled with probability ``rate`` where given (a plain
        Gaussian is μ², see ``_lower``)."""
        h = self.h
        if isinstance(event, ev.GaussianEvent):
            # dp-accounting's REPLACE pair moves a clipped sum by ±1 clipping norm.
            # Only Δ/σ matters: sensitivity 1 keeps σ² and Δ² within double range.
            self._refuse_sampled_beyond_range(event.sensitivity / event.sigma, rate)
            return gaussian_pld(event.sigma / event.sensitivity, sampling_prob=rate,
                                discretization=h, replace_one=self.replace_one and event.clipped,
                                log_tail_mass=self.log_tail_mass)
        if isinstance(event, ev.LaplaceEvent):
            refuse_loss_above_range(event.sensitivity / event.scale)
            if rate == 1.0:
                return laplace_pld(event.scale, sensitivity=event.sensitivity, discretization=h)
            return sampled_laplace_pld(event.scale, sensitivity=event.sensitivity,
                                       sampling_prob=rate, discretization=h)
        if isinstance(event, ev.DiscreteGaussianEvent):
            # Its smallest privacy loss at the largest outcome is at least Δ²/(2σ²).
            ratio = event.sensitivity / event.sigma if event.sigma > 0 else math.inf
            refuse_loss_above_range(ratio * ratio / 2)
            check_discrete_support(event.sigma, event.sensitivity)
            if rate == 1.0:
                return discrete_gaussian_pld(event.sigma, sensitivity=event.sensitivity,
                                             discretization=h)
            # (about dp-accounting's truncation bound, both sides, and the shift)
            check_discrete_release(math.ceil(24 * event.sigma) + event.sensitivity + 1,
                                   ratio * ratio / 2 + 13 * ratio, h, directions=2)
            return plds.from_discrete_gaussian_mechanism(
                event.sigma, sensitivity=event.sensitivity, sampling_prob=rate,
                value_discretization_interval=h, use_connect_dots=True)
        if isinstance(event, ev.DiscreteLaplaceEvent):
            refuse_loss_above_range(event.parameter * event.sensitivity)
            check_discrete_release(event.sensitivity + 1, event.parameter * event.sensitivity,
                                   h, directions=1 if rate == 1.0 else 2,
                                   seconds_per_value=SLOW_SECONDS_PER_NOISE_VALUE if rate < 1.0
                                   else SECONDS_PER_NOISE_VALUE)
            return plds.from_discrete_laplace_mechanism(
                event.parameter, sensitivity=event.sensitivity, sampling_prob=rate,
                value_discretization_interval=h, use_connect_dots=True)
        if isinstance(event, ev.RandomizedResponseEvent):
            # Replace-one: the reported answer is the true one, the replacement's, or
            # another (loss 0); each wrong answer has probability noise/k.
            share, loss = event.noise / event.categories, event.loss
            refuse_loss_above_range(loss)
            return discrete_loss_pld(
                [(loss, 1 - event.noise + share), (-loss, share),
                 (0.0, (event.categories - 2) * share)], discretization=h)
        if isinstance(event, (ev.PureDPEvent, ev.ApproximateDPEvent)):
            # The worst case of an (ε, δ)-DP release (Kairouz, Oh & Viswanath 2015):
            # randomized response with ε, and δ at +∞.
            refuse_loss_above_range(event.epsilon)
            delta = event.delta if isinstance(event, ev.ApproximateDPEvent) else 0.0
            up = (1 - delta) / (1 + math.exp(-event.epsilon))
            return discrete_loss_pld([(event.epsilon, up), (-event.epsilon, 1 - delta - up)],
                                     infinity_mass=delta, discretization=h)
        raise TypeError(f"no accounting for {type(event).__name__}")  # pragma: no cover
