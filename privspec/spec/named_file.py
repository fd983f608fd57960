"""A file a spec names beside it with its SHA-256 (a matrix-factorization strategy, an
audit's scores): where it may be, how much of it is read, and whether it is the file
the spec names.  The spec's folder is one on disk, or a :class:`Folder` of a git
revision (a spec read from git names the files committed beside it there).

The name comes from the same stranger as the spec: it is relative to the spec's folder
and stays inside it (no absolute path, drive or '..' part, no symbolic link out of it);
the file's size is capped before it is read; a message never quotes the file's content.
Pure Python: the spec layer imports no numerical library.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from privspec.errors import Code

#: How many of a file's first bytes to check, and the check (a ``NamedFileError`` when
#: they show the file cannot be used, before the rest is read), or None.
Start = tuple[int, Callable[[bytes], None]] | None
#: A name that leaves the spec's folder as written: absolute, a drive, or a '..' part.
_OUTSIDE = re.compile(r"^([/\\]|[A-Za-z]:)|(^|[/\\])\.\.([/\\]|$)")


class NamedFileError(ValueError):
    """Why a named file cannot be used, in one sentence. ``about`` is what the spec must
    change: the file's name, or its ``sha256``; ``code`` is an ``io/…`` code when the
    file could not be read (None when the name or the digest is wrong)."""

    def __init__(self, message: str, about: Literal["name", "sha256"] = "name",
                 code: Code | None = None) -> None:
        super().__init__(message)
        self.about = about
        self.code = code


class Folder(ABC):
    """The spec's folder when it is not one on disk (a git revision's: the spec was read
    from git, and so are the files it names)."""

    @abstractmethod
    def check(self, name: str, noun: str) -> None:
        """Refuse ``name`` (a name inside the folder) unless it is a regular file here."""

    @abstractmethod
    def read(self, name: str, limit: int, noun: str) -> bytes:
        """The bytes of the file ``name`` (a name inside the folder), refused as
        :func:`read_capped` refuses a file on disk."""

    @abstractmethod
    def label(self, name: str) -> str:
        """How messages name the file ``name`` (a name inside the folder)."""

    @abstractmethod
    def position(self, path: tuple[str | int, ...]) -> tuple[int, int] | None:
        """The 1-based (line, column) where the spec file of this folder writes ``path``;
        None when it cannot say."""


#: Where the files a spec names are: beside the spec file (a path), in a :class:`Folder`,
#: or (None) in the working directory.
Beside = str | Folder | None


def outside_reason(name: str, noun: str) -> str | None:
    """Why ``name`` leaves the spec's folder as written (None when it does not)."""
    if _OUTSIDE.search(name):
        return (f"the {noun} is a path relative to the spec's folder, inside it (no leading "
                "'/', drive or '..')")
    return None


def located(name: str, spec_file: str | None, noun: str) -> Path:
    """The file ``name`` names, relative to the folder of ``spec_file`` (the working
    directory for a spec without a file); refused when it leads out of that folder, as
    written or by a symbolic link."""
    reason = outside_reason(name, noun)
    if reason is not None:
        raise NamedFileError(reason)
    folder = Path(os.path.dirname(spec_file) if spec_file else ".").resolve()
    path = folder / name
    if not path.resolve().is_relative_to(folder):
        raise NamedFileError(f"{name} leads out of the spec's folder (a symbolic link): "
                             "name a file inside it")
    return path


def read_capped(path: str | Path, limit: int, noun: str, start: Start = None) -> bytes:
    """The bytes of the file at ``path``; refused when it is missing, a directory,
    unreadable or larger than ``limit`` bytes (checked before it is read), or when
    ``start`` refuses its first bytes (before the rest is read)."""
    try:
        info = os.stat(path)
        if stat.S_ISDIR(info.st_mode):
            raise NamedFileError(f"is a directory, not a {noun}", code=Code.IO_IS_A_DIRECTORY)
        if not stat.S_ISREG(info.st_mode):  # a pipe would wait for a writer, a device not end
            raise NamedFileError(f"is not a regular file (a pipe or a device), not a {noun}",
                                 code=Code.IO_UNREADABLE)
        if info.st_size > limit:
            raise NamedFileError(too_large(limit, noun), code=Code.IO_TOO_LARGE)
        with open(path, "rb") as handle:  # (read(n) allocates n bytes: no more than needed)
            if start is not None:
                start[1](handle.read(start[0]))
                handle.seek(0)
            data = handle.read(min(info.st_size, limit) + 1)
            if len(data) > info.st_size:  # it grew since it was measured
                data += handle.read(limit + 1 - len(data))
    except FileNotFoundError:
        raise NamedFileError("no such file", code=Code.IO_NOT_FOUND) from None
    except OSError as error:
        raise NamedFileError(f"cannot read the file: {error.strerror or error}",
                             code=Code.IO_UNREADABLE) from None
    if len(data) > limit:  # the file grew since it was measured
        raise NamedFileError(too_large(limit, noun), code=Code.IO_TOO_LARGE)
    return data


def too_large(limit: int, noun: str) -> str:
    return f"larger than the {limit:,} bytes a {noun} may have"


def check_digest(data: bytes, sha256: str, name: str, noun: str) -> str:
    """The SHA-256 of ``data``, refused unless it is ``sha256``, the one the spec names."""
    digest = hashlib.sha256(data).hexdigest()
    if digest != sha256:
        raise NamedFileError(f"the {noun} {name} has SHA-256 {digest}, not the one named here: "
                             "use the file the spec names, or update its sha256", "sha256")
    return digest


def check_inside(name: str, beside: Beside, noun: str) -> None:
    """Refuse ``name`` unless it names a file inside the spec's folder (``located``; in
    a :class:`Folder`, a regular file there)."""
    if not isinstance(beside, Folder):
        located(name, beside, noun)
        return
    reason = outside_reason(name, noun)
    if reason is not None:
        raise NamedFileError(reason)
    beside.check(name, noun)


def read_named(name: str, sha256: str, beside: Beside, limit: int, noun: str,
               start: Start = None) -> bytes:
    """The bytes of the file ``name`` beside the spec (``beside``), once it is inside the
    spec's folder, at most ``limit`` bytes, its first bytes are not refused by ``start``,
    and its SHA-256 is ``sha256``."""
    if isinstance(beside, Folder):
        check_inside(name, beside, noun)
        data = beside.read(name, limit, noun)
        if start is not None:
            start[1](data[:start[0]])
    else:
        data = read_capped(located(name, beside, noun), limit, noun, start)
    check_digest(data, sha256, name, noun)
    return data
