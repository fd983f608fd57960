"""The privspec spec language: frozen pydantic models of a ``*.privspec.yaml`` file.

A spec names what one record is, the neighbouring relation, and a tree of
mechanisms.  Each mechanism is written as a one-key mapping whose key is its
kind (``gaussian: {...}``), in the spirit of dp-accounting's ``DpEvent``
algebra: a small set of frozen, documented building blocks that compose.  Each
kind is one module of ``privspec.spec.kinds`` (its model, the event it releases,
its description and its properties); this module assembles the tree from them.

Rules for growing the language (as in dp_accounting/dp_event.py): never change
the meaning of an existing field; add a new field or a new kind instead, and
bump ``privspec:`` only for a change that would alter an existing spec's
numbers.

This module must not import numpy, scipy or dp-accounting: ``privspec
validate`` imports it and has to stay instant.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    Field,
    SerializerFunctionWrapHandler,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic_core import ErrorDetails, InitErrorDetails, PydanticCustomError

from privspec.spec.audit import AuditBlock
from privspec.spec.base import (
    MAX_DATASET_SIZE,
    MAX_REPETITIONS,
    SPEC_FILE,
    PositiveFloat,
    _Strict,
    steps_from_epochs,
)
from privspec.spec.base import conflict as _conflict
from privspec.spec.base import raise_if as _raise_if
from privspec.spec.events import Event
from privspec.spec.group import grouped, iterated
from privspec.spec.kind import NODE_TYPES, Mechanism, _kind_of
from privspec.spec.kind import _Node as _Node  # (the other stages read it here)
from privspec.spec.kinds import KINDS
from privspec.spec.kinds.approximate_dp import ApproximateDP
from privspec.spec.kinds.compose import Stage
from privspec.spec.kinds.discrete_gaussian import DiscreteGaussian
from privspec.spec.kinds.discrete_laplace import DiscreteLaplace
from privspec.spec.kinds.dpsgd import DPSGD
from privspec.spec.kinds.fixed_size_sampled import FixedSizeSampled
from privspec.spec.kinds.gaussian import Gaussian
from privspec.spec.kinds.laplace import Laplace
from privspec.spec.kinds.poisson_sampled import PoissonSampled
from privspec.spec.kinds.pure_dp import PureDP
from privspec.spec.kinds.randomized_response import RandomizedResponse
from privspec.spec.kinds.repeat import Repeat
from privspec.spec.risk import DEFAULT_SCENARIOS, RiskLimit, RiskScenario, RiskScenarios
from privspec.spec.scope import Scope

SPEC_VERSION = 1

#: Most records one unit may contribute (a Poisson-sampled step's mixture has k + 1 parts).
MAX_RECORDS_PER_UNIT = 10_000

Relation = Literal["add-or-remove", "replace-one", "zero-out"]

__all__ = [
    "DPSGD", "MAX_DATASET_SIZE", "MAX_REPETITIONS", "MECHANISM_KINDS", "NODE_TYPES",
    "ApproximateDP", "DiscreteGaussian", "DiscreteLaplace", "FixedSizeSampled", "Gaussian",
    "Laplace", "Mechanism", "PoissonSampled", "PureDP", "RandomizedResponse", "Repeat",
    "Spec", "Stage", "conflicts_beside_field_errors", "event_of", "group_iterations",
    "spec_event", "steps_from_epochs", "walk",
]


# ---------------------------------------------------------------------------
# The mechanism: a one-key mapping whose key names the kind (``spec/kind.py``'s
# ``Mechanism``, each kind's model built by pydantic when a spec first uses it).
# ---------------------------------------------------------------------------


MECHANISM_KINDS: tuple[str, ...] = tuple(KINDS)
#: Kinds that add noise once (may sit under a sampling node).
ADDITIVE_KINDS = tuple(name for name, kind in KINDS.items() if kind.additive)


def event_of(node: _Node) -> Event:
    """What ``node`` releases, as ``privspec.spec.events`` (its kind's ``event``)."""
    return KINDS[node.kind].event(node.block, event_of)


def spec_event(spec: Spec) -> Event:
    """What the spec's mechanism releases about one unit (``records_per_unit`` records
    of it: ``privspec.spec.group.grouped``), what every accounting starts from; one
    record's when the unit's curve is one record's iterated (``group_iterations``)."""
    event = event_of(spec.mechanism)
    if group_iterations(spec) > 1:
        return event
    return grouped(event, spec.records_per_unit)


def group_iterations(spec: Spec) -> int:
    """k when a unit of k records is accounted by f-DP group privacy on the curve of the
    whole per-record mechanism (``privspec.spec.group.iterated``), else 1."""
    records = spec.records_per_unit
    replace_one = spec.neighbouring == "replace-one"
    return records if iterated(event_of(spec.mechanism), records, replace_one) else 1


# ---------------------------------------------------------------------------
# Top level.
# ---------------------------------------------------------------------------

DEFAULT_DELTAS = (1e-5, 1e-6, 1e-9)
DEFAULT_ALPHAS = (1e-10, 1e-8, 1e-6, 1e-4, 1e-3, 1e-2, 1e-1)
OutputFormat = Literal["markdown", "latex", "html", "json", "registry"]


class ReportOptions(_Strict):
    """What the report shows."""

    deltas: Annotated[
        list[Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)]],
        Field(min_length=1, max_length=20),
    ] = Field(
        list(DEFAULT_DELTAS),
        description="δ values at which ε(δ) is reported for comparison with earlier work.",
    )
    alphas: Annotated[
        list[Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)]],
        Field(min_length=1, max_length=50),
    ] = Field(
        list(DEFAULT_ALPHAS),
        description="Attack false-positive rates α of the Tier II table (α* is always added).",
    )
    regret_threshold: Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)] = Field(
        0.01,
        description="Largest regret for which μ alone is reported (Tier I); Gomez et al. 2025 use 0.01.",
    )
    formats: Annotated[list[OutputFormat], Field(min_length=1)] = Field(
        ["markdown"], description="Formats rendered when none is given on the command line."
    )


class AccountingOptions(_Strict):
    """How the privacy-loss distributions are computed (defaults reproduce docs/math.md §7)."""

    discretization: Annotated[float, Field(ge=1e-6, le=0.1, allow_inf_nan=False)] = Field(
        1e-4,
        description="Value discretization interval h of dp-accounting's PLDs; smaller is "
        "tighter and slower.",
    )
    floor: Annotated[float, Field(ge=1e-100, le=1e-3, allow_inf_nan=False)] = Field(
        1e-12,
        description="Numerical floor τ: μ is claimed as f(α) ≥ G_μ(α) − τ for every α "
        "(docs/math.md §2); masses below τ, such as the accountant's truncated tails, are "
        "covered by it. From 10⁻¹⁰⁰ (a numerical accountant cannot certify τ = 0) to "
        "10⁻³. Where the accounting cannot meet it, the report says so and uses the "
        "smallest power of ten it can meet.",
    )
    memory_budget: Annotated[float, Field(ge=0.05, le=1024, allow_inf_nan=False)] = Field(
        1.0,
        description="Memory one computation may take, in GiB, estimated before it starts. "
        "Above it the accounting uses a coarser discretization (as pessimistic, looser) "
        "and the report says so; a mechanism that no allowed discretization fits is "
        "refused with the estimate.",
    )
    time_budget: Annotated[float, Field(ge=1, le=86_400, allow_inf_nan=False)] = Field(
        60.0,
        description="Time one evaluation may take, in seconds on a 2-core laptop, "
        "estimated from the sizes of the computation before it starts (never measured, so "
        "that the report is the same on every machine). Above it the accounting uses a "
        "coarser discretization, or the closed-form bound, and the report says so.",
    )


class PublishedClaim(_Strict):
    """A guarantee published earlier for this mechanism, shown beside privspec's numbers."""

    epsilon: Annotated[float, Field(ge=0, allow_inf_nan=False)] = Field(
        description="The published ε."
    )
    delta: Annotated[float, Field(ge=0, lt=1, allow_inf_nan=False)] = Field(
        description="The published δ (0 for a pure-DP claim)."
    )
    source: Annotated[str, Field(min_length=1, max_length=300)] = Field(
        description="Where it was published and how it was computed, e.g. "
        "'De et al. 2022, Table 14 (RDP accountant)'."
    )


class Budget(_Strict):
    """Limits the mechanism must stay within, enforced by ``privspec check``.

    A policy, not part of the mechanism: it travels with the spec so that CI and
    pre-commit can gate changes, but it never changes a report's numbers, nor the
    spec's SHA-256 that reports print. Limits given on the command line apply in
    addition to these.
    """

    max_mu: PositiveFloat | None = Field(
        None, description="Largest acceptable μ of the tightest μ-GDP guarantee; a mechanism "
        "without a finite μ exceeds every max_mu.")
    max_epsilon: PositiveFloat | None = Field(
        None, description="Largest acceptable ε at the budget's 'delta' (needs 'delta').")
    delta: Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)] | None = Field(
        None, description="The δ at which 'max_epsilon' is checked, e.g. 1e-5.")
    max_advantage: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)] | None = Field(
        None, description="Largest acceptable advantage TPR − FPR of the best membership "
        "attack (a probability, e.g. 0.1 for 10 percentage points).")
    require_tier1: bool = Field(
        False, description="Require Tier I: μ alone tells the story (regret at most the "
        "report's regret_threshold).")
    max_risk: Annotated[list[RiskLimit], Field(min_length=1, max_length=20)] | None = Field(
        None, description="Limits on what an attacker can do: each a risk scenario (as in "
        "'risk:') with 'at_most', e.g. {reidentification: {candidates: 10000}, at_most: "
        "0.001}. A membership scenario limits its TPR at 'fpr', its accuracy at "
        "'base_rate', or with both its precision.")

    @model_validator(mode="after")
    def _check(self) -> Budget:
        problems = []
        if self.max_epsilon is not None and self.delta is None:
            problems.append(_conflict("max_epsilon", "'max_epsilon' needs 'delta': ε is "
                                      "only meaningful at a given δ", self.max_epsilon))
        if self.delta is not None and self.max_epsilon is None:
            problems.append(_conflict("delta", "'delta' goes with 'max_epsilon'", self.delta))
        if (self.max_mu is None and self.max_epsilon is None and self.max_advantage is None
                and not self.require_tier1 and self.max_risk is None):
            problems.append(_conflict("max_mu", "a budget needs at least one limit: "
                                      "'max_mu', 'max_epsilon' with 'delta', 'max_advantage', "
                                      "'max_risk' or 'require_tier1: true'"))
        _raise_if(problems, "Budget")
        return self


#: A calibration target as ``privspec calibrate`` writes it (``mu=1``, ``tpr@0.001=0.01``).
TARGET_PATTERN = r"^[a-z]+(@[0-9.eE+-]+)?=[0-9.eE+-]+$"


class CalibrationNote(_Strict):
    """What ``privspec calibrate`` chose, written by it into the spec: the field, its
    value and the targets it meets.  It must still hold: a field changed by hand since
    makes the spec invalid until it is calibrated again or the note removed."""

    field: Annotated[str, Field(min_length=1, max_length=300)] = Field(
        description="The spec path of the calibrated field.")
    value: Annotated[float, Field(allow_inf_nan=False)] = Field(
        description="The value privspec calibrate chose.")
    targets: Annotated[list[Annotated[str, Field(min_length=3, max_length=60)]],
                       Field(min_length=1, max_length=20)] = Field(
        description="The targets it meets, e.g. ['mu=1', 'tpr@0.001=0.01'].")

    @model_validator(mode="after")
    def _check(self) -> CalibrationNote:
        import re

        _raise_if([_conflict("targets", f"{target!r} is not a target as privspec calibrate "
                             "writes one (METRIC=VALUE or METRIC@AT=VALUE, e.g. mu=1)", target)
                   for target in self.targets if not re.match(TARGET_PATTERN, target)],
                  "CalibrationNote")
        return self


class Spec(_Strict):
    """A privspec file: one mechanism, what it protects, and how to report it."""

    privspec: Literal[1] = Field(description="Version of the spec language; must be 1.")
    title: Annotated[str, Field(min_length=1, max_length=300)] = Field(
        description="Title of the report, e.g. 'WRN-16-4 on CIFAR-10'."
    )
    description: Annotated[str, Field(max_length=10_000)] | None = Field(
        None, description="Optional free text shown under the title."
    )
    unit: Annotated[str, Field(min_length=1, max_length=300)] = Field(
        description="Who is protected: one record, e.g. 'one training example', or one "
        "unit of up to records_per_unit records, e.g. 'one patient'."
    )
    records_per_unit: Annotated[int, Field(ge=1, le=MAX_RECORDS_PER_UNIT, strict=True)] = Field(
        1, description="The most records one unit (see 'unit') contributes, k. The "
        "guarantee is stated for the unit: an additive release with a per-record "
        "sensitivity Δ moves by at most k·Δ (group privacy, Dong, Roth & Su 2022), and a "
        "Poisson-sampled Gaussian or DP-SGD step samples Binomial(k, q) of the unit's "
        "records, a mixture of Gaussians (Ganesh 2024, arXiv:2401.10294). Any other "
        "mechanism is accounted by f-DP group privacy on its whole trade-off curve (Dong, "
        "Roth & Su 2022, Thm 2.14). Default 1: the unit is one record. Not with unit_level: true.")
    unit_level: bool = Field(
        False, strict=True, description="true when the mechanism samples and bounds "
        "units, not records (user-level sampling): each step samples units (see 'unit') "
        "and clips or bounds each unit's whole contribution as one, as jax_privacy's "
        "user-level DP-SGD does. The mechanism's counts (dataset size, batch size, "
        "sampling rate) then count units, and the ordinary accounting holds for the "
        "unit, however many records it holds: records_per_unit stays 1. Default false: "
        "the mechanism samples and bounds records.")
    neighbouring: Relation = Field(
        description="Neighbouring datasets: 'add-or-remove' (one record added or removed), "
        "'replace-one' (one record replaced by another) or 'zero-out' (one record replaced "
        "by a null record that contributes nothing; the dataset size is public). Zero-out "
        "is accounted as add-or-remove (a null record changes the output as its removal "
        "would); truncated Poisson sampling needs it."
    )
    mechanism: Mechanism = Field(description="The released mechanism, as a tree of kinds.")
    report: ReportOptions = Field(default_factory=ReportOptions,
                                  description="What the report shows.")
    accounting: AccountingOptions = Field(default_factory=AccountingOptions,
                                          description="Numerical accounting settings.")
    published: PublishedClaim | None = Field(
        None, description="A guarantee published earlier, for a before/after comparison."
    )
    scope: Scope | None = Field(
        None, description="What the guarantee covers: what is released, which data "
        "accesses, the trust model, one release or many, what is left unprotected, and a "
        "link to the code (all optional; printed where given).")
    calibrated: CalibrationNote | None = Field(
        None, description="Written by privspec calibrate: which field it chose and for "
        "which targets (reports say so).")
    risk: RiskScenarios = Field(
        default_factory=lambda: [RiskScenario.model_validate(s) for s in DEFAULT_SCENARIOS],
        description="Attacks the report bounds in operational terms (membership at an FPR "
        "or a base rate, attribute inference, re-identification, reconstruction); by default "
        "membership at FPR 10⁻³ and 10⁻⁵, a yes/no attribute and re-identification among "
        "10,000 candidates.",
    )
    audit: AuditBlock | None = Field(
        None, exclude=True,
        description="An attack's score file that 'privspec audit' holds against the "
        "certified curve (it does not change the certified figures).",
    )
    budget: Budget | None = Field(
        None, exclude=True,
        description="Privacy budget that 'privspec check' enforces (a policy: it does not "
        "change the report).",
    )

    @model_serializer(mode="wrap")
    def _without_unstated_unit_fields(self, handler: SerializerFunctionWrapHandler
                                      ) -> dict[str, Any]:
        """The data, without ``records_per_unit`` and ``unit_level`` when unstated: a spec
        written before the fields keeps its SHA-256 (stating one, even as its default,
        changes the report)."""
        data: dict[str, Any] = handler(self)
        for name in ("records_per_unit", "unit_level"):
            if name not in self.model_fields_set:
                data.pop(name, None)
        return data

    @field_validator("privspec", mode="before")
    @classmethod
    def _version_is_a_whole_number(cls, value: Any) -> Any:
        """``true`` and ``1.0`` equal 1 in Python, and a literal takes them: not here."""
        if isinstance(value, bool | float):
            raise PydanticCustomError("literal_error", "Input should be {expected}",
                                      {"expected": "1"})
        return value

    @model_validator(mode="after")
    def _check_calibration_note(self, info: ValidationInfo) -> Spec:
        """The note is printed in every report as a claim about the value: a value
        changed since would make the report state what no longer holds, so the spec is
        refused (not warned about) until it is calibrated again or the note removed."""
        import shlex

        note = self.calibrated
        if note is None:
            return self
        from privspec.spec.knobs import KnobError, resolve

        try:
            knob = resolve(self.model_dump(mode="json", exclude_unset=True), note.field)
        except KnobError as error:
            _raise_if([_conflict("calibrated", f"calibrated.field: {error}")], "Spec")
        if knob.value != note.value:
            file = (info.context or {}).get(SPEC_FILE) or "SPEC"
            again = shlex.join(["privspec", "calibrate", file, "--vary", note.field,
                                *(word for target in note.targets for word in ("-t", target)),
                                "--in-place"])
            _raise_if([_conflict("calibrated", f"{knob} is {knob.value:g} now, not the "
                                 f"{note.value:g} calibrated to meet "
                                 f"{', '.join(note.targets)}, as reports would say: calibrate "
                                 f"again with '{again}', or delete this 'calibrated:' line to "
                                 f"keep {knob.value:g}", note.value)], "Spec")
        return self

    @model_validator(mode="after")
    def _check_unit_level(self) -> Spec:
        """Units sampled and bounded as one are accounted as records: a bound on their
        records would be accounted a second time."""
        if self.unit_level and self.records_per_unit > 1:
            _raise_if([_conflict("records_per_unit", "records_per_unit goes with "
                                 "unit_level: false; with unit_level: true each unit is "
                                 "sampled and bounded as one, so the accounting holds for "
                                 "the unit whatever its records (delete records_per_unit)",
                                 self.records_per_unit)], "Spec")
        return self

    @model_validator(mode="after")
    def _check_relation(self, info: ValidationInfo) -> Spec:
        if info.context and info.context.get(RELATION_CHECKED_BY_CALLER):
            return self  # the loader reports these with the field errors
        problems = [
            InitErrorDetails(type=PydanticCustomError("spec_conflict", message),
                             loc=("mechanism", *path), input=None)
            for path, message in relation_problems(self.mechanism.model_dump(),
                                                   self.neighbouring)
        ]
        _raise_if(problems, "Spec")
        return self


def with_figures(spec: Spec, *, deltas: Iterable[float] = (), alphas: Iterable[float] = (),
                 scenarios: Iterable[RiskScenario] = ()) -> Spec:
    """``spec`` also stating ε at ``deltas``, the Tier II table at ``alphas`` and the risk
    ``scenarios`` (each after its own); the mechanism and the accounting are unchanged."""
    new_deltas = [d for d in dict.fromkeys(deltas) if d not in spec.report.deltas]
    new_alphas = [a for a in dict.fromkeys(alphas) if a not in spec.report.alphas]
    new_risk = [r for r in dict.fromkeys(scenarios) if r not in spec.risk]
    if not (new_deltas or new_alphas or new_risk):
        return spec
    report = spec.report.model_copy(update={"deltas": [*spec.report.deltas, *new_deltas],
                                            "alphas": [*spec.report.alphas, *new_alphas]})
    return spec.model_copy(update={"report": report, "risk": [*spec.risk, *new_risk]})


#: Validation context key: the caller runs ``relation_problems`` on the data itself.
RELATION_CHECKED_BY_CALLER = "relation_checked_by_caller"


def walk(node: _Node, path: tuple[str | int, ...] = ()
         ) -> Iterator[tuple[tuple[str | int, ...], str, Any]]:
    """(path, kind, block) of every node of a validated mechanism tree, with paths as
    the user wrote them (``privspec.spec.kind.Kind.nesting`` says where to go down)."""
    yield path, node.kind, node.block
    nesting = KINDS[node.kind].nesting
    if nesting == "stages":
        for i, stage in enumerate(node.block):
            yield from walk(stage.mechanism, (*path, node.kind, i, "mechanism"))
    elif nesting == "mechanism":
        yield from walk(node.block.mechanism, (*path, node.kind, "mechanism"))


def _walk_written(data: Any, path: tuple[str | int, ...] = ()
                  ) -> Iterator[tuple[tuple[str | int, ...], str, Any]]:
    """(path, kind, fields) of every node of a mechanism as written (one-key mappings),
    skipping malformed parts (field validation reports them)."""
    kind = _kind_of(data)
    if kind not in KINDS:
        return
    fields = data[kind]
    yield path, kind, fields
    nesting = KINDS[kind].nesting
    if nesting == "stages":
        for i, stage in enumerate(fields if isinstance(fields, list) else []):
            inner = stage.get("mechanism") if isinstance(stage, dict) else None
            yield from _walk_written(inner, (*path, kind, i, "mechanism"))
    elif nesting == "mechanism" and isinstance(fields, dict):
        yield from _walk_written(fields.get("mechanism"), (*path, kind, "mechanism"))


def _get(data: Any, name: str) -> Any:
    return data.get(name) if isinstance(data, dict) else None


def relation_problems(mechanism: Any, relation: str
                      ) -> list[tuple[tuple[str | int, ...], str]]:
    """Mechanisms that cannot be accounted under ``relation``, and sampling of kinds whose
    amplification privspec cannot account (docs/math.md §6).

    Reads the mechanism as written (a validated one through ``model_dump``), so that the
    loader can report these next to field errors elsewhere in the spec instead of after
    they are fixed.
    """
    problems: list[tuple[tuple[str | int, ...], str]] = []
    for path, kind, fields in _walk_written(mechanism):
        here = (*path, kind)
        declared = KINDS[kind]
        if declared.sampling is not None:
            inner = _get(fields, "mechanism")
            inner_kind = _kind_of(inner)
            if inner_kind in KINDS and not KINDS[inner_kind].additive:
                problems.append(((*here, "mechanism"),
                                 f"sampling can wrap one noise-adding release "
                                 f"({', '.join(ADDITIVE_KINDS)}), not '{inner_kind}'"))
            elif (inner_kind in KINDS and declared.sampling == "poisson"
                  and relation == "replace-one"
                  and _get(_get(inner, "gaussian"), "noise_multiplier") is None):
                problems.append(((*here, "mechanism"),
                                 "under replace-one, Poisson sampling is accounted only "
                                 "for a gaussian given by 'noise_multiplier'"))
        if declared.replace_one_only is not None and relation != "replace-one":
            problems.append((here, declared.replace_one_only))
        if (kind == "dpsgd" and _get(fields, "sampling") == "truncated-poisson"
                and relation != "zero-out"):
            problems.append(((*here, "sampling"), "truncated Poisson batches are analysed "
                             "under 'neighbouring: zero-out' (a record replaced by a null one, "
                             "the dataset size public: McKenna et al. 2025)"))
        if (kind == "dpsgd" and _get(fields, "sampling") == "fixed-size"
                and relation != "replace-one"):
            problems.append(((*here, "sampling"), "fixed-size batches sampled without "
                             "replacement are analysed under 'neighbouring: replace-one' "
                             "(Balle et al. 2018); for add-or-remove, 'poisson' if batches were "
                             "Poisson-sampled"))
        if (kind == "dpsgd" and _get(fields, "sampling") == "shuffled"
                and relation == "add-or-remove"):
            problems.append(((*here, "sampling"), "shuffled batches have a fixed size: an "
                             "added example pushes another out of its batch, moving its sum "
                             "by two clipping norms, and shifts how the batches fall, which "
                             "add-or-remove does not describe; state 'neighbouring: zero-out' "
                             "(the example replaced by a null one, the dataset size public: "
                             "one norm) or 'replace-one' (two norms)"))
    return problems


def conflicts_beside_field_errors(mechanism: Any
                                  ) -> list[tuple[tuple[str | int, ...], str, Any]]:
    """(path, message, value) of the cross-field conflicts of every mechanism block, as
    written, whose own fields do not all validate: pydantic runs a block's cross-field
    check only once they all do, so its check is run here on those that did.  A check
    that reads a field that did not validate says nothing (it is run again, in full,
    once the field is fixed)."""
    found: list[tuple[tuple[str | int, ...], str, Any]] = []
    for path, kind, fields in _walk_written(mechanism):
        model = KINDS[kind].model
        if model is None or not isinstance(fields, dict):
            continue
        try:
            model.model_validate(fields, context={RELATION_CHECKED_BY_CALLER: True})
            continue
        except ValidationError as error:
            errors = error.errors()
        if any(not e["loc"] for e in errors) or all(e["type"] == "spec_conflict"
                                                     for e in errors):
            continue  # not a mapping of fields, or its check did run
        invalid = {e["loc"][0] for e in errors}
        if any(e["type"] == "extra_forbidden" for e in errors):  # a misspelt field, maybe:
            invalid |= set(model.model_fields) - set(fields)  # absent ones are not known
        found += [((*path, kind, *e["loc"]), e["msg"], e["input"])
                  for e in _checked_without(model, fields, invalid)]
    return found


def _checked_without(model: type[BaseModel], fields: dict[str, Any], invalid: set[Any]
                     ) -> list[ErrorDetails]:
    """What ``model``'s cross-field checks (its "after" validators) find in ``fields``
    without the ``invalid`` ones, which a check may not read."""
    values = {}
    for name, field in model.model_fields.items():
        if name in fields and name not in invalid:
            try:
                values[name] = TypeAdapter(field.rebuild_annotation()).validate_python(
                    fields[name])
            except ValidationError:
                return []
    partial = model.model_construct(**values)
    for name in invalid:
        partial.__dict__.pop(name, None)  # (reading it raises AttributeError)
    found: list[ErrorDetails] = []
    for name, decorator in model.__pydantic_decorators__.model_validators.items():
        if decorator.info.mode == "after":
            try:
                getattr(partial, name)()
            except ValidationError as error:
                found += [e for e in error.errors() if e["type"] == "spec_conflict"]
            except (AttributeError, TypeError, ValueError, ArithmeticError):
                continue  # it read a field that did not validate
    return found
