"""The report's risk section: each scenario of the spec's ``risk:`` block bounded by the
exact curve, by μ-GDP alone and by the first reported (ε, δ) (``privspec.numerics.risk``)."""

from __future__ import annotations

import math

from privspec.numerics.risk import (
    EpsilonDeltaCurve,
    GaussianCurve,
    RiskCurve,
    best_accuracy,
    precision,
)
from privspec.report.formatting import round_float
from privspec.report.model import EpsilonAtDelta, Risk, RiskRow
from privspec.spec.models import Spec


def _bound(curve: RiskCurve, kind: str, parameters: dict[str, float], baseline: float) -> float:
    if kind == "membership-accuracy":
        return best_accuracy(curve, parameters["base_rate"])
    if kind == "membership-precision":
        return precision(curve, parameters["base_rate"], parameters["fpr"])
    return curve.success(baseline)  # TPR at FPR κ, or success against a baseline κ


def risk_section(spec: Spec, exact: RiskCurve, mu: float | None, floor: float,
                 epsilons: list[EpsilonAtDelta], pure_epsilon: float | None) -> Risk:
    """Every scenario's bounds: from ``exact`` (the mechanism's curve), from G_μ (less the
    floor τ) and from the (ε, δ) a report would state: pure ε-DP when it holds, else the
    first ε(δ) of ``epsilons``.  μ and ε are taken as the report prints them (rounded
    up), so that the "alone" columns are what a reader computes from their headers, as
    the trade-off table's G_μ column is: still bounds, since the rounded-up guarantee is
    implied by the true one."""
    first = (EpsilonAtDelta(delta=0.0, epsilon=pure_epsilon) if pure_epsilon is not None
             else epsilons[0])
    claimed = EpsilonDeltaCurve(float("inf") if first.epsilon is None
                                else round_float(first.epsilon, "up"), first.delta)
    gaussian = None if mu is None else GaussianCurve(round_float(mu, "up"), floor)
    rows: list[RiskRow] = []
    for scenario in spec.risk:
        for kind, parameters, baseline in scenario.rows():
            if any(row.scenario == kind and row.parameters == parameters for row in rows):
                continue  # two scenarios may ask for the same figure
            by_gdp = (None if gaussian is None
                      else max(baseline, _bound(gaussian, kind, parameters, baseline)))
            by_claim = max(baseline, _bound(claimed, kind, parameters, baseline))
            # Each column is a bound; the mechanism's is the smallest (its numerical curve
            # alone can sit a grid step above a closed form that also holds).
            exact_bound = max(baseline, _bound(exact, kind, parameters, baseline))
            rows.append(RiskRow(
                scenario=kind, parameters=parameters, baseline=baseline,
                bound=min(exact_bound, by_claim, math.inf if by_gdp is None else by_gdp),
                bound_gdp=by_gdp, bound_epsilon_delta=by_claim))
    return Risk(epsilon=first.epsilon, delta=first.delta, rows=rows)
