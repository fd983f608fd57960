"""The ``risk:`` block: the attacks a report bounds in operational terms.

Each scenario is a one-key mapping, like a mechanism kind::

    risk:
      - membership: {fpr: 1e-3}            # the attack's TPR at FPR 10⁻³
      - membership: {base_rate: 0.01}      # its accuracy when 1 % of candidates are in
      - attribute_inference: {values: 2}   # guessing a yes/no attribute
      - reidentification: {candidates: 10000}
      - reconstruction: {baseline: 1e-6}   # any reconstruction a guess gets right 10⁻⁶

Without the block a report bounds ``DEFAULT_SCENARIOS``.  What each bound means and why
it holds: docs/risk.md.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, model_validator

from privspec.spec.base import _Strict, conflict, raise_if

#: A probability strictly between 0 and 1.
OpenProbability = Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)]
#: At least two equally likely possibilities (a guess then succeeds at most half the time).
#: The most candidates or attribute values a scenario may have.
MOST_CHOICES = 10**15
Choices = Annotated[int, Field(ge=2, le=MOST_CHOICES)]


class Membership(_Strict):
    """Membership inference: was the record in the data?"""

    fpr: OpenProbability | None = Field(
        None, description="The attack's false-positive rate α: the report bounds its "
        "true-positive rate at α (attack papers report α = 10⁻³ and 10⁻⁵; Carlini et al. "
        "2022).")
    base_rate: OpenProbability | None = Field(
        None, description="The prior probability π that the record is in the data: the "
        "report bounds the attack's accuracy, and with 'fpr' its precision at that FPR.")

    @model_validator(mode="after")
    def _check(self) -> Membership:
        if self.fpr is None and self.base_rate is None:
            raise_if([conflict("fpr", "give 'fpr', 'base_rate' or both: what the membership "
                               "scenario bounds")], "Membership")
        return self


class AttributeInference(_Strict):
    """Inferring one attribute of the record from the output, knowing everything else."""

    values: Choices = Field(
        description="How many equally likely values the attribute takes (2 for yes/no); "
        "a guess succeeds with probability 1/values.")


class Reidentification(_Strict):
    """Picking out the record's owner among candidates."""

    candidates: Choices = Field(
        description="How many equally likely candidates the owner is among; a guess "
        "succeeds with probability 1/candidates.")


class Reconstruction(_Strict):
    """Reconstructing the record (or any property of it) that a guess gets right with
    probability ``baseline``."""

    baseline: OpenProbability = Field(
        description="The probability κ that a guess without the output succeeds, e.g. "
        "1e-6 for a one-in-a-million record.")


class RiskScenario(_Strict):
    """One attack the report bounds: exactly one of its keys."""

    membership: Membership | None = None
    attribute_inference: AttributeInference | None = None
    reidentification: Reidentification | None = None
    reconstruction: Reconstruction | None = None

    @model_validator(mode="after")
    def _check(self) -> RiskScenario:
        given = [name for name in SCENARIO_KEYS if getattr(self, name) is not None]
        allowed = ", ".join(SCENARIO_KEYS)
        if not given:
            raise_if([conflict("membership", f"give one scenario: {allowed}")], "RiskScenario")
        raise_if([conflict(name, "one scenario per list item: start another '- ' item for "
                           f"'{name}'") for name in given[1:]], "RiskScenario")
        return self

    @property
    def kind(self) -> str:
        """The scenario's key."""
        return next(name for name in SCENARIO_KEYS if getattr(self, name) is not None)

    def rows(self) -> list[tuple[str, dict[str, float], float]]:
        """The report rows this scenario gives: (row kind, parameters, baseline, what a
        guess without the output achieves).  A membership scenario gives its TPR at the
        FPR, its accuracy at the base rate, and with both also its precision."""
        block = self.block
        if self.kind != "membership":
            kind, field = {"attribute_inference": ("attribute-inference", "values"),
                           "reidentification": ("reidentification", "candidates"),
                           "reconstruction": ("reconstruction", "baseline")}[self.kind]
            value = float(getattr(block, field))
            return [(kind, {field: value}, value if kind == "reconstruction" else 1 / value)]
        rows = []
        if block.fpr is not None:
            rows.append(("membership-tpr", {"fpr": block.fpr}, block.fpr))
        if block.base_rate is not None:
            pi = block.base_rate
            rows.append(("membership-accuracy", {"base_rate": pi}, max(pi, 1 - pi)))
            if block.fpr is not None:
                rows.append(("membership-precision", {"base_rate": pi, "fpr": block.fpr}, pi))
        return rows

    def limited_row(self) -> tuple[str, dict[str, float]]:
        """The row a limit or target on this scenario applies to: its last (precision
        when a membership scenario gives both an FPR and a base rate)."""
        kind, parameters, _ = self.rows()[-1]
        return kind, parameters

    @property
    def block(self) -> Any:
        return getattr(self, self.kind)


#: The keys of a scenario, one of which each ``risk:`` item gives.
SCENARIO_KEYS = ("membership", "attribute_inference", "reidentification", "reconstruction")


class RiskLimit(RiskScenario):
    """A limit on one scenario's bound, for ``privspec check``: the scenario's key and
    ``at_most``."""

    at_most: OpenProbability = Field(
        description="The largest acceptable success (a probability): the bound from the "
        "exact curve must not exceed it.")


#: What a report bounds when the spec has no ``risk:`` block.
DEFAULT_SCENARIOS: tuple[dict[str, Any], ...] = (
    {"membership": {"fpr": 1e-3}},
    {"membership": {"fpr": 1e-5}},
    {"attribute_inference": {"values": 2}},
    {"reidentification": {"candidates": 10_000}},
)

RiskScenarios = Annotated[list[RiskScenario], Field(min_length=1, max_length=20)]
