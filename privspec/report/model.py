"""The report model: everything a renderer needs, as one frozen, JSON-serialisable value.

The evaluator (``privspec.evaluate``) builds it; every output format is a pure
function of it (``Report.model_dump_json()`` is the JSON format).  Field names
are part of the public JSON contract: add fields, never change a meaning.
Probabilities that can be tiny are plain floats (full precision); rounding for
display happens only in ``privspec.report.formatting``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from privspec.spec.group import attacker_knows

REPORT_SCHEMA_VERSION = 1
#: The accounting sentence of a report whose figures are exact (``Report.exact_accounting``).
NOTHING_NUMERICAL = "nothing discretized, truncated or composed numerically"


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StageSummary(_Frozen):
    """One stage of the composed mechanism, in words."""

    name: str | None = Field(description="The stage's name in the spec, if it has one.")
    description: str = Field(description="The stage's mechanism in plain words.")
    repeat: int = Field(description="How many times the stage runs.")
    mu: float | None = Field(
        None, description="μ of this stage on its own (with its repeats), when computed: "
        "what the stage adds; null for a single-stage mechanism or no finite μ.")


class MechanismSummary(_Frozen):
    """The mechanism as composed, restated so the claim cannot be read out of context."""

    kind: str = Field(description="Kind at the root of the mechanism tree.")
    noun: str = Field(description="What reports call the mechanism, e.g. 'training run'.")
    summary: str = Field(description="One or two sentences describing the whole mechanism.")
    stages: list[StageSummary] = Field(
        description="Top-level stages (one entry when the root is not a composition)."
    )


class Accounting(_Frozen):
    """How the numbers were computed, for reproducibility."""

    method: str = Field(description="The accountant and its settings, in words.")
    discretization: float = Field(description="Value discretization interval h of the PLDs.")
    floor: float = Field(description="Numerical floor τ under which μ holds (docs/math.md §2).")
    requested_floor: float | None = Field(
        None, description="The floor the spec asked for, when the accounting could not meet "
        "it and ``floor`` is the smallest power of ten it could; null otherwise.")
    tail_mass_truncation: float = Field(
        description="Tail mass a composition may move to +∞ (pessimistically).")
    relative_error: float | None = Field(
        description="Bound on the relative error of every composed probability, added "
                    "towards the attacker; None where dp-accounting's FFT composition was "
                    "used instead (no bound).")
    versions: dict[str, str] = Field(description="Versions of privspec and the numerical stack.")


class GDP(_Frozen):
    """Tier I: the tightest μ-GDP bound and how well it fits (Gomez et al. 2025, §4)."""

    mu: float | None = Field(
        description="Tightest μ with f ≥ G_μ − τ; null when no finite μ exists.")
    no_finite_mu_reason: str | None = Field(description="Why no finite μ exists, when it does not.")
    regret: float | None = Field(
        description="Δ-divergence between the curve and G_μ (Kaissis et al. 2024); null without μ.")
    regret_resolution: float = Field(
        1e-9, description="Regrets below this are not resolved (the composition's error "
        "bound, at least 10⁻⁹) and are printed as '< this'.")
    regret_threshold: float = Field(description="Threshold for Tier I (regret at most this).")
    tier: Literal[1, 2] = Field(description="1: μ alone tells the story; 2: read the trade-off table.")
    advantage: float = Field(description="Best attack's advantage TPR − FPR, η = δ(0).")
    alpha_star: float = Field(description="FPR of the attack that achieves the best advantage.")
    mass_at_infinity: float = Field(
        description="Probability δ(∞) of an unbounded privacy loss (PLD mass at +∞).")
    bound: bool = Field(
        False, description="μ, the table and ε(δ) are a closed-form bound that holds release "
        "by release, not the mechanism's own curve (which lies above G_μ): the numerical "
        "accounting was looser or too costly; the caveats say which.")


class TradeoffRow(_Frozen):
    """One row of the Tier II table: the attack's lowest FNR β at FPR α."""

    alpha: float = Field(description="Attack false-positive rate α.")
    beta: float = Field(description="Lowest false-negative rate f(α) on the mechanism's curve.")
    tpr: float = Field(
        description="Highest true-positive rate 1 − f(α), kept without cancellation (accurate when tiny).")
    beta_gdp: float | None = Field(description=(
        "G_μ(α) for μ as reports print it (rounded up to 3 significant digits, so that the "
        "column matches its label); null without μ."))
    tpr_gdp: float | None = Field(description=(
        "1 − G_μ(α) for μ as printed, accurate when tiny; null without μ."))
    is_alpha_star: bool = Field(description="True for the best-advantage attack's α*.")


class EpsilonAtDelta(_Frozen):
    """A legacy (ε, δ) pair from the accountant, for comparison with earlier work."""

    delta: float
    epsilon: float | None = Field(description="ε(δ); null when unbounded (δ below the mass at +∞).")


class PublishedComparison(_Frozen):
    """An earlier published (ε, δ) claim next to privspec's ε at the same δ."""

    epsilon: float = Field(description="The published ε.")
    delta: float = Field(description="The published δ (0 for pure DP).")
    source: str = Field(description="Where the claim was published.")
    epsilon_privspec: float | None = Field(
        description="privspec's ε at the published δ; null when unbounded (δ below the mass at +∞).")


class CurvePoint(_Frozen):
    """A point of the trade-off curve, for figures; ``tpr`` = 1 − β kept with its own
    digits (1 − β loses them where β is near 1, at the small α of a log–log panel)."""

    alpha: float
    beta: float
    tpr: float


RiskScenarioKind = Literal["membership-tpr", "membership-accuracy", "membership-precision",
                          "attribute-inference", "reidentification", "reconstruction"]


class RiskRow(_Frozen):
    """One attack bounded in operational terms: its success (a probability) at most
    ``bound`` for any attacker who knows every other record, against ``baseline``, what
    guessing without the output achieves."""

    scenario: RiskScenarioKind = Field(description="What the attack does.")
    parameters: dict[str, float] = Field(
        description="The scenario's parameters: fpr, base_rate, values, candidates or "
                    "baseline.")
    baseline: float = Field(description="Success of a guess that ignores the output.")
    bound: float = Field(description="The bound from the exact trade-off curve, or from the "
                         "other two columns where tighter (each is a bound).")
    bound_gdp: float | None = Field(
        description="What μ-GDP alone would bound (G_μ, plus the floor τ); null without μ.")
    bound_epsilon_delta: float = Field(
        description="What the (ε, δ) of ``Risk.epsilon`` and ``Risk.delta`` alone would bound.")


class Risk(_Frozen):
    """The attacks the spec's ``risk:`` block names (or the default ones), bounded."""

    epsilon: float | None = Field(
        description="The ε of the (ε, δ) pair compared against: pure ε-DP's (δ = 0) when it "
                    "holds, else the report's first ε(δ); null when unbounded.")
    delta: float = Field(description="Its δ.")
    rows: list[RiskRow]

    def row(self, kind: str, parameters: dict[str, float]) -> RiskRow | None:
        """The row of scenario ``kind`` with these parameters, if the report has it."""
        return next((row for row in self.rows
                     if row.scenario == kind and row.parameters == parameters), None)


class Caveat(_Frozen):
    """A caveat the report must show."""

    code: str = Field(description="Stable code, e.g. 'report/gdp-poor-fit'.")
    message: str = Field(description="The caveat in words (plain text, from the template "
                         "text/caveats/<code>.txt.j2).")
    values: dict[str, float | int | str] = Field(
        default_factory=dict, exclude=True,
        description="The numbers the sentence is built from, by name: each format words "
                    "them in its own notation (not part of the JSON layout).")


class ReportScope(_Frozen):
    """What the guarantee covers, as the spec's ``scope:`` states it (fields as there)."""

    released: str | None = None
    covers: list[str] | None = None
    trust_model: str | None = None
    releases: str | None = None
    unprotected: list[str] | None = None
    code: str | None = None


class Calibrated(_Frozen):
    """The spec's ``calibrated:`` note: the field privspec calibrate chose, and for what."""

    field: str
    value: float
    targets: list[str]


class AuditBox(_Frozen):
    """One attack of an audit and its simultaneous Clopper–Pearson box: it says "in" when
    the score is ≥ ``threshold`` (``higher``) or ≤ it (``lower``)."""

    direction: Literal["higher", "lower"]
    threshold: float
    fpr: float = Field(description="Observed false-positive rate.")
    tpr: float = Field(description="Observed true-positive rate.")
    fpr_low: float
    fpr_high: float
    tpr_low: float
    tpr_high: float
    tpr_certified: float = Field(
        description="The highest TPR the report allows at ``fpr_high`` (rounded up between "
                    "the curve's samples, capped by μ).")
    contradicts: bool = Field(description="``tpr_low`` > ``tpr_certified``: the box lies "
                              "entirely above the certified curve.")


class AuditEpsilon(_Frozen):
    """The ε an audit proves at one of the report's δ's."""

    delta: float
    epsilon_lower: float = Field(description="Lower bound on ε at δ (0: nothing proven).")


class AuditOneRun(_Frozen):
    """The one-run bound of an audit at one δ (Steinke, Nasr & Jagielski 2023,
    arXiv:2305.08846): the scores are of canaries each inserted with probability 1/2 into
    one run; the attack guessed on the highest and lowest scores."""

    delta: float
    epsilon_lower: float = Field(description="Lower bound on ε at δ (0: nothing proven).")
    canaries: int = Field(description="Scores, one a canary.")
    guesses: int = Field(description="Canaries the attack guessed on (it abstained on the "
                         "rest).")
    correct: int = Field(description="Guesses that were right.")
    epsilon_certified: float | None = Field(
        description="The ε this report certifies at δ (its pure ε at δ = 0); null when it "
                    "certifies none.")
    contradicts: bool = Field(description="``epsilon_lower`` > ``epsilon_certified``.")


class Audit(_Frozen):
    """What an attack achieved: its scores held against the certified curve (docs/audit.md).
    Every bound holds, all at once, with probability ``confidence``, each score taken as
    an independent trial of the attack."""

    scores_file: str = Field(description="The score file's name (its folder left out).")
    sha256: str = Field(description="SHA-256 of the score file.")
    members: int = Field(description="Scores of examples that were in.")
    non_members: int = Field(description="Scores of examples that were out.")
    confidence: float
    holdout: bool = Field(description="Thresholds chosen on one half of the scores, tested "
                          "on the other; else fixed pooled-score quantiles (Bonferroni).")
    mu_lower: float = Field(description="Lower bound on μ (0: nothing proven).")
    strongest: AuditBox | None = Field(description="The box that proves mu_lower; null when "
                                       "nothing is proven.")
    tightness: float | None = Field(description="mu_lower / μ; null without a positive μ.")
    epsilons: list[AuditEpsilon]
    contradiction: bool = Field(description="Some box lies entirely above the certified curve: "
                                "the implementation, the spec or the run is wrong.")
    clearest_contradiction: AuditBox | None = Field(
        description="The box farthest above the certified curve; null without a contradiction.")
    boxes: list[AuditBox]
    one_run: list[AuditOneRun] = Field(
        [], description="The one-run bound at δ = 0 and at each δ of the report, when it was "
        "asked for (privspec audit --one-run, or audit.one_run in the spec); else empty.")
class GroupRow(_Frozen):
    """The guarantee for a group of ``size`` records of one unit (the spec evaluated with
    records_per_unit = size, at the report's discretization; by group privacy, from the
    report's own composition of one record's mechanism, docs/math.md §8)."""

    size: int = Field(description="Records in the group: 1, 2, 4, … and the unit's k.")
    mu: float | None = Field(description="μ for the group; null when no finite μ exists.")
    epsilon: float | None = Field(
        description="ε at the report's first δ for the group; null when unbounded.")


class Report(_Frozen):
    """The evaluated privacy report of one spec."""

    report_schema: int = Field(REPORT_SCHEMA_VERSION, description="Version of this JSON layout.")
    title: str
    description: str | None
    unit: str = Field(description="Who is protected: one record, or one unit of up to "
                      "records_per_unit records.")
    records_per_unit: int = Field(
        1, description="The most records one unit contributes, as the spec states it; the "
        "figures hold for the whole unit. Left out when the spec does not state it (1).")
    unit_routes: list[Literal["scaled", "mixture", "group-privacy"]] = Field(
        [], description="How a unit of several records was accounted: 'scaled' (each "
        "additive release's sensitivity times k), 'mixture' (each Poisson-sampled Gaussian "
        "as a mixture of Gaussians) or 'group-privacy' (f-DP group privacy on the whole "
        "mechanism's curve). Left out for one record per unit.")
    unit_level: bool = Field(
        False, description="Whether the mechanism samples and bounds units, not records "
        "(user-level sampling): its counts count units. Left out when false.")
    neighbouring: Literal["add-or-remove", "replace-one", "zero-out"]
    groups: list[GroupRow] = Field(
        default_factory=list, description="For a unit of k > 1 records: the guarantee "
        "for groups of 1, 2, 4, … and k of its records, at the first δ of 'epsilons'. "
        "Left out when empty.")
    mechanism: MechanismSummary
    scope: ReportScope | None = Field(
        None, description="What the guarantee covers, when the spec says (its scope:).")
    calibrated: Calibrated | None = Field(
        None, description="Which field privspec calibrate chose, for which targets.")
    gdp: GDP
    tradeoff: list[TradeoffRow] = Field(description="Tier II table, α ascending; α* included.")
    epsilons: list[EpsilonAtDelta] = Field(description="ε at the report's δ's.")
    pure_epsilon: float | None = Field(description="ε of a pure-DP guarantee (δ = 0) when one holds.")
    published: PublishedComparison | None = Field(
        None, description="The spec's earlier published claim with privspec's ε at its δ.")
    curve: list[CurvePoint] = Field(description="Exact curve values at log-spaced α, for plots.")
    risk: Risk = Field(description="What an attacker can do: operational bounds from the curve.")
    accounting: Accounting
    warnings: list[Caveat]
    spec_sha256: str = Field(description="SHA-256 of the spec's canonical JSON form.")
    spec_path: str | None = Field(description=(
        "The spec file as given; in a rendered report its file name alone (the report's "
        "command is run in the spec's folder)."))
    audit: Audit | None = Field(
        None, description="What an attack achieved, when the spec's audit: block names its "
        "scores; left out otherwise.")

    @model_serializer(mode="wrap")
    def _without_one_record_per_unit(self, handler: SerializerFunctionWrapHandler
                                     ) -> dict[str, Any]:
        """The JSON, without ``records_per_unit`` and ``unit_routes`` when it is 1,
        ``unit_level`` when false, ``groups`` when empty and ``audit`` when there is none
        (such a report reads as it did before the fields)."""
        data: dict[str, Any] = handler(self)
        if self.records_per_unit == 1:
            data.pop("records_per_unit", None)
            data.pop("unit_routes", None)
        if not self.unit_level:
            data.pop("unit_level", None)
        if not self.groups:
            data.pop("groups", None)
        if self.audit is None:
            data.pop("audit", None)
        return data

    @property
    def others(self) -> str:
        """What the attacker of every bound knows of everyone else: every other "record",
        "unit" or "unit's records" (``privspec.spec.group.attacker_knows``)."""
        return attacker_knows(self.records_per_unit, self.unit_level)

    @property
    def group_table_source(self) -> str:
        """How the group table's rows were found, in plain words (each format escapes
        them): from one record's composed curve by group privacy, or the spec evaluated
        at each size."""
        if "group-privacy" in self.unit_routes:
            return ("each row by f-DP group privacy on the one composed curve of one "
                    "record, as the report's own figures (docs/math.md §8)")
        return ("the spec evaluated with records_per_unit set to each size, by the same "
                "accounting at the report's discretization (a row beyond its share of the "
                "time budget coarser, or a closed-form bound: both pessimistic)")

    @property
    def exact_accounting(self) -> str | None:
        """What the accounting sentence says when nothing was discretized, truncated or
        composed numerically (of one record's curve, when a unit's curve was iterated from
        it by group privacy, which bounds between nodes); None when something was (each
        template then words its grid, truncation and error bound)."""
        accounting = self.accounting
        if accounting.relative_error != 0 or accounting.tail_mass_truncation != 0:
            return None
        if "group-privacy" in self.unit_routes:
            return f"one record's curve exact ({NOTHING_NUMERICAL})"
        return NOTHING_NUMERICAL

    def _repr_markdown_(self) -> str:
        """The Markdown report: how Jupyter shows a report where HTML is not shown."""
        from privspec.report.render import render

        return render(self, "markdown")

    def _repr_html_(self) -> str:
        """The HTML report's ``<main>`` (its figures inline; not its page, head and style,
        which would restyle the notebook): how Jupyter shows a report."""
        from privspec.report.render import render

        page = render(self, "html")
        return page[page.index("<main>"):page.index("</main>") + len("</main>")] + "\n"
