"""``discrete_gaussian``: one release of an integer query with discrete Gaussian noise."""

from __future__ import annotations

import math

from pydantic import Field, model_validator

from privspec.spec.base import IntegerSensitivity, PositiveFloat, _Strict, exactly_one, raise_if
from privspec.spec.events import DiscreteGaussianEvent, Event
from privspec.spec.kind import Kind, Words


class DiscreteGaussian(_Strict):
    """Discrete Gaussian mechanism on integer-valued queries (census-style counts).

    Give either ``sigma`` (the scale parameter) or ``rho``, the zCDP parameter of one
    query: σ = Δ/√(2ρ) (Canonne, Kamath & Steinke 2020). privspec accounts for the
    discrete Gaussian itself, not for the weaker ρ bound (docs/math.md §6).
    """

    sigma: PositiveFloat | None = Field(
        None,
        description="Scale parameter σ of the discrete Gaussian (close to, not equal to, its std).",
    )
    rho: PositiveFloat | None = Field(
        None,
        description="zCDP parameter ρ of this one query; sets σ = sensitivity / √(2ρ).",
    )
    sensitivity: IntegerSensitivity = Field(
        1,
        description=(
            "Integer sensitivity: the largest change of the count between neighbouring "
            "datasets under the spec's relation."
        ),
    )

    @model_validator(mode="after")
    def _check(self) -> DiscreteGaussian:
        raise_if(exactly_one(self, ("sigma", "rho"), "the noise scale"), "DiscreteGaussian")
        return self


def event(block: DiscreteGaussian, _: object) -> Event:
    if block.sigma is not None:
        return DiscreteGaussianEvent(block.sigma, block.sensitivity)
    assert block.rho is not None
    return DiscreteGaussianEvent(block.sensitivity / math.sqrt(2 * block.rho), block.sensitivity)


def describe(block: DiscreteGaussian, words: Words) -> str:
    if block.rho is not None:
        return (f"discrete Gaussian noise for ρ = {words.num(block.rho)} "
                f"(sensitivity {block.sensitivity})")
    assert block.sigma is not None
    return (f"discrete Gaussian noise with σ = {words.num(block.sigma)} "
            f"(sensitivity {block.sensitivity})")


KIND = Kind("discrete_gaussian", 30, DiscreteGaussian, event, describe, additive=True)
