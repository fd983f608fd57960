"""``privspec validate``: spec files checked without computing anything."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from privspec.cli.options import SpecsToCheck
from privspec.cli.output import EXIT_CANNOT_RUN, EXIT_OK


class DiagnosticsFormatChoice(StrEnum):
    """How ``validate`` prints problems."""

    gcc = "gcc"
    json = "json"
    github = "github"


def validate(
    specs: SpecsToCheck,
    diagnostics_format: Annotated[DiagnosticsFormatChoice, typer.Option(
        "--diagnostics-format",
        help="gcc: one FILE:LINE:COL line per problem on stderr; json: a JSON array on "
        "stdout; github: GitHub Actions annotations on stdout.",
        case_sensitive=False)] = DiagnosticsFormatChoice.gcc,
    quiet: Annotated[bool, typer.Option(
        "--quiet", "-q", help="No summary line, only the problems.")] = False,
) -> None:
    """Check spec files without computing anything: exit 0 if all are valid, 2 if not.

    Every problem is reported at once, one line each, with file, line, column,
    the path in the spec and what is allowed (a conflict between fields that needs
    a field with an error of its own is reported once that field is fixed). Does
    not import the numerical stack, so it is fast enough for an editor or a
    pre-commit hook.
    """
    from privspec.spec.diagnostics import Diagnostic, SpecError, format_diagnostics
    from privspec.spec.loader import load_spec

    problems: list[Diagnostic] = []
    invalid = 0
    for spec in specs:
        try:
            load_spec(spec)
        except SpecError as error:
            invalid += 1
            problems.extend(error.diagnostics)
    if diagnostics_format is DiagnosticsFormatChoice.json:
        typer.echo(format_diagnostics(problems, "json"))
    elif diagnostics_format is DiagnosticsFormatChoice.github and problems:
        typer.echo(format_diagnostics(problems, "github"))
    elif problems:
        typer.echo(format_diagnostics(problems, "gcc"), err=True)
    if not quiet:
        noun = "spec" if len(specs) == 1 else "specs"
        if invalid:
            many = "problem" if len(problems) == 1 else "problems"
            typer.echo(f"found {len(problems)} {many} in {invalid} of {len(specs)} {noun}",
                       err=True)
        else:
            typer.echo(f"{len(specs)} {noun} valid", err=True)
    raise typer.Exit(EXIT_CANNOT_RUN if invalid else EXIT_OK)
