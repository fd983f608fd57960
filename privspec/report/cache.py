"""Evaluated reports kept on disk, so that every command after the first on an unchanged
spec reads its report instead of evaluating it again.

An entry is named by a SHA-256 of everything that can change a figure (``key``): the
spec's canonical content and which fields it writes, the options the evaluation was given
(budgets), privspec's version and source files, and the versions of the numerical stack
and pydantic.  Nothing in a report depends on where the spec file is except its
``spec_path``, which is not stored and is filled in on reading.

An entry is one header line (format, key, SHA-256 of the rest) and the report's fields as
JSON, the caveats' values included (``Report.model_dump_json`` leaves them out) and floats
written exactly.  An entry whose header, checksum, JSON or fields do not match is not
trusted: the report is evaluated again and the entry replaced.  Entries are written to a
temporary file and renamed into place, so a concurrent reader sees a whole entry or none;
reading one touches its modification time, and writing one removes the least recently
used entries beyond ``MAX_BYTES``.  A cache directory that cannot be read or written
never fails an evaluation: it runs without the cache, with at most one warning line.

Where: ``PRIVSPEC_CACHE_DIR``, else ``$XDG_CACHE_HOME/privspec``, else
``~/.cache/privspec`` (entries in its ``reports/``).  ``PRIVSPEC_NO_CACHE=1``, the
command line's ``--no-cache`` (``bypassed``) and ``privspec.evaluate(…, cache=False)``
bypass it.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from privspec.report.provenance import package_versions, spec_sha256

if TYPE_CHECKING:
    from privspec.report.model import Report
    from privspec.spec.models import Spec

#: The entries' layout; an entry of another layout is not read.
ENTRY_FORMAT = 1
#: Total size of the entries beyond which the least recently used are removed (bytes).
MAX_BYTES = 200 * 2**20
#: Values of ``PRIVSPEC_NO_CACHE`` that leave the cache on (any other bypasses it).
_OFF_VALUES = frozenset({"", "0", "false", "no", "off", "n", "f"})
_SUFFIX = ".entry"
_ENTRY_NAME = re.compile(r"[0-9a-f]{64}\.entry")
_TEMPORARY_PREFIX = ".entry-"

_bypassed = False
_warned = False


def evaluate(spec: Spec | str | os.PathLike[str] | dict[str, Any], *,
             spec_path: str | None = None, cache: bool = True, **options: Any) -> Report:
    """``privspec.report.evaluation.evaluate`` (its ``options``: the budgets), through the
    cache: the stored report when there is one, else the evaluation's, then stored.
    ``cache=False``, ``PRIVSPEC_NO_CACHE`` or ``bypassed`` evaluate without it.  Only an
    evaluation imports the numerical stack."""
    from privspec.spec.loader import load_spec, spec_from_data
    from privspec.spec.models import Spec

    if isinstance(spec, dict):
        spec = spec_from_data(spec, "<dict>")
    elif not isinstance(spec, Spec):
        spec_path = os.fspath(spec) if spec_path is None else spec_path
        spec = load_spec(spec)
    options = {name: value for name, value in options.items() if value is not None}
    entry_key = key(spec, options) if cache and enabled() else None
    report = None if entry_key is None else load(entry_key, spec_path)
    if report is None:
        from privspec.report import evaluation

        report = evaluation.evaluate(spec, spec_path=spec_path, **options)
        if entry_key is not None:
            store(entry_key, report)
    return report


def directory() -> Path:
    """Where the entries are kept; ``NotADirectoryError`` when there is no such place (no
    home directory, and neither variable set)."""
    chosen = os.environ.get("PRIVSPEC_CACHE_DIR")
    if chosen:
        return Path(chosen) / "reports"
    xdg = os.environ.get("XDG_CACHE_HOME")
    root = Path(xdg) if xdg and os.path.isabs(xdg) else Path(os.path.expanduser("~")) / ".cache"
    if not root.is_absolute():  # "~" unexpanded: no home directory
        raise NotADirectoryError("no home directory: set PRIVSPEC_CACHE_DIR")
    return root / "privspec" / "reports"


def enabled() -> bool:
    """False under ``PRIVSPEC_NO_CACHE`` (any value but 0/false/no/off) or ``bypassed``."""
    return not _bypassed and os.environ.get("PRIVSPEC_NO_CACHE", "").strip().lower() in _OFF_VALUES


@contextlib.contextmanager
def bypassed() -> Iterator[None]:
    """Within: every evaluation computes, and reads and writes no entry (``--no-cache``)."""
    global _bypassed
    before, _bypassed = _bypassed, True
    try:
        yield
    finally:
        _bypassed = before


@functools.cache
def _source_digest() -> str:
    """SHA-256 of privspec's own files (code, templates): a changed privspec, even at the
    same version number, never reads a report an earlier one wrote."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(path.relative_to(root).as_posix().encode() + b"\0")
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


@functools.cache
def _versions() -> dict[str, str]:
    from importlib import metadata

    versions = {**package_versions(), "python": sys.version.split()[0]}
    for package in ("pydantic", "matplotlib"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            versions[package] = metadata.version(package)
    return versions


def _digest(material: Mapping[str, Any]) -> str:
    """An entry's name: a SHA-256 of ``material``, privspec's version and sources, and the
    versions of what it computes and draws with."""
    text = json.dumps({**material, "format": ENTRY_FORMAT, "versions": _versions(),
                       "source": _source_digest()},  # an option that is no JSON: its repr
                      sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def key(spec: Spec, options: Mapping[str, Any]) -> str:
    """The name of ``spec``'s report: its canonical content, the fields it writes (an
    unwritten discretization is chosen by the evaluation) and the evaluation's ``options``."""
    return _digest({"report": spec_sha256(spec), "options": dict(options),
                    "written": spec.model_dump(mode="json", exclude_unset=True)})


def _fields(value: Any) -> Any:
    """``value`` as plain data with every field, the ones JSON output excludes too."""
    from pydantic import BaseModel

    if isinstance(value, BaseModel):
        return {name: _fields(getattr(value, name)) for name in type(value).model_fields}
    if isinstance(value, list | tuple):
        return [_fields(item) for item in value]
    if isinstance(value, dict):
        return {name: _fields(item) for name, item in value.items()}
    return value


def _report_json(report: Report) -> bytes:
    """Every field of ``report`` but its ``spec_path``, as JSON (floats as ``repr``: exact)."""
    return json.dumps(_fields(report.model_copy(update={"spec_path": None})),
                      separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _read(entry_key: str) -> bytes | None:
    """The body of the entry ``entry_key`` (touched: recently used), or None unless its
    header names this layout and key and its checksum is right."""
    try:
        path = directory() / f"{entry_key}{_SUFFIX}"
        header_line, newline, body = path.read_bytes().partition(b"\n")
        header = json.loads(header_line)
    except (OSError, ValueError):  # JSON errors are ValueErrors
        return None
    if not newline or header != {"format": ENTRY_FORMAT, "key": entry_key,
                                 "sha256": hashlib.sha256(body).hexdigest()}:
        return None
    with contextlib.suppress(OSError):  # a read-only cache still answers
        os.utime(path)
    return body


def _write(entry_key: str, body: bytes) -> None:
    """Keep ``body`` under ``entry_key`` (atomically), then trim the cache to ``MAX_BYTES``."""
    header = {"format": ENTRY_FORMAT, "key": entry_key, "sha256": hashlib.sha256(body).hexdigest()}
    temporary: str | None = None
    try:
        folder = directory()
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)  # the user's alone
        handle, temporary = tempfile.mkstemp(prefix=_TEMPORARY_PREFIX, dir=folder)
        with os.fdopen(handle, "wb") as file:
            file.write(json.dumps(header, sort_keys=True).encode("utf-8") + b"\n" + body)
        os.replace(temporary, folder / f"{entry_key}{_SUFFIX}")
        temporary = None
        trim(MAX_BYTES)
    except OSError as error:
        _warn_once(error)
    finally:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)


def load(entry_key: str, spec_path: str | None) -> Report | None:
    """The report stored under ``entry_key`` (with ``spec_path``), or None when there is
    none or it is not a report of this privspec."""
    from pydantic import ValidationError

    from privspec.report.model import Report

    body = _read(entry_key)
    if body is None:
        return None
    try:
        report = Report.model_validate(json.loads(body))
    except (ValueError, ValidationError):
        return None
    return report.model_copy(update={"spec_path": spec_path})


def store(entry_key: str, report: Report) -> None:
    """Keep ``report`` under ``entry_key``."""
    _write(entry_key, _report_json(report))


def drawn(what: str, report: Report, form: str, draw: Callable[[], bytes]) -> bytes:
    """``draw()``, the figure ``what`` of ``report`` as ``form`` bytes, kept in the cache
    (a figure is a function of its report: drawing one takes longer than evaluating most)."""
    if not enabled():
        return draw()
    entry_key = _digest({"figure": what, "form": form,
                         "of": hashlib.sha256(_report_json(report)).hexdigest()})
    data = _read(entry_key)
    if data is None:
        data = draw()
        _write(entry_key, data)
    return data


def _warn_once(error: OSError) -> None:
    """One line on stderr, the first time the cache cannot be written: why."""
    global _warned
    if not _warned:
        _warned = True
        sys.stderr.write(f"privspec: warning: cannot keep reports in the cache ({error}); "
                         "evaluating without it\n")


@dataclass(frozen=True)
class Usage:
    """What the cache holds."""

    directory: Path
    entries: int
    size: int


def _entries(folder: Path) -> list[tuple[float, int, Path]]:
    """(modification time, size, path) of every entry, least recently used first."""
    found = []
    with contextlib.suppress(FileNotFoundError):
        for item in os.scandir(folder):
            if _ENTRY_NAME.fullmatch(item.name):
                with contextlib.suppress(OSError):
                    status = item.stat()
                    found.append((status.st_mtime, status.st_size, Path(item.path)))
    return sorted(found)


def usage() -> Usage:
    """The cache's directory, number of entries and their total size."""
    folder = directory()
    entries = _entries(folder)
    return Usage(folder, len(entries), sum(size for _, size, _ in entries))


def trim(limit: int) -> None:
    """Remove the least recently used entries until the rest take at most ``limit`` bytes."""
    entries = _entries(directory())
    total = sum(size for _, size, _ in entries)
    for _, size, path in entries:
        if total <= limit:
            break
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        total -= size


def clear() -> Usage:
    """Remove every entry (and temporary files left by interrupted writes): what was removed.
    Nothing else in the directory is touched."""
    folder = directory()
    removed = usage()
    trim(0)
    with contextlib.suppress(FileNotFoundError):
        for item in os.scandir(folder):
            if item.name.startswith(_TEMPORARY_PREFIX):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(item.path)
    return removed
