"""What ``privspec validate`` does, without typer: spec files checked and their problems
printed (``cli/validate.py`` declares the command), and its plain command lines run
without importing typer at all, so that an editor's save hook or a pre-commit hook
waits for little more than pydantic and PyYAML (``benchmarks/validate_speed.py``).

A plain command line is ``validate`` followed by spec files, ``-q``/``--quiet`` and
``--diagnostics-format FORMAT`` (or ``=FORMAT``) in any order, ``--`` before files
that start with a dash.  Anything else (``--help``, an unknown or misspelt option, a
format in capitals, no file, options before the command, a global option's
environment variable set to a value typer may refuse) goes through typer as before,
which prints the same output and exit codes, or its own usage errors.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Sequence
from enum import StrEnum

from privspec.errors import EXIT_CANNOT_RUN, EXIT_OK


class DiagnosticsFormatChoice(StrEnum):
    """How ``validate`` prints problems."""

    gcc = "gcc"
    json = "json"
    github = "github"


#: The names of ``validate``'s options (``cli/validate.py`` declares them with these).
DIAGNOSTICS_FORMAT_OPTION = "--diagnostics-format"
QUIET_OPTIONS = ("--quiet", "-q")
#: The environment variables of the global options that are yes/no flags
#: (``cli/options.py``), and the values of them typer reads without complaint.
FLAG_VARIABLES = ("PRIVSPEC_DEBUG", "PRIVSPEC_QUIET", "PRIVSPEC_NO_CACHE")
PLAIN_FLAG_VALUES = ("", "0", "1", "false", "true")
#: Environment variables typer reads on every run, and checks: a run with one of them set
#: goes through typer (the global options' budgets, click's shell completion).
CHECKED_VARIABLES = ("PRIVSPEC_MEMORY_BUDGET", "PRIVSPEC_TIME_BUDGET", "_PRIVSPEC_COMPLETE")


def check_specs(specs: Sequence[str], diagnostics_format: DiagnosticsFormatChoice,
                quiet: bool, echo: Callable[..., None]) -> int:
    """Load every spec, print every problem in ``diagnostics_format`` and, unless
    ``quiet``, a summary line on stderr, through ``echo`` (``typer.echo`` or
    ``write_line``); return the exit code (2 if any is invalid)."""
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
        echo(format_diagnostics(problems, "json"))
    elif diagnostics_format is DiagnosticsFormatChoice.github and problems:
        echo(format_diagnostics(problems, "github"))
    elif problems:
        echo(format_diagnostics(problems, "gcc"), err=True)
    if not quiet:
        noun = "spec" if len(specs) == 1 else "specs"
        if invalid:
            many = "problem" if len(problems) == 1 else "problems"
            echo(f"found {len(problems)} {many} in {invalid} of {len(specs)} {noun}",
                 err=True)
        else:
            echo(f"{len(specs)} {noun} valid", err=True)
    return EXIT_CANNOT_RUN if invalid else EXIT_OK


def write_line(text: str, *, err: bool = False) -> None:
    """``text`` and a newline on stdout (stderr with ``err``), flushed, as typer's echo
    writes it (nothing here holds the escape sequences that it would strip)."""
    stream = sys.stderr if err else sys.stdout
    stream.write(text + "\n")
    stream.flush()


def run_plain(args: Sequence[str]) -> int | None:
    """Run a plain ``validate`` command line (see the module's docstring) and return its
    exit code; None for any other command line, which typer is to run."""
    if not args or args[0] != "validate" or not _plain_environment():
        return None
    parsed = _plain_arguments(iter(args[1:]))
    if parsed is None:
        return None
    specs, diagnostics_format, quiet = parsed
    return check_specs(specs, diagnostics_format, quiet, write_line)


def _plain_environment() -> bool:
    """Whether typer would accept the environment as it is, and print as ``write_line``
    does (UTF-8 streams: typer re-encodes others)."""
    return (all(os.environ.get(name, "") in PLAIN_FLAG_VALUES for name in FLAG_VARIABLES)
            and not any(name in os.environ for name in CHECKED_VARIABLES)
            and all((getattr(stream, "encoding", None) or "").lower().replace("_", "-")
                    in ("utf-8", "utf8") for stream in (sys.stdout, sys.stderr)))


def _plain_arguments(args: Iterator[str]
                     ) -> tuple[list[str], DiagnosticsFormatChoice, bool] | None:
    """The spec files, format and quiet flag of ``validate``'s arguments, when they are
    plain; None otherwise."""
    specs: list[str] = []
    diagnostics_format, quiet = DiagnosticsFormatChoice.gcc, False
    for arg in args:
        name, equals, value = arg.partition("=")
        if arg == "--":
            specs.extend(args)
        elif arg in QUIET_OPTIONS:
            quiet = True
        elif name == DIAGNOSTICS_FORMAT_OPTION:
            chosen = value if equals else next(args, "")
            if chosen not in tuple(DiagnosticsFormatChoice):
                return None
            diagnostics_format = DiagnosticsFormatChoice(chosen)
        elif arg.startswith("-") and arg != "-":
            return None
        else:
            specs.append(arg)
    return (specs, diagnostics_format, quiet) if specs else None
