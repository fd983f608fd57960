"""``dpsgd``: noisy gradient steps on Poisson-sampled batches (a shortcut)."""

from __future__ import annotations

from pydantic import Field, model_validator

from privspec.spec.base import (
    Count,
    Epochs,
    PositiveFloat,
    SamplingRate,
    epoch_problems,
    exactly_one,
    raise_if,
    runs,
)
from privspec.spec.events import Event, GaussianEvent, RepeatedEvent, SampledEvent
from privspec.spec.kind import Kind, Words


class DPSGD(SamplingRate):
    """DP-SGD shortcut: ``steps`` Poisson-subsampled Gaussian gradient releases.

    Equivalent to ``repeat`` of ``poisson_sampled`` of ``gaussian`` with the same
    noise multiplier. All intermediate models are covered.
    """

    noise_multiplier: PositiveFloat = Field(
        description="Noise standard deviation divided by the per-example clipping norm."
    )
    steps: Count | None = Field(None, description="Number of noisy gradient steps.")
    epochs: Epochs | None = Field(
        None,
        description="Passes over the data; steps = ⌈epochs · dataset_size / batch_size⌉.",
    )

    def times(self) -> int:
        """The number of steps, from whichever fields were given."""
        return runs(self.steps, self.epochs, self.batch_size, self.dataset_size)

    @model_validator(mode="after")
    def _check(self) -> DPSGD:
        problems = self.rate_problems()
        problems += exactly_one(self, ("steps", "epochs"), "how long training runs")
        problems += epoch_problems(self.epochs, self.batch_size, self.dataset_size)
        raise_if(problems, "DPSGD")
        return self


def event(block: DPSGD, _: object) -> Event:
    step = GaussianEvent(block.noise_multiplier, 1.0, clipped=True)
    return RepeatedEvent(SampledEvent(step, block.rate(), "poisson"), block.times())


def describe(block: DPSGD, words: Words) -> str:
    return (f"DP-SGD: {words.num(block.times())} steps"
            + (f" ({words.num(block.epochs)} epochs)" if block.epochs is not None else "")
            + f", Poisson sampling with {words.rate(block, 'examples')}, "
            f"noise multiplier {words.num(block.noise_multiplier)}")


KIND = Kind("dpsgd", 110, DPSGD, event, describe, noun="training run")
