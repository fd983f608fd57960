"""A file a spec names beside it by its SHA-256 (strategy matrices, audit scores): one
reader refuses every name that leaves the spec's folder, and every file it cannot use."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from privspec.errors import Code
from privspec.spec.named_file import NamedFileError, read_named

CONTENT = b"1.0,0\n0.5,1\n"
DIGEST = hashlib.sha256(CONTENT).hexdigest()


@pytest.fixture
def spec(tmp_path: Path) -> str:
    """A spec in ``repo/``, a file beside it, a secret outside it."""
    (tmp_path / "repo" / "runs").mkdir(parents=True)
    (tmp_path / "repo" / "runs" / "m.csv").write_bytes(CONTENT)
    (tmp_path / "secret.csv").write_bytes(CONTENT)
    (tmp_path / "repo" / "link.csv").symlink_to(tmp_path / "secret.csv")
    (tmp_path / "repo" / "inner.csv").symlink_to(tmp_path / "repo" / "runs" / "m.csv")
    return str(tmp_path / "repo" / "s.privspec.yaml")


def _refusal(name: str, spec: str, *, digest: str = DIGEST, limit: int = 1000
             ) -> NamedFileError:
    with pytest.raises(NamedFileError) as raised:
        read_named(name, digest, spec, limit, "test file")
    return raised.value


def test_a_file_inside_the_spec_folder_is_read(spec: str) -> None:
    assert read_named("runs/m.csv", DIGEST, spec, 1000, "test file") == CONTENT
    assert read_named("inner.csv", DIGEST, spec, 1000, "test file") == CONTENT


@pytest.mark.parametrize("name", ["../secret.csv", "runs/../../secret.csv", "runs/../m.csv",
                                  "/etc/passwd", "C:secret.csv", "\\\\host\\share\\x"])
def test_a_name_that_leaves_the_folder_as_written_is_refused(spec: str, name: str) -> None:
    error = _refusal(name, spec)
    assert error.about == "name" and error.code is None
    assert str(error) == ("the test file is a path relative to the spec's folder, inside it "
                          "(no leading '/', drive or '..')")


def test_a_symbolic_link_out_of_the_folder_is_refused(spec: str) -> None:
    error = _refusal("link.csv", spec)
    assert error.about == "name" and error.code is None
    assert str(error) == ("link.csv leads out of the spec's folder (a symbolic link): name "
                          "a file inside it")


@pytest.mark.parametrize(("name", "limit", "code", "message"), [
    ("absent.csv", 1000, Code.IO_NOT_FOUND, "no such file"),
    ("runs", 1000, Code.IO_IS_A_DIRECTORY, "is a directory, not a test file"),
    ("runs/m.csv", 5, Code.IO_TOO_LARGE,
     "larger than the 5 bytes a test file may have"),
])
def test_a_file_that_cannot_be_read_is_refused(spec: str, name: str, limit: int, code: Code,
                                               message: str) -> None:
    error = _refusal(name, spec, limit=limit)
    assert error.about == "name" and error.code == code and str(error) == message


def test_a_pipe_is_refused_instead_of_waiting_for_a_writer(spec: str) -> None:
    """A named pipe beside the spec: reading it waited for a writer for ever."""
    os.mkfifo(Path(spec).parent / "pipe.csv")
    error = _refusal("pipe.csv", spec)
    assert error.code == Code.IO_UNREADABLE
    assert str(error) == "is not a regular file (a pipe or a device), not a test file"


def test_a_file_with_another_digest_is_refused_at_its_sha256(spec: str) -> None:
    error = _refusal("runs/m.csv", spec, digest="0" * 64)
    assert error.about == "sha256" and error.code is None
    assert str(error) == (f"the test file runs/m.csv has SHA-256 {DIGEST}, not the one named "
                          "here: use the file the spec names, or update its sha256")
