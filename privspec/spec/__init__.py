"""The spec layer: the language's models, YAML reading with positions, diagnostics and
the JSON Schema.  It imports no numerical library (``privspec validate`` stays instant:
an import-linter contract checks it)."""

from privspec.spec.models import Spec

__all__ = ["Spec"]
