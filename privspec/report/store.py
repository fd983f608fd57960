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

A checksum is no signature: whoever can write the directory can write an entry that
passes it.  So the store reads and writes nothing in a directory someone else could
write (``untrusted``): its folder (resolved, symbolic links followed) must belong to the
user (or root) and be writable by no one else, and so must every folder above it, except
that a folder above may be writable by others when it is sticky (``/tmp``: no one else
can rename or remove what the user made in it); a folder writable by its group is
trusted when that group is the user's own (the user's primary group, named as the user,
with no other member listed).  An entry must be a regular file, not a symbolic link,
that the user (or root) owns and no one else may write.  This protects against other
users' folders and entries; someone who can write the user's own files can change
privspec itself.  Where there are no POSIX owners (Windows) only the entry's kind is
checked.  ``report/cache.py`` further checks a report's figures (against each other and
its spec); a drawn figure's bytes are trusted on where they are kept alone.

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


class UntrustedError(PermissionError):
    """Why the store's directory or an entry may hold what someone else wrote."""

    def __str__(self) -> str:
        return f"{self.filename} {self.strerror}, so its reports cannot be trusted"


def _user() -> int | None:
    """The user's (effective) id; None where there are no POSIX owners."""
    user = getattr(os, "geteuid", None)
    return None if user is None else int(user())


def _own_group(group: int, user: int) -> bool:
    """Whether ``group`` is the user's own (a user-private group): its primary group,
    named as the user, listing no other member."""
    try:
        import grp
        import pwd

        account, found = pwd.getpwuid(user), grp.getgrgid(group)
    except (ImportError, KeyError):
        return False
    return (group == account.pw_gid and found.gr_name == account.pw_name
            and set(found.gr_mem) <= {account.pw_name})


def untrusted(info: os.stat_result, above: bool = False) -> str | None:
    """Why what ``info`` describes may hold what another user wrote, or None: it belongs
    to another user than the user or root, or another user may write it (a folder
    ``above`` the store's may when it is sticky)."""
    user = _user()
    if user is None:
        return None
    if info.st_uid not in (user, 0):
        return "belongs to another user"
    shared = info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    if above and info.st_mode & stat.S_ISVTX:
        shared = 0
    if shared & stat.S_IWOTH:
        return "is writable by other users"
    if shared and not _own_group(info.st_gid, user):
        return "is writable by its group"
    return None


def _trusted_folder() -> Path:
    """The entries' directory, resolved, once it and every folder above it are trusted
    (``untrusted``, from the top down); ``UntrustedError`` saying why not, another OSError
    (``FileNotFoundError``) where a folder is missing."""
    folder = Path(os.path.realpath(directory()))
    for path in reversed((folder, *folder.parents)):
        info = os.stat(path)
        if not stat.S_ISDIR(info.st_mode):
            raise NotADirectoryError(errno.ENOTDIR, "not a directory", str(path))
        why = untrusted(info, above=path != folder)
        if why is not None:
            raise UntrustedError(errno.EPERM, why, str(path))
    return folder


def _entry_bytes(path: Path, most: int) -> bytes:
    """The bytes of the entry at ``path`` (touched: recently used), once it is a regular
    file, not a symbolic link, of at most ``most`` bytes, that no one but the user may
    have written (a FIFO or a device is not waited on or read without end: opened
    without blocking or following a link)."""
    if not hasattr(os, "O_NOFOLLOW") and path.is_symlink():
        raise UntrustedError(errno.ELOOP, "is a symbolic link", str(path))
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    with open(os.open(path, flags | getattr(os, "O_BINARY", 0)), "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > most or untrusted(info):
            raise UntrustedError(errno.EPERM, "is not an entry of the user's", str(path))
        data = file.read(most + 1)
        with contextlib.suppress(OSError):  # a read-only cache still answers
            os.utime(file.fileno() if os.utime in os.supports_fd else path)
    return data


def read(entry_key: str) -> bytes | None:
    """The body of the entry ``entry_key`` (touched: recently used), or None unless the
    directory and the entry are trusted (``untrusted``) and its header names this layout
    and key and its checksum is right."""
    try:
        data = _entry_bytes(_trusted_folder() / f"{entry_key}{_SUFFIX}", MAX_BYTES)
        header_line, newline, body = data.partition(b"\n")
        header = json.loads(header_line)
    except (OSError, ValueError, RecursionError):  # JSON errors are ValueErrors
        return None
    if not newline or header != {"format": ENTRY_FORMAT, "key": entry_key,
                                 "sha256": hashlib.sha256(body).hexdigest()}:
        return None
    return body


def write(entry_key: str, body: bytes) -> None:
    """Keep ``body`` under ``entry_key`` (atomically), then trim the cache to ``MAX_BYTES``."""
    header = {"format": ENTRY_FORMAT, "key": entry_key, "sha256": hashlib.sha256(body).hexdigest()}
    temporary: str | None = None
    try:
        try:
            folder = _trusted_folder()  # nothing kept where it would not be read
        except FileNotFoundError:  # made below folders found trusted, the user's alone
            _make(directory())
            folder = _trusted_folder()
        handle, temporary = tempfile.mkstemp(prefix=_TEMPORARY_PREFIX, dir=folder)
        with os.fdopen(handle, "wb") as file:
            file.write(json.dumps(header, sort_keys=True).encode("utf-8") + b"\n" + body)
        os.replace(temporary, folder / f"{entry_key}{_SUFFIX}")
        temporary = None
        trim(MAX_BYTES, folder)
    except OSError as error:
        _warn_once(error)
    finally:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)


def _make(folder: Path) -> None:
    """Make ``folder`` and any missing folder above it, each the user's alone (a folder
    others may write is never trusted)."""
    missing = [path for path in (folder, *folder.parents) if not path.exists()]
    for path in reversed(missing):
        with contextlib.suppress(FileExistsError):
            path.mkdir(mode=0o700)


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
    """One line on stderr, the first time the cache cannot be written or is not
    trusted: why."""
    global _warned
    if not _warned:
        _warned = True
        sys.stderr.write(
            f"privspec: warning: not using the report cache: {error}; PRIVSPEC_CACHE_DIR "
            "can name a folder of your own\n" if isinstance(error, UntrustedError)
            else f"privspec: warning: cannot keep reports in the cache ({error}); "
            "evaluating without it\n")


@dataclass(frozen=True)
class Usage:
    """What the cache holds, and why it is not used when it is not."""

    directory: Path
    entries: int
    size: int
    untrusted: str | None = None


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
    try:
        _trusted_folder()
        why = None
    except UntrustedError as error:
        why = str(error)
    except OSError:
        why = None  # missing: made (the user's alone) when first written
    return Usage(folder, len(entries), sum(size for _, size, _ in entries), why)


def trim(limit: int, folder: Path | None = None) -> None:
    """Remove the least recently used entries (of ``folder``, else the directory's) until
    the rest take at most ``limit`` bytes."""
    entries = _entries(directory() if folder is None else folder)
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
