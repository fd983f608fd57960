"""Whether a report's figures agree with each other and with its spec: what
``report/cache.py`` checks before it trusts a report read from the cache (pure Python:
a cache hit imports no numerical library).

The checks are sound (every report privspec assembles passes them, up to rounding):

* μ-GDP at the floor τ: every point (α, β, TPR) of the curve and the table has
  β ≥ G_μ(α) − τ and TPR ≤ 1 − G_μ(α) + τ, and β + TPR = 1 (a μ too small for the curve);
* the best advantage is at most G_μ's, 2Φ(μ/2) − 1, plus τ, and at least TPR − α at
  every point (an advantage too small for the curve);
* each ε(δ) is at most what μ-GDP at the floor allows (δ_μ(ε) ≥ δ − τ when ε > 0) and
  the pure ε (a μ too small for the ε's);
* with the spec: the advantage, 2Φ(μ/2) − 1 + τ and the advantage each ε(δ) allows,
  δ + (1 − δ)·tanh(ε/2) + τ, are at least what the spec's releases alone force
  (``advantage_lower_bound``), a bound computed from the spec, not from the report: it
  catches a report forged whole, every figure consistent, whose μ or ε is far too small
  for the spec (the closed-form bounds of ``numerics/bounds.py`` are upper bounds and
  cannot).

An ε(δ) is not held against the curve: it may be a closed-form bound's, below what the
(pessimistic) numerical curve alone would give.

μ here is the report's μ widened by ``BOUND_MARGIN`` (the closed-form bound may stand in
for a numerical μ up to that much above it).  What they cannot catch: a forged report
consistent with itself whose μ and ε are above the spec's lower bound (which is loose where
sampling amplifies privacy: about a third of DP-SGD's μ near μ = 1, far less below), a
curve forged above the true one, or figures no headline figure determines (the risk
rows, the group table, a stage's μ, an audit).  Against those, only where the cache is
kept protects (``report/store.py``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from statistics import NormalDist
from typing import TYPE_CHECKING

from privspec.spec import events as ev

if TYPE_CHECKING:
    from privspec.report.model import Report
    from privspec.spec.models import Spec

#: The closed-form bound replaces a numerical μ it undercuts by more than this (relative):
#: within it, the numerical curve (a little below G_μ of the bound's μ) is reported.
BOUND_MARGIN = 1e-3
#: Relative slack for the rounding of figures computed by different routes.
_SLACK = 1e-9
_NORMAL = NormalDist()


def _phi(x: float) -> float:
    """Φ(x), accurate in the lower tail (``NormalDist.cdf`` is not below 10⁻¹⁶)."""
    return math.erfc(-x / math.sqrt(2)) / 2


def _gaussian_beta_tpr(alpha: float, mu: float) -> tuple[float, float]:
    """G_μ(α) and 1 − G_μ(α), each without cancellation."""
    if alpha <= 0:
        return 1.0, 0.0
    if alpha >= 1:
        return 0.0, 1.0
    z = _NORMAL.inv_cdf(alpha)
    return _phi(-z - mu), _phi(z + mu)


def _gaussian_delta(epsilon: float, mu: float) -> float:
    """δ(ε) of μ-GDP, Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2), the second term without overflow."""
    if mu <= 0:
        return 0.0
    tail = _phi(-epsilon / mu - mu / 2)
    second = math.exp(min(epsilon + math.log(tail), 709.0)) if tail > 0 else 0.0
    return _phi(-epsilon / mu + mu / 2) - second


Point = tuple[float, float, float]


def _points(report: Report) -> list[Point]:
    """(α, β, TPR) of every point of the curve and the table."""
    return ([(p.alpha, p.beta, p.tpr) for p in report.curve]
            + [(row.alpha, row.beta, row.tpr) for row in report.tradeoff])


def _probability(value: float) -> bool:
    return 0 <= value <= 1  # False for NaN


def _epsilons(report: Report) -> Iterator[tuple[float, float]]:
    """Every (δ, ε) the report states with a finite ε."""
    yield from ((row.delta, row.epsilon) for row in report.epsilons if row.epsilon is not None)
    published = report.published
    if published is not None and published.epsilon_privspec is not None:
        yield published.delta, published.epsilon_privspec


def _curve_problem(report: Report, points: list[Point], mu: float | None, floor: float
                   ) -> str | None:
    """Why a point of the curve or the table, or the advantage, contradicts the rest."""
    advantage = report.gdp.advantage
    if not _probability(advantage):
        return "its advantage is not a probability"
    if not (report.curve and report.tradeoff):
        return "it has no curve or no table"
    for alpha, beta, tpr in points:
        if not (_probability(alpha) and _probability(beta) and _probability(tpr)):
            return "a point of its curve is not a probability"
        if abs(beta + tpr - 1) > _SLACK:
            return f"at α = {alpha!r}, β and TPR do not add up to 1"
        if tpr - alpha > advantage * (1 + _SLACK) + _SLACK * 1e-6:
            return f"at α = {alpha!r}, an attack's advantage exceeds the best one's"
        if mu is None:
            continue
        gaussian_beta, gaussian_tpr = _gaussian_beta_tpr(alpha, mu)
        if beta < (gaussian_beta - floor) * (1 - _SLACK) or \
                tpr > (gaussian_tpr + floor) * (1 + _SLACK):
            return f"at α = {alpha!r}, its curve lies below G_μ's"
    if mu is not None and advantage > (gdp_advantage(mu) + floor) * (1 + _SLACK):
        return "its advantage exceeds G_μ's"
    return None


def _epsilon_problem(report: Report, mu: float | None) -> str | None:
    """Why an ε(δ) contradicts μ or the pure ε."""
    pure = report.pure_epsilon
    if pure is not None and not pure >= 0:
        return "its pure ε is negative"
    for delta, epsilon in _epsilons(report):
        if not (epsilon >= 0 and _probability(delta)):
            return "an ε(δ) is negative or its δ not a probability"
        if pure is not None and epsilon > pure * (1 + _SLACK):
            return f"its ε at δ = {delta!r} exceeds its pure ε"
        if mu is not None and epsilon > 0 and \
                _gaussian_delta(epsilon, mu) < (delta - report.accounting.floor) * (1 - _SLACK):
            return f"its μ is too small for its ε at δ = {delta!r}"
    return None


@dataclass(frozen=True)
class _Distinguishable:
    """Of a pair of distributions: a lower bound on its advantage (total variation) and
    an upper bound on the log of its Bhattacharyya coefficient BC (ln BC ≤ ½ ln(1 − A²)
    for any pair, and BC multiplies under composition: 1 − BC ≤ A)."""

    advantage: float
    log_coefficient: float

    @classmethod
    def of(cls, advantage: float) -> _Distinguishable:
        return cls(advantage, math.log1p(-advantage * advantage) / 2 if advantage < 1
                   else -math.inf)

    def times(self, count: int) -> _Distinguishable:
        """``count`` of them composed."""
        return _composed([self] * min(count, 1), count * self.log_coefficient)


NOTHING = _Distinguishable(0.0, 0.0)


def _composed(parts: list[_Distinguishable], log_coefficient: float) -> _Distinguishable:
    """Pairs composed (their coefficients' logs adding up to ``log_coefficient``)."""
    best = max((part.advantage for part in parts), default=0.0)
    return _Distinguishable(max(best, -math.expm1(log_coefficient)), log_coefficient)


def _release(event: ev.Event, replace_one: bool) -> _Distinguishable:
    """``event``'s pair as privspec accounts it (its dominating pair), or ``NOTHING``
    where no cheap bound is known."""
    if isinstance(event, ev.ComposedEvent | ev.RepeatedEvent):
        stages = event.stages if isinstance(event, ev.ComposedEvent) else ((event.event,
                                                                            event.count),)
        parts = [_release(stage, replace_one).times(repeat) for stage, repeat in stages]
        return _composed(parts, math.fsum(part.log_coefficient for part in parts))
    if isinstance(event, ev.SampledEvent):
        if event.scheme == "poisson" and not replace_one:  # (1 − q)P + qQ against P
            return _Distinguishable.of(event.rate * _release(event.event, False).advantage)
        return NOTHING
    if isinstance(event, ev.GaussianEvent):
        shift = event.shift(replace_one)
        mu = shift / event.sigma if event.sigma > 0 else math.inf if shift > 0 else 0.0
        # N(0, 1) against N(μ, 1): advantage 2Φ(μ/2) − 1, BC = exp(−μ²/8)
        return _Distinguishable(gdp_advantage(mu), -mu * mu / 8)
    if isinstance(event, ev.LaplaceEvent):
        return _Distinguishable.of(-math.expm1(-event.sensitivity / (2 * event.scale)))
    if isinstance(event, ev.RandomizedResponseEvent):
        return _Distinguishable.of(1 - event.noise)  # the mass the true answer moves
    if isinstance(event, ev.PureDPEvent | ev.ApproximateDPEvent):  # their worst case
        delta = event.delta if isinstance(event, ev.ApproximateDPEvent) else 0.0
        return _Distinguishable.of(epsilon_delta_advantage(event.epsilon, delta))
    return NOTHING


def advantage_lower_bound(spec: Spec) -> float:
    """A lower bound on the best advantage against ``spec``'s mechanism as privspec
    accounts it, from its releases' pairs (``_Distinguishable``): at least every
    release's own, and at least 1 − the product of their Bhattacharyya coefficients.
    0 for a spec that names a strategy file (its release needs the file's values)."""
    from privspec.spec.models import spec_event, walk

    if any(getattr(getattr(block, "strategy", None), "matrix", None) is not None
           for _, _, block in walk(spec.mechanism)):
        return 0.0
    return _release(spec_event(spec), spec.neighbouring == "replace-one").advantage


def epsilon_delta_advantage(epsilon: float, delta: float) -> float:
    """The best advantage (ε, δ)-DP allows, δ + (1 − δ)·tanh(ε/2)."""
    return delta + (1 - delta) * math.tanh(epsilon / 2)


def gdp_advantage(mu: float) -> float:
    """The best advantage μ-GDP allows, 2Φ(μ/2) − 1."""
    return math.erf(mu / (2 * math.sqrt(2)))


def _below_lower_bound(report: Report, mu: float | None, floor: float, spec: Spec) -> str | None:
    """Why μ, the advantage or an ε is below what ``spec``'s releases alone force."""
    lower = advantage_lower_bound(spec) * (1 - _SLACK)
    if report.gdp.advantage < lower - floor:
        return "its advantage is below what the spec's releases alone reach"
    if mu is not None and gdp_advantage(mu) + floor < lower:
        return "its μ is below what the spec's releases alone force"
    stated = [*_epsilons(report)]
    if report.pure_epsilon is not None:
        stated.append((0.0, report.pure_epsilon))
    for delta, epsilon in stated:
        if epsilon_delta_advantage(epsilon, delta) + floor < lower:
            return f"its ε at δ = {delta!r} is below what the spec's releases alone force"
    return None


def inconsistency(report: Report, spec: Spec | None = None) -> str | None:
    """Why ``report``'s figures contradict each other, or (with the ``spec`` it is of)
    what the spec's releases alone force (see the module's docstring); None when they
    agree."""
    mu, floor = report.gdp.mu, report.accounting.floor
    if mu is not None and not 0 <= mu < math.inf:
        return "its μ is not a finite non-negative number"
    if not 0 <= floor < 1:
        return "its floor is not a probability below 1"
    widened = None if mu is None else mu / (1 - BOUND_MARGIN)
    points = _points(report)
    return (_curve_problem(report, points, widened, floor)
            or _epsilon_problem(report, widened)
            or (None if spec is None else _below_lower_bound(report, widened, floor, spec)))
