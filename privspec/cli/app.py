"""The ``privspec`` command line: the typer application, its commands (one module each
in ``privspec.cli``) and :func:`main`. Exit codes: 0 fine, 1 ran but a check failed, 2
could not run.

Command modules import only typer and light modules at the top; numerical modules are
imported inside the commands that need them, so that ``privspec validate`` never imports
numpy, scipy or dp-accounting.
"""

from __future__ import annotations

import sys

import typer

from privspec.cli import cache, importing
from privspec.cli.action import action
from privspec.cli.calibrate import calibrate
from privspec.cli.check import check
from privspec.cli.convert import convert
from privspec.cli.diff import diff
from privspec.cli.evaluate import evaluate
from privspec.cli.export import export
from privspec.cli.options import global_options
from privspec.cli.output import EXIT_CANNOT_RUN, EXIT_OK
from privspec.cli.plot import plot
from privspec.cli.render import render
from privspec.cli.schema import schema
from privspec.cli.table import table
from privspec.cli.validate import validate

app = typer.Typer(
    name="privspec",
    help="Turn a *.privspec.yaml mechanism description into an honest privacy report.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
app.callback(invoke_without_command=False)(global_options)
for command in (action, validate, schema, evaluate, convert, table, render, plot, diff, check,
                export, calibrate):  # in the order of ``privspec --help``
    app.command()(command)
app.add_typer(importing.app, name="import")
app.add_typer(cache.app, name="cache")


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code.

    Typer's standalone mode prints usage errors itself and exits with their code (2);
    every command ends with ``typer.Exit`` or returns (0)."""
    try:
        app(args=argv, prog_name="privspec", standalone_mode=True)
    except SystemExit as stop:
        if stop.code is None:
            return EXIT_OK
        return stop.code if isinstance(stop.code, int) else EXIT_CANNOT_RUN
    return EXIT_OK  # pragma: no cover - standalone mode always exits


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
