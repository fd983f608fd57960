"""What a mechanism kind declares, in one place (``privspec/spec/kinds/<kind>.py``):
its model, the event it releases, how a report describes it, and its properties.

A kind does not import the layers above: it describes itself through ``Words``, which
the report layer provides, and releases ``privspec.spec.events``, which the numerical
layer accounts.  A kind that nests mechanisms declares a field of type ``Mechanism``:
a one-key mapping ``{kind: {...fields}}``, of any kind (``NODE_TYPES``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal, Protocol

from pydantic import BaseModel, GetCoreSchemaHandler, GetJsonSchemaHandler, ValidationInfo
from pydantic_core import core_schema

from privspec.spec.base import _Strict
from privspec.spec.events import Event

if TYPE_CHECKING:
    from pydantic.json_schema import JsonSchemaValue


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


class _Node(_Strict):
    """A mechanism written as ``{kind: {...fields}}``."""

    @property
    def kind(self) -> str:
        return _node_kind(type(self))

    @property
    def block(self) -> Any:
        """What is under the kind's key: its model, or a composition's list of stages."""
        return getattr(self, self.kind)


@functools.cache
def _node_kind(node: type[_Node]) -> str:
    """A node type's kind, its one field (pydantic's ``model_fields`` is slow to read:
    walking 12,000 stages read it 384,000 times)."""
    return next(iter(node.model_fields))


#: Every mechanism kind's node model, by the key a spec writes (``GaussianNode``:
#: ``{gaussian: Gaussian}``), put here by ``privspec.spec.kinds`` once it has found them.
NODE_TYPES: dict[str, type[_Node]] = {}


def _kind_of(value: Any) -> str | None:
    """Discriminator: the single key of the mapping (or the kind of a built node)."""
    if isinstance(value, _Node):
        return value.kind
    if isinstance(value, dict) and len(value) == 1:
        key = next(iter(value))
        return key if isinstance(key, str) else None
    return None


def _validator_of(kind: str) -> Callable[[Any, ValidationInfo], _Node]:
    """Validation of a mechanism of ``kind`` by its node model (built on first use)."""

    def validate(value: Any, info: ValidationInfo) -> _Node:
        return NODE_TYPES[kind].model_validate(value, context=info.context)

    return validate


class _KindsOnDemand:
    """A mechanism's schema: pydantic's tagged union of the kinds, with each kind's
    model built only when a spec uses it (building them all took half of ``privspec
    validate``'s time), so with the union's errors and their locations; its JSON Schema
    is the union's."""

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler
                                     ) -> core_schema.CoreSchema:
        return core_schema.tagged_union_schema(
            {kind: core_schema.with_info_plain_validator_function(_validator_of(kind))
             for kind in NODE_TYPES},
            discriminator=_kind_of, custom_error_type="unknown_kind",
            custom_error_message="a mechanism is a mapping with one key naming its kind")

    def __get_pydantic_json_schema__(self, schema: core_schema.CoreSchema,
                                     handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        """One of the kinds' nodes, each defined once and referred to (also where it
        nests in itself)."""
        choices = []
        for node in NODE_TYPES.values():
            reference = core_schema.definition_reference_schema(
                node.__pydantic_core_schema__["ref"])
            if node in _DESCRIBING:
                choices.append(handler(reference))
                continue
            _DESCRIBING.add(node)
            try:
                choices.append(handler(core_schema.definitions_schema(
                    reference, [node.__pydantic_core_schema__])))
            finally:
                _DESCRIBING.discard(node)
        return {"oneOf": choices}


#: The node models whose JSON Schema is being written (where one nests in itself, it
#: refers to its definition).
_DESCRIBING: set[type[_Node]] = set()


#: A mechanism of any kind, as a field of a model (validated by its kind's node model).
Mechanism = Annotated[_Node, _KindsOnDemand()]
