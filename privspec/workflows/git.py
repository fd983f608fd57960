"""Reading specs from git: the repository's root, revisions, a file as committed
(``git show REV:path``), and a spec as committed with the files it names
(:func:`spec_at_revision`, for ``privspec diff --rev`` and ``privspec action``).  Errors
are :class:`DiffError` with a one-line message."""

from __future__ import annotations

import os
import posixpath
import subprocess
from dataclasses import dataclass
from typing import TYPE_CHECKING

from privspec.errors import Code, PrivspecError
from privspec.spec.named_file import Folder, NamedFileError, too_large

if TYPE_CHECKING:
    from privspec.spec.models import Spec

_GIT_TIMEOUT = 60


class DiffError(PrivspecError):
    """A comparison could not be made (a revision, a file, git itself); one-line message."""


def run_git(directory: str, *args: str) -> subprocess.CompletedProcess[bytes]:
    """``git -C directory args...``, output captured; DiffError when git is missing."""
    try:
        return subprocess.run(["git", "-C", directory, *args], capture_output=True,
                              check=False, timeout=_GIT_TIMEOUT)
    except FileNotFoundError:
        raise DiffError("git is not installed (needed to read a revision)") from None
    except subprocess.TimeoutExpired:
        raise DiffError(f"git {args[0]} took longer than {_GIT_TIMEOUT} s") from None


def _first_line(data: bytes) -> str:
    lines = data.decode("utf-8", errors="replace").strip().splitlines()
    return lines[0].removeprefix("fatal: ") if lines else "unknown error"


def repository_root(path: str | os.PathLike[str] = ".") -> str:
    """The top directory of the git work tree holding ``path`` (which need not exist)."""
    start = os.path.abspath(os.fspath(path))
    while not os.path.isdir(start):
        parent = os.path.dirname(start)
        if parent == start:
            break
        start = parent
    done = run_git(start, "rev-parse", "--show-toplevel")
    if done.returncode != 0:
        raise DiffError(f"not a git repository: {start}")
    return done.stdout.decode("utf-8").strip()


def verify_revision(root: str, revision: str) -> str:
    """The commit id of ``revision`` in the repository at ``root``."""
    if not revision or revision.startswith("-"):
        raise DiffError(f"not a revision: {revision!r}")
    done = run_git(root, "rev-parse", "--verify", "--quiet", "--end-of-options",
                f"{revision}^{{commit}}")
    if done.returncode != 0:
        raise DiffError(f"unknown revision {revision!r} in {root} (in CI, fetch it: "
                        "actions/checkout with fetch-depth: 0)")
    return done.stdout.decode("ascii").strip()


def path_in_repository(root: str, path: str | os.PathLike[str]) -> str:
    """``path`` relative to the repository root, with '/' separators."""
    absolute = os.path.realpath(os.path.abspath(os.fspath(path)))
    relative = os.path.relpath(absolute, os.path.realpath(root))
    if relative == os.curdir or relative.startswith(os.pardir):
        raise DiffError(f"{os.fspath(path)} is not inside the git repository {root}")
    return relative.replace(os.sep, "/")


@dataclass(frozen=True)
class RevisionFolder(Folder):
    """The folder of a spec at a git revision: the files the spec names are read as
    committed there, never from the working tree (nor through a symbolic link)."""

    root: str
    revision: str
    folder: str  # repository-relative, '' at the top
    shown: str  # the revision, as messages name it
    spec: str = ""  # the spec file's name in the folder ('': none)

    def _blob(self, name: str, noun: str) -> tuple[str, int]:
        """The object id and size of the regular file ``name`` at the revision."""
        path = posixpath.normpath(posixpath.join(self.folder, name))
        try:
            done = run_git(self.root, "ls-tree", "-l", "-z", "--full-tree", self.revision,
                           "--", path)
        except DiffError as error:
            raise NamedFileError(str(error), code=Code.IO_UNREADABLE) from None
        if done.returncode != 0:
            raise NamedFileError(f"cannot read the file at revision {self.shown}: "
                                 f"{_first_line(done.stderr)}", code=Code.IO_UNREADABLE)
        for entry in done.stdout.split(b"\0"):
            fields, _, found = entry.partition(b"\t")
            if found.decode("utf-8", "surrogateescape") != path:
                continue
            mode, kind, object_id, size = fields.decode("ascii").split()
            if kind == "tree":
                raise NamedFileError(f"is a directory at revision {self.shown}, not a {noun}",
                                     code=Code.IO_IS_A_DIRECTORY)
            if kind != "blob" or mode not in ("100644", "100755"):
                raise NamedFileError(f"is not a regular file at revision {self.shown} (a "
                                     f"symbolic link or a submodule), not a {noun}",
                                     code=Code.IO_UNREADABLE)
            return object_id, int(size)
        raise NamedFileError(f"no such file at revision {self.shown}", code=Code.IO_NOT_FOUND)

    def check(self, name: str, noun: str) -> None:
        self._blob(name, noun)

    def label(self, name: str) -> str:
        """``REV:path``, the file's repository-relative path at the revision."""
        return f"{self.shown}:{posixpath.normpath(posixpath.join(self.folder, name))}"

    def position(self, path: tuple[str | int, ...]) -> tuple[int, int] | None:
        from privspec.spec.loader import MAX_FILE_BYTES, position_in

        if not self.spec:
            return None
        try:
            data = self.read(self.spec, MAX_FILE_BYTES, "spec file")
        except NamedFileError:
            return None
        return position_in(data.decode("utf-8", "replace"), self.label(self.spec), path)

    def read(self, name: str, limit: int, noun: str) -> bytes:
        object_id, size = self._blob(name, noun)
        if size > limit:
            raise NamedFileError(too_large(limit, noun), code=Code.IO_TOO_LARGE)
        try:
            done = run_git(self.root, "cat-file", "blob", object_id)
        except DiffError as error:
            raise NamedFileError(str(error), code=Code.IO_UNREADABLE) from None
        if done.returncode != 0 or len(done.stdout) != size:
            raise NamedFileError(f"cannot read the file at revision {self.shown}",
                                 code=Code.IO_UNREADABLE)
        return done.stdout


def revision_folder(root: str, revision: str, relative: str, shown: str | None = None
                    ) -> RevisionFolder:
    """The folder of the spec at the repository-relative path ``relative`` at
    ``revision`` (named ``shown`` in messages, by default ``revision``)."""
    return RevisionFolder(root, revision, posixpath.dirname(relative),
                          revision if shown is None else shown, posixpath.basename(relative))


def spec_at_revision(root: str, revision: str, relative: str, shown: str | None = None
                     ) -> tuple[Spec, str]:
    """The spec at the repository-relative path ``relative`` as committed at
    ``revision`` (named ``shown`` in its label ``SHOWN:relative``), the files it names read
    there too, and its label.  Raises :class:`DiffError` when there is no such file,
    ``SpecError`` with every problem of the file (a symbolic link, too large, not UTF-8)
    or of the spec."""
    from privspec.spec.diagnostics import Diagnostic, SpecError
    from privspec.spec.loader import MAX_FILE_BYTES, load_spec_bytes

    folder = revision_folder(root, revision, relative, shown)
    label = f"{folder.shown}:{relative}"
    try:
        data = folder.read(folder.spec, MAX_FILE_BYTES, "spec file")
    except NamedFileError as error:
        if error.code is Code.IO_NOT_FOUND:
            raise DiffError(f"{relative} does not exist at revision {folder.shown}") from None
        raise SpecError([Diagnostic(label, 1, 1, "", str(error),
                                    error.code or Code.IO_UNREADABLE)]) from None
    return load_spec_bytes(data, label, folder), label


def spec_at(path: str | os.PathLike[str], revision: str) -> tuple[Spec, str]:
    """The spec file ``path`` (in the working tree's repository) as committed at
    ``revision``, as :func:`spec_at_revision` reads it, and its label ``REV:path``."""
    root = repository_root(path)
    verify_revision(root, revision)
    return spec_at_revision(root, revision, path_in_repository(root, path))
