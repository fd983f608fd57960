"""The ``privspec`` command line. The only module that knows about the terminal,
files and exit codes: 0 fine, 1 ran but a check failed, 2 could not run.

Numerical modules are imported inside the commands that need them, so that
``privspec validate`` never imports numpy, scipy or dp-accounting.
"""

from __future__ import annotations

import sys

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
    try:
        app(args=argv, standalone_mode=False)
    except typer.Exit as stop:
        return int(stop.exit_code)
    except SystemExit as stop:  # pragma: no cover - click may still raise it
        return int(stop.code or 0)
    except Exception as error:  # click usage errors and the like
        import click

        if isinstance(error, click.exceptions.Abort):
            return EXIT_CANNOT_RUN
        if isinstance(error, click.ClickException):
            error.show()
            return EXIT_CANNOT_RUN
        raise
    return EXIT_OK


# --- commands: validate, schema (spec language) -----------------------------

# --- commands: evaluate (numbers) -------------------------------------------

# --- commands: render (reports) ---------------------------------------------


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
