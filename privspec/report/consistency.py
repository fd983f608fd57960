"""Whether a report's headline figures agree with each other: what ``report/cache.py``
checks before it trusts a report read from the cache (pure Python: a cache hit imports
no numerical library).

The checks are sound (every report privspec assembles passes them, up to rounding) and
catch a μ, an advantage or an ε(δ) that is smaller than the report's own trade-off curve
or table allows:

* μ-GDP at the floor τ: every point (α, β, TPR) of the curve and the table has
  β ≥ G_μ(α) − τ and TPR ≤ 1 − G_μ(α) + τ, and β + TPR = 1;
* the best advantage is at most G_μ's, 2Φ(μ/2) − 1, plus τ, and at least TPR − α at
  every point;
* each ε(δ) (and the published comparison's) is at most what μ-GDP at the floor allows,
  δ_μ(ε) ≥ δ − τ, and at most the pure ε when there is one.

μ here is the report's μ widened by ``BOUND_MARGIN`` (the closed-form bound may stand in
for a numerical μ up to that much above it).  What they cannot catch: a report whose
figures were all forged together (μ, curve, table, ε's), or figures no headline figure
determines (the risk rows, the group table, a stage's μ, an audit); closed-form bounds
are upper bounds on μ and so cannot catch a μ too small either.  Against those, only
where the cache is kept protects (``report/store.py``).
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

    from privspec.report.model import Report

#: The closed-form bound replaces a numerical μ it undercuts by more than this (relative):
#: within it, the numerical curve (a little below G_μ of the bound's μ) is reported.
BOUND_MARGIN = 1e-3
#: Relative slack for the rounding of figures computed by different routes.
_SLACK = 1e-9
_NORMAL = NormalDist()


def _gaussian_beta_tpr(alpha: float, mu: float) -> tuple[float, float]:
    """G_μ(α) and 1 − G_μ(α), each without cancellation."""
    if alpha <= 0:
        return 1.0, 0.0
    if alpha >= 1:
        return 0.0, 1.0
    z = _NORMAL.inv_cdf(alpha)
    return _NORMAL.cdf(-z - mu), _NORMAL.cdf(z + mu)


def _gaussian_delta(epsilon: float, mu: float) -> float:
    """δ(ε) of μ-GDP, Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2), the second term without overflow."""
    if mu <= 0:
        return 0.0
    tail = _NORMAL.cdf(-epsilon / mu - mu / 2)
    second = math.exp(min(epsilon + math.log(tail), 709.0)) if tail > 0 else 0.0
    return _NORMAL.cdf(-epsilon / mu + mu / 2) - second


def _points(report: Report) -> Iterator[tuple[float, float, float]]:
    yield from ((p.alpha, p.beta, p.tpr) for p in report.curve)
    yield from ((row.alpha, row.beta, row.tpr) for row in report.tradeoff)


def _probability(value: float) -> bool:
    return 0 <= value <= 1  # False for NaN


def _epsilons(report: Report) -> Iterator[tuple[float, float]]:
    """Every (δ, ε) the report states with a finite ε."""
    yield from ((row.delta, row.epsilon) for row in report.epsilons if row.epsilon is not None)
    published = report.published
    if published is not None and published.epsilon_privspec is not None:
        yield published.delta, published.epsilon_privspec


def _curve_problem(report: Report, mu: float | None, floor: float) -> str | None:
    """Why a point of the curve or the table, or the advantage, contradicts the rest."""
    advantage = report.gdp.advantage
    if not _probability(advantage):
        return "its advantage is not a probability"
    for alpha, beta, tpr in _points(report):
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
    if mu is not None and advantage > (math.erf(mu / (2 * math.sqrt(2))) + floor) * (1 + _SLACK):
        return "its advantage exceeds G_μ's"
    return None


def _epsilon_problem(report: Report, mu: float | None, floor: float) -> str | None:
    """Why an ε(δ) contradicts μ or the pure ε."""
    pure = report.pure_epsilon
    if pure is not None and not pure >= 0:
        return "its pure ε is negative"
    if pure is not None and _below_epsilon_delta(report, pure, floor):
        return "its curve lies below what its pure ε allows"
    for delta, epsilon in _epsilons(report):
        if not (epsilon >= 0 and _probability(delta)):
            return "an ε(δ) is negative or its δ not a probability"
        if pure is not None and epsilon > pure * (1 + _SLACK):
            return f"its ε at δ = {delta!r} exceeds its pure ε"
        if mu is not None and delta > 0 and \
                _gaussian_delta(epsilon, mu) < (delta - floor) * (1 - _SLACK):
            return f"its ε at δ = {delta!r} is below what μ-GDP allows"
        if _below_epsilon_delta(report, epsilon, delta + floor):
            return f"its curve lies below what its ε at δ = {delta!r} allows"
    return None


def _below_epsilon_delta(report: Report, epsilon: float, delta: float) -> bool:
    """Whether a point of the curve or the table lies below (ε, δ)-DP's trade-off curve,
    max(1 − δ − e^ε α, e^−ε (1 − δ − α))."""
    if epsilon > 700:
        return False
    grow = math.exp(epsilon)
    return any(tpr > (delta + grow * alpha) * (1 + _SLACK) + _SLACK * 1e-6
               or 1 - delta - alpha > grow * beta * (1 + _SLACK) + _SLACK * 1e-6
               for alpha, beta, tpr in _points(report))


def inconsistency(report: Report) -> str | None:
    """Why ``report``'s figures contradict each other (see the module's docstring), or
    None when they agree."""
    mu, floor = report.gdp.mu, report.accounting.floor
    if mu is not None and not 0 <= mu < math.inf:
        return "its μ is not a finite non-negative number"
    if not 0 <= floor < 1:
        return "its floor is not a probability below 1"
    widened = None if mu is None else mu / (1 - BOUND_MARGIN)
    return _curve_problem(report, widened, floor) or _epsilon_problem(report, widened, floor)
