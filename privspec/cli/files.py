"""Writing a command's files: all of them or none, never over an input or a device.

Each write is a transaction in a hidden directory beside the files,
``.privspec-tmp-XXXXXXXX/``.  The new files are written and synced there; then a
manifest naming them is written (the commit point); then each file is renamed over
its destination (a rename replaces a symbolic link itself, never its target) and the
directory is removed.  While its process lives, the directory's ``lock`` file is held
(``flock``), so no other run touches it.

A run killed before the manifest leaves every old file as it was.  A run killed
between two renames leaves old and new files side by side (``render --check`` reports
them as stale) and its manifest: the next privspec write into that directory first
finishes those renames (skipping a file someone changed since) and removes every
abandoned transaction, so no temporary file outlives the next run.  Only the user's own
transactions are touched (another user's, or one others may write, in a shared folder,
is left alone), and a manifest that is not one as privspec writes them (not a regular
file, too long, other fields) is taken as no commit.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Mapping, Sequence
from contextlib import suppress
from typing import Any

#: How privspec's transaction directories are named; nothing else is ever cleaned.
TRANSACTION_PREFIX = ".privspec-tmp-"
_MANIFEST = "manifest.json"
_LOCK = "lock"
#: A transaction directory without a lock file is being created, unless older than this.
_CREATION_SECONDS = 60.0
#: The longest manifest read (a few hundred bytes a file).
_LONGEST_MANIFEST = 1 << 20
#: How a transaction's files are opened: never through a link, never waiting on a FIFO.
_NOT_A_DEVICE = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)


def refuse_unsafe_output(path: str, inputs: Sequence[str]) -> None:
    """Raise OSError (with ``path`` as its filename) when writing ``path`` would replace
    something that is not a plain file or a symbolic link (a device such as /dev/null,
    a FIFO, a directory) or one of the command's ``inputs``: a rename would destroy it."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return  # nothing there (or nothing readable): the write itself says what fails
    if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
        raise OSError(errno.EINVAL, "not a regular file (privspec writes files whole, "
                      "replacing them); give a file path, or leave the option out for stdout",
                      path)
    for source in inputs:
        try:
            same = os.path.samefile(path, source)
        except OSError:
            continue
        if same:
            raise OSError(errno.EINVAL, f"it is the input {source}; write the output "
                          "to another file", path)


def write_atomically(files: Mapping[str, str | bytes], *, inputs: Sequence[str] = ()) -> None:
    """Write every file or none (see the module's docstring): texts as UTF-8, bytes
    (figures) as they are.  Nothing is written when a destination is not a plain file
    or a symbolic link, or is one of ``inputs`` (``refuse_unsafe_output``); a symbolic
    link given as a destination is replaced, its target left alone (to write through
    a link, give its resolved path).  Abandoned transactions of killed runs in the
    destinations' directories are finished or removed first.

    A failure before the renames leaves every existing file untouched; an OSError
    names the file it concerns (``filename``).
    """
    for path in files:
        refuse_unsafe_output(path, inputs)
    groups: dict[str, dict[str, str | bytes]] = {}
    for path, content in files.items():
        directory, name = os.path.split(os.path.abspath(path))
        groups.setdefault(directory, {})[name] = content
    transactions: list[_Transaction] = []
    path = ""
    try:
        for directory, group in groups.items():
            path = os.path.join(directory, next(iter(group)))
            os.makedirs(directory, exist_ok=True)
            recover_abandoned_writes(directory)
            transaction = _Transaction(directory)
            transactions.append(transaction)
            for name, content in group.items():
                path = os.path.join(directory, name)
                transaction.stage(name, content)
        for transaction in transactions:
            path = transaction.directory
            transaction.commit()
        for transaction in transactions:
            transaction.apply()
    except OSError as error:
        if error.filename is None or TRANSACTION_PREFIX in str(error.filename):
            error.filename = error.filename2 or path  # (a full disk's error names no file)
        raise
    finally:
        for transaction in transactions:
            transaction.remove()


class _Transaction:
    """One directory's share of a write: files staged in a locked hidden directory."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.path = tempfile.mkdtemp(prefix=TRANSACTION_PREFIX, dir=directory)
        self._lock = os.open(os.path.join(self.path, _LOCK), os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self._lock, fcntl.LOCK_EX)
        self.entries: list[dict[str, object]] = []

    def stage(self, name: str, content: str | bytes) -> None:
        """Write ``content`` to a staged file (synced), with the mode ``name`` has."""
        destination = os.path.join(self.directory, name)
        staged = os.path.join(self.path, str(len(self.entries)))
        data = content if isinstance(content, bytes) else content.encode("utf-8")
        try:
            mode = os.stat(destination).st_mode & 0o7777
        except OSError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        handle = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(staged, mode)
        self.entries.append({"staged": os.path.basename(staged), "name": name,
                             "before": _state(destination)})

    def commit(self) -> None:
        """Write the manifest (atomically, synced): from here on the write is decided."""
        _write_synced(os.path.join(self.path, _MANIFEST),
                      json.dumps({"files": self.entries}).encode("utf-8"))
        _sync_directory(self.path)

    def apply(self) -> None:
        """Rename each staged file over its destination."""
        for entry in self.entries:
            os.replace(os.path.join(self.path, str(entry["staged"])),
                       os.path.join(self.directory, str(entry["name"])))
        _sync_directory(self.directory)

    def remove(self) -> None:
        """Delete the hidden directory and release its lock."""
        shutil.rmtree(self.path, ignore_errors=True)
        os.close(self._lock)


def recover_abandoned_writes(directory: str) -> None:
    """Finish or remove the transactions in ``directory`` whose process has died:
    a committed one's remaining renames are done (unless the destination changed
    since it was staged), then its directory is deleted.  Best effort: a directory
    that cannot be read or removed is left for the next run."""
    with suppress(OSError), os.scandir(directory) as entries:
        candidates = [entry.path for entry in entries if entry.name.startswith(
            TRANSACTION_PREFIX) and entry.is_dir(follow_symlinks=False)]
        for candidate in candidates:
            with suppress(OSError):
                _recover(directory, candidate)


def _recover(directory: str, transaction: str) -> None:
    """Finish or remove one abandoned transaction (one of this user's: another's, or one
    others may write, in a shared directory, is left alone, never renamed over this
    user's files)."""
    from privspec.report.store import untrusted

    if untrusted(os.lstat(transaction)) is not None:
        return
    try:
        lock = os.open(os.path.join(transaction, _LOCK), os.O_RDWR | _NOT_A_DEVICE)
    except FileNotFoundError:  # being created now, or killed while it was
        if time.time() - os.lstat(transaction).st_mtime > _CREATION_SECONDS:
            shutil.rmtree(transaction, ignore_errors=True)
        return
    try:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return  # its process is still writing
        for entry in _manifest(transaction):
            staged = os.path.join(transaction, os.path.basename(entry["staged"]))
            destination = os.path.join(directory, os.path.basename(entry["name"]))
            if os.path.exists(staged) and _state(destination) == entry["before"]:
                os.replace(staged, destination)
        shutil.rmtree(transaction, ignore_errors=True)
    finally:
        os.close(lock)


def _manifest(transaction: str) -> list[dict[str, Any]]:
    """The renames a committed transaction names (none when it was not committed, or
    its manifest is not one: not a regular file, too long, or not as ``commit`` writes
    it)."""
    try:
        handle = os.open(os.path.join(transaction, _MANIFEST), os.O_RDONLY | _NOT_A_DEVICE)
        with os.fdopen(handle, "rb") as stream:
            if not stat.S_ISREG(os.fstat(handle).st_mode):
                return []
            entries = json.loads(stream.read(_LONGEST_MANIFEST + 1))["files"]
    except (OSError, ValueError, KeyError, TypeError, IndexError, RecursionError):
        return []  # not committed: nothing of it was renamed, drop it
    fields: dict[str, type | tuple[type, ...]] = {"staged": str, "name": str,
                                                  "before": (list, type(None))}
    if not (isinstance(entries, list) and all(
            isinstance(entry, dict) and set(entry) == set(fields)
            and all(isinstance(entry[key], kind) for key, kind in fields.items())
            for entry in entries)):
        return []
    return entries


def _state(path: str) -> list[int] | None:
    """What a destination was before a write (inode, size, modification time), to see
    whether anyone changed it since; None when there is nothing."""
    try:
        found = os.lstat(path)
    except FileNotFoundError:
        return None
    return [found.st_ino, found.st_size, found.st_mtime_ns]


def _write_synced(path: str, data: bytes) -> None:
    partial = path + ".part"
    with open(partial, "wb") as stream:
        stream.write(data)
        stream.flush()
        os.fsync(stream.fileno())
    os.replace(partial, path)


def _sync_directory(path: str) -> None:
    handle = os.open(path, os.O_RDONLY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)
