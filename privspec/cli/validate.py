"""``privspec validate``: spec files checked without computing anything (the checking
itself, and the plain command lines run without typer: ``cli/validation.py``)."""

from __future__ import annotations

from typing import Annotated

import typer

from privspec.cli.options import SpecsToCheck
from privspec.cli.validation import (
    DIAGNOSTICS_FORMAT_OPTION,
    QUIET_OPTIONS,
    DiagnosticsFormatChoice,
    check_specs,
)


def validate(
    specs: SpecsToCheck,
    diagnostics_format: Annotated[DiagnosticsFormatChoice, typer.Option(
        DIAGNOSTICS_FORMAT_OPTION,
        help="gcc: one FILE:LINE:COL line per problem on stderr; json: a JSON array on "
        "stdout; github: GitHub Actions annotations on stdout.",
        case_sensitive=False)] = DiagnosticsFormatChoice.gcc,
    quiet: Annotated[bool, typer.Option(
        *QUIET_OPTIONS, help="No summary line, only the problems.")] = False,
) -> None:
    """Check spec files without computing anything: exit 0 if all are valid, 2 if not.

    Every problem is reported at once, one line each, with file, line, column,
    the path in the spec and what is allowed (a conflict between fields that needs
    a field with an error of its own is reported once that field is fixed). Does
    not import the numerical stack, so it is fast enough for an editor or a
    pre-commit hook.
    """
    raise typer.Exit(check_specs(specs, diagnostics_format, quiet, typer.echo))
