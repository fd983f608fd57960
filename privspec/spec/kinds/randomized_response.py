"""``randomized_response``: local randomization of one respondent's answer."""

from __future__ import annotations

import math
from typing import Annotated

from pydantic import Field, model_validator

from privspec.spec.base import PositiveFloat, _Strict, conflict, exactly_one, raise_if
from privspec.spec.events import Event, RandomizedResponseEvent
from privspec.spec.kind import Kind, Words


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
        problems = exactly_one(self, ("epsilon", "flip_probability"), "the randomization")
        if self.flip_probability is not None:
            limit = 1 - 1 / self.categories
            if self.flip_probability >= limit:
                problems.append(conflict(
                    "flip_probability",
                    f"must be below 1 − 1/categories = {limit:.6g} for {self.categories} "
                    f"categories (got {self.flip_probability:g})",
                    self.flip_probability,
                ))
        raise_if(problems, "RandomizedResponse")
        return self


def event(block: RandomizedResponse, _: object) -> Event:
    k = block.categories
    if block.flip_probability is not None:
        return RandomizedResponseEvent(block.flip_probability * k / (k - 1), k)
    assert block.epsilon is not None
    # k/(e^ε + k − 1), written so that a large ε underflows to 0 instead of overflowing
    tail = math.exp(-block.epsilon)
    return RandomizedResponseEvent(k * tail / (1 + (k - 1) * tail), k, block.epsilon)


def describe(block: RandomizedResponse, words: Words) -> str:
    how = (f"ε = {words.num(block.epsilon)}" if block.epsilon is not None
           else f"answers flipped with probability {words.num(block.flip_probability or 0)}")
    return f"randomized response over {block.categories} answers ({how})"


KIND = Kind("randomized_response", 50, RandomizedResponse, event, describe, bounded_loss=True,
            replace_one_only="randomized response protects one respondent's answer and is "
            "accounted under 'neighbouring: replace-one'", noun="survey")
