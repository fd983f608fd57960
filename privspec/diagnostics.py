"""Public import path of spec errors (``privspec.diagnostics.SpecError``); the code is
in :mod:`privspec.spec.diagnostics`."""

from privspec.spec.diagnostics import Diagnostic, SpecError

__all__ = ["Diagnostic", "SpecError"]
