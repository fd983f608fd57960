"""``repeat``: the same mechanism run several times on the same dataset."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import Field, model_validator

from privspec.spec.base import (
    Count,
    DatasetSize,
    Epochs,
    _Strict,
    batch_problems,
    epoch_problems,
    exactly_one,
    raise_if,
    runs,
)
from privspec.spec.events import Event, RepeatedEvent
from privspec.spec.kind import Kind, Mechanism, Words


class Repeat(_Strict):
    """Run ``mechanism`` several times on the same dataset (self-composition).

    Give ``count``, or ``epochs`` with ``batch_size`` and ``dataset_size``
    (count = ⌈epochs · dataset_size / batch_size⌉, rounded up: never fewer steps
    than were run).
    """

    count: Count | None = Field(None, description="Number of runs.")
    epochs: Epochs | None = Field(
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
        return runs(self.count, self.epochs, self.batch_size, self.dataset_size)

    @model_validator(mode="after")
    def _check(self) -> Repeat:
        problems = exactly_one(self, ("count", "epochs"), "how many runs")
        problems += epoch_problems(self.epochs, self.batch_size, self.dataset_size)
        problems += batch_problems(self.batch_size, self.dataset_size)
        raise_if(problems, "Repeat")
        return self


def event(block: Repeat, event_of: Callable[[Any], Event]) -> Event:
    return RepeatedEvent(event_of(block.mechanism), block.times())


def describe(block: Repeat, words: Words) -> str:
    inner = words.of(block.mechanism)
    if block.epochs is not None:
        return f"{inner}, for {words.num(block.epochs)} epochs ({words.num(block.times())} runs)"
    return f"{inner}, run {words.num(block.times())} times"


KIND = Kind("repeat", 100, Repeat, event, describe, nesting="mechanism", bounded_loss=True)
