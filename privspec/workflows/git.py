"""Reading specs from git: the repository's root, revisions, and a file as committed
(``git show REV:path``).  Errors are :class:`DiffError` with a one-line message."""

from __future__ import annotations

import os
import subprocess

from privspec.errors import PrivspecError

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


def read_at_revision(path: str | os.PathLike[str], revision: str) -> tuple[str, str]:
    """The text of ``path`` as committed at ``revision`` and a label ``REV:path``.

    Raises :class:`DiffError` for a directory outside git, an unknown revision, or
    a file missing at that revision.
    """
    root = repository_root(path)
    verify_revision(root, revision)
    relative = path_in_repository(root, path)
    return text_at_revision(root, revision, relative), f"{revision}:{relative}"


def text_at_revision(root: str, revision: str, relative: str) -> str:
    """The text of the repository-relative path ``relative`` at ``revision``."""
    if run_git(root, "cat-file", "-e", f"{revision}:{relative}").returncode != 0:
        raise DiffError(f"{relative} does not exist at revision {revision}")
    done = run_git(root, "show", f"{revision}:{relative}")
    if done.returncode != 0:
        raise DiffError(f"cannot read {relative} at {revision}: {_first_line(done.stderr)}")
    try:
        return done.stdout.decode("utf-8")
    except UnicodeDecodeError:
        raise DiffError(f"{relative} at {revision} is not UTF-8 text") from None


# --- spec fields ----------------------------------------------------------------
