"""``laplace``: one release of a query with Laplace noise."""

from __future__ import annotations

from pydantic import Field, model_validator

from privspec.spec.base import PositiveFloat, _Strict, exactly_one, raise_if
from privspec.spec.events import Event, LaplaceEvent
from privspec.spec.kind import Kind, Words


class Laplace(_Strict):
    """Laplace mechanism: adds Lap(b) noise to a query of bounded L1 sensitivity.

    Give either ``scale`` b or ``epsilon`` = Δ/b. It is pure ε-DP but not well
    described by GDP (docs/math.md §6: b = 1 gives μ = 1.0301 with regret 0.037).
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
        raise_if(exactly_one(self, ("scale", "epsilon"), "the noise scale"), "Laplace")
        return self

    def resolved_scale(self) -> float:
        """b, given or from ε = Δ/b."""
        return self.scale if self.scale is not None else self.sensitivity / (self.epsilon or 1)


def event(block: Laplace, _: object) -> Event:
    return LaplaceEvent(block.resolved_scale(), block.sensitivity)


def describe(block: Laplace, words: Words) -> str:
    scale = block.resolved_scale()
    return (f"Laplace noise of scale {words.num(scale)} (L1 sensitivity "
            f"{words.num(block.sensitivity)}, ε = {words.num(block.sensitivity / scale)})")


KIND = Kind("laplace", 20, Laplace, event, describe, additive=True, bounded_loss=True)
