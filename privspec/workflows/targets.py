"""Targets and limits on a report's figures: ``METRIC[@AT]=VALUE``, as ``privspec
calibrate --target`` and ``privspec check --max-risk`` take them.

Upper bounds on μ, the best advantage, the TPR at an FPR, ε at a δ, and the risk
figures (re-identification, attribute inference, reconstruction, membership accuracy);
a lower bound on β at an α.  ``with_target_figures`` makes a report state each figure.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from privspec.errors import PrivspecError

if TYPE_CHECKING:
    from privspec.report.model import Report
    from privspec.spec.models import Spec

Metric = Literal["mu", "advantage", "tpr", "beta", "epsilon", "reidentification",
                 "attribute", "reconstruction", "accuracy"]

#: Each metric: (what follows "@", or None; what the figure is, in words).
METRICS: dict[str, tuple[str | None, str]] = {
    "mu": (None, "μ of the tightest μ-GDP guarantee"),
    "advantage": (None, "the best attack's advantage TPR − FPR"),
    "tpr": ("FPR", "the highest attack TPR at that FPR"),
    "beta": ("ALPHA", "the lowest attack FNR β at that FPR α (a lower bound)"),
    "epsilon": ("DELTA", "ε at that δ"),
    "reidentification": ("N", "the success of re-identification among N candidates"),
    "attribute": ("K", "the success of inferring an attribute with K equally likely values"),
    "reconstruction": ("KAPPA", "the success of a reconstruction a guess gets right with "
                                "probability KAPPA"),
    "accuracy": ("PI", "the best membership attack's accuracy at base rate PI"),
}
ALLOWED = ("allowed: " + ", ".join(f"{name}@{at}=V" if at else f"{name}=V"
                                   for name, (at, _) in METRICS.items())
           + " (for example mu=1, epsilon@1e-5=8 or reidentification@10000=0.001)")

#: The risk scenario (the spec's ``risk:`` item and its field) of each risk metric.
_SCENARIOS: dict[str, tuple[str, str]] = {
    "reidentification": ("reidentification", "candidates"),
    "attribute": ("attribute_inference", "values"),
    "reconstruction": ("reconstruction", "baseline"),
    "accuracy": ("membership", "base_rate"),
}


class TargetError(PrivspecError, ValueError):
    """A target or limit that does not read as ``METRIC[@AT]=VALUE``."""


@dataclass(frozen=True)
class Target:
    """``metric[@at] = value``: an upper bound on the figure (a lower bound for β)."""

    metric: Metric
    value: float
    at: float | None = None

    @classmethod
    def parse(cls, text: str) -> Target:
        """``mu=1``, ``tpr@1e-3=0.01``, ``reidentification@10000=0.001``…; TargetError
        saying what is allowed."""
        name, equals, number = text.partition("=")
        metric, at_sign, at_text = name.strip().partition("@")
        metric = metric.strip().lower()
        try:
            value = float(number)
            at = float(at_text) if at_sign else None
        except ValueError:
            raise TargetError(f"target {text!r}: not a number; {ALLOWED}") from None
        if not equals or metric not in METRICS:
            raise TargetError(f"target {text!r}: {ALLOWED}")
        needs = METRICS[metric][0]
        if (needs is None) != (at is None):
            raise TargetError(f"target {text!r}: {metric} "
                              + (f"needs @{needs}" if needs else "takes no @") + f"; {ALLOWED}")
        problem = _at_problem(metric, at) if at is not None else None
        if problem:
            raise TargetError(f"target {text!r}: {needs} {problem}")
        unbounded = metric in ("mu", "epsilon")
        if not math.isfinite(value) or value <= 0 or (not unbounded and value >= 1):
            bound = "a finite number above 0" if unbounded else "between 0 and 1"
            raise TargetError(f"target {text!r}: the value must be {bound}")
        return cls(metric, value, at)  # type: ignore[arg-type]

    def __str__(self) -> str:
        at = "" if self.at is None else f"@{self.at:g}"
        return f"{self.metric}{at}={self.value:g}"

    @property
    def upper(self) -> bool:
        """The target bounds its figure from above (all but β)."""
        return self.metric != "beta"

    @property
    def name(self) -> str:
        """The figure in words: ``μ``, ``ε at δ = 10⁻⁵``, ``re-identification among
        10,000``…"""
        from privspec.report import formatting as fmt

        at = "" if self.at is None else fmt.fmt_given(self.at)
        whole = "" if self.at is None else f"{round(self.at):,}"
        return {"mu": "μ", "advantage": "the best attack's advantage",
                "epsilon": f"ε at δ = {at}", "tpr": f"TPR at FPR {at}",
                "beta": f"β at α = {at}",
                "reidentification": f"re-identification among {whole}",
                "attribute": f"inferring an attribute with {whole} values",
                "reconstruction": f"reconstruction against a baseline of {at}",
                "accuracy": f"membership accuracy at base rate {at}"}[self.metric]

    def scenario(self) -> dict[str, Any] | None:
        """The ``risk:`` item that makes a report state this figure (None: not a risk)."""
        if self.metric not in _SCENARIOS:
            return None
        key, field = _SCENARIOS[self.metric]
        assert self.at is not None
        value = round(self.at) if field in ("candidates", "values") else self.at
        return {key: {field: value}}

    def measure(self, report: Report) -> float:
        """The figure of ``report`` this target bounds (∞ where the report has none)."""
        if self.metric == "mu":
            return math.inf if report.gdp.mu is None else report.gdp.mu
        if self.metric == "advantage":
            return report.gdp.advantage
        if self.metric == "epsilon":
            epsilon = next(e.epsilon for e in report.epsilons if e.delta == self.at)
            return math.inf if epsilon is None else epsilon
        if self.metric in _SCENARIOS:
            from privspec.spec.risk import RiskScenario

            scenario = RiskScenario.model_validate(self.scenario())
            risk = report.risk.row(*scenario.limited_row())
            return math.inf if risk is None else risk.bound
        row = next(r for r in report.tradeoff if r.alpha == self.at)
        return float(row.tpr if self.metric == "tpr" else row.beta)

    def excess(self, report: Report) -> float:
        """How far ``report`` is from meeting this target (``ratio`` of its figure)."""
        return self.ratio(self.measure(report))

    def ratio(self, figure: float) -> float:
        """At most 1 when ``figure`` meets this target: figure/target for upper bounds,
        target/figure for β."""
        if self.metric == "beta":
            return math.inf if figure <= 0 else self.value / figure
        return figure / self.value


def _at_problem(metric: str, at: float) -> str | None:
    """What is wrong with the value after "@", if anything."""
    if metric in ("reidentification", "attribute"):
        from privspec.spec.risk import MOST_CHOICES

        return (None if 2 <= at <= MOST_CHOICES and at == round(at)
                else "must be a whole number from 2 to 10¹⁵")
    return None if 0 < at < 1 else "must be between 0 and 1"


def with_target_figures(spec: Spec, targets: Sequence[Target]) -> Spec:
    """``spec`` also stating every figure the targets bound (their α's, δ's and risk
    scenarios); the mechanism and the accounting are unchanged."""
    from privspec.spec.models import with_figures
    from privspec.spec.risk import RiskScenario

    return with_figures(
        spec, deltas=[t.at for t in targets if t.metric == "epsilon" and t.at is not None],
        alphas=[t.at for t in targets if t.metric in ("tpr", "beta") and t.at is not None],
        scenarios=[RiskScenario.model_validate(t.scenario()) for t in targets
                   if t.scenario() is not None])
