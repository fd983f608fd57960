"""The store the report cache keeps its entries in (``report/cache.py``: evaluated
reports; ``report/figures.py``: drawn figures), a directory of content-addressed files.

An entry is named by a SHA-256 of what it was computed from (``entry_name``), always with
privspec's version and source files and the versions of the numerical stack, pydantic and
matplotlib.  It is one header line (format, name, SHA-256 of the rest) and its body.  An
entry whose header or checksum does not match is not trusted: it is computed again and
replaced.  Entries are written to a temporary file and renamed into place, so a
concurrent reader sees a whole entry or none; reading one touches its modification time,
and writing one removes the least recently used entries beyond ``MAX_BYTES``.  A
directory that cannot be read or written never fails a command: it runs without the
store, with at most one warning line.

Where: ``PRIVSPEC_CACHE_DIR``, else ``$XDG_CACHE_HOME/privspec``, else
``~/.cache/privspec`` (entries in its ``reports/``).  ``PRIVSPEC_NO_CACHE=1``, the
command line's ``--no-cache`` (``bypassed``) and ``privspec.evaluate(…, cache=False)``
bypass it.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import json
import os
import re
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from privspec.report.provenance import package_versions

if TYPE_CHECKING:
    from privspec.report.model import Report

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


def entry_name(material: Mapping[str, Any]) -> str:
    """An entry's name: a SHA-256 of ``material``, privspec's version and sources, and the
    versions of what it computes and draws with."""
    text = json.dumps({**material, "format": ENTRY_FORMAT, "versions": _versions(),
                       "source": _source_digest()},
                      sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=repr)  # (an option that is not JSON: by its repr)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


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


def report_json(report: Report) -> bytes:
    """Every field of ``report`` but its ``spec_path``, as JSON (floats as ``repr``: exact)."""
    return json.dumps(_fields(report.model_copy(update={"spec_path": None})),
                      separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def read(entry_key: str) -> bytes | None:
    """The body of the entry ``entry_key`` (touched: recently used), or None unless its
    header names this layout and key and its checksum is right."""
    try:
        path = directory() / f"{entry_key}{_SUFFIX}"
        header_line, newline, body = _regular_file_bytes(path, MAX_BYTES).partition(b"\n")
        header = json.loads(header_line)
    except (OSError, ValueError, RecursionError):  # JSON errors are ValueErrors
        return None
    if not newline or header != {"format": ENTRY_FORMAT, "key": entry_key,
                                 "sha256": hashlib.sha256(body).hexdigest()}:
        return None
    with contextlib.suppress(OSError):  # a read-only cache still answers
        os.utime(path)
    return body


def _regular_file_bytes(path: Path, most: int) -> bytes:
    """The bytes of the regular file at ``path``; OSError for anything else (a FIFO or a
    device is not waited on or read without end: opened without blocking or following
    a link) or a file over ``most`` bytes."""
    descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
                         | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(descriptor, "rb") as handle:
        found = os.fstat(descriptor)
        if not stat.S_ISREG(found.st_mode) or found.st_size > most:
            raise OSError(errno.EINVAL, "not an entry", str(path))
        return handle.read(most + 1)


def write(entry_key: str, body: bytes) -> None:
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


def drawn(what: str, report: Report, form: str, draw: Callable[[], bytes]) -> bytes:
    """``draw()``, the figure ``what`` of ``report`` as ``form`` bytes, kept in the cache
    (a figure is a function of its report: drawing one takes longer than evaluating most)."""
    if not enabled():
        return draw()
    entry_key = entry_name({"figure": what, "form": form,
                         "of": hashlib.sha256(report_json(report)).hexdigest()})
    data = read(entry_key)
    if data is None:
        data = draw()
        write(entry_key, data)
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
