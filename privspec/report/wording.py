"""The words of a report that the evaluator decides on: caveats, and why no μ exists.

A caveat is data (a stable code and its numbers); its sentence is a template,
``report/templates/text/caveats/<area>-<slug>.txt.j2``, rendered here with the numbers
through the same conservative formatting as every report.  The message is plain text
(Markdown and HTML escape it); LaTeX words the same template with its own notation
(:func:`privspec.report.render.latex_caveat`).
"""

from __future__ import annotations

from typing import Any

from privspec.report.model import Caveat
from privspec.report.render import caveat_template, render_markdown


def _sentence(template: str, values: dict[str, Any]) -> str:
    """A template rendered as one line (the templates wrap for readability)."""
    return " ".join(render_markdown(template, **values).split())


def caveat(code: str, **values: Any) -> Caveat:
    """The caveat ``code`` with its numbers and its sentence."""
    return Caveat(code=code, message=_sentence(caveat_template(code), values), values=values)


def no_finite_mu_reason(**values: Any) -> str:
    """Why no finite μ exists (``infinity``: δ∞ as printed; ``floor``: τ)."""
    return _sentence("text/no-finite-mu-reason.txt.j2", values)
