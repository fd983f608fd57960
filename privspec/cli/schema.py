"""``privspec schema``: the JSON Schema of a spec, for editors."""

from __future__ import annotations

from typing import Annotated

import typer

from privspec.cli.output import EXIT_CANNOT_RUN, EXIT_CHECK_FAILED, EXIT_OK
from privspec.spec.diagnostics import printable


def schema(
    output: Annotated[str, typer.Option(
        "--output", "-o", help="Where to write the schema ('-' for stdout).")
    ] = "schemas/privspec.schema.json",
    check: Annotated[bool, typer.Option(
        "--check", help="Write nothing; exit 1 if the file is missing or stale.")] = False,
) -> None:
    """Write the JSON Schema of a spec (for editors), generated from the models."""
    from privspec.cli.files import write_atomically
    from privspec.spec.schema import json_schema_text

    text = json_schema_text()
    if output == "-":
        typer.echo(text, nl=False)
        raise typer.Exit(EXIT_OK)
    if check:
        _check_or_exit(output, text)
    try:
        write_atomically({output: text})
    except OSError as error:
        typer.echo(f"{printable(output)}: cannot write: {error.strerror or error}", err=True)
        raise typer.Exit(EXIT_CANNOT_RUN) from None
    typer.echo(f"wrote {printable(output)}", err=True)


def _check_or_exit(output: str, text: str) -> None:
    """``--check``: exit 0 when ``output`` holds ``text``, 1 when it is missing or stale."""
    from pathlib import Path

    try:
        current: str | None = Path(output).read_text(encoding="utf-8")
    except OSError:
        current = None
    if current != text:
        state = "missing" if current is None else "stale"
        typer.echo(printable(f"{output}: {state}; regenerate it with 'privspec schema -o "
                             f"{output}'"), err=True)
        raise typer.Exit(EXIT_CHECK_FAILED)
    typer.echo(f"{printable(output)}: up to date", err=True)
    raise typer.Exit(EXIT_OK)
