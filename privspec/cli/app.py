"""The ``privspec`` command line: the typer application, its commands (one module each
in ``privspec.cli``) and :func:`main`. Exit codes: 0 fine, 1 ran but a check failed, 2
could not run.

A run imports only the module of the command it runs (the whole application for help,
a mistyped command or none), and command modules import only typer and light modules at
the top; numerical modules are imported inside the commands that need them, so that
``privspec validate`` never imports numpy, scipy or dp-accounting.  A plain ``validate``
command line does not even import typer (``cli/validation.py``).
"""

from __future__ import annotations

import functools
import importlib
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from privspec.cli.validation import run_plain
from privspec.errors import EXIT_CANNOT_RUN, EXIT_OK

if TYPE_CHECKING:
    import typer

#: Every command, by name: the module and function (or, for a group of commands, typer
#: application) that runs it, in the order of the README's table (``privspec --help``
#: lists the groups of commands, ``import`` and ``cache``, after the others).
COMMANDS = {
    "validate": "privspec.cli.validate:validate",
    "render": "privspec.cli.render:render",
    "calibrate": "privspec.cli.calibrate:calibrate",
    "evaluate": "privspec.cli.evaluate:evaluate",
    "sweep": "privspec.cli.sweep:sweep",
    "table": "privspec.cli.table:table",
    "convert": "privspec.cli.convert:convert",
    "diff": "privspec.cli.diff:diff",
    "check": "privspec.cli.check:check",
    "audit": "privspec.cli.audit:audit",
    "action": "privspec.cli.action:action",
    "plot": "privspec.cli.plot:plot",
    "import": "privspec.cli.importing:app",
    "export": "privspec.cli.export:export",
    "cache": "privspec.cli.cache:app",
    "schema": "privspec.cli.schema:schema",
}
#: Global options that take a value (``--memory-budget 2``), for :func:`_command_in`.
_VALUED_OPTIONS = ("--memory-budget", "--time-budget")


@functools.cache
def application(*names: str) -> typer.Typer:
    """The typer application with the commands ``names`` (all when none is named)."""
    import typer

    from privspec.cli.options import global_options

    app = typer.Typer(
        name="privspec",
        help="Turn a *.privspec.yaml mechanism description into an honest privacy report.",
        add_completion=False,
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )
    app.callback(invoke_without_command=False)(global_options)
    for name in names or tuple(COMMANDS):
        module, attribute = COMMANDS[name].split(":")
        command = getattr(importlib.import_module(module), attribute)
        if isinstance(command, typer.Typer):
            app.add_typer(command, name=name)
        else:
            app.command()(command)
    return app


def _command_in(args: Sequence[str]) -> str | None:
    """The command ``args`` run, when its name follows the global options; None for
    anything else (no command, a mistyped one, ``--help`` before it), which the whole
    application answers, so that help and errors list every command."""
    arguments = iter(args)
    for argument in arguments:
        if argument in ("--help", "-h"):
            return None
        if argument in _VALUED_OPTIONS:
            next(arguments, None)
        elif not argument.startswith("-"):
            return argument if argument in COMMANDS else None
    return None


def dashed_file(args: Sequence[str]) -> tuple[int, str] | None:
    """(1-based position, word) of the first word before ``--`` that begins with '-' and
    names an existing path (a file, a folder, a symbolic link); None when there is none.

    A pre-commit hook runs ``entry + args + file names``: a committed file named
    ``--output-dir=x.privspec.yaml`` would be parsed as the option it spells (turning
    ``render --check`` into a check of other files), and no parser can tell the two apart
    afterwards; so such a word is refused before parsing, and file names go after ``--``."""
    for position, word in enumerate(args, 1):
        if word == "--":
            return None
        if word.startswith("-") and word != "-" and os.path.lexists(word):
            return position, word
    return None


def dashed_file_message(command: str | None, position: int, word: str) -> str:
    """The one line that refuses ``word``, the ``position``-th argument."""
    from privspec.spec.diagnostics import printable

    name = f"privspec {command}" if command else "privspec"
    return printable(
        f"{name}: error: argument {position} ('{word}') begins with '-' and names a file: "
        f"before '--' it would be read as an option; put file names after '--' ({name} "
        "[OPTIONS] -- FILE...), or rename the file")


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code.

    A word before ``--`` that begins with '-' and names a file is refused first, in
    one line, exit 2 (:func:`dashed_file`); then a plain ``validate`` command line runs
    without typer (``cli/validation.py``), any other through :func:`run_typer`."""
    args = sys.argv[1:] if argv is None else argv
    dashed = dashed_file(args)
    if dashed is not None:
        sys.stderr.write(dashed_file_message(_command_in(args), *dashed) + "\n")
        return EXIT_CANNOT_RUN
    code = run_plain(args)
    return run_typer(args) if code is None else code


def run_typer(args: Sequence[str]) -> int:
    """Run the command line ``args`` through the typer application; the exit code.

    Typer's standalone mode prints usage errors itself and exits with their code (2);
    every command ends with ``typer.Exit`` or returns (0)."""
    command = _command_in(args)
    app = application(command) if command is not None else application()
    try:
        app(args=list(args), prog_name="privspec", standalone_mode=True)
    except SystemExit as stop:
        if stop.code is None:
            return EXIT_OK
        return stop.code if isinstance(stop.code, int) else EXIT_CANNOT_RUN
    return EXIT_OK  # pragma: no cover - standalone mode always exits


def __getattr__(name: str) -> Any:
    """``app``: the whole application (built on first use)."""
    if name == "app":
        return application()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
