"""The spec layer: the language's models, YAML reading with positions, diagnostics and
the JSON Schema.  It imports no numerical library (``privspec validate`` stays instant:
an import-linter contract checks it), and importing one of its modules (diagnostics,
say) does not build the models."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from privspec.spec.models import Spec

__all__ = ["Spec"]


def __getattr__(name: str) -> Any:
    """``privspec.spec.Spec``, its models built on first use."""
    if name == "Spec":
        from privspec.spec.models import Spec

        return Spec
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
