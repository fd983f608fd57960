"""The ``privspec`` command line. The only module that knows about the terminal,
files and exit codes: 0 fine, 1 ran but a check failed, 2 could not run.

Numerical modules are imported inside the commands that need them, so that
``privspec validate`` never imports numpy, scipy or dp-accounting.
"""

from __future__ import annotations

import sys
from enum import StrEnum
from typing import Annotated

import typer

app = typer.Typer(
    name="privspec",
    help="Turn a *.privspec.yaml mechanism description into an honest privacy report.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_CANNOT_RUN = 2


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code."""
    # This typer vendors click as typer._click (``import click`` fails).
    from typer._click.exceptions import ClickException

    try:
        result = app(args=argv, standalone_mode=False)
    except typer.Exit as stop:
        return int(stop.exit_code)
    except typer.Abort:
        return EXIT_CANNOT_RUN
    except SystemExit as stop:  # pragma: no cover - click may still raise it
        return stop.code if isinstance(stop.code, int) else EXIT_CANNOT_RUN
    except ClickException as error:  # usage errors and the like
        error.show()
        return EXIT_CANNOT_RUN
    # Without standalone mode, click returns an Exit's code instead of raising it.
    return result if isinstance(result, int) else EXIT_OK


# --- commands: validate, schema (spec language) -----------------------------


class DiagnosticsFormatChoice(StrEnum):
    """How ``validate`` prints problems."""

    gcc = "gcc"
    json = "json"
    github = "github"


@app.command()
def validate(
    specs: Annotated[list[str], typer.Argument(
        metavar="SPEC", help="Spec files (*.privspec.yaml) to check.", show_default=False)],
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
    the path in the spec and what is allowed. Does not import the numerical
    stack, so it is fast enough for an editor or a pre-commit hook.
    """
    from privspec.diagnostics import Diagnostic, SpecError, format_diagnostics
    from privspec.loader import load_spec

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


@app.command()
def schema(
    output: Annotated[str, typer.Option(
        "--output", "-o", help="Where to write the schema ('-' for stdout).")
    ] = "schemas/privspec.schema.json",
    check: Annotated[bool, typer.Option(
        "--check", help="Write nothing; exit 1 if the file is missing or stale.")] = False,
) -> None:
    """Write the JSON Schema of a spec (for editors), generated from the models."""
    from pathlib import Path

    from privspec.spec_schema import json_schema_text

    text = json_schema_text()
    if output == "-":
        typer.echo(text, nl=False)
        raise typer.Exit(EXIT_OK)
    path = Path(output)
    if check:
        try:
            current = path.read_text(encoding="utf-8")
        except OSError:
            current = None
        if current != text:
            state = "missing" if current is None else "stale"
            typer.echo(f"{output}: {state}; regenerate it with 'privspec schema -o {output}'",
                       err=True)
            raise typer.Exit(EXIT_CHECK_FAILED)
        typer.echo(f"{output}: up to date", err=True)
        raise typer.Exit(EXIT_OK)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as error:
        typer.echo(f"{output}: cannot write: {error.strerror or error}", err=True)
        raise typer.Exit(EXIT_CANNOT_RUN) from None
    typer.echo(f"wrote {output}", err=True)

# --- commands: evaluate (numbers) -------------------------------------------


class EvaluateFormat(StrEnum):
    """How ``evaluate`` prints its numbers."""

    text = "text"
    json = "json"


def _load_or_exit(path: str, diagnostics_format: str = "gcc") -> object:
    """Load a spec, or print its diagnostics and exit 2 (no traceback)."""
    from privspec.diagnostics import SpecError, format_diagnostics
    from privspec.loader import load_spec

    try:
        return load_spec(path)
    except SpecError as error:
        typer.echo(format_diagnostics(error.diagnostics, diagnostics_format), err=True)
        raise typer.Exit(EXIT_CANNOT_RUN) from None


@app.command()
def evaluate(
    specs: Annotated[list[str], typer.Argument(
        metavar="SPEC", help="Spec files (*.privspec.yaml) to evaluate.", show_default=False)],
    output_format: Annotated[EvaluateFormat, typer.Option(
        "--format", "-f", help="text: a one-line summary per spec; json: the report model.",
        case_sensitive=False)] = EvaluateFormat.text,
) -> None:
    """Compute μ, regret, the verdict and ε(δ) for each spec (no document rendering).

    Rounding in the text summary is conservative: μ, ε, regret and advantage up.
    The JSON is the full, unrounded report model that every renderer uses.
    """
    from privspec import formatting as fmt
    from privspec.evaluation import evaluate as evaluate_spec
    from privspec.spec import Spec

    for path in specs:
        spec = _load_or_exit(path)
        assert isinstance(spec, Spec)
        report = evaluate_spec(spec, spec_path=path)
        if output_format is EvaluateFormat.json:
            typer.echo(report.model_dump_json(indent=2))
            continue
        gdp = report.gdp
        if gdp.mu is None:
            head = "no finite μ"
        else:
            head = f"μ = {fmt.fmt_mu(gdp.mu)}, regret {fmt.fmt_regret(gdp.regret or 0.0)}"
        epsilons = ", ".join(f"ε = {fmt.fmt_epsilon(e.epsilon)} at δ = {fmt.fmt_delta(e.delta)}"
                             for e in report.epsilons)
        typer.echo(f"{path}: {head}, Tier {'I' if gdp.tier == 1 else 'II'}, "
                   f"advantage {fmt.fmt_advantage(gdp.advantage)}; {epsilons}")


# --- commands: render (reports) ---------------------------------------------


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
