"""What a mechanism kind declares, in one place (``privspec/spec/kinds/<kind>.py``):
its model, the event it releases, how a report describes it, and its properties.

A kind does not import the layers above: it describes itself through ``Words``, which
the report layer provides, and releases ``privspec.spec.events``, which the numerical
layer accounts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from pydantic import BaseModel

from privspec.spec.events import Event


class Words(Protocol):
    """How a kind's description writes numbers and nested mechanisms (report layer)."""

    def num(self, value: float) -> str:
        """A parameter as written: integers with separators, others with 6 digits."""

    def given(self, value: float) -> str:
        """A small given probability such as δ (``10⁻⁵``)."""

    def rate(self, block: Any, records: str = "records") -> str:
        """A sampling rate, or the batch and dataset sizes it came from."""

    def of(self, node: Any) -> str:
        """The description of a nested mechanism."""


@dataclass(frozen=True)
class Kind:
    """One mechanism kind: the ``KIND`` of a module of ``privspec.spec.kinds``, found
    there by ``privspec.spec.kinds.KINDS``.

    ``field``: the type under the kind's key (its model, or a list of stages);
    ``event(block, event_of)``: what one run releases (``event_of`` lowers a nested
    mechanism); ``describe(block, words)``: one phrase for the report;
    ``nesting``: where nested mechanisms are (``"mechanism"`` or ``"stages"``);
    ``additive``: one noise-adding release, which sampling may wrap;
    ``bounded_loss``: its privacy loss is bounded, so a mechanism built from such
    kinds can be pure DP; ``sampling``: the sampling scheme the kind applies;
    ``replace_one_only``: why it is accounted only under replace-one neighbours;
    ``noun``: what a report calls a mechanism of this kind ("release" when None);
    ``leaks``: it may reveal a record outright (an (ε, δ) release's δ), mass at +∞ that
    no floor τ may absorb (Gomez et al. 2025, Prop. 6.2).
    """

    name: str
    order: int  # place in the schema's and the documentation's lists
    field: Any
    event: Callable[[Any, Callable[[Any], Event]], Event]
    describe: Callable[[Any, Words], str]
    nesting: Literal["mechanism", "stages"] | None = None
    additive: bool = False
    bounded_loss: bool = False
    sampling: Literal["poisson", "fixed-size"] | None = None
    replace_one_only: str | None = None
    noun: str | None = None
    leaks: bool = False

    @property
    def model(self) -> type[BaseModel] | None:
        """The kind's model (None for a list of stages)."""
        return self.field if isinstance(self.field, type) else None
