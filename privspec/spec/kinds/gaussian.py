"""``gaussian``: one release of a query with Gaussian noise."""

from __future__ import annotations

from pydantic import Field, model_validator

from privspec.spec.base import PositiveFloat, _Strict, conflict, exactly_one, raise_if
from privspec.spec.events import Event, GaussianEvent
from privspec.spec.kind import Kind, Words


class Gaussian(_Strict):
    """Gaussian mechanism: adds N(0, σ²) noise to a query of bounded L2 sensitivity.

    Give either ``sigma`` (with ``sensitivity``) or ``noise_multiplier``. One release
    with σ and sensitivity Δ under its relation is exactly (Δ/σ)-GDP (Dong, Roth & Su).
    """

    sigma: PositiveFloat | None = Field(
        None,
        description="Standard deviation σ of the Gaussian noise, in the units of the query.",
    )
    noise_multiplier: PositiveFloat | None = Field(
        None,
        description=(
            "Noise standard deviation divided by the clipping norm C that bounds one "
            "record's contribution (DP-SGD's z = σ/C). One record moves the sum by at "
            "most C under add-or-remove and 2C under replace-one."
        ),
    )
    sensitivity: PositiveFloat | None = Field(
        None,
        description=(
            "L2 sensitivity Δ: the largest distance between the query's values on two "
            "neighbouring datasets under the spec's relation (same units as sigma). "
            "Default 1. Only with 'sigma'."
        ),
    )

    @model_validator(mode="after")
    def _check(self) -> Gaussian:
        problems = exactly_one(self, ("sigma", "noise_multiplier"), "the noise scale")
        if self.noise_multiplier is not None and self.sensitivity is not None:
            problems.append(conflict(
                "sensitivity",
                "'sensitivity' goes with 'sigma'; a noise multiplier is already relative "
                "to the clipping norm",
                self.sensitivity,
            ))
        raise_if(problems, "Gaussian")
        return self


def event(block: Gaussian, _: object) -> Event:
    if block.noise_multiplier is not None:
        return GaussianEvent(block.noise_multiplier, 1.0, clipped=True)
    assert block.sigma is not None
    return GaussianEvent(block.sigma, block.sensitivity or 1.0)


def describe(block: Gaussian, words: Words) -> str:
    if block.noise_multiplier is not None:
        return f"Gaussian noise with noise multiplier {words.num(block.noise_multiplier)}"
    assert block.sigma is not None
    return (f"Gaussian noise with σ = {words.num(block.sigma)} "
            f"(L2 sensitivity {words.num(block.sensitivity or 1)})")


KIND = Kind("gaussian", 10, Gaussian, event, describe, additive=True)
