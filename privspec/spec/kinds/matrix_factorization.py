"""``matrix_factorization``: correlated-noise training (DP-FTRL by tree aggregation,
banded matrix factorization), accounted from its strategy's sensitivity."""

from __future__ import annotations

import functools
from typing import Annotated

from pydantic import Field, ValidationInfo, model_validator

from privspec.spec.base import (
    NAMED_FILES,
    Count,
    PositiveFloat,
    Probability,
    _Strict,
    conflict,
    exactly_one,
    raise_if,
)
from privspec.spec.events import Event, GaussianEvent, RepeatedEvent, SampledEvent
from privspec.spec.kind import Kind, Words
from privspec.spec.matrix_file import MAX_MATRIX_STEPS, checked_size, load_matrix, matrix_size
from privspec.spec.named_file import NamedFileError
from privspec.spec.strategies import (
    MAX_ENTRY,
    MAX_TREE_WORK,
    Columns,
    Sensitivity,
    disjoint_columns,
    matrix_sensitivity,
    toeplitz_sensitivity,
    tree_sensitivity,
    tree_work,
)

#: Most diagonals a banded Toeplitz strategy may list.
MAX_BANDS = 10_000

#: A strategy's coefficient: within the range its sensitivity is computed in.
Coefficient = Annotated[float, Field(ge=-MAX_ENTRY, le=MAX_ENTRY, allow_inf_nan=False)]


class Tree(_Strict):
    """The binary-tree strategy of DP-FTRL (Kairouz et al. 2021, arXiv:2103.00039): the
    nodes of the binary tree over the steps, each the sum of its leaves, are released
    with noise."""

    online: bool = Field(
        False, description="false: every node of the tree padded to 2^⌈log₂ n⌉ leaves is "
        "counted (one participation: √(⌈log₂ n⌉ + 1), Kairouz et al. 2021; an upper bound "
        "for any variant); true: only the nodes whose subtree is complete by step n, as "
        "DP-FTRL without restarts releases them (TF Privacy's tree aggregation; one "
        "participation: √(⌊log₂ n⌋ + 1)).")


class BandedToeplitz(_Strict):
    """A lower-triangular banded Toeplitz strategy C (BandMF: Choquette-Choo et al. 2023,
    arXiv:2306.08153): C_ij = coefficients[i − j] for 0 ≤ i − j < bands, 0 elsewhere."""

    coefficients: Annotated[list[Coefficient], Field(min_length=1, max_length=MAX_BANDS)] = Field(
        description="The strategy's diagonals, the main one first (bands = how many). As "
        "the mechanism runs them: jax_privacy normalises them to a largest column norm of 1, "
        "and the noise multiplier is then relative to that; privspec takes them as given, "
        "noise multiplier × clipping norm being the noise's standard deviation.")

    @model_validator(mode="after")
    def _check(self) -> BandedToeplitz:
        if self.coefficients[0] == 0:
            raise_if([conflict("coefficients", "the first coefficient (the main diagonal) "
                               "must not be 0: the strategy must be invertible",
                               self.coefficients[0])], "BandedToeplitz")
        return self


#: Why cyclic Poisson sampling is refused for a strategy (validation, or the evaluation
#: for a strategy file, whose columns it reads).
CYCLIC_NEEDS_ORTHOGONAL = (
    "cyclic_poisson (amplified BandMF) is accounted for a banded_toeplitz strategy with at "
    "most `block` bands, or a matrix whose columns `block` apart touch disjoint rows "
    "(Choquette-Choo et al. 2023, arXiv:2306.08153), so that a unit's participations add "
    "orthogonal vectors")


class MatrixFile(_Strict):
    """A strategy matrix C from a file: n × n, lower-triangular (a streaming mechanism's
    noise for step i mixes steps up to i), finite, with no 0 on its diagonal."""

    file: Annotated[str, Field(min_length=1, max_length=300)] = Field(
        description="The file, relative to the spec's directory and inside it: a NumPy "
        f".npy array of float64 or float32, or CSV (one row a line, commas between values, "
        f"no header); n ≤ {MAX_MATRIX_STEPS:,}, each entry at most {MAX_ENTRY:g} in "
        "magnitude.")
    sha256: Annotated[str, Field(pattern="^[0-9a-f]{64}$")] = Field(
        description="The file's SHA-256 (lower-case hex, as sha256sum prints it): the spec "
        "names its exact content, and a different file is refused.")

    @model_validator(mode="after")
    def _check(self, info: ValidationInfo) -> MatrixFile:
        try:
            matrix_size(self.file, self.sha256, (info.context or {}).get(NAMED_FILES))
        except NamedFileError as error:
            field = "sha256" if error.about == "sha256" else "file"
            raise_if([conflict(field, str(error), getattr(self, field))], "MatrixFile")
        return self

    def size(self) -> int:
        """n, for the n × n matrix (its file checked once a run, when validated)."""
        return checked_size(self.file, self.sha256)

    def columns(self) -> Columns:
        """What the sensitivity needs of the matrix, each value checked
        (``MatrixFileError`` when one is bad): read once a run, on first use (validation
        reads the digest and the shape only), and kept by its digest."""
        return load_matrix(self.file, self.sha256, None)


class Strategy(_Strict):
    """The strategy matrix C: the noise is added to C·x. Give one of its fields."""

    tree: Tree | None = Field(None, description="Binary-tree aggregation (DP-FTRL): `{}`, "
                              "or `{online: true}`.")
    banded_toeplitz: BandedToeplitz | None = Field(
        None, description="A banded Toeplitz strategy (BandMF) given by its coefficients.")
    matrix: MatrixFile | None = Field(
        None, description="Any lower-triangular strategy, from a file with its SHA-256.")

    @model_validator(mode="after")
    def _check(self) -> Strategy:
        raise_if(exactly_one(self, ("tree", "banded_toeplitz", "matrix"), "the strategy"),
                 "Strategy")
        return self


class Once(_Strict):
    """Each unit participates in at most one step. No fields."""


class Separated(_Strict):
    """Each unit participates in at most ``times`` steps, any two at least
    ``min_separation`` steps apart (b-min-separation)."""

    times: Count = Field(description="The most steps one unit participates in, k.")
    min_separation: Count = Field(
        description="b: the steps i and j of two participations of a unit satisfy "
        "|i − j| ≥ b (TF Privacy's min_separation is b − 1).")


class CyclicPoisson(_Strict):
    """Amplified BandMF (Choquette-Choo et al. 2023, arXiv:2306.08153): the units are
    split into ``block`` groups, group j is used in the steps j, j + b, j + 2b, …, and
    each step Poisson-samples its group's units with ``sampling_rate``."""

    block: Count = Field(description="b: the number of groups, and the steps between two "
                         "uses of a group; at least the strategy's bands.")
    sampling_rate: Probability = Field(description="The probability that a unit of the "
                                       "step's group is in its batch.")


class Participation(_Strict):
    """How often one unit contributes a clipped vector (one participation: one clipped
    contribution of the unit, a record, or with unit 'one user' a user's clipped
    update). Give one of its fields."""

    once: Once | None = Field(None, description="At most one step: `{}`.")
    separated: Separated | None = Field(
        None, description="At most `times` steps, at least `min_separation` apart, as the "
        "deployment asserts (privspec cannot check it).")
    cyclic_poisson: CyclicPoisson | None = Field(
        None, description="Amplified BandMF's cyclic Poisson sampling in groups of `block`.")

    @model_validator(mode="after")
    def _check(self) -> Participation:
        raise_if(exactly_one(self, ("once", "separated", "cyclic_poisson"),
                             "how a unit participates"), "Participation")
        return self


class MatrixFactorization(_Strict):
    """Matrix-factorization training (DP-FTRL, BandMF): the learner sees A·x + B·z with
    A = B·C, z ~ N(0, σ²C_clip²) per coordinate, so the privacy is that of the Gaussian
    mechanism on C·x.  Its sensitivity comes from the strategy C and the participation
    (the largest column norm for one; Choquette-Choo et al. 2023, arXiv:2211.06530 and
    arXiv:2306.08153, for several), exact where it can be and a stated upper bound
    otherwise; the report says which.  Accounted as one Gaussian with μ = sensitivity /
    noise multiplier (no amplification), or, with cyclic Poisson sampling, as the
    Poisson-sampled Gaussian composed ⌈steps / block⌉ times."""

    strategy: Strategy = Field(description="The strategy matrix C.")
    steps: Count = Field(description="Number of steps (rounds) n: C is n × n, or the tree "
                         "has n leaves.")
    noise_multiplier: PositiveFloat = Field(
        description="Standard deviation of the noise z added to C·x, divided by the clipping "
        "norm.")
    participation: Participation = Field(description="How often one unit participates.")

    def sensitivity(self) -> Sensitivity:
        """The L2 sensitivity of C·x in clipping norms, for the whole run (or, with
        cyclic Poisson sampling, for one participation: the largest column norm)."""
        separated = self.participation.separated
        times, separation = (separated.times, separated.min_separation) if separated else (1, 1)
        toeplitz, matrix = self.strategy.banded_toeplitz, self.strategy.matrix
        if matrix is not None:
            return _file_sensitivity(matrix, times, separation)
        if self.strategy.tree is not None:
            return tree_sensitivity(self.steps, times, separation, self.strategy.tree.online)
        assert toeplitz is not None
        return toeplitz_sensitivity(tuple(toeplitz.coefficients), self.steps, times, separation)

    def largest_column_norm(self) -> float:
        """The largest column norm of a banded Toeplitz strategy or a matrix: one
        participation's sensitivity (amplified BandMF's unit of noise)."""
        if self.strategy.matrix is not None:
            return _file_sensitivity(self.strategy.matrix, 1, 1).value
        toeplitz = self.strategy.banded_toeplitz
        assert toeplitz is not None
        return toeplitz_sensitivity(tuple(toeplitz.coefficients), self.steps).value

    def orthogonal_apart(self, block: int) -> bool:
        """Whether participations ``block`` steps apart add orthogonal vectors: a banded
        Toeplitz strategy with at most ``block`` bands, or a matrix whose columns that
        far apart touch disjoint rows (the tree's never do)."""
        toeplitz, matrix = self.strategy.banded_toeplitz, self.strategy.matrix
        if toeplitz is not None:
            return min(len(toeplitz.coefficients), self.steps) <= block
        return matrix is not None and disjoint_columns(matrix.columns(), block)

    @model_validator(mode="after")
    def _check(self) -> MatrixFactorization:
        separated, cyclic = self.participation.separated, self.participation.cyclic_poisson
        toeplitz, matrix = self.strategy.banded_toeplitz, self.strategy.matrix
        problems = []
        size = matrix.size() if matrix is not None else self.steps
        if size != self.steps:
            problems.append(conflict("steps", f"the strategy matrix is {size:,} × {size:,}: "
                                     "steps must be its size", self.steps))
        elif cyclic is not None and matrix is None and not self.orthogonal_apart(cyclic.block):
            # (a file's columns are read by the evaluation, which checks them likewise)
            problems.append(conflict("participation", CYCLIC_NEEDS_ORTHOGONAL, cyclic.block))
        if (separated is not None and toeplitz is None and matrix is None
                and tree_work(self.steps, separated.times, separated.min_separation)
                > MAX_TREE_WORK):
            problems.append(conflict(
                "participation", f"the tree's maximisation over {separated.times:,} "
                f"participations in {self.steps:,} steps would take more than "
                f"{MAX_TREE_WORK:,} operations (participations² × tree levels); a larger "
                "min_separation or fewer times fit", separated.times))
        raise_if(problems, "MatrixFactorization")
        return self


@functools.lru_cache(maxsize=32)
def _file_sensitivity(matrix: MatrixFile, times: int, separation: int) -> Sensitivity:
    """A strategy file's sensitivity, computed once a run (named by its digest)."""
    return matrix_sensitivity(matrix.columns(), times, separation)


def event(block: MatrixFactorization, _: object) -> Event:
    cyclic = block.participation.cyclic_poisson
    if cyclic is not None:  # jax_privacy's amplified_bandmf_event, column norm as given
        step = GaussianEvent(block.noise_multiplier, block.largest_column_norm(), clipped=True)
        return RepeatedEvent(SampledEvent(step, cyclic.sampling_rate, "poisson"),
                             -(-block.steps // cyclic.block))
    return GaussianEvent(block.noise_multiplier, block.sensitivity().value, clipped=True)


def describe(block: MatrixFactorization, words: Words) -> str:
    toeplitz, matrix = block.strategy.banded_toeplitz, block.strategy.matrix
    tree = block.strategy.tree
    strategy = (f"binary-tree strategy ({'complete subtrees only' if tree.online else 'every node'})"
                if tree is not None else
                f"banded Toeplitz strategy with {words.num(len(toeplitz.coefficients))} bands"
                if toeplitz is not None else
                f"strategy matrix from a file of SHA-256 {matrix.sha256}" if matrix is not None
                else "")
    head = (f"matrix-factorization training (DP-FTRL): {words.num(block.steps)} steps, "
            f"{strategy}, noise multiplier {words.num(block.noise_multiplier)}")
    cyclic, separated = block.participation.cyclic_poisson, block.participation.separated
    if cyclic is not None:
        rounds = -(-block.steps // cyclic.block)
        return (f"{head}; cyclic Poisson sampling (amplified BandMF): {words.num(cyclic.block)} "
                f"groups, each step sampling its group at rate {words.num(cyclic.sampling_rate)}; "
                f"accounted as {words.num(rounds)} Poisson-sampled Gaussian releases whose noise "
                f"multiplier is the given one over the largest column norm, "
                f"{words.num(block.largest_column_norm())} (Choquette-Choo et al. 2023, "
                "arXiv:2306.08153)")
    found = block.sensitivity()
    who = ("each unit in at most one step" if separated is None else
           f"each unit in at most {words.num(separated.times)} steps at least "
           f"{words.num(separated.min_separation)} apart (asserted, not checked)")
    return (f"{head}; {who}; sensitivity {words.num(found.value)} clipping norms, "
            f"{found.how}; accounted as one Gaussian release, μ = sensitivity / noise "
            "multiplier (no amplification claimed)")


KIND = Kind("matrix_factorization", 115, MatrixFactorization, event, describe,
            noun="training run")
