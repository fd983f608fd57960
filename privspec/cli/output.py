"""What every command prints and writes: exit codes, one-line errors, the evaluator's
refusals located in the spec file, documents on stdout or in a file (``cli/files.py``
writes them atomically)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import typer

from privspec.cli.options import OPTIONS
from privspec.errors import EXIT_CANNOT_RUN as EXIT_CANNOT_RUN
from privspec.errors import EXIT_CHECK_FAILED as EXIT_CHECK_FAILED
from privspec.errors import EXIT_OK as EXIT_OK
from privspec.errors import Code, PrivspecError
from privspec.spec.diagnostics import printable


def fail(command: str, message: str) -> typer.Exit:
    """Say ``privspec COMMAND: error: MESSAGE`` on stderr, each line :func:`printable`;
    return the Exit (2) to raise."""
    lines = f"privspec {command}: error: {message}".split("\n")
    typer.echo("\n".join(printable(line) for line in lines), err=True)
    return typer.Exit(EXIT_CANNOT_RUN)


def emit(command: str, text: str, output: str | None, *, quiet: bool = False,
         inputs: Sequence[str] = ()) -> None:
    """``text`` on stdout, or written atomically to ``output`` (then ``wrote FILE`` on
    stderr unless ``quiet``); a file that cannot be written, or is one of ``inputs``,
    exits 2 in one line."""
    if output is None:
        typer.echo(text, nl=False)
        return
    from privspec.cli.files import write_atomically

    try:
        write_atomically({output: text}, inputs=inputs)
    except OSError as error:
        raise fail(command, f"cannot write {printable(output)}: {error.strerror or error}"
                   ) from None
    if not quiet:
        typer.echo(f"wrote {printable(output)}", err=True)


def figure_format_or_exit(path: str, command: str) -> str:
    """The figure format of a file name (.svg, .png, .pdf), or a one-line error and exit 2."""
    import os

    from privspec.report import figures

    extension = os.path.splitext(path)[1].lower().lstrip(".")
    if extension not in figures.FIGURE_FORMATS:
        typer.echo(printable(f"privspec {command}: error: {path}: a figure file ends in .svg, "
                             ".png or .pdf"), err=True)
        raise typer.Exit(EXIT_CANNOT_RUN)
    if not figures.available():
        typer.echo(f"privspec {command}: error: figures need matplotlib: "
                   f"{figures.INSTALL_HINT}", err=True)
        raise typer.Exit(EXIT_CANNOT_RUN)
    return extension


def refused(command: str, error: PrivspecError, label: str,
            spec_path: str | None, *, github: bool = False) -> typer.Exit:
    """Print the evaluator's refusal of ``label`` in one line, in the diagnostics' form
    where it names a spec path (at its line and column in the file; the traceback too
    with ``--debug``): exit 2.  With ``github``, a workflow annotation on stdout."""
    from privspec.errors import EvaluationError
    from privspec.spec.diagnostics import Diagnostic, format_gcc_line, format_github_line
    from privspec.spec.loader import path_to_str

    if OPTIONS.traceback and error.__cause__ is not None:
        import traceback

        traceback.print_exception(error.__cause__, file=sys.stderr)
    path = error.path if isinstance(error, EvaluationError) else None
    if path is None and not github:
        return fail(command, f"{printable(label)}: cannot evaluate: {error}")
    line, column = (None if path is None else refusal_position(spec_path, path)) or (1, 1)
    code = error.code if isinstance(error, EvaluationError) else Code.EVALUATION_REFUSED
    diagnostic = Diagnostic(label, line, column, "" if path is None else path_to_str(path),
                            f"cannot evaluate: {error}", code)
    if github:
        typer.echo(format_github_line(diagnostic))
    else:
        typer.echo(format_gcc_line(diagnostic), err=True)
    return typer.Exit(EXIT_CANNOT_RUN)


def refusal_position(spec_path: str | None, path: tuple[str | int, ...]
                     ) -> tuple[int, int] | None:
    """(line, column) where ``path`` is written in the spec file, or the nearest part of
    it that is (a budget left at its default is not in the file: its section, or the
    mechanism, which drives the cost); None without a file."""
    from privspec.spec.loader import position_of

    if not spec_path:
        return None
    for written in (*(path[:n] for n in range(len(path), 0, -1)), ("mechanism",)):
        position = position_of(spec_path, written)
        if position is not None:
            return position
    return None
