"""``fixed_size_sampled``: a noise-adding release on a batch sampled without replacement."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import Field, model_validator

from privspec.spec.base import DatasetSize, _Strict, batch_problems, raise_if
from privspec.spec.events import Event, SampledEvent
from privspec.spec.kind import Kind, Mechanism, Words


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
        raise_if(batch_problems(self.batch_size, self.dataset_size), "FixedSizeSampled")
        return self


def event(block: FixedSizeSampled, event_of: Callable[[Any], Event]) -> Event:
    return SampledEvent(event_of(block.mechanism), block.rate(), "fixed-size")


def describe(block: FixedSizeSampled, words: Words) -> str:
    return (f"{words.of(block.mechanism)}, on a batch of {words.num(block.batch_size)} of "
            f"{words.num(block.dataset_size)} records sampled without replacement")


KIND = Kind("fixed_size_sampled", 90, FixedSizeSampled, event, describe, nesting="mechanism",
            bounded_loss=True, sampling="fixed-size",
            replace_one_only="fixed-size sampling without replacement is analysed under "
            "'neighbouring: replace-one' (Balle et al. 2018); for add-or-remove use "
            "poisson_sampled if batches are Poisson-sampled")
