"""What every spec model shares: the strict frozen base, bounded field types, and the
cross-field rules several kinds use (one of two fields, rates, epochs, batches).

No numerical imports (``privspec validate`` imports this layer).
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

#: Validation context key: the spec's file name (for the commands messages suggest).
SPEC_FILE = "spec_file"
#: Validation context key: where the files a spec names are read (``named_file.Beside``).
NAMED_FILES = "named_files"
#: Largest repetition count accepted anywhere (steps, repeat, count).
MAX_REPETITIONS = 10_000_000
#: Largest dataset size accepted.
MAX_DATASET_SIZE = 10**12

PositiveFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
Probability = Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)]
#: Why a count is capped, and what to do instead (completes "more than the N …").
REPETITIONS_REASON = (
    "that one count may hold: beyond 10⁷ runs of one release the composition's error "
    "bound grows past what privspec certifies. Check that it counts runs or steps, not "
    "examples; for longer runs nest a `repeat` around a shorter stage, which "
    "privspec may then report by a looser closed-form bound")


def _readable(value: float) -> str:
    """A user's number for a message: integers with thousands separators."""
    return f"{int(value):,}" if float(value).is_integer() and abs(value) < 1e15 else f"{value:g}"


Count = Annotated[int, Field(ge=1, le=MAX_REPETITIONS)]
DatasetSize = Annotated[int, Field(ge=1, le=MAX_DATASET_SIZE)]
Epochs = Annotated[float, Field(gt=0, le=MAX_REPETITIONS, allow_inf_nan=False)]
IntegerSensitivity = Annotated[int, Field(ge=1, le=1_000_000)]


class _Strict(BaseModel):
    """Base for every spec model: unknown keys are errors, values are immutable."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        strict=True,
        allow_inf_nan=False,
        use_attribute_docstrings=False,
        defer_build=True,  # built on first use: privspec validate builds the kinds it meets
    )


def conflict(field: str, message: str, value: Any = None) -> InitErrorDetails:
    """One cross-field problem, located at ``field`` of the model being checked."""
    return InitErrorDetails(
        type=PydanticCustomError("spec_conflict", message),
        loc=(field,),
        input=value,
    )


def raise_if(problems: list[InitErrorDetails], title: str) -> None:
    """Raise the problems found by a model's cross-field check, if any."""
    if problems:
        raise ValidationError.from_exception_data(title, problems)


def exactly_one(model: BaseModel, names: tuple[str, ...], what: str) -> list[InitErrorDetails]:
    """Cross-field rule: exactly one of ``names`` is given."""
    given = [n for n in names if getattr(model, n) is not None]
    if len(given) == 1:
        return []
    alternatives = " or ".join(f"'{n}'" for n in names)
    if not given:
        return [conflict(names[0], f"give {alternatives} ({what}); none was given")]
    return [
        conflict(n, f"give {alternatives}, not both: they say the same thing ({what})",
                 getattr(model, n))
        for n in given[1:]
    ]


def steps_from_epochs(epochs: float, batch_size: int, dataset_size: int,
                      per_epoch: int | None = None) -> int:
    """Steps in ``epochs`` passes of ``per_epoch`` steps each (default: dataset_size /
    batch_size, a fraction), rounded up so that no step goes unaccounted."""
    steps = dataset_size / batch_size if per_epoch is None else per_epoch
    return max(1, math.ceil(epochs * steps - 1e-9))


def runs(count: int | None, epochs: float | None, batch_size: int | None,
         dataset_size: int | None, per_epoch: int | None = None) -> int:
    """A count given outright, or the steps of ``epochs`` passes (validated to exist)."""
    if count is not None:
        return count
    assert epochs and batch_size and dataset_size
    return steps_from_epochs(epochs, batch_size, dataset_size, per_epoch)


def epoch_problems(epochs: float | None, batch_size: int | None,
                   dataset_size: int | None, per_epoch: int | None = None
                   ) -> list[InitErrorDetails]:
    """``epochs`` needs both sizes, and must not mean more steps than allowed."""
    problems: list[InitErrorDetails] = []
    if epochs is None:
        return problems
    if batch_size is None:
        problems.append(conflict("epochs", "'epochs' needs 'batch_size' to count the steps",
                                 epochs))
    if dataset_size is None:
        problems.append(conflict("epochs", "'epochs' needs 'dataset_size' to count the steps",
                                 epochs))
    if (batch_size and dataset_size and batch_size <= dataset_size  # else: batch_problems
            and steps_from_epochs(epochs, batch_size, dataset_size, per_epoch) > MAX_REPETITIONS):
        steps = steps_from_epochs(epochs, batch_size, dataset_size, per_epoch)
        problems.append(conflict(
            "epochs", f"{_readable(epochs)} epochs of {dataset_size:,} records in batches of "
            f"{batch_size:,} are {steps:,} steps, more than the {MAX_REPETITIONS:,} "
            f"{REPETITIONS_REASON}", epochs))
    return problems


def batch_problems(batch_size: int | None, dataset_size: int | None) -> list[InitErrorDetails]:
    """A batch cannot be larger than the dataset."""
    if batch_size is None or dataset_size is None or batch_size <= dataset_size:
        return []
    return [conflict("batch_size",
                     f"a batch of {batch_size:,} records is larger than the dataset of "
                     f"{dataset_size:,}: batch_size is the expected number of records in one "
                     "batch, at most dataset_size", batch_size)]


class SamplingRate(_Strict):
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

    def rate_problems(self) -> list[InitErrorDetails]:
        """A rate, or a batch size with a dataset size: exactly one way."""
        problems: list[InitErrorDetails] = []
        has_sizes = self.batch_size is not None or self.dataset_size is not None
        if self.sampling_rate is not None and has_sizes:
            extra = "batch_size" if self.batch_size is not None else "dataset_size"
            problems.append(conflict(
                extra,
                "give 'sampling_rate' or 'batch_size' with 'dataset_size', not both",
                getattr(self, extra),
            ))
        elif self.sampling_rate is None:
            if self.batch_size is None and self.dataset_size is None:
                problems.append(conflict(
                    "sampling_rate",
                    "give 'sampling_rate' or 'batch_size' with 'dataset_size'; none was given",
                ))
            elif self.batch_size is None:
                problems.append(conflict("batch_size", "'dataset_size' needs 'batch_size'"))
            elif self.dataset_size is None:
                problems.append(conflict("dataset_size", "'batch_size' needs 'dataset_size'"))
        return problems + batch_problems(self.batch_size, self.dataset_size)
