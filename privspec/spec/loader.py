"""Loading a ``*.privspec.yaml`` file into a :class:`privspec.spec.models.Spec`, with positions.

``load_spec(path)`` returns a ``Spec`` or raises :class:`SpecError` carrying
every problem found, each a :class:`Diagnostic` with file, line, column, the
path in the spec as the user wrote it, what is wrong and what is allowed.

Three steps: ``yaml_reader`` reads the text safely and strictly into plain data with
every value's position; the models validate it; ``messages`` turns pydantic's errors
into diagnostics at the positions the user wrote.  This module does the file I/O.

Specs built in Python (``Spec.model_validate(dict)``) keep working without
this module; it only adds positions and friendly messages.

This module must not import numpy, scipy or dp-accounting.
"""

from __future__ import annotations

import os
import stat
from typing import Any, get_args

import yaml
from pydantic import ValidationError
from pydantic_core import ErrorDetails

from privspec.errors import Code
from privspec.spec.base import NAMED_FILES, SPEC_FILE
from privspec.spec.diagnostics import Diagnostic, SpecError
from privspec.spec.messages import (
    LISTED_PROBLEMS,
    diagnostics_from_errors,
    listed,
    path_to_str,
)
from privspec.spec.models import (
    RELATION_CHECKED_BY_CALLER,
    Relation,
    Spec,
    conflicts_beside_field_errors,
    relation_problems,
)
from privspec.spec.named_file import Folder
from privspec.spec.yaml_reader import (
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_NODES,
    TOO_DEEP,
    TOO_MANY_NODES,
    Builder,
    diagnostic_at,
    read_text,
)


def load_yaml_text(text: str, filename: str = "<string>") -> dict[str, Any]:
    """The plain data of a spec file (a mapping), read as ``load_spec_text`` reads it
    but not validated against the spec models: for JSON Schema checks and tools.

    Raises :class:`SpecError` if the text is not YAML that privspec accepts.
    """
    data, builder = read_text(text, filename)
    if builder.problems:
        raise SpecError(listed(*_reading_problems(builder, filename)))
    assert isinstance(data, dict)
    return data


def _reading_problems(builder: Builder, filename: str) -> tuple[list[Diagnostic], int]:
    """The first ``LISTED_PROBLEMS`` of the reader's problems in the file's order, and
    how many others there are."""
    first = sorted(builder.problems, key=lambda problem: problem[2])[:LISTED_PROBLEMS]
    return ([Diagnostic(filename, pos[0] + 1, pos[1] + 1, path_to_str(path), message, code)
             for code, message, pos, path in first], len(builder.problems) - len(first))


def _relation_errors(data: Any) -> list[ErrorDetails]:
    """The relation's conflicts (``spec.relation_problems``) as pydantic errors, so that
    they are reported with the field errors that stop validation before it checks them."""
    relation = data.get("neighbouring") if isinstance(data, dict) else None
    if not isinstance(relation, str) or relation not in get_args(Relation):
        return []
    return [ErrorDetails(type="spec_conflict", loc=("mechanism", *path), msg=message,
                         input=None)
            for path, message in relation_problems(data.get("mechanism"), relation)]


def _conflict_errors(data: Any) -> list[ErrorDetails]:
    """The cross-field conflicts of mechanism blocks that also have field errors
    (``models.conflicts_beside_field_errors``), reported with them in one run."""
    mechanism = data.get("mechanism") if isinstance(data, dict) else None
    return [ErrorDetails(type="spec_conflict", loc=("mechanism", *path), msg=message,
                         input=value)
            for path, message, value in conflicts_beside_field_errors(mechanism)]


def load_spec_text(text: str, filename: str = "<string>",
                   spec_file: str | Folder | None = None) -> Spec:
    """Parse and validate a spec given as text; ``filename`` names it in diagnostics,
    and the files the spec names are found beside ``spec_file`` (by default
    ``filename``, when it names a file; else the working directory), or in the
    :class:`Folder` given (a git revision's).

    Raises :class:`SpecError` with every problem found (``messages.listed``: the first
    ``LISTED_PROBLEMS`` in the file, and how many more).
    """
    data, builder = read_text(text, filename)
    diagnostics, more = _reading_problems(builder, filename)
    errors = _relation_errors(data)
    file = None if filename.startswith("<") else filename
    try:
        spec = Spec.model_validate(data, context={
            RELATION_CHECKED_BY_CALLER: True,
            SPEC_FILE: spec_file if isinstance(spec_file, str) else file,
            NAMED_FILES: file if spec_file is None else spec_file})
    except ValidationError as error:
        errors = [*error.errors(), *errors, *_conflict_errors(data)]
    if errors:
        skip = {path for _, _, _, path in builder.problems}
        found, unlisted = diagnostics_from_errors(errors, builder.positions, filename, skip)
        diagnostics += found
        more += unlisted
    if not diagnostics:
        return spec
    raise SpecError(listed(diagnostics, more))


#: How the name of a spec file ends (``*.privspec.yaml``, or any YAML or JSON file).
SPEC_FILE_SUFFIXES = (".yaml", ".yml", ".json")


def _refuse_linked_non_spec(filename: str, info: os.stat_result) -> None:
    """Refuse a path that symbolic links turn into a regular file not named like a spec
    (``spec.privspec.yaml -> /etc/passwd``): a pull request can add such a link, and
    privspec would read, and quote, a file nobody meant to show.  Links to specs, and
    to pipes such as ``/dev/stdin``, are read as before."""
    target = os.path.realpath(filename)
    if (stat.S_ISREG(info.st_mode) and target != os.path.abspath(filename)
            and not target.lower().endswith(SPEC_FILE_SUFFIXES)):
        raise SpecError([Diagnostic(
            filename, 1, 1, "", f"a symbolic link to {target}, which is not a spec file (a "
            "spec's name ends in .yaml, .yml or .json); privspec reads no other file through "
            "a link", Code.IO_UNREADABLE)])


def load_spec(path: str | os.PathLike[str]) -> Spec:
    """Read, parse and validate a ``*.privspec.yaml`` file.

    Raises :class:`SpecError` with every problem found (a missing file, a
    directory or an unreadable file included): never a traceback for bad input.
    """
    filename = os.fspath(path)
    try:
        info = os.stat(filename)
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(filename)
        _refuse_linked_non_spec(filename, info)
        with open(filename, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        what = ("no such file (a spec is read from a file, not from standard input; "
                "/dev/stdin is one where the shell provides it)" if filename == "-"
                else "no such file")
        raise SpecError([Diagnostic(filename, 1, 1, "", what, Code.IO_NOT_FOUND)]) from None
    except IsADirectoryError:
        raise SpecError([Diagnostic(filename, 1, 1, "", "is a directory, not a spec file",
                                    Code.IO_IS_A_DIRECTORY)]) from None
    except OSError as error:
        reason = error.strerror or str(error)
        raise SpecError([Diagnostic(filename, 1, 1, "", f"cannot read the file: {reason}",
                                    Code.IO_UNREADABLE)]) from None
    return load_spec_bytes(data, filename)


def load_spec_bytes(data: bytes, filename: str, spec_file: str | Folder | None = None
                    ) -> Spec:
    """The spec in ``data``, the content of a spec file (at most ``MAX_FILE_BYTES``,
    UTF-8), as :func:`load_spec_text` reads it.  Raises :class:`SpecError`."""
    if len(data) > MAX_FILE_BYTES:
        raise SpecError([Diagnostic(filename, 1, 1, "",
                                    f"larger than {MAX_FILE_BYTES:,} bytes; a spec is a short "
                                    "file", Code.IO_TOO_LARGE)])
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        prefix = data[: error.start].decode("utf-8", errors="replace")
        raise SpecError([diagnostic_at(filename, prefix, len(prefix), Code.IO_ENCODING,
                             f"not UTF-8 text: byte 0x{data[error.start]:02X} cannot be "
                             "decoded (is this a binary file?)")]) from None
    return load_spec_text(text, filename, spec_file)


def position_of(filename: str | os.PathLike[str], path: tuple[str | int, ...]
                ) -> tuple[int, int] | None:
    """The 1-based (line, column) where ``path`` is written in a spec file (its key's,
    else its value's); None when the file cannot be read or has no such path."""
    try:
        with open(filename, encoding="utf-8") as handle:
            text = handle.read(MAX_FILE_BYTES + 1)
    except (OSError, UnicodeDecodeError):
        return None
    return position_in(text, os.fspath(filename), path)


def position_in(text: str, filename: str, path: tuple[str | int, ...]
                ) -> tuple[int, int] | None:
    """:func:`position_of` in the text of a spec file (``filename`` names it)."""
    try:
        _, builder = read_text(text, filename)
    except SpecError:
        return None
    where = builder.positions.get(tuple(path))
    if where is None:
        return None
    line, column = where.key or where.value
    return line + 1, column + 1


__all__ = ["MAX_DEPTH", "MAX_FILE_BYTES", "SpecError", "load_spec", "load_spec_bytes",
           "load_spec_text",
           "load_yaml_text", "path_to_str", "position_in", "position_of"]


def spec_from_data(data: dict[str, Any], name: str = "<python>",
                   spec_file: str | None = None) -> Spec:
    """Validate spec data (as a YAML file would hold it) with the loader's diagnostics
    (data nested deeper than a spec file may be is refused as such a file would be);
    the files it names are found beside ``spec_file`` (else the working directory)."""
    deepest, nodes = _size(data)
    if deepest > MAX_DEPTH:
        raise SpecError([Diagnostic(name, 1, 1, "", TOO_DEEP, Code.YAML_TOO_DEEP)])
    if nodes > MAX_NODES:  # refused before it is written out as YAML (seconds)
        raise SpecError([Diagnostic(name, 1, 1, "", TOO_MANY_NODES, Code.IO_TOO_LARGE)])
    return load_spec_text(dump_spec_data(data), name, spec_file)


def _size(data: Any) -> tuple[int, int]:
    """How deeply mappings and lists nest in ``data``, and how many YAML nodes it makes
    (keys included), without recursion; both stop growing past their limits."""
    deepest, nodes, pending = 0, 0, [(data, 1)]
    while pending and nodes <= MAX_NODES:
        value, depth = pending.pop()
        nodes += 1
        if isinstance(value, dict | list | tuple):
            deepest = max(deepest, depth)
            if depth <= MAX_DEPTH:  # (deeper is refused however deep)
                if isinstance(value, dict):
                    nodes += len(value)  # the keys
                items = value.values() if isinstance(value, dict) else value
                pending.extend((item, depth + 1) for item in items)
    return deepest, nodes


def _plain(value: Any) -> Any:
    """JSON-like data with plain Python numbers (numpy scalars and tuples converted)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    for kind in (int, float):  # numpy scalars: item() gives the Python number
        item = getattr(value, "item", None)
        if item is not None and isinstance(item(), kind):
            return item()
    return value


def dump_spec_data(data: dict[str, Any]) -> str:
    """Spec data as YAML text, in the order given."""
    return yaml.safe_dump(_plain(data), sort_keys=False, allow_unicode=True, width=100)
