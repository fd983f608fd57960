"""Stage 5b: assemble a :class:`~privspec.report.model.Report` from an accounted spec.

PLD (``accounting``) → trade-off curve (``curve``) → μ, regret, advantage (``gdp``) →
the report's figures, tables and caveats.  Gomez et al. 2025's two tiers: Tier I when μ
exists and its regret is at most the threshold, Tier II otherwise (then the table is the
guarantee).  One discretization, no budgets: ``privspec.report.evaluation`` chooses it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import erf, ndtr

from privspec.numerics.accounting import (
    MAX_STAGE_ACCOUNTS,
    SMALLEST_RATE,
    Accounted,
    StageAccount,
    account_one_record,
    for_group,
)
from privspec.numerics.bounds import Bound
from privspec.numerics.curve import (
    TradeoffCurve,
    curve_from_pmfs,
    epsilons_for_deltas,
    epsilons_from_curve,
)
from privspec.numerics.gdp import (
    GaussianSummary,
    epsilon_from_mu_delta,
    gaussian_tpr,
    gaussian_tradeoff,
    mu_from_curve,
    summarize,
)
from privspec.numerics.group_privacy import group_curve, group_curves
from privspec.numerics.risk import ExactCurve, GaussianCurve
from privspec.report import formatting as fmt
from privspec.report.consistency import BOUND_MARGIN
from privspec.report.describe import summarize_mechanism
from privspec.report.model import (
    GDP,
    Accounting,
    Calibrated,
    Caveat,
    CurvePoint,
    EpsilonAtDelta,
    GroupRow,
    PublishedComparison,
    Report,
    ReportScope,
    TradeoffRow,
)
from privspec.report.provenance import package_versions, spec_sha256
from privspec.report.render import gap_values
from privspec.report.risk import risk_section
from privspec.report.wording import caveat, no_finite_mu_reason
from privspec.spec.group import (
    ROUTES,
    group_routes,
    group_sizes,
    has_group_form,
    person_word,
)
from privspec.spec.kinds import KINDS
from privspec.spec.models import (
    ReportOptions,
    Spec,
    event_of,
    group_iterations,
    spec_event,
    walk,
)
from privspec.spec.upward import times_up

#: α values at which the report samples the curve for figures (exact values there):
#: 20 a decade on [10⁻¹², 0.1] for the log–log panel, steps of 0.01 above for the linear one.
CURVE_SAMPLE_ALPHAS = tuple(
    sorted({*np.logspace(-12, -1, 221).tolist(), *np.linspace(0.1, 1.0, 91).tolist()})
)
#: A curve with at most this many breakpoints is sampled at its breakpoints too (its kinks).
CURVE_SAMPLE_BREAKPOINTS = 64


def _tradeoff_rows(curve: TradeoffCurve, alphas: list[float], mu: float | None) -> list[TradeoffRow]:
    """The Tier II table: the curve and G_μ at each α, plus α* (docs/math.md §5).  G_μ is
    taken at μ as printed (rounded up), the μ its column's label names."""
    points = sorted({*alphas, curve.alpha_star})
    mu = None if mu is None else fmt.round_float(mu, "up")
    return [
        TradeoffRow(
            alpha=alpha,
            beta=float(curve.beta_at(alpha)),
            tpr=float(curve.tpr_at(alpha)),
            beta_gdp=None if mu is None else float(gaussian_tradeoff(alpha, mu)),
            tpr_gdp=None if mu is None else float(gaussian_tpr(alpha, mu)),
            is_alpha_star=alpha == curve.alpha_star,
        )
        for alpha in points
    ]


#: Below this many discretization steps μ is visibly inflated by the rounding of losses
#: (one Gaussian release with μ = 10⁻⁵ reads 4.6 × 10⁻⁵ at h = 10⁻⁴).
COARSE_STEPS = 30

def _pure_epsilon(accounted: Accounted, spec: Spec) -> float | None:
    """ε of a pure-DP guarantee: the largest privacy loss any outcome has, when every part
    has a bounded loss (a Gaussian never does, even when its tail underflows).  Taken from
    the releases, not from the composed curve, whose losses of underflowed probability are
    gone (5,000 runs of ε = 0.01 have loss 50 with probability e⁻⁸⁵⁰, not 0)."""
    if not all(KINDS[kind].bounded_loss for _, kind, _ in walk(spec.mechanism)):
        return None
    return accounted.largest_loss if math.isfinite(accounted.largest_loss) else None


#: The largest floor the spec allows, and so the largest a report may fall back to.
LARGEST_FLOOR = 1e-3


def _raised_floor(curve: TradeoffCurve, spec: Spec) -> float | None:
    """The smallest power of ten that the accounting can meet as a floor, when the one
    asked for cannot be and no release of the mechanism ``leaks`` (an (ε, δ) release's δ
    is true mass at +∞: then no finite μ is the true answer, Gomez et al. 2025, Prop. 6.2).
    None when not needed or not possible."""
    if _leaks(spec):
        return None
    floor = fmt.power_of_ten_above(curve.tail_mass_at_zero)
    return floor if spec.accounting.floor < floor <= LARGEST_FLOOR else None


def _leaks(spec: Spec) -> bool:
    """Whether a release of the mechanism has a δ of its own (an (ε, δ) black box)."""
    return any(KINDS[kind].leaks for _, kind, _ in walk(spec.mechanism))


def _stages_skipped(accounted: Accounted) -> int:
    """How many distinct top-level stages have no μ of their own computed."""
    return len({id(stage) for stage in accounted.stages
                if stage.exact_mu is None and stage.pmfs is None})


def _stage_mu(stage: StageAccount, floor: float, records: int) -> float | None:
    """μ of one top-level stage on its own (None when it has no finite μ), for a unit
    whose curve is one record's iterated ``records`` times (kμ for a Gaussian stage)."""
    if stage.pmfs is None:
        return None if stage.exact_mu is None else times_up(records, stage.exact_mu)
    mu = mu_from_curve(group_curve(curve_from_pmfs(stage.pmfs), records), floor)
    return mu if math.isfinite(mu) else None


def _stage_mus(accounted: Accounted, spec: Spec) -> list[float | None] | None:
    """Each top-level stage's own μ, for "what each stage adds"; None for a single stage."""
    if len(accounted.stages) < 2:
        return None
    mus: dict[int, float | None] = {}  # identical stages share one StageAccount
    for stage in accounted.stages:
        if id(stage) not in mus:
            mus[id(stage)] = _stage_mu(stage, spec.accounting.floor, accounted.group)
    return [mus[id(stage)] for stage in accounted.stages]


@dataclass(frozen=True)
class _Figures:
    """The Gaussian-DP figures of a curve at the floor that could be met."""

    numbers: GaussianSummary
    floor: float  # τ used: the spec's, or the smallest power of ten that can be met
    raised: bool  # whether the spec's floor could not be met
    regret_resolution: float  # regrets below this are within the composition's error
    infinity: float  # δ∞ as reported: a truncated tail's bound as its power of ten
    tier1: bool

    @property
    def mu(self) -> float | None:
        return self.numbers.mu if math.isfinite(self.numbers.mu) else None


def _figures(curve: TradeoffCurve, model: Spec) -> _Figures:
    """μ, regret and advantage at the spec's floor, or at the smallest power of ten the
    accounting can meet when it cannot meet that one (``_raised_floor``)."""
    floor = model.accounting.floor
    numbers = summarize(curve, floor)
    raised = _raised_floor(curve, model) if not math.isfinite(numbers.mu) else None
    if raised is not None:
        floor, numbers = raised, summarize(curve, raised)
    finite = math.isfinite(numbers.mu)
    return _Figures(
        numbers=numbers, floor=floor, raised=raised is not None,
        # Regrets within the composition's error bound are not resolved: printed as a bound.
        regret_resolution=max(fmt.REGRET_RESOLUTION, fmt.power_of_ten_above(curve.relative_error)),
        # Truncated tails (at most the floor) are a bound whose digits the composition's
        # rounding moves: reported as the power of ten above; a real δ as it is.
        infinity=(fmt.power_of_ten_above(curve.infinity_mass)
                  if curve.infinity_mass <= floor else curve.infinity_mass),
        # A release's own δ (not a truncated tail) within the floor leaves μ true up to
        # τ, but μ alone then hides an outright leak: Tier II (docs/math.md §2).
        tier1=(finite and numbers.regret is not None
               and numbers.regret <= model.report.regret_threshold
               and not (curve.infinity_mass > 0 and _leaks(model))))


def _caveats(curve: TradeoffCurve, model: Spec, figures: _Figures, accounted: Accounted,
             tradeoff: list[TradeoffRow]) -> list[Caveat]:
    """Every caveat that applies, in the order the report lists them (a poor fit worded
    from where the Tier II table, ``tradeoff``, shows G_μ loosest)."""
    numbers, accounting = figures.numbers, model.accounting
    gridded = accounted.exact_method is None
    finite = figures.mu is not None
    warnings: list[Caveat] = []
    if figures.raised:
        warnings.append(caveat("accounting/floor-raised", asked=accounting.floor,
                               unresolved=curve.tail_mass_at_zero, floor=figures.floor))
    if not finite:
        warnings.append(caveat("report/no-finite-mu", infinity=figures.infinity,
                                floor=figures.floor))
    elif numbers.regret is None or numbers.regret > model.report.regret_threshold:
        warnings.append(caveat("report/gdp-poor-fit", regret=numbers.regret or 0.0,
                               resolution=figures.regret_resolution,
                               threshold=model.report.regret_threshold,
                               **gap_values(tradeoff)))
    excess = max(chain.excess_mass for chain in curve.points)
    if finite and excess > 0.01 * numbers.alpha_star:
        warnings.append(caveat("accounting/excess-mass", excess=excess,
                               alpha_star=numbers.alpha_star))
    if gridded and finite and 0 < numbers.mu < COARSE_STEPS * accounting.discretization:
        warnings.append(caveat("accounting/coarse-discretization", mu=numbers.mu,
                               steps=COARSE_STEPS, discretization=accounting.discretization))
    coarse = [(loss, count) for loss, count in accounted.reach
              if count > 1 and 0 < loss < COARSE_STEPS * accounting.discretization]
    if finite and coarse and not any(w.code == "accounting/coarse-discretization"
                                     for w in warnings):
        loss, count = min(coarse)
        warnings.append(caveat("accounting/coarse-release", loss=loss, count=count,
                               steps=round(loss / accounting.discretization),
                               discretization=accounting.discretization))
    if accounted.raised_rate is not None:
        warnings.append(caveat("accounting/rate-raised", rate=accounted.raised_rate,
                               smallest=SMALLEST_RATE))
    if not curve.certified:
        warnings.append(caveat("accounting/uncertified-composition"))
    if stages_skipped := _stages_skipped(accounted):
        warnings.append(caveat("report/stage-mu-skipped", stages=stages_skipped,
                               most=MAX_STAGE_ACCOUNTS))
    if 0 < curve.infinity_mass <= figures.floor:
        warnings.append(caveat("report/delta-within-floor" if _leaks(model)
                               else "accounting/floor",
                               infinity=figures.infinity, floor=figures.floor))
    return warnings


def _no_mu_reason(figures: _Figures) -> str | None:
    return (None if figures.mu is not None
            else no_finite_mu_reason(infinity=figures.infinity, floor=figures.floor))


def _sample_alphas(alpha_star: float, options: ReportOptions,
                   breakpoints: tuple[float, ...] = ()) -> list[float]:
    """Where the report samples the curve: the figures' α's, the table's α's, α* (where
    β = α) and, for a curve with few kinks, its breakpoints."""
    extra = (alpha_star, *options.alphas, *breakpoints)
    return sorted({*CURVE_SAMPLE_ALPHAS, *(float(a) for a in extra if 0 <= a <= 1)})


def _curve_sample(curve: TradeoffCurve, options: ReportOptions) -> list[CurvePoint]:
    """The curve at ``_sample_alphas``, exactly."""
    kinks = tuple(curve.alpha.tolist()) if curve.alpha.size <= CURVE_SAMPLE_BREAKPOINTS else ()
    sample = np.asarray(_sample_alphas(curve.alpha_star, options, kinks))
    return [CurvePoint(alpha=float(a), beta=float(b), tpr=float(t))
            for a, b, t in zip(sample, curve.beta_at(sample), curve.tpr_at(sample), strict=True)]


def _epsilons(model: Spec, epsilons_at: Callable[[list[float]], list[float]],
              pure_epsilon: float | None) -> tuple[list[EpsilonAtDelta], PublishedComparison | None]:
    """ε at the report's δ's (None where infinite), and the published claim beside ours
    (ε at its δ, or the pure-DP ε for δ = 0); ``epsilons_at`` computes ε for a list of δ's."""
    published = model.published
    asked = sorted({*model.report.deltas, *([published.delta] if published else [])} - {0})
    epsilon_at = dict(zip(asked, epsilons_at(asked), strict=True))
    epsilons = [EpsilonAtDelta(delta=delta, epsilon=epsilon_at[delta]
                               if math.isfinite(epsilon_at[delta]) else None)
                for delta in model.report.deltas]
    if published is None:
        return epsilons, None
    ours = pure_epsilon if published.delta == 0 else epsilon_at[published.delta]
    return epsilons, PublishedComparison(
        epsilon=published.epsilon, delta=published.delta, source=published.source,
        epsilon_privspec=ours if ours is not None and math.isfinite(ours) else None)


def _report(model: Spec, accounted: Accounted, path: str | None, spec_path: str | None,
            **figures: Any) -> Report:
    """A Report: the spec's own fields, and ``figures`` (gdp, tables, accounting…), with
    the unit's caveat and, for units of several records, how they were accounted."""
    figures["warnings"] = [*_unit_caveats(model), *figures["warnings"]]
    records = model.records_per_unit
    if records > 1:
        accounting: Accounting = figures["accounting"]
        figures["accounting"] = accounting.model_copy(update={
            "method": f"{accounting.method}; for one unit of up to {records:,} records: "
            f"{_group_method(model)}"})
    return Report(
        title=model.title, description=model.description, unit=model.unit,
        records_per_unit=records, unit_routes=unit_routes(model),
        unit_level=model.unit_level,
        neighbouring=model.neighbouring,
        mechanism=summarize_mechanism(model, _stage_mus(accounted, model)),
        scope=None if model.scope is None else ReportScope(**model.scope.model_dump()),
        calibrated=(None if model.calibrated is None
                    else Calibrated(**model.calibrated.model_dump())),
        spec_sha256=spec_sha256(model),
        spec_path=spec_path if spec_path is not None else path,
        **figures)


def _unit_caveats(model: Spec) -> list[Caveat]:
    """The caveat of a unit that names a person (``privspec.spec.group.PERSON_WORDS``)
    without stating how many records one holds or that the mechanism samples and bounds
    units as one."""
    word = person_word(model.unit)
    if word is None or {"records_per_unit", "unit_level"} & model.model_fields_set:
        return []
    return [caveat("report/unit-bound-unstated", word=word)]


#: How a unit of several records is accounted, release by release.
GROUP_SCALED = ("each additive release with a per-record sensitivity Δ accounted with "
                "sensitivity k·Δ (exact: the unit's records move it by at most k·Δ; a "
                "Gaussian's μ is kΔ/σ)")
GROUP_MIXTURE = ("each Poisson-sampled Gaussian step as the mixture of Gaussians of the "
                 "Binomial(k, q) records of the unit in its batch, both add and remove "
                 "directions (Ganesh 2024, arXiv:2401.10294, Thm 3.1)")
GROUP_PRIVACY = ("f-DP group privacy on the whole mechanism's trade-off curve f, since "
                 "{why}: the unit's curve is 1 − (1 − f)^∘{records}, the {records}-fold "
                 "functional composition of 1 − f (Dong, Roth & Su 2022, Thm 2.14), read at "
                 "fixed nodes and bounded towards the attacker between them (docs/math.md §8)")


def unit_routes(model: Spec) -> list[str]:
    """How a unit of several records was accounted (``privspec.spec.group.ROUTES``):
    "group-privacy" alone, or "scaled" and/or "mixture"; none for one record."""
    if model.records_per_unit == 1:
        return []
    if group_iterations(model) > 1:
        return ["group-privacy"]
    return sorted(group_routes(spec_event(model)), key=ROUTES.index)


def _group_method(model: Spec) -> str:
    """Which of ``GROUP_SCALED``, ``GROUP_MIXTURE`` and ``GROUP_PRIVACY`` the unit's
    accounting used."""
    routes = unit_routes(model)
    if routes == ["group-privacy"]:
        return GROUP_PRIVACY.format(why=_why_iterated(model), records=model.records_per_unit)
    return "; ".join(words for route, words in (("scaled", GROUP_SCALED),
                                                ("mixture", GROUP_MIXTURE)) if route in routes)


def _why_iterated(model: Spec) -> str:
    """Which releases have no form of their own for a unit, in words."""
    replace_one = model.neighbouring == "replace-one"
    kinds = sorted({kind for _, kind, block in walk(model.mechanism)
                    if kind not in ("repeat", "compose")
                    and not has_group_form(KINDS[kind].event(block, event_of), replace_one)})
    what = " and ".join(f"'{kind}'" for kind in kinds)
    return f"{what} {'has' if len(kinds) == 1 else 'have'} no scaled or mixture form" + (
        " under replace-one" if replace_one else "")


#: The closed-form μ-GDP of plain Gaussian releases (exact) and the closed-form bound
#: of any mechanism whose releases all have one (``privspec.numerics.bounds``).
EXACT_GAUSSIAN_METHOD = ("closed form: plain Gaussian releases compose to exactly μ-GDP "
                         "with μ = √Σ(Δᵢ/σᵢ)² (Dong, Roth & Su 2022, Cor. 3.3)")
BOUND_METHOD = ("closed-form bound: each release is μᵢ-GDP (Gaussians Δ/σ, ε-DP releases "
                "2Φ⁻¹(e^ε/(1 + e^ε)), sampling ignored), and μ² add up (Dong, Roth & Su "
                "2022, Cor. 3.3)")


def gaussian_report(model: Spec, mu: float, accounted: Accounted, path: str | None,
                     spec_path: str | None, warnings: list[Caveat] | None = None) -> Report:
    """A report whose trade-off curve is G_μ: exactly, for a mechanism made only of plain
    Gaussian releases (``warnings`` None), or as the closed-form bound of every release
    (``accounted.bound``; ``warnings`` say why).  Regret 0, α* = Φ(−μ/2), the best
    advantage 2Φ(μ/2) − 1 = erf(μ/2√2) (no cancellation at tiny μ), and ε(δ) solves
    δ_μ(ε) = δ (or basic composition's ε, when smaller); nothing is discretized."""
    options, bound = model.report, accounted.bound
    alpha_star = float(ndtr(-mu / 2))
    table = sorted({*options.alphas, alpha_star})
    shown = fmt.round_float(mu, "up")  # the μ the G_μ column's label names
    rows = [TradeoffRow(alpha=a, beta=float(gaussian_tradeoff(a, mu)),
                        tpr=float(gaussian_tpr(a, mu)), beta_gdp=float(gaussian_tradeoff(a, shown)),
                        tpr_gdp=float(gaussian_tpr(a, shown)), is_alpha_star=a == alpha_star)
            for a in table]
    pure = bound.epsilon if warnings is not None and math.isfinite(bound.epsilon) else None
    epsilons, published = _epsilons(model, _gaussian_epsilons(mu, bound), pure)
    return _report(
        model, accounted, path, spec_path,
        # (A bound's regret is that of the curve it reports, G_μ itself: its caveat says
        # the table and the regret describe the bound, not the mechanism's own curve.)
        gdp=GDP(mu=mu, no_finite_mu_reason=None, regret=0.0,
                regret_resolution=fmt.REGRET_RESOLUTION,
                regret_threshold=options.regret_threshold, tier=1,
                advantage=float(erf(mu / (2 * math.sqrt(2)))), alpha_star=alpha_star,
                mass_at_infinity=0.0, bound=warnings is not None),
        tradeoff=rows,
        epsilons=epsilons,
        pure_epsilon=pure,
        published=published,
        curve=[CurvePoint(alpha=a, beta=float(gaussian_tradeoff(a, mu)),
                          tpr=float(gaussian_tpr(a, mu)))
               for a in _sample_alphas(alpha_star, options)],
        risk=risk_section(model, GaussianCurve(mu), mu, 0.0, epsilons, pure),
        accounting=Accounting(
            method=EXACT_GAUSSIAN_METHOD if warnings is None else BOUND_METHOD,
            discretization=model.accounting.discretization, floor=model.accounting.floor,
            tail_mass_truncation=0.0, relative_error=0.0, versions=package_versions()),
        warnings=warnings or [],
    )


def _gaussian_epsilons(mu: float, bound: Bound) -> Callable[[list[float]], list[float]]:
    """ε(δ) of G_μ, or basic composition's ε when smaller, for a list of δ's."""
    return lambda deltas: [min(epsilon_from_mu_delta(mu, d), bound.epsilon) for d in deltas]


def _bound_epsilon(bound: Bound, delta: float) -> float:
    """ε(δ) of the closed-form bounds: basic composition's ε, or μ-GDP's ε(δ)."""
    mu_epsilon = epsilon_from_mu_delta(bound.mu, delta) if math.isfinite(bound.mu) else math.inf
    return min(bound.epsilon, mu_epsilon)


def _curve_epsilons(curve: TradeoffCurve, accounted: Accounted
                    ) -> Callable[[list[float]], list[float]]:
    """ε(δ) of the numerical curve, or of the closed-form bounds when smaller, for a list
    of δ's."""
    def at(deltas: list[float]) -> list[float]:
        # A unit's iterated curve has no accountant's profile: ε(δ) from the curve itself.
        ours = (epsilons_from_curve(curve, deltas) if accounted.group > 1
                else epsilons_for_deltas(curve.points, deltas))
        return [min(epsilon, _bound_epsilon(accounted.bound, delta))
                for delta, epsilon in zip(deltas, ours, strict=True)]
    return at


def _bound_undercuts(accounted: Accounted, numerical_mu: float | None) -> bool:
    """Whether the closed-form bound's μ undercuts the numerical μ (``None``: no finite
    one) by more than ``BOUND_MARGIN``: then the bound is reported instead."""
    mu = accounted.bound.mu
    return math.isfinite(mu) and (numerical_mu is None
                                  or mu < numerical_mu * (1 - BOUND_MARGIN))


def _with_bound_mu(figures: _Figures, accounted: Accounted) -> _Figures:
    """``figures`` with the closed form's μ when the numerical μ is above it (within
    ``BOUND_MARGIN``: the regret, computed at the numerical μ, only overstates the misfit)."""
    if figures.mu is None or accounted.bound.mu >= figures.mu:
        return figures
    return dataclasses.replace(
        figures, numbers=dataclasses.replace(figures.numbers, mu=accounted.bound.mu))


def _bound_report(model: Spec, accounted: Accounted, numerical_mu: float | None,
                  path: str | None, spec_path: str | None) -> Report | None:
    """The closed-form bound's report, when it undercuts the numerical μ
    (``_bound_undercuts``); None otherwise."""
    if not _bound_undercuts(accounted, numerical_mu):
        return None
    mu = accounted.bound.mu
    numbers = {} if numerical_mu is None else {"numerical": numerical_mu}
    why = caveat("accounting/closed-form-bound", bound=mu,
                 discretization=model.accounting.discretization, **numbers)
    return gaussian_report(model, mu, accounted, path, spec_path, [why])


def _group_row(model: Spec, one_record: Accounted, size: int,
               curve: TradeoffCurve) -> GroupRow:
    """The μ and ε (at the first δ) that ``model``'s report states for a unit of ``size``
    records, from one record's accounting and the group's ``curve`` (``group_curves``):
    the same choices as ``assemble``'s (floor, closed-form bound, ε's minimum)."""
    at = model.model_copy(update={"records_per_unit": size})
    accounted = for_group(one_record, size)
    figures = _figures(curve, at)
    if _bound_undercuts(accounted, figures.mu):
        mu: float | None = accounted.bound.mu
        epsilons_at = _gaussian_epsilons(accounted.bound.mu, accounted.bound)
    else:
        mu, epsilons_at = _with_bound_mu(figures, accounted).mu, _curve_epsilons(curve, accounted)
    epsilons, _ = _epsilons(at, epsilons_at, None)
    return GroupRow(size=size, mu=mu, epsilon=epsilons[0].epsilon)


def _composed_by(curve: TradeoffCurve, accounted: Accounted) -> str:
    """How the releases were composed, for the method's words (nothing for one release)."""
    if sum(count for _, count in accounted.reach) == 1 and curve.relative_error == 0:
        return ""
    return ", composed by " + ("privspec's tilted FFTs" if curve.certified
                               else "dp-accounting's FFTs")


def assemble(model: Spec, path: str | None, spec_path: str | None,
             groups: bool = False) -> Report:
    """Account a validated spec at its discretization and assemble its report (budgets,
    retries and coarser grids are ``privspec.report.evaluation``'s).  With ``groups``, a
    unit accounted by group privacy gets its group table (``group_sizes``) here, every
    row from the one composition of one record's mechanism; other units get theirs from
    ``privspec.report.evaluation`` (a different mechanism per size)."""
    one_record = account_one_record(model)
    accounted = for_group(one_record, group_iterations(model))
    if accounted.exact_mu is not None:
        return gaussian_report(model, accounted.exact_mu, accounted, path, spec_path)
    records = accounted.group
    sizes = group_sizes(records) if groups and records > 1 else [records]
    curves = group_curves(curve_from_pmfs(accounted.pmfs), sizes)
    report = _curve_report(model, accounted, curves[records], path, spec_path)
    if len(sizes) == 1:
        return report
    rows = [_group_row(model, one_record, size, curves[size]) for size in sizes[:-1]]
    return report.model_copy(update={"groups": [*rows, GroupRow(
        size=records, mu=report.gdp.mu, epsilon=report.epsilons[0].epsilon)]})


def _curve_report(model: Spec, accounted: Accounted, curve: TradeoffCurve,
                  path: str | None, spec_path: str | None) -> Report:
    """The report of the numerical ``curve`` (the unit's), or of the closed-form bound
    when that undercuts it (``_bound_report``)."""
    options, accounting = model.report, model.accounting
    figures = _figures(curve, model)
    bounded = _bound_report(model, accounted, figures.mu, path, spec_path)
    if bounded is not None:
        return bounded
    figures = _with_bound_mu(figures, accounted)
    numbers = figures.numbers

    bound = accounted.bound
    # pure DP: the releases' largest losses summed, or basic composition's closed form
    # (which ignores sampling), whichever is smaller
    pure = [e for e in (_pure_epsilon(accounted, model), bound.epsilon)
            if e is not None and math.isfinite(e)]
    pure_epsilon = min(pure) if pure else None
    epsilons, published = _epsilons(model, _curve_epsilons(curve, accounted), pure_epsilon)
    versions = package_versions()
    tradeoff = _tradeoff_rows(curve, options.alphas, figures.mu)
    return _report(
        model, accounted, path, spec_path,
        gdp=GDP(
            mu=figures.mu,
            no_finite_mu_reason=_no_mu_reason(figures),
            regret=numbers.regret,
            regret_resolution=figures.regret_resolution,
            regret_threshold=options.regret_threshold,
            tier=1 if figures.tier1 else 2,
            advantage=numbers.advantage,
            alpha_star=numbers.alpha_star,
            mass_at_infinity=figures.infinity,
        ),
        tradeoff=tradeoff,
        epsilons=epsilons,
        pure_epsilon=pure_epsilon,
        published=published,
        curve=_curve_sample(curve, options),
        risk=risk_section(model, ExactCurve(curve), figures.mu, figures.floor, epsilons,
                          pure_epsilon),
        accounting=Accounting(
            method=accounted.exact_method or (
                f"dp-accounting {versions['dp-accounting']} privacy-loss distributions "
                "(connect-the-dots, pessimistic)" + _composed_by(curve, accounted)),
            discretization=accounting.discretization,
            floor=figures.floor,
            requested_floor=accounting.floor if figures.raised else None,
            tail_mass_truncation=accounted.truncation,
            relative_error=curve.relative_error if curve.certified else None,
            versions=versions,
        ),
        warnings=_caveats(curve, model, figures, accounted, tradeoff),
    )
