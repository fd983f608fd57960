"""Writing the files of a command: whole or not at all, never over an input or a
device."""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def refuse_unsafe_output(path: str, inputs: Sequence[str]) -> None:
    """Raise OSError (with ``path`` as its filename) when writing ``path`` would replace
    something that is not a plain file (a device such as /dev/null, a FIFO, a directory)
    or one of the command's ``inputs``: a rename would destroy it."""
    import errno
    import os
    import stat

    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # nothing there (or nothing readable): the write itself says what fails
    if not stat.S_ISREG(mode):
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
    """Write every file or none: temporary files first, then renames (each atomic).
    Texts are written as UTF-8, bytes (figures) as they are.  Nothing is written when
    a destination is not a plain file or is one of ``inputs`` (``refuse_unsafe_output``).

    A failure before the renames leaves every existing file untouched; an OSError
    names the file it concerns (``filename``).
    """
    import os
    import tempfile

    for path in files:
        refuse_unsafe_output(path, inputs)
    staged: list[tuple[str, str]] = []
    path = ""
    try:
        for path, text in files.items():
            directory = os.path.dirname(os.path.abspath(path))
            os.makedirs(directory, exist_ok=True)
            handle, temporary = tempfile.mkstemp(
                dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
            staged.append((temporary, path))
            if isinstance(text, bytes):
                with os.fdopen(handle, "wb") as binary:
                    binary.write(text)
                    binary.flush()
                    os.fsync(binary.fileno())
            else:
                with os.fdopen(handle, "w", encoding="utf-8", newline="") as stream:
                    stream.write(text)
                    stream.flush()
                    os.fsync(stream.fileno())
            try:
                mode = os.stat(path).st_mode & 0o7777
            except FileNotFoundError:
                umask = os.umask(0)
                os.umask(umask)
                mode = 0o666 & ~umask
            os.chmod(temporary, mode)
        for temporary, path in staged:
            os.replace(temporary, path)
    except OSError as error:
        if error.filename is None or str(error.filename).endswith(".tmp"):
            error.filename = path  # (a full disk's error names no file)
        raise
    finally:
        for temporary, _ in staged:
            if os.path.exists(temporary):
                os.unlink(temporary)
