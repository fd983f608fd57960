"""``dpsgd``: noisy gradient steps on batches drawn as ``sampling`` says (a shortcut)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer, model_validator
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
    RandomAllocationEvent,
    RepeatedEvent,
    SampledEvent,
    TruncatedPoissonEvent,
)
from privspec.spec.kind import Kind, Words

Sampling = Literal["poisson", "fixed-size", "shuffled", "truncated-poisson", "random-allocation",
                   "balls-in-bins"]
PartialBatch = Literal["kept", "dropped"]

#: Why a scheme is not accounted yet, and what would make it possible.
UNACCOUNTED = {
    "balls-in-bins": "balls-in-bins batches (each example in one step of each epoch, chosen "
    "at random) are written 'random-allocation' (Feldman & Shenfeld 2025)",
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
        "in one batch of each epoch the steps reach, ⌈steps/(batches an epoch)⌉, "
        "partial_batch saying how many batches an epoch has; zero-out "
        "or replace-one neighbours, since under add-or-remove an added example pushes another "
        "out of its batch; Chua et al. 2024 show Poisson accounting does not hold for it), "
        "'truncated-poisson' (Poisson sampling of dataset_size examples "
        "at sampling_rate, or with expected batch batch_size, each batch cut to at most "
        "truncated_batch_size examples; zero-out neighbours), 'random-allocation' (\"balls in "
        "bins\": each epoch is ⌊dataset_size/batch_size⌋ steps and every example is in "
        "exactly one of them, chosen at random and independently of the other examples; "
        "accounted as ⌈steps/(steps an epoch)⌉ epochs, each by the dominating pair of Chua et "
        "al. 2025 (arXiv:2412.16802), amplified, under add-or-remove and zero-out "
        "neighbours; without amplification, as one Gaussian release an epoch, under "
        "replace-one). 'balls-in-bins' is refused, naming 'random-allocation'.")
    partial_batch: PartialBatch | None = Field(
        None, description="With 'shuffled', when batch_size does not divide dataset_size: "
        "'kept' (PyTorch's DataLoader default, drop_last=False) if each epoch ends with a "
        "smaller batch of the remaining examples, ⌈dataset_size/batch_size⌉ batches an "
        "epoch and every example in exactly one; 'dropped' (drop_last=True) if those "
        "examples sit the epoch out, ⌊dataset_size/batch_size⌋ batches and every example in "
        "at most one. Unstated means 'dropped', what specs meant before this field: for a "
        "given number of steps it counts the most epochs, so it never understates μ; epochs "
        "give the same μ either way.")
    truncated_batch_size: Count | None = Field(
        None, description="With 'truncated-poisson': the most examples a batch keeps (a "
        "random subset of a larger Poisson sample).")

    noise_multiplier: PositiveFloat = Field(
        description="Noise standard deviation divided by the per-example clipping norm."
    )
    steps: Count | None = Field(None, description="Number of noisy gradient steps.")
    epochs: Epochs | None = Field(
        None,
        description="Passes over the data; steps = ⌈epochs · dataset_size / batch_size⌉, "
        "or with 'shuffled' ⌈epochs · batches an epoch⌉ (see partial_batch).",
    )

    def batches_per_epoch(self) -> int | None:
        """Shuffled batches: the steps of one pass, ⌈N/B⌉ with the partial last batch
        kept, ⌊N/B⌋ without it; random allocation: ⌊N/B⌋ (the fewer steps an epoch, the
        more epochs the steps reach: pessimistic); None for other schemes or sizes that
        do not fit."""
        if (self.sampling not in ("shuffled", "random-allocation") or self.batch_size is None
                or self.dataset_size is None or self.batch_size > self.dataset_size):
            return None
        full, rest = divmod(self.dataset_size, self.batch_size)
        return full + (1 if rest and self.partial_batch == "kept" else 0)

    def times(self) -> int:
        """The number of steps, from whichever fields were given."""
        return runs(self.steps, self.epochs, self.batch_size, self.dataset_size,
                    self.batches_per_epoch())

    def participations(self) -> int:
        """Shuffled batches: how many of them each example is in, at most.  Each epoch
        is a fresh shuffle cut into its batches, the example in one of them (or, with the
        partial batch dropped, in none), so T steps reach ⌈T/(batches an epoch)⌉ epochs."""
        per_epoch = self.batches_per_epoch()
        assert per_epoch is not None
        return -(-self.times() // per_epoch)

    def participates_in_every_epoch(self) -> bool:
        """Shuffled batches: whether every example is in exactly ``participations()``
        batches (every batch of the epochs kept, and the steps whole epochs)."""
        per_epoch = self.batches_per_epoch()
        assert per_epoch is not None and self.batch_size is not None
        return per_epoch * self.batch_size >= (self.dataset_size or 0) and (
            self.times() % per_epoch == 0)

    @model_serializer(mode="wrap")
    def _without_unstated_partial_batch(self, handler: SerializerFunctionWrapHandler
                                        ) -> dict[str, Any]:
        """The data, without ``partial_batch`` when unstated: a spec written before the
        field keeps its SHA-256."""
        data: dict[str, Any] = handler(self)
        if self.partial_batch is None:
            data.pop("partial_batch", None)
        return data

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
        if self.partial_batch is not None and self.sampling != "shuffled":
            problems.append(conflict("partial_batch", "only 'shuffled' batches are cut from "
                                     "a pass over the data, with a partial last batch",
                                     self.partial_batch))
        problems += exactly_one(self, ("steps", "epochs"), "how long training runs")
        problems += epoch_problems(self.epochs, self.batch_size, self.dataset_size,
                                   self.batches_per_epoch())
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
    per_epoch = block.batches_per_epoch() or 1
    if block.sampling == "random-allocation" and per_epoch > 1:
        # a partial last epoch is the full one with its last steps not looked at
        return RepeatedEvent(RandomAllocationEvent(block.noise_multiplier, per_epoch),
                             block.participations())
    if block.sampling in ("shuffled", "random-allocation"):
        # no amplification: every batch it is in, in full
        # (a partial batch too: one clipped gradient in a sum, whatever the batch's size)
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
                   f"{words.num(block.dataset_size or 0)} examples, "
                   f"{words.num(block.batches_per_epoch() or 0)} an epoch ({_partial(block)}"
                   f"each example in "
                   f"{'exactly' if block.participates_in_every_epoch() else 'at most'} "
                   f"{words.num(block.participations())} of them; no amplification claimed)")
    elif block.sampling == "random-allocation":
        batches = (f"random allocation of {words.num(block.dataset_size or 0)} examples to "
                   f"{words.num(block.batches_per_epoch() or 0)} steps an epoch (expected "
                   f"batch {words.num(block.batch_size or 0)}; each example in exactly one "
                   f"step of each epoch, {words.num(block.participations())} epochs "
                   "accounted; random allocation: the dominating pair of Chua et al. 2025, "
                   "accounted numerically, pessimistic)")
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


def _partial(block: DPSGD) -> str:
    """What happens to an epoch's partial last batch, in words ending "; " (nothing
    without one)."""
    if not (block.dataset_size or 0) % (block.batch_size or 1):
        return ""
    if block.partial_batch is None:
        return "the partial last one taken as dropped, partial_batch not being stated; "
    return f"the partial last one {block.partial_batch}; "


KIND = Kind("dpsgd", 110, DPSGD, event, describe, noun="training run")
