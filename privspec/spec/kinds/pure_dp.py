"""``pure_dp``: a black box known only to be ε-DP."""

from __future__ import annotations

from pydantic import Field

from privspec.spec.base import PositiveFloat, _Strict
from privspec.spec.events import Event, PureDPEvent
from privspec.spec.kind import Kind, Words


class PureDP(_Strict):
    """Any ε-DP mechanism, accounted by its worst case (randomized response, docs/math.md §6)."""

    epsilon: PositiveFloat = Field(
        description="The mechanism's published pure-DP parameter ε (δ = 0)."
    )


def event(block: PureDP, _: object) -> Event:
    return PureDPEvent(block.epsilon)


def describe(block: PureDP, words: Words) -> str:
    return f"a mechanism known only to be ε-DP with ε = {words.num(block.epsilon)}"


KIND = Kind("pure_dp", 60, PureDP, event, describe, bounded_loss=True)
