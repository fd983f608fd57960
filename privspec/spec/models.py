"""The privspec spec language: frozen pydantic models of a ``*.privspec.yaml`` file.

A spec names what one record is, the neighbouring relation, and a tree of
mechanisms.  Each mechanism is written as a one-key mapping whose key is its
kind (``gaussian: {...}``), in the spirit of dp-accounting's ``DpEvent``
algebra: a small set of frozen, documented building blocks that compose.

Rules for growing the language (as in dp_accounting/dp_event.py): never change
the meaning of an existing field; add a new field or a new kind instead, and
bump ``privspec:`` only for a change that would alter an existing spec's
numbers.

This module must not import numpy, scipy or dp-accounting: ``privspec
validate`` imports it and has to stay instant.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    ValidationInfo,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

SPEC_VERSION = 1

#: Largest repetition count accepted anywhere (steps, repeat, count).
MAX_REPETITIONS = 10_000_000
#: Largest dataset size accepted.
MAX_DATASET_SIZE = 10**12

Relation = Literal["add-or-remove", "replace-one"]

PositiveFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
Probability = Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)]
Count = Annotated[int, Field(ge=1, le=MAX_REPETITIONS)]
DatasetSize = Annotated[int, Field(ge=1, le=MAX_DATASET_SIZE)]


class _Strict(BaseModel):
    """Base for every spec model: unknown keys are errors, values are immutable."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        strict=True,
        allow_inf_nan=False,
        use_attribute_docstrings=False,
    )


def _conflict(field: str, message: str, value: Any = None) -> InitErrorDetails:
    """One cross-field problem, located at ``field`` of the model being checked."""
    return InitErrorDetails(
        type=PydanticCustomError("spec_conflict", message),
        loc=(field,),
        input=value,
    )


def _raise_if(problems: list[InitErrorDetails], title: str) -> None:
    if problems:
        raise ValidationError.from_exception_data(title, problems)


def _exactly_one(model: BaseModel, names: tuple[str, ...], what: str) -> list[InitErrorDetails]:
    """Cross-field rule: exactly one of ``names`` is given."""
    given = [n for n in names if getattr(model, n) is not None]
    if len(given) == 1:
        return []
    alternatives = " or ".join(f"'{n}'" for n in names)
    if not given:
        return [_conflict(names[0], f"give {alternatives} ({what}); none was given")]
    return [
        _conflict(n, f"give {alternatives}, not both: they say the same thing ({what})",
                  getattr(model, n))
        for n in given[1:]
    ]


# ---------------------------------------------------------------------------
# Building blocks: one release of a noise-adding mechanism.
# ---------------------------------------------------------------------------


class Gaussian(_Strict):
    """Gaussian mechanism: adds N(0, σ²) noise to a query of bounded L2 sensitivity.

    Give either ``sigma`` (with ``sensitivity``) or ``noise_multiplier``. One release
    with σ and sensitivity Δ under its relation is exactly (Δ/σ)-GDP (Dong, Roth & Su).
    """

    sigma: PositiveFloat | None = Field(
        None,
        description="Standard deviation σ of the Gaussian noise, in the units of the query.",
    )
    noise_multiplier: PositiveFloat | None = Field(
        None,
        description=(
            "Noise standard deviation divided by the clipping norm C that bounds one "
            "record's contribution (DP-SGD's z = σ/C). One record moves the sum by at "
            "most C under add-or-remove and 2C under replace-one."
        ),
    )
    sensitivity: PositiveFloat | None = Field(
        None,
        description=(
            "L2 sensitivity Δ: the largest distance between the query's values on two "
            "neighbouring datasets under the spec's relation (same units as sigma). "
            "Default 1. Only with 'sigma'."
        ),
    )

    @model_validator(mode="after")
    def _check(self) -> Gaussian:
        problems = _exactly_one(self, ("sigma", "noise_multiplier"), "the noise scale")
        if self.noise_multiplier is not None and self.sensitivity is not None:
            problems.append(_conflict(
                "sensitivity",
                "'sensitivity' goes with 'sigma'; a noise multiplier is already relative "
                "to the clipping norm",
                self.sensitivity,
            ))
        _raise_if(problems, "Gaussian")
        return self


class Laplace(_Strict):
    """Laplace mechanism: adds Lap(b) noise to a query of bounded L1 sensitivity.

    Give either ``scale`` b or ``epsilon`` = Δ/b. It is pure ε-DP but not well
    described by GDP (MATH.md §6: b = 1 gives μ = 1.0301 with regret 0.037).
    """

    scale: PositiveFloat | None = Field(
        None, description="Scale b of the Laplace noise (its standard deviation is b·√2)."
    )
    epsilon: PositiveFloat | None = Field(
        None, description="Privacy parameter ε = sensitivity / scale of this release."
    )
    sensitivity: PositiveFloat = Field(
        1.0,
        description=(
            "L1 sensitivity Δ: the largest change of the query between neighbouring "
            "datasets under the spec's relation."
        ),
    )

    @model_validator(mode="after")
    def _check(self) -> Laplace:
        _raise_if(_exactly_one(self, ("scale", "epsilon"), "the noise scale"), "Laplace")
        return self


class DiscreteGaussian(_Strict):
    """Discrete Gaussian mechanism on integer-valued queries (census-style counts).

    Give either ``sigma`` (the scale parameter) or ``rho``, the zCDP parameter of one
    query: σ = Δ/√(2ρ) (Canonne, Kamath & Steinke 2020). privspec accounts for the
    discrete Gaussian itself, not for the weaker ρ bound (MATH.md §6).
    """

    sigma: PositiveFloat | None = Field(
        None,
        description="Scale parameter σ of the discrete Gaussian (close to, not equal to, its std).",
    )
    rho: PositiveFloat | None = Field(
        None,
        description="zCDP parameter ρ of this one query; sets σ = sensitivity / √(2ρ).",
    )
    sensitivity: Annotated[int, Field(ge=1, le=1_000_000)] = Field(
        1,
        description=(
            "Integer sensitivity: the largest change of the count between neighbouring "
            "datasets under the spec's relation."
        ),
    )

    @model_validator(mode="after")
    def _check(self) -> DiscreteGaussian:
        _raise_if(_exactly_one(self, ("sigma", "rho"), "the noise scale"), "DiscreteGaussian")
        return self


class DiscreteLaplace(_Strict):
    """Discrete Laplace (two-sided geometric) mechanism on integer-valued queries.

    P(noise = k) ∝ exp(−|k|/scale). Give either ``scale`` or ``epsilon`` = Δ/scale.
    """

    scale: PositiveFloat | None = Field(
        None, description="Scale t of the noise: P(k) is proportional to exp(−|k|/t)."
    )
    epsilon: PositiveFloat | None = Field(
        None, description="Privacy parameter ε = sensitivity / scale of this release."
    )
    sensitivity: Annotated[int, Field(ge=1, le=1_000_000)] = Field(
        1, description="Integer L1 sensitivity under the spec's relation."
    )

    @model_validator(mode="after")
    def _check(self) -> DiscreteLaplace:
        _raise_if(_exactly_one(self, ("scale", "epsilon"), "the noise scale"), "DiscreteLaplace")
        return self


class RandomizedResponse(_Strict):
    """Randomized response over ``categories`` answers (local DP, e.g. a survey).

    Give either ``epsilon`` or ``flip_probability``: the probability that the reported
    answer differs from the true one. Accounted under replace-one neighbours (one
    respondent's true answer changes).
    """

    epsilon: PositiveFloat | None = Field(
        None, description="Local privacy parameter ε: ln of the largest likelihood ratio."
    )
    flip_probability: Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)] | None = Field(
        None,
        description=(
            "Probability that the reported answer is not the true one; must be below "
            "1 − 1/categories (at that value the answer carries no information)."
        ),
    )
    categories: Annotated[int, Field(ge=2, le=1_000_000)] = Field(
        2, description="Number of possible answers (2 for a yes/no question)."
    )

    @model_validator(mode="after")
    def _check(self) -> RandomizedResponse:
        problems = _exactly_one(self, ("epsilon", "flip_probability"), "the randomization")
        if self.flip_probability is not None:
            limit = 1 - 1 / self.categories
            if self.flip_probability >= limit:
                problems.append(_conflict(
                    "flip_probability",
                    f"must be below 1 − 1/categories = {limit:.6g} for {self.categories} "
                    f"categories (got {self.flip_probability:g})",
                    self.flip_probability,
                ))
        _raise_if(problems, "RandomizedResponse")
        return self


class PureDP(_Strict):
    """Any ε-DP mechanism, accounted by its worst case (randomized response, MATH.md §6)."""

    epsilon: PositiveFloat = Field(
        description="The mechanism's published pure-DP parameter ε (δ = 0)."
    )


class ApproximateDP(_Strict):
    """Any (ε, δ)-DP mechanism, accounted by its worst case. No finite μ exists
    (seed 000, Prop 6.2)."""

    epsilon: Annotated[float, Field(ge=0, allow_inf_nan=False)] = Field(
        description="The mechanism's published ε."
    )
    delta: Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)] = Field(
        description="The mechanism's published δ: the probability mass it may leak outright."
    )


# ---------------------------------------------------------------------------
# Sampling, repetition and composition.
# ---------------------------------------------------------------------------


class _SamplingRate(_Strict):
    """Shared fields of the sampling schemes: a rate, or a batch size and a dataset size."""

    sampling_rate: Probability | None = Field(
        None, description="Probability q that a given record is in a batch, in (0, 1]."
    )
    batch_size: DatasetSize | None = Field(
        None, description="Batch size (expected batch size under Poisson sampling)."
    )
    dataset_size: DatasetSize | None = Field(
        None, description="Number of records N in the dataset; the rate is batch_size / N."
    )

    def rate(self) -> float:
        """The sampling probability q, from whichever fields were given."""
        if self.sampling_rate is not None:
            return self.sampling_rate
        assert self.batch_size is not None and self.dataset_size is not None
        return self.batch_size / self.dataset_size

    def _rate_problems(self) -> list[InitErrorDetails]:
        problems: list[InitErrorDetails] = []
        has_sizes = self.batch_size is not None or self.dataset_size is not None
        if self.sampling_rate is not None and has_sizes:
            extra = "batch_size" if self.batch_size is not None else "dataset_size"
            problems.append(_conflict(
                extra,
                "give 'sampling_rate' or 'batch_size' with 'dataset_size', not both",
                getattr(self, extra),
            ))
        elif self.sampling_rate is None:
            if self.batch_size is None and self.dataset_size is None:
                problems.append(_conflict(
                    "sampling_rate",
                    "give 'sampling_rate' or 'batch_size' with 'dataset_size'; none was given",
                ))
            elif self.batch_size is None:
                problems.append(_conflict("batch_size", "'dataset_size' needs 'batch_size'"))
            elif self.dataset_size is None:
                problems.append(_conflict("dataset_size", "'batch_size' needs 'dataset_size'"))
        return problems + _batch_problems(self.batch_size, self.dataset_size)


class PoissonSampled(_SamplingRate):
    """Poisson subsampling: each record joins the batch independently with probability q,
    then ``mechanism`` runs on the batch once. Amplification is accounted exactly by
    dp-accounting's subsampled PLDs."""

    mechanism: Mechanism = Field(
        description="The mechanism run on the sampled batch: gaussian, laplace, "
        "discrete_gaussian or discrete_laplace."
    )

    @model_validator(mode="after")
    def _check(self) -> PoissonSampled:
        _raise_if(self._rate_problems(), "PoissonSampled")
        return self


class FixedSizeSampled(_Strict):
    """Sampling a fixed-size batch uniformly without replacement, then running
    ``mechanism`` once. Its amplification holds under replace-one neighbours
    (Balle, Barthe & Gaboardi 2018; Dong, Roth & Su, Thm 4.2); it is not Poisson
    sampling. Repeated steps compose the symmetric per-step curve C_p(f)."""

    batch_size: DatasetSize = Field(description="Number of records in every batch.")
    dataset_size: DatasetSize = Field(description="Number of records N in the dataset.")
    mechanism: Mechanism = Field(description="The mechanism run on the sampled batch.")

    def rate(self) -> float:
        """The fraction p of the dataset in each batch."""
        return self.batch_size / self.dataset_size

    @model_validator(mode="after")
    def _check(self) -> FixedSizeSampled:
        _raise_if(_batch_problems(self.batch_size, self.dataset_size), "FixedSizeSampled")
        return self


class Repeat(_Strict):
    """Run ``mechanism`` several times on the same dataset (self-composition).

    Give ``count``, or ``epochs`` with ``batch_size`` and ``dataset_size``
    (count = ⌈epochs · dataset_size / batch_size⌉, rounded up: never fewer steps
    than were run).
    """

    count: Count | None = Field(None, description="Number of runs.")
    epochs: Annotated[float, Field(gt=0, le=MAX_REPETITIONS, allow_inf_nan=False)] | None = Field(
        None, description="Passes over the data; needs batch_size and dataset_size."
    )
    batch_size: DatasetSize | None = Field(
        None, description="(Expected) batch size, to turn epochs into steps."
    )
    dataset_size: DatasetSize | None = Field(
        None, description="Number of records, to turn epochs into steps."
    )
    mechanism: Mechanism = Field(description="The mechanism that is repeated.")

    def times(self) -> int:
        """The number of runs, from whichever fields were given."""
        if self.count is not None:
            return self.count
        assert self.epochs and self.batch_size and self.dataset_size
        return steps_from_epochs(self.epochs, self.batch_size, self.dataset_size)

    @model_validator(mode="after")
    def _check(self) -> Repeat:
        problems = _exactly_one(self, ("count", "epochs"), "how many runs")
        problems += _epoch_problems(self.epochs, self.batch_size, self.dataset_size)
        problems += _batch_problems(self.batch_size, self.dataset_size)
        _raise_if(problems, "Repeat")
        return self


def steps_from_epochs(epochs: float, batch_size: int, dataset_size: int) -> int:
    """Steps in ``epochs`` passes, rounded up so that no step goes unaccounted."""
    return max(1, math.ceil(epochs * dataset_size / batch_size - 1e-9))


def _epoch_problems(epochs: float | None, batch_size: int | None,
                    dataset_size: int | None) -> list[InitErrorDetails]:
    problems: list[InitErrorDetails] = []
    if epochs is None:
        return problems
    if batch_size is None:
        problems.append(_conflict("epochs", "'epochs' needs 'batch_size' to count the steps",
                                  epochs))
    if dataset_size is None:
        problems.append(_conflict("epochs", "'epochs' needs 'dataset_size' to count the steps",
                                  epochs))
    if (batch_size and dataset_size and batch_size <= dataset_size  # else: _batch_problems
            and steps_from_epochs(epochs, batch_size, dataset_size) > MAX_REPETITIONS):
        problems.append(_conflict(
            "epochs", f"{epochs:g} epochs are more than {MAX_REPETITIONS:,} steps", epochs))
    return problems


def _batch_problems(batch_size: int | None, dataset_size: int | None) -> list[InitErrorDetails]:
    if batch_size is None or dataset_size is None or batch_size <= dataset_size:
        return []
    return [_conflict("batch_size",
                      f"batch of {batch_size} is larger than the dataset of {dataset_size} records",
                      batch_size)]


class Stage(_Strict):
    """One named part of a composition, optionally repeated."""

    name: Annotated[str, Field(min_length=1, max_length=200)] | None = Field(
        None, description="Name shown in the report, e.g. 'hyper-parameter search'."
    )
    repeat: Count = Field(1, description="How many times this stage runs (default 1).")
    mechanism: Mechanism = Field(description="What this stage releases.")


class DPSGD(_SamplingRate):
    """DP-SGD shortcut: ``steps`` Poisson-subsampled Gaussian gradient releases.

    Equivalent to ``repeat`` of ``poisson_sampled`` of ``gaussian`` with the same
    noise multiplier. All intermediate models are covered.
    """

    noise_multiplier: PositiveFloat = Field(
        description="Noise standard deviation divided by the per-example clipping norm."
    )
    steps: Count | None = Field(None, description="Number of noisy gradient steps.")
    epochs: Annotated[float, Field(gt=0, le=MAX_REPETITIONS, allow_inf_nan=False)] | None = Field(
        None,
        description="Passes over the data; steps = ⌈epochs · dataset_size / batch_size⌉.",
    )

    def times(self) -> int:
        """The number of steps, from whichever fields were given."""
        if self.steps is not None:
            return self.steps
        assert self.epochs and self.batch_size and self.dataset_size
        return steps_from_epochs(self.epochs, self.batch_size, self.dataset_size)

    @model_validator(mode="after")
    def _check(self) -> DPSGD:
        problems = self._rate_problems()
        problems += _exactly_one(self, ("steps", "epochs"), "how long training runs")
        problems += _epoch_problems(self.epochs, self.batch_size, self.dataset_size)
        _raise_if(problems, "DPSGD")
        return self


# ---------------------------------------------------------------------------
# The mechanism union: a one-key mapping whose key names the kind.
# ---------------------------------------------------------------------------


class _Node(_Strict):
    """A mechanism written as ``{kind: {...fields}}``."""

    @property
    def kind(self) -> str:
        return next(iter(type(self).model_fields))

    @property
    def block(self) -> BaseModel:
        """The model under the kind's key."""
        return getattr(self, self.kind)  # type: ignore[no-any-return]


class GaussianNode(_Node):
    gaussian: Gaussian


class LaplaceNode(_Node):
    laplace: Laplace


class DiscreteGaussianNode(_Node):
    discrete_gaussian: DiscreteGaussian


class DiscreteLaplaceNode(_Node):
    discrete_laplace: DiscreteLaplace


class RandomizedResponseNode(_Node):
    randomized_response: RandomizedResponse


class PureDPNode(_Node):
    pure_dp: PureDP


class ApproximateDPNode(_Node):
    approximate_dp: ApproximateDP


class PoissonSampledNode(_Node):
    poisson_sampled: PoissonSampled


class FixedSizeSampledNode(_Node):
    fixed_size_sampled: FixedSizeSampled


class RepeatNode(_Node):
    repeat: Repeat


class DPSGDNode(_Node):
    dpsgd: DPSGD


class ComposeNode(_Node):
    # Its value is the list of stages itself, so the node is its own block.

    compose: Annotated[list[Stage], Field(min_length=1, max_length=100_000)] = Field(
        description="The stages, in the order they run, all on the same dataset."
    )

    @property
    def block(self) -> BaseModel:
        return self


#: Every mechanism kind, by the key a spec writes.
NODE_TYPES: dict[str, type[_Node]] = {
    "gaussian": GaussianNode,
    "laplace": LaplaceNode,
    "discrete_gaussian": DiscreteGaussianNode,
    "discrete_laplace": DiscreteLaplaceNode,
    "randomized_response": RandomizedResponseNode,
    "pure_dp": PureDPNode,
    "approximate_dp": ApproximateDPNode,
    "poisson_sampled": PoissonSampledNode,
    "fixed_size_sampled": FixedSizeSampledNode,
    "repeat": RepeatNode,
    "dpsgd": DPSGDNode,
    "compose": ComposeNode,
}
MECHANISM_KINDS: tuple[str, ...] = tuple(NODE_TYPES)
#: Kinds that add noise once (may sit under a sampling node).
ADDITIVE_KINDS = ("gaussian", "laplace", "discrete_gaussian", "discrete_laplace")


def _kind_of(value: Any) -> str | None:
    """Discriminator: the single key of the mapping (or the kind of a built node)."""
    if isinstance(value, _Node):
        return value.kind
    if isinstance(value, dict) and len(value) == 1:
        key = next(iter(value))
        return key if isinstance(key, str) else None
    return None


if TYPE_CHECKING:  # for the type checker every node is a _Node (kind + block)
    Mechanism = _Node
else:
    Mechanism = Annotated[
        Union[tuple(Annotated[node, Tag(kind)] for kind, node in NODE_TYPES.items())],  # noqa: UP007
        Discriminator(
            _kind_of,
            custom_error_type="unknown_kind",
            custom_error_message="a mechanism is a mapping with one key naming its kind",
        ),
    ]


# ---------------------------------------------------------------------------
# Top level.
# ---------------------------------------------------------------------------

DEFAULT_DELTAS = (1e-5, 1e-6, 1e-9)
DEFAULT_ALPHAS = (1e-10, 1e-8, 1e-6, 1e-4, 1e-3, 1e-2, 1e-1)
OutputFormat = Literal["markdown", "latex", "html", "json"]


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
        description="Largest regret for which μ alone is reported (Tier I); seed 000 uses 0.01.",
    )
    formats: Annotated[list[OutputFormat], Field(min_length=1)] = Field(
        ["markdown"], description="Formats rendered when none is given on the command line."
    )


class AccountingOptions(_Strict):
    """How the privacy-loss distributions are computed (defaults reproduce MATH.md §7)."""

    discretization: Annotated[float, Field(ge=1e-6, le=0.1, allow_inf_nan=False)] = Field(
        1e-4,
        description="Value discretization interval h of dp-accounting's PLDs; smaller is "
        "tighter and slower.",
    )
    floor: Annotated[float, Field(ge=1e-100, le=1e-3, allow_inf_nan=False)] = Field(
        1e-12,
        description="Numerical floor τ: μ is claimed as f(α) ≥ G_μ(α) − τ for every α "
        "(MATH.md §2); masses below τ, such as the accountant's truncated tails, are "
        "covered by it. From 10⁻¹⁰⁰ (a numerical accountant cannot certify τ = 0) to "
        "10⁻³. Where the accounting cannot meet it, the report says so and uses the "
        "smallest power of ten it can meet.",
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
    pre-commit can gate changes, but it never changes a report's numbers (it is
    left out of ``model_dump`` and of the spec's SHA-256; read ``spec.budget``).
    Limits given on the command line apply in addition to these.
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

    @model_validator(mode="after")
    def _check(self) -> Budget:
        problems = []
        if self.max_epsilon is not None and self.delta is None:
            problems.append(_conflict("max_epsilon", "'max_epsilon' needs 'delta': ε is "
                                      "only meaningful at a given δ", self.max_epsilon))
        if self.delta is not None and self.max_epsilon is None:
            problems.append(_conflict("delta", "'delta' goes with 'max_epsilon'", self.delta))
        if (self.max_mu is None and self.max_epsilon is None and self.max_advantage is None
                and not self.require_tier1):
            problems.append(_conflict("max_mu", "a budget needs at least one limit: "
                                      "'max_mu', 'max_epsilon' with 'delta', 'max_advantage' "
                                      "or 'require_tier1: true'"))
        _raise_if(problems, "Budget")
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
        description="What one record is, e.g. 'one training example' or 'one person'."
    )
    neighbouring: Relation = Field(
        description="Neighbouring datasets: 'add-or-remove' (one record added or removed) "
        "or 'replace-one' (one record replaced by another)."
    )
    mechanism: Mechanism = Field(description="The released mechanism, as a tree of kinds.")
    report: ReportOptions = Field(default_factory=ReportOptions,
                                  description="What the report shows.")
    accounting: AccountingOptions = Field(default_factory=AccountingOptions,
                                          description="Numerical accounting settings.")
    published: PublishedClaim | None = Field(
        None, description="A guarantee published earlier, for a before/after comparison."
    )
    budget: Budget | None = Field(
        None, exclude=True,
        description="Privacy budget that 'privspec check' enforces (a policy: it does not "
        "change the report).",
    )

    @model_validator(mode="after")
    def _check_relation(self, info: ValidationInfo) -> Spec:
        if info.context and info.context.get(RELATION_CHECKED_BY_CALLER):
            return self  # the loader reports these with the field errors
        problems = [
            InitErrorDetails(type=PydanticCustomError("spec_conflict", message),
                             loc=("mechanism", *path), input=None)
            for path, message in relation_problems(self.mechanism, self.neighbouring)
        ]
        _raise_if(problems, "Spec")
        return self


#: Validation context key: the caller runs ``relation_problems`` on the data itself.
RELATION_CHECKED_BY_CALLER = "relation_checked_by_caller"


def _field(value: Any, name: str) -> Any:
    """``name`` of a model or of a mapping as written (None where it is missing)."""
    return value.get(name) if isinstance(value, dict) else getattr(value, name, None)


def walk(node: Any, path: tuple[str | int, ...] = ()
         ) -> Iterator[tuple[tuple[str | int, ...], str, Any]]:
    """(path, kind, fields) of every node of a mechanism, with paths as the user wrote
    them: a validated tree, or one as written (one-key mappings), whose malformed parts
    are skipped (field validation reports them)."""
    kind = _kind_of(node)
    if kind not in NODE_TYPES:
        return
    fields = node.block if isinstance(node, _Node) else node[kind]
    yield path, kind, fields
    if kind == "compose":
        stages = fields.compose if isinstance(fields, ComposeNode) else fields
        for i, stage in enumerate(stages if isinstance(stages, list) else []):
            yield from walk(_field(stage, "mechanism"), (*path, "compose", i, "mechanism"))
    elif kind in ("poisson_sampled", "fixed_size_sampled", "repeat"):
        yield from walk(_field(fields, "mechanism"), (*path, kind, "mechanism"))


def relation_problems(mechanism: Any, relation: str) -> list[tuple[tuple[str | int, ...], str]]:
    """Mechanisms that cannot be accounted under ``relation``, and sampling of kinds
    whose amplification privspec cannot account (MATH.md §6).

    Reads a validated tree or one as written, so that the loader can report these next
    to field errors elsewhere in the spec instead of after they are fixed.
    """
    problems: list[tuple[tuple[str | int, ...], str]] = []
    for path, kind, fields in walk(mechanism):
        here = (*path, kind)
        if kind == "randomized_response" and relation != "replace-one":
            problems.append((here, "randomized response protects one respondent's answer "
                             "and is accounted under 'neighbouring: replace-one'"))
        if kind in ("poisson_sampled", "fixed_size_sampled"):
            inner = _field(fields, "mechanism")
            inner_kind = _kind_of(inner)
            if inner_kind in NODE_TYPES and inner_kind not in ADDITIVE_KINDS:
                problems.append(((*here, "mechanism"),
                                 f"sampling can wrap one noise-adding release "
                                 f"({', '.join(ADDITIVE_KINDS)}), not '{inner_kind}'"))
            elif (inner_kind in ADDITIVE_KINDS and kind == "poisson_sampled"
                  and relation == "replace-one"
                  and _field(_field(inner, "gaussian"), "noise_multiplier") is None):
                problems.append(((*here, "mechanism"),
                                 "under replace-one, Poisson sampling is accounted only "
                                 "for a gaussian given by 'noise_multiplier'"))
        if kind == "fixed_size_sampled" and relation != "replace-one":
            problems.append((here, "fixed-size sampling without replacement is analysed "
                             "under 'neighbouring: replace-one' (Balle et al. 2018); for "
                             "add-or-remove use poisson_sampled if batches are Poisson-sampled"))
    return problems


for _model in (PoissonSampled, FixedSizeSampled, Repeat, Stage, ComposeNode, Spec):
    _model.model_rebuild()
