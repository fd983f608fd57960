"""``dpsgd``: noisy gradient steps on batches drawn as ``sampling`` says (a shortcut)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator
from pydantic_core import InitErrorDetails

from privspec.spec.base import (
    Count,
    Epochs,
    PositiveFloat,
    SamplingRate,
    batch_problems,
    conflict,
    epoch_problems,
    exactly_one,
    raise_if,
    runs,
)
from privspec.spec.events import (
    Event,
    GaussianEvent,
    RepeatedEvent,
    SampledEvent,
    TruncatedPoissonEvent,
)
from privspec.spec.kind import Kind, Words

Sampling = Literal["poisson", "fixed-size", "shuffled", "truncated-poisson", "balls-in-bins"]

#: Why a scheme is not accounted yet, and what would make it possible.
UNACCOUNTED = {
    "balls-in-bins": "balls-in-bins (random allocation) batches have no sound accountant in "
    "the installed dp-accounting (Monte-Carlo estimates are not bounds); 'shuffled' gives "
    "a sound upper bound for any batching where each example is in a known number of "
    "batches",
}


class DPSGD(SamplingRate):
    """DP-SGD shortcut: ``steps`` Gaussian gradient releases on batches drawn as
    ``sampling`` says.

    With Poisson sampling, equivalent to ``repeat`` of ``poisson_sampled`` of
    ``gaussian`` with the same noise multiplier. All intermediate models are covered.
    """

    sampling: Sampling = Field(
        "poisson", description="How batches were drawn: 'poisson' (each example "
        "independently with the rate), 'fixed-size' (batches of batch_size sampled "
        "without replacement; replace-one neighbours), 'shuffled' (the data shuffled and "
        "cut into batches, anew each epoch: no amplification is claimed, each example counts "
        "in ⌈steps/⌊dataset_size/batch_size⌋⌉ batches, the epochs the steps span; zero-out "
        "or replace-one neighbours, since under add-or-remove an added example pushes another "
        "out of its batch; Chua et al. 2024 show Poisson accounting does not hold for it), "
        "'truncated-poisson' (Poisson sampling of dataset_size examples "
        "at sampling_rate, or with expected batch batch_size, each batch cut to at most "
        "truncated_batch_size examples; zero-out neighbours). 'balls-in-bins' is refused with the reason.")
    truncated_batch_size: Count | None = Field(
        None, description="With 'truncated-poisson': the most examples a batch keeps (a "
        "random subset of a larger Poisson sample).")

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

    def participations(self) -> int:
        """Shuffled batches: how many of them each example is in, at most.  Each epoch
        is a fresh shuffle cut into ⌊N/B⌋ full batches (and, where it is kept, a partial
        last one), so T steps span at most ⌈T/⌊N/B⌋⌉ epochs, one batch each."""
        assert self.batch_size is not None and self.dataset_size is not None
        per_epoch = max(1, self.dataset_size // self.batch_size)
        return max(1, -(-self.times() // per_epoch))

    @model_validator(mode="after")
    def _check(self) -> DPSGD:
        truncated = self.sampling == "truncated-poisson"
        problems = self._truncated_rate_problems() if truncated else self.rate_problems()
        if self.sampling in UNACCOUNTED:
            problems.append(conflict("sampling", UNACCOUNTED[self.sampling], self.sampling))
        elif self.sampling not in ("poisson", "truncated-poisson") and self.sampling_rate is not None:
            problems.append(conflict(
                "sampling_rate", f"'{self.sampling}' batches are given by 'batch_size' and "
                "'dataset_size', not a rate", self.sampling_rate))
        if self.sampling == "truncated-poisson":
            if self.truncated_batch_size is None:
                problems.append(conflict("sampling", "'truncated-poisson' needs "
                                         "truncated_batch_size, the most examples a batch "
                                         "keeps", self.sampling))
        elif self.truncated_batch_size is not None:
            problems.append(conflict("truncated_batch_size", "only 'truncated-poisson' "
                                     "batches are truncated", self.truncated_batch_size))
        problems += exactly_one(self, ("steps", "epochs"), "how long training runs")
        problems += epoch_problems(self.epochs, self.batch_size, self.dataset_size)
        raise_if(problems, "DPSGD")
        return self

    def _truncated_rate_problems(self) -> list[InitErrorDetails]:
        """Truncated Poisson needs the dataset size (the truncation's odds depend on it)
        and the rate, given as it or as the expected batch size."""
        if self.dataset_size is None:
            return [conflict("dataset_size", "'truncated-poisson' needs 'dataset_size' (how "
                             "likely a batch is cut depends on it)")]
        if (self.sampling_rate is None) == (self.batch_size is None):
            return [conflict("sampling_rate", "with 'truncated-poisson', give 'sampling_rate' "
                             "or 'batch_size' (expected), with 'dataset_size'")]
        return batch_problems(self.batch_size, self.dataset_size)


def event(block: DPSGD, _: object) -> Event:
    step = GaussianEvent(block.noise_multiplier, 1.0, clipped=True)
    if block.sampling == "shuffled":  # no amplification: every batch it is in, in full
        return RepeatedEvent(step, block.participations())
    if block.sampling == "truncated-poisson":
        assert block.dataset_size is not None and block.truncated_batch_size is not None
        return RepeatedEvent(TruncatedPoissonEvent(
            block.noise_multiplier, block.rate(), block.dataset_size,
            block.truncated_batch_size), block.times())
    scheme: Literal["poisson", "fixed-size"] = (
        "fixed-size" if block.sampling == "fixed-size" else "poisson")
    return RepeatedEvent(SampledEvent(step, block.rate(), scheme), block.times())


def describe(block: DPSGD, words: Words) -> str:
    if block.sampling == "shuffled":
        batches = (f"shuffled batches of {words.num(block.batch_size or 0)} of "
                   f"{words.num(block.dataset_size or 0)} examples (each example in at most "
                   f"{words.num(block.participations())} of them; no amplification claimed)")
    elif block.sampling == "fixed-size":
        batches = (f"batches of {words.num(block.batch_size or 0)} of "
                   f"{words.num(block.dataset_size or 0)} examples sampled without replacement")
    elif block.sampling == "truncated-poisson":
        of = ("" if block.batch_size is not None
              else f" of {words.num(block.dataset_size or 0)} examples")
        batches = (f"Poisson sampling with {words.rate(block, 'examples')}{of}, each batch cut "
                   f"to at most {words.num(block.truncated_batch_size or 0)} examples "
                   "(truncated Poisson)")
    else:
        batches = f"Poisson sampling with {words.rate(block, 'examples')}"
    return (f"DP-SGD: {words.num(block.times())} steps"
            + (f" ({words.num(block.epochs)} epochs)" if block.epochs is not None else "")
            + f", {batches}, noise multiplier {words.num(block.noise_multiplier)}")


KIND = Kind("dpsgd", 110, DPSGD, event, describe, noun="training run")
