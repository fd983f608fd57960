"""The registry of mechanism kinds: every module of this package is one kind (its
model, the event it releases, its description, its properties), exported as ``KIND``.
A new kind is a new module here; ``KIND.order`` places it in the schema and the docs."""

from __future__ import annotations

import importlib
import pkgutil

from privspec.spec.kind import Kind


def _discover() -> dict[str, Kind]:
    kinds = [importlib.import_module(f"{__name__}.{module.name}").KIND
             for module in pkgutil.iter_modules(__path__)]
    return {kind.name: kind for kind in sorted(kinds, key=lambda kind: kind.order)}


#: Every mechanism kind, by the key a spec writes, in ``order``.
KINDS: dict[str, Kind] = _discover()

__all__ = ["KINDS", "Kind"]
