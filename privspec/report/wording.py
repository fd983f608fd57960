"""The words of a report that the evaluator decides on: caveats, and why no μ exists.

A caveat is data (a stable code and its numbers); its sentence is a template,
``report/templates/text/caveats/<area>-<slug>.txt.j2``, rendered here with the numbers
through the same conservative formatting as every report.  The message is plain text;
each format escapes it.
"""

from __future__ import annotations

import functools
from typing import Any

import jinja2

from privspec.report.filters import filters
from privspec.report.model import Caveat


@functools.cache
def _environment() -> jinja2.Environment:
    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("privspec.report", "templates"),
        undefined=jinja2.StrictUndefined, autoescape=False)
    environment.filters.update(filters("unicode"))
    return environment


def _sentence(template: str, values: dict[str, Any]) -> str:
    """A template rendered as one line (the templates wrap for readability)."""
    return " ".join(_environment().get_template(template).render(**values).split())


def caveat(code: str, **values: Any) -> Caveat:
    """The caveat ``code`` with its numbers and its sentence."""
    template = f"text/caveats/{code.replace('/', '-')}.txt.j2"
    return Caveat(code=code, message=_sentence(template, values))


def no_finite_mu_reason(**values: Any) -> str:
    """Why no finite μ exists (``infinity``: δ∞ as printed; ``floor``: τ)."""
    return _sentence("text/no-finite-mu-reason.txt.j2", values)
