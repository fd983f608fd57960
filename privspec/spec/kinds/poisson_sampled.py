"""``poisson_sampled``: a noise-adding release on a Poisson-sampled batch."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import Field, model_validator

from privspec.spec.base import SamplingRate, raise_if
from privspec.spec.events import Event, SampledEvent
from privspec.spec.kind import Kind, Mechanism, Words


class PoissonSampled(SamplingRate):
    """Poisson subsampling: each record joins the batch independently with probability q,
    then ``mechanism`` runs on the batch once. Amplification is accounted exactly by
    dp-accounting's subsampled PLDs."""

    mechanism: Mechanism = Field(
        description="The mechanism run on the sampled batch: gaussian, laplace, "
        "discrete_gaussian or discrete_laplace."
    )

    @model_validator(mode="after")
    def _check(self) -> PoissonSampled:
        raise_if(self.rate_problems(), "PoissonSampled")
        return self


def event(block: PoissonSampled, event_of: Callable[[Any], Event]) -> Event:
    return SampledEvent(event_of(block.mechanism), block.rate(), "poisson")


def describe(block: PoissonSampled, words: Words) -> str:
    return f"{words.of(block.mechanism)}, on a Poisson-sampled batch ({words.rate(block)})"


KIND = Kind("poisson_sampled", 80, PoissonSampled, event, describe, nesting="mechanism",
            bounded_loss=True, sampling="poisson")
