"""``discrete_laplace``: one release of an integer query with two-sided geometric noise."""

from __future__ import annotations

from pydantic import Field, model_validator

from privspec.spec.base import IntegerSensitivity, PositiveFloat, _Strict, exactly_one, raise_if
from privspec.spec.events import DiscreteLaplaceEvent, Event
from privspec.spec.kind import Kind, Words


class DiscreteLaplace(_Strict):
    """Discrete Laplace (two-sided geometric) mechanism on integer-valued queries.

    P(noise = k) ∝ exp(−|k|/scale). Give either ``scale`` or ``epsilon`` = Δ/scale.
    """

    scale: PositiveFloat | None = Field(
        None, description="Scale t of the noise: P(k) is proportional to exp(−|k|/t)."
    )
    epsilon: PositiveFloat | None = Field(
        None, description="Privacy parameter ε = sensitivity / scale of this release."
    )
    sensitivity: IntegerSensitivity = Field(
        1, description="Integer L1 sensitivity under the spec's relation."
    )

    @model_validator(mode="after")
    def _check(self) -> DiscreteLaplace:
        raise_if(exactly_one(self, ("scale", "epsilon"), "the noise scale"), "DiscreteLaplace")
        return self


def event(block: DiscreteLaplace, _: object) -> Event:
    # P(k) ∝ exp(−parameter·|k|); ε = parameter · sensitivity.
    parameter = (1 / block.scale if block.scale is not None
                 else (block.epsilon or 1) / block.sensitivity)
    return DiscreteLaplaceEvent(parameter, block.sensitivity)


def describe(block: DiscreteLaplace, words: Words) -> str:
    if block.scale is not None:
        return (f"discrete Laplace noise of scale {words.num(block.scale)} "
                f"(sensitivity {block.sensitivity})")
    return (f"discrete Laplace noise for ε = {words.num(block.epsilon or 0)} "
            f"(sensitivity {block.sensitivity})")


KIND = Kind("discrete_laplace", 40, DiscreteLaplace, event, describe, additive=True,
            bounded_loss=True)
