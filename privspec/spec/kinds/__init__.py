"""The registry of mechanism kinds: every module of this package is one kind (its
model, the event it releases, its description, its properties), exported as ``KIND``.
A new kind is a new module here; ``KIND.order`` places it in the schema and the docs."""

from __future__ import annotations

import importlib
import pkgutil

from pydantic import Field, create_model

from privspec.spec.kind import NODE_TYPES, Kind, _Node


def _discover() -> dict[str, Kind]:
    kinds = [importlib.import_module(f"{__name__}.{module.name}").KIND
             for module in pkgutil.iter_modules(__path__)]
    return {kind.name: kind for kind in sorted(kinds, key=lambda kind: kind.order)}


def _node_type(kind: Kind) -> type[_Node]:
    """The one-key model of ``kind`` (``GaussianNode``: ``{gaussian: Gaussian}``)."""
    if kind.model is not None:
        title, value = kind.model.__name__, (kind.field, ...)
    else:  # a composition: the list of stages is the node's own field
        title = "".join(part.capitalize() for part in kind.name.split("_"))
        value = (kind.field, Field(description="The stages, in the order they run, all on "
                                   "the same dataset."))
    node: type[_Node] = create_model(  # type: ignore[call-overload]
        f"{title}Node", __base__=_Node, __module__="privspec.spec.models", **{kind.name: value})
    return node


#: Every mechanism kind, by the key a spec writes, in ``order``.
KINDS: dict[str, Kind] = _discover()
NODE_TYPES.update((name, _node_type(kind)) for name, kind in KINDS.items())

__all__ = ["KINDS", "Kind"]
