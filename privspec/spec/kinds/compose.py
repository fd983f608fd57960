"""``compose``: named stages run one after another on the same dataset."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from pydantic import Field

from privspec.spec.base import Count, _Strict
from privspec.spec.events import ComposedEvent, Event
from privspec.spec.kind import Kind, Mechanism, Words


class Stage(_Strict):
    """One named part of a composition, optionally repeated."""

    name: Annotated[str, Field(min_length=1, max_length=200)] | None = Field(
        None, description="Name shown in the report, e.g. 'hyper-parameter search'."
    )
    repeat: Count = Field(1, description="How many times this stage runs (default 1).")
    mechanism: Mechanism = Field(description="What this stage releases.")


Stages = Annotated[list[Stage], Field(min_length=1, max_length=100_000)]


def event(stages: list[Stage], event_of: Callable[[Any], Event]) -> Event:
    return ComposedEvent(tuple((event_of(stage.mechanism), stage.repeat) for stage in stages))


def describe(stages: list[Stage], words: Words) -> str:
    parts = [
        (f"{stage.name}: " if stage.name else "")
        + words.of(stage.mechanism)
        + (f" (×{words.num(stage.repeat)})" if stage.repeat > 1 else "")
        for stage in stages
    ]
    return f"{len(parts)} stages on the same data: " + "; ".join(parts)


KIND = Kind("compose", 120, Stages, event, describe, nesting="stages", bounded_loss=True)
