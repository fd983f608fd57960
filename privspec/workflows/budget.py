"""Budgets: the limits a mechanism must stay within, checked against its report.

A limit comes from the spec's ``budget:`` section or from the command line
(``privspec check --max-mu 1``); both apply.  Values are compared unrounded and
printed rounded in the conservative direction (``privspec.report.formatting``), with
more digits when the rounded value would seem to contradict the verdict
(``μ = 1.00 ≤ 0.9995`` becomes ``μ = 0.99941 ≤ 0.9995``).

Pure: no printing, no exit codes, and no numerical imports at module level
(``check_spec`` imports the evaluator when it runs).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from privspec.report import formatting as fmt
from privspec.report.render import risk_text
from privspec.spec.group import for_whom
from privspec.spec.models import Budget, with_figures
from privspec.spec.risk import RiskScenario

if TYPE_CHECKING:
    from privspec.report.model import Report
    from privspec.spec.models import Spec

LimitKind = Literal["max_mu", "max_epsilon", "max_advantage", "require_tier1", "max_risk"]


@dataclass(frozen=True)
class Limit:
    """One limit: ``value`` (None for require_tier1), ``delta`` for max_epsilon, and where
    it was set (``budget.max_mu`` in the spec, ``--max-mu`` on the command line)."""

    kind: LimitKind
    value: float | None
    source: str
    delta: float | None = None
    scenario: RiskScenario | None = None  # for max_risk: the attack limited


@dataclass(frozen=True)
class Outcome:
    """A limit checked against a report: ``ok`` and a one-line explanation."""

    limit: Limit
    ok: bool
    actual: float | None
    message: str


def limits_from_budget(budget: Budget | None,
                       source: Callable[[str], str] = "budget.{}".format) -> list[Limit]:
    """The limits of a ``budget:`` section (none without one); ``source(name)`` says
    where each was given."""
    if budget is None:
        return []
    limits = []
    if budget.max_mu is not None:
        limits.append(Limit("max_mu", budget.max_mu, source("max_mu")))
    if budget.max_epsilon is not None:
        limits.append(Limit("max_epsilon", budget.max_epsilon, source("max_epsilon"),
                            budget.delta))
    if budget.max_advantage is not None:
        limits.append(Limit("max_advantage", budget.max_advantage, source("max_advantage")))
    if budget.require_tier1:
        limits.append(Limit("require_tier1", None, source("require_tier1")))
    for i, limit in enumerate(budget.max_risk or []):
        scenario = RiskScenario.model_validate({limit.kind: limit.block})
        limits.append(Limit("max_risk", limit.at_most, source(f"max_risk[{i}]"),
                            scenario=scenario))
    return limits


def limits_from_options(*, max_mu: float | None = None, max_epsilon: float | None = None,
                        delta: float | None = None, max_advantage: float | None = None,
                        require_tier1: bool = False, max_risk: list[str] | None = None
                        ) -> list[Limit]:
    """Command-line limits; raises ``ValueError`` with a one-line reason for a bad one."""
    risks = [_risk_limit(text) for text in max_risk or []]
    problems = []
    if max_mu is not None and not (math.isfinite(max_mu) and max_mu > 0):
        problems.append(f"--max-mu must be a positive number, got {max_mu:g}")
    if max_epsilon is not None and not (math.isfinite(max_epsilon) and max_epsilon > 0):
        problems.append(f"--max-epsilon must be a positive number, got {max_epsilon:g}")
    if max_epsilon is not None and delta is None:
        problems.append("--max-epsilon needs --delta: ε is only meaningful at a given δ")
    if delta is not None and max_epsilon is None:
        problems.append("--delta goes with --max-epsilon")
    if delta is not None and not 0 < delta < 1:
        problems.append(f"--delta must be in (0, 1), got {delta:g}")
    if max_advantage is not None and not 0 < max_advantage <= 1:
        problems.append(f"--max-advantage is a probability in (0, 1], got {max_advantage:g}")
    if problems:
        raise ValueError("; ".join(problems))
    if max_mu is None and max_epsilon is None and max_advantage is None and not require_tier1:
        return risks
    budget = Budget(max_mu=max_mu, max_epsilon=max_epsilon, delta=delta,
                    max_advantage=max_advantage, require_tier1=require_tier1)
    return [*limits_from_budget(budget, lambda name: "--" + name.replace("_", "-")), *risks]


def _risk_limit(text: str) -> Limit:
    """``--max-risk reidentification@10000=0.001`` (a risk metric of
    ``privspec.workflows.targets``) as a limit."""
    from privspec.workflows.targets import Target, TargetError

    try:
        target = Target.parse(text)
    except TargetError as error:
        raise ValueError(f"--max-risk: {error}") from None
    scenario = target.scenario()
    if scenario is None:
        raise ValueError(f"--max-risk {text!r}: not a risk; give reidentification@N=V, "
                         "attribute@K=V, reconstruction@KAPPA=V or accuracy@PI=V (and "
                         "--max-mu, --max-epsilon, --max-advantage for the others)")
    if target.value >= 1:
        raise ValueError(f"--max-risk {text!r}: the limit is a probability below 1")
    return Limit("max_risk", target.value, f"--max-risk {text}",
                 scenario=RiskScenario.model_validate(scenario))


def limits_for(spec: Spec, extra: list[Limit] | tuple[Limit, ...] = ()) -> list[Limit]:
    """The spec's own limits followed by ``extra`` (from the command line)."""
    return [*limits_from_budget(spec.budget), *extra]


def stating(spec: Spec, limits: list[Limit] | tuple[Limit, ...]) -> Spec:
    """``spec`` also stating every figure the limits check (ε at their δ's, their risk
    scenarios); the mechanism is unchanged."""
    return with_figures(spec, deltas=deltas_of(limits),
                        scenarios=[limit.scenario for limit in limits if limit.scenario])


def deltas_of(limits: list[Limit] | tuple[Limit, ...]) -> list[float]:
    """The δ's at which the limits need ε."""
    return [limit.delta for limit in limits if limit.delta is not None]


def _limit_text(value: float) -> str:
    """A user-given limit, exactly as given (shortest round-trip decimal)."""
    return fmt.format_number(value, "nearest", "unicode", 17)


def check_report(report: Report, limits: list[Limit] | tuple[Limit, ...]) -> list[Outcome]:
    """Each limit checked against ``report`` (unrounded), in the order given.

    A report without a finite μ exceeds every ``max_mu``; an unbounded ε(δ)
    exceeds every ``max_epsilon``.  A ``max_epsilon`` whose δ the report does not
    list raises ``ValueError`` (evaluate ``stating(spec, limits)``).
    """
    outcomes = []
    gdp = report.gdp
    whom = for_whom(report.unit, report.records_per_unit, report.unit_level)
    for limit in limits:
        if limit.kind == "require_tier1":
            ok = gdp.tier == 1
            if ok:
                message = f"Tier I (regret {fmt.fmt_regret_of(gdp)} ≤ " \
                          f"{_limit_text(gdp.regret_threshold)}) as required ({limit.source})"
            elif gdp.mu is None:
                message = f"Tier II: no finite μ exists, but Tier I is required ({limit.source})"
            else:
                message = (f"Tier II: regret {fmt.fmt_regret_of(gdp)} exceeds "
                           f"{_limit_text(gdp.regret_threshold)}, so μ alone does not describe "
                           f"the mechanism, but Tier I is required ({limit.source})")
            outcomes.append(Outcome(limit, ok, None, message))
            continue
        assert limit.value is not None
        if limit.kind == "max_risk":
            assert limit.scenario is not None
            row = report.risk.row(*limit.scenario.limited_row())
            if row is None:
                raise ValueError(f"the report does not bound {limit.source}")
            actual = row.bound
            what = "the success of " + risk_text(row, report, "name", "markdown")
            extra = ""
        elif limit.kind == "max_mu":
            actual = math.inf if gdp.mu is None else gdp.mu
            what = "μ"
            extra = " (no finite μ exists)" if gdp.mu is None else ""
        elif limit.kind == "max_epsilon":
            found = [e for e in report.epsilons if e.delta == limit.delta]
            if not found:
                raise ValueError(f"the report has no ε at δ = {limit.delta!r}")
            epsilon = found[0].epsilon
            actual = math.inf if epsilon is None else epsilon
            assert limit.delta is not None
            what = f"ε at δ = {_limit_text(limit.delta)}"
            extra = " (unbounded)" if epsilon is None else ""
        else:
            actual = gdp.advantage
            what = "the best attack's advantage"
            extra = ""
        ok = actual <= limit.value
        shown = fmt.against_limit(actual, limit.value, ok)
        if not ok and limit.kind == "max_advantage":
            shown = fmt.fmt_advantage(actual)
        relation = "within the limit" if ok else "exceeds the limit"
        message = f"{what}{whom} = {shown}{extra} {relation} {_limit_text(limit.value)} ({limit.source})"
        outcomes.append(Outcome(limit, ok, actual, message))
    return outcomes


def check_spec(spec: Spec, extra: list[Limit] | tuple[Limit, ...] = (),
               spec_path: str | os.PathLike[str] | None = None, *,
               memory_budget: float | None = None,
               time_budget: float | None = None) -> list[Outcome]:
    """Evaluate ``spec`` (with ε at the limits' δ's) and check every limit; no limits, no
    evaluation.  ``memory_budget`` and ``time_budget`` override the spec's, as in
    ``evaluate``."""
    limits = limits_for(spec, extra)
    if not limits:
        return []
    from privspec.report.cache import evaluate

    path = None if spec_path is None else os.fspath(spec_path)
    report = evaluate(stating(spec, limits), spec_path=path, memory_budget=memory_budget,
                      time_budget=time_budget, groups=False)
    return check_report(report, limits)


__all__ = ["Limit", "Outcome", "check_report", "check_spec", "deltas_of", "limits_for",
           "limits_from_budget", "limits_from_options", "stating"]
