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
    """The stages in order; named stages that do the same (the same mechanism, the same
    number of times) are listed together behind one description, so that a composition
    of many like queries (a census's histograms) stays one readable phrase."""
    alike: dict[str, list[str]] = {}
    parts: list[str | list[str]] = []
    for stage in stages:
        does = words.of(stage.mechanism) + (
            f" (×{words.num(stage.repeat)})" if stage.repeat > 1 else "")
        if stage.name is None:
            parts.append(does)
        elif does in alike:
            alike[does].append(stage.name)
        else:
            alike[does] = [stage.name]
            parts.append(alike[does])
    described = {id(names): does for does, names in alike.items()}
    if len(parts) == 1 and isinstance(parts[0], list) and len(parts[0]) > 1:
        return (f"{len(stages)} stages on the same data, each {described[id(parts[0])]}: "
                + ", ".join(parts[0]))
    return f"{len(stages)} stages on the same data: " + "; ".join(
        part if isinstance(part, str)
        else ", ".join(part) + (": each " if len(part) > 1 else ": ") + described[id(part)]
        for part in parts)


KIND = Kind("compose", 120, Stages, event, describe, nesting="stages", bounded_loss=True)
