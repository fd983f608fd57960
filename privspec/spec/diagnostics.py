"""Diagnostics: one problem with a spec, where it is, and how to print it.

A :class:`Diagnostic` names the file, the 1-based line and column, the path in
the spec as the user wrote it (``mechanism.compose[1].mechanism.dpsgd.batch_size``),
what is wrong and what is allowed, and a stable ``area/slug`` code that users
can grep and docs can link.  Three printers: GCC style (one line each, the
default), JSON, and GitHub workflow annotations.

Codes: ``privspec.errors.Code`` (stable; the README lists them).

This module is pure: it never prints, exits or imports anything heavy.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Literal

from privspec.errors import Code, PrivspecError

Severity = Literal["error", "warning"]
DiagnosticsFormat = Literal["gcc", "json", "github"]
DIAGNOSTICS_FORMATS: tuple[DiagnosticsFormat, ...] = ("gcc", "json", "github")


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")
#: The most characters of a stranger's text (a key, a cell, a name) a message quotes.
EXCERPT_CHARACTERS = 60


def excerpt(text: str, limit: int = EXCERPT_CHARACTERS) -> str:
    """``text`` cut to at most ``limit`` characters, an ellipsis marking the cut: what a
    message quotes of text from a file (a 17 MB header line makes no 17 MB message)."""
    return text if len(text) <= limit else text[:limit - 1] + "…"


def quoted(text: str, limit: int = EXCERPT_CHARACTERS) -> str:
    """``text``'s excerpt in quotes, escaped as Python writes a string (``'a\\nb'``)."""
    return repr(excerpt(text, limit))


def path_to_str(path: Iterable[str | int]) -> str:
    """``('mechanism', 'compose', 1, 'mechanism')`` → ``mechanism.compose[1].mechanism``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _IDENTIFIER.match(part):
            out += f".{excerpt(part)}" if out else excerpt(part)
        else:
            out += f"[{json.dumps(excerpt(part), ensure_ascii=False)}]"
    return out


@dataclass(frozen=True, order=True)
class Diagnostic:
    """One problem, located in a file. ``line`` and ``column`` are 1-based."""

    file: str
    line: int
    column: int
    path: str
    message: str
    code: Code
    severity: Severity = "error"

    def as_dict(self) -> dict[str, str | int]:
        """The diagnostic as a JSON-ready mapping (field names are a stable contract)."""
        return asdict(self)


class SpecError(PrivspecError):
    """A spec could not be loaded; ``diagnostics`` lists every problem found."""

    def __init__(self, diagnostics: Sequence[Diagnostic]) -> None:
        self.diagnostics: tuple[Diagnostic, ...] = tuple(diagnostics)
        super().__init__(format_gcc(self.diagnostics))


#: Characters that would break a log line or hide part of it: control characters, line
#: and paragraph separators, bidirectional overrides.
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
#: GitHub runs a log line as a workflow command when it starts with ``::`` (after
#: whitespace) or holds ``##[`` anywhere (the runner's older syntax).
_COMMAND_START = re.compile(r"^(\s*):(?=:)")
_OLD_COMMAND = "##["


def printable(text: str) -> str:
    """``text`` as one line of plain text that no runner reads as a workflow command:
    control characters and line separators written as Python escapes (``\\n``,
    ``\\x1b``, ``\\u2028``), the first ``:`` of a leading ``::`` as ``\\x3a`` and the
    ``[`` of ``##[`` as ``\\x5b``.  For file names and other text from strangers in
    diagnostics and log lines."""
    line = _UNPRINTABLE.sub(lambda match: repr(match.group())[1:-1], str(text))
    line = _COMMAND_START.sub(lambda match: match.group(1) + "\\x3a", line)
    return line.replace(_OLD_COMMAND, "##\\x5b")


def format_gcc_line(diagnostic: Diagnostic) -> str:
    """``FILE:LINE:COL: error: PATH: MESSAGE [CODE]`` (the path is left out when empty),
    on one line that cannot become a workflow command (:func:`printable`)."""
    where = f"{diagnostic.path}: " if diagnostic.path else ""
    return printable(f"{diagnostic.file}:{diagnostic.line}:{diagnostic.column}: "
                     f"{diagnostic.severity}: {where}{diagnostic.message} [{diagnostic.code}]")


def format_gcc(diagnostics: Iterable[Diagnostic]) -> str:
    """One GCC-style line per diagnostic, newline-separated (no trailing newline)."""
    return "\n".join(format_gcc_line(d) for d in diagnostics)


def format_json(diagnostics: Iterable[Diagnostic]) -> str:
    """A JSON array of diagnostics with keys file, line, column, path, message, code,
    severity; stable key order, two-space indent.  ``##[`` (only ever inside a string)
    is written ``##\\u005b``, so no line is a workflow command."""
    text = json.dumps([d.as_dict() for d in diagnostics], indent=2, ensure_ascii=False)
    return text.replace(_OLD_COMMAND, "##\\u005b")


def escape_github_data(text: str) -> str:
    """The message of a GitHub workflow command, escaped."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_github_property(text: str) -> str:
    """A property (file=, title=) of a GitHub workflow command, escaped."""
    return escape_github_data(text).replace(":", "%3A").replace(",", "%2C")


def format_github_line(diagnostic: Diagnostic) -> str:
    """A GitHub Actions workflow command that annotates the line in a pull request."""
    where = f"{diagnostic.path}: " if diagnostic.path else ""
    return (f"::{diagnostic.severity} file={escape_github_property(diagnostic.file)},"
            f"line={diagnostic.line},col={diagnostic.column},"
            f"title={escape_github_property(diagnostic.code)}::"
            f"{escape_github_data(where + diagnostic.message)}")


def format_github(diagnostics: Iterable[Diagnostic]) -> str:
    """One workflow command per diagnostic, newline-separated."""
    return "\n".join(format_github_line(d) for d in diagnostics)


def format_diagnostics(diagnostics: Iterable[Diagnostic], fmt: DiagnosticsFormat | str) -> str:
    """Diagnostics in the named format (``gcc``, ``json`` or ``github``)."""
    if fmt == "json":
        return format_json(diagnostics)
    if fmt == "github":
        return format_github(diagnostics)
    if fmt == "gcc":
        return format_gcc(diagnostics)
    raise ValueError(f"unknown diagnostics format {fmt!r}; use one of {DIAGNOSTICS_FORMATS}")


__all__ = [
    "DIAGNOSTICS_FORMATS",
    "Diagnostic",
    "DiagnosticsFormat",
    "SpecError",
    "escape_github_data",
    "escape_github_property",
    "excerpt",
    "format_diagnostics",
    "format_gcc",
    "format_gcc_line",
    "format_github",
    "format_github_line",
    "format_json",
    "printable",
    "quoted",
]
