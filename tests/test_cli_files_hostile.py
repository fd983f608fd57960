"""An abandoned write's hidden directory that privspec did not make as it makes them (a
manifest that is not one, a FIFO, another user's directory in a shared folder) is never
trusted: the next write neither crashes, hangs, nor renames a file of it over the
user's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from privspec.cli.files import TRANSACTION_PREFIX

ROOT = Path(__file__).resolve().parent.parent
WRITE = ("from privspec.cli.files import write_atomically; "
         "write_atomically({'out.txt': 'new'})")


def _abandoned(folder: Path, manifest: str | None) -> Path:
    """A transaction left in ``folder``: its lock, a staged file and ``manifest`` (a
    FIFO when None)."""
    transaction = folder / f"{TRANSACTION_PREFIX}abandoned"
    transaction.mkdir()
    (transaction / "lock").touch()
    (transaction / "0").write_text("staged by someone else")
    if manifest is None:
        os.mkfifo(transaction / "manifest.json")
    else:
        (transaction / "manifest.json").write_text(manifest)
    return transaction


def _write(folder: Path, name: str = "out.txt") -> subprocess.CompletedProcess[str]:
    """A write of ``name`` into ``folder`` (by a process of its own)."""
    return subprocess.run([sys.executable, "-c", WRITE.replace("out.txt", name)],
                          cwd=folder, capture_output=True, text=True, timeout=60,
                          check=False, env={**os.environ, "PYTHONPATH": str(ROOT)})


@pytest.mark.parametrize("manifest", [
    '{"files": [1]}', '{"files": "ab"}', '{"files": [{"staged": "0"}]}',
    '{"files": [{"staged": 0, "name": "out.txt", "before": null}]}',
    '{"files": ' + "[" * 50_000 + "]" * 50_000 + "}", None])
def test_a_manifest_that_is_not_one_is_dropped(tmp_path: Path, manifest: str | None) -> None:
    _abandoned(tmp_path, manifest)
    done = _write(tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out.txt").read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0,
                    reason="needs root to give the directory to another user")
def test_another_users_transaction_is_left_alone(tmp_path: Path) -> None:
    """Another user's 'transaction' in a shared folder naming this user's file (its
    inode, size and time are anyone's to read) used to be finished: their file renamed
    over this user's."""
    (tmp_path / "out.txt").write_text("mine")
    found = os.lstat(tmp_path / "out.txt")
    transaction = _abandoned(tmp_path, json.dumps({"files": [
        {"staged": "0", "name": "out.txt",
         "before": [found.st_ino, found.st_size, found.st_mtime_ns]}]}))
    for path in (transaction, *transaction.iterdir()):
        os.chown(path, 4242, 4242)
    done = _write(tmp_path, "other.txt")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out.txt").read_text() == "mine"
    assert (transaction / "0").read_text() == "staged by someone else"
