"""``approximate_dp``: a black box known only to be (ε, δ)-DP."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from privspec.spec.base import _Strict
from privspec.spec.events import ApproximateDPEvent, Event
from privspec.spec.kind import Kind, Words


class ApproximateDP(_Strict):
    """Any (ε, δ)-DP mechanism, accounted by its worst case. No finite μ exists
    (Gomez et al. 2025, Prop. 6.2)."""

    epsilon: Annotated[float, Field(ge=0, allow_inf_nan=False)] = Field(
        description="The mechanism's published ε."
    )
    delta: Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)] = Field(
        description="The mechanism's published δ: the probability mass it may leak outright."
    )


def event(block: ApproximateDP, _: object) -> Event:
    return ApproximateDPEvent(block.epsilon, block.delta)


def describe(block: ApproximateDP, words: Words) -> str:
    return (f"a mechanism known only to be (ε, δ)-DP with ε = {words.num(block.epsilon)}, "
            f"δ = {words.given(block.delta)}")


KIND = Kind("approximate_dp", 70, ApproximateDP, event, describe, leaks=True)
