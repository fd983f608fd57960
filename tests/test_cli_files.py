"""How commands write files: through symbolic links as the issue asks (``--in-place``
writes the real file, outputs replace the link), and all or nothing even when the
process is killed between two renames."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import privspec
from privspec.cli import main

#: Where the privspec under test is imported from (the subprocess imports the same).
IMPORTED_FROM = Path(privspec.__file__).resolve().parent.parent
SPEC = """privspec: 1
title: Ten counting queries with Laplace noise
unit: one record
neighbouring: add-or-remove
mechanism:
  repeat:
    count: 10
    mechanism: {laplace: {scale: 10, sensitivity: 1}}
"""
CALIBRATED = """privspec: 1
title: t
unit: one training example
neighbouring: add-or-remove
mechanism:
  dpsgd:
    noise_multiplier: 1.1
    sampling_rate: 0.004
    steps: 10000
"""
CALIBRATE = ["--vary", "noise_multiplier", "-t", "mu=1"]
#: Runs privspec with every rename of a written file (not of privspec's own staging)
#: paused: ``after`` the first one, or ``before`` it, so that a test can kill it there.
PAUSED = """
import os, sys, time
from collections.abc import Callable
from pathlib import Path
rename, (ready, when), args = os.replace, sys.argv[1:3], sys.argv[3:]
def paused(source, destination):
    last = os.fspath(destination)
    if ".privspec-tmp-" in last or last.endswith(".part") or Path(ready).exists():
        return rename(source, destination)
    if when == "after":
        rename(source, destination)
    Path(ready).write_text("paused")
    time.sleep(300)
os.replace = paused
from privspec.cli import main
sys.exit(main(args))
"""


def _killed_while_writing(work: Path, when: str, *args: str,
                          meanwhile: Callable[[], None] = lambda: None) -> None:
    """Run ``privspec ARGS`` in ``work`` and ``kill -9`` it at its first rename, after
    calling ``meanwhile``."""
    ready = work.parent / "paused"
    process = subprocess.Popen(
        [sys.executable, "-c", PAUSED, str(ready), when, *args], cwd=work,
        env={**os.environ, "PYTHONPATH": str(IMPORTED_FROM)})
    try:
        deadline = time.monotonic() + 120
        while not ready.exists():
            assert process.poll() is None, "privspec ended before writing"
            assert time.monotonic() < deadline
            time.sleep(0.05)
        meanwhile()
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    ready.unlink()


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("."))


def test_a_render_killed_between_renames_is_finished_by_the_next_write(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    spec = tmp_path / "s.privspec.yaml"
    spec.write_text(SPEC, encoding="utf-8")
    render = ["render", "s.privspec.yaml", "-f", "markdown,json", "--output-dir", "out"]
    assert main(render) == 0
    spec.write_text(SPEC.replace("scale: 10", "scale: 5"), encoding="utf-8")
    other = tmp_path / "other.privspec.yaml"
    other.write_text(SPEC, encoding="utf-8")
    render_other = ["render", "other.privspec.yaml", "-f", "json", "--output-dir", "out"]

    def write_beside_a_live_one() -> None:
        staged = _leftovers(tmp_path / "out")
        assert len(staged) == 1  # the live run's transaction
        assert main(render_other) == 0
        assert _leftovers(tmp_path / "out") == staged  # left alone while its run lives

    _killed_while_writing(tmp_path, "after", *render, meanwhile=write_beside_a_live_one)
    assert main([*render, "--check"]) == 1  # a mixed set: some files new, some old
    assert main(render_other) == 0
    assert _leftovers(tmp_path / "out") == []
    assert main([*render, "--check"]) == 0  # the killed run's set, complete


def test_a_calibration_killed_before_its_rename_leaves_no_temporary_file(
        tmp_path: Path) -> None:
    spec = tmp_path / "run.privspec.yaml"
    spec.write_text(CALIBRATED, encoding="utf-8")
    _killed_while_writing(tmp_path, "before", "calibrate", spec.name, *CALIBRATE,
                          "--in-place")
    assert spec.read_text(encoding="utf-8") == CALIBRATED  # the old file, whole
    assert main(["calibrate", str(spec), *CALIBRATE, "-o", str(tmp_path / "b.yaml")]) == 0
    assert _leftovers(tmp_path) == []
    # the killed run had decided its write: the next one finished it
    assert spec.read_text(encoding="utf-8") == (tmp_path / "b.yaml").read_text(
        encoding="utf-8")


def test_in_place_writes_the_file_a_link_points_to(tmp_path: Path) -> None:
    real = tmp_path / "real.privspec.yaml"
    real.write_text(CALIBRATED, encoding="utf-8")
    link = tmp_path / "link.privspec.yaml"
    link.symlink_to(real.name)
    assert main(["calibrate", str(link), *CALIBRATE, "--in-place"]) == 0
    assert link.is_symlink() and os.readlink(link) == real.name
    assert "noise_multiplier: 0.7754" in real.read_text(encoding="utf-8")
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("command", [
    ["schema", "-o", "link"],
    ["render", "s.privspec.yaml", "-f", "json", "-o", "link"],
])
@pytest.mark.parametrize("target", ["target", "/dev/null"])
def test_an_output_that_is_a_link_is_replaced_not_followed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str],
        target: str) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.privspec.yaml").write_text(SPEC, encoding="utf-8")
    (tmp_path / "target").write_text("kept", encoding="utf-8")
    (tmp_path / "link").symlink_to(target)
    assert main(command) == 0
    assert not (tmp_path / "link").is_symlink()
    assert (tmp_path / "link").read_text(encoding="utf-8").startswith("{")
    assert (tmp_path / "target").read_text(encoding="utf-8") == "kept"
    assert _leftovers(tmp_path) == []


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX owners")
@pytest.mark.parametrize("whose", ["another user's", "writable by others"])
def test_a_transaction_someone_else_could_have_made_is_never_finished(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, whose: str) -> None:
    """In a shared folder, a planted 'abandoned write' would rename a stranger's file
    over the user's: it is left alone (root in the sandbox gives it away with chown)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.privspec.yaml").write_text(SPEC, encoding="utf-8")
    victim = tmp_path / "notes.md"
    victim.write_text("mine\n", encoding="utf-8")
    planted = tmp_path / ".privspec-tmp-planted"
    planted.mkdir()
    (planted / "lock").write_bytes(b"")
    (planted / "0").write_text("a stranger's\n", encoding="utf-8")
    found = os.lstat(victim)
    (planted / "manifest.json").write_text(json.dumps({"files": [{
        "staged": "0", "name": "notes.md",
        "before": [found.st_ino, found.st_size, found.st_mtime_ns]}]}), encoding="utf-8")
    if whose == "another user's":
        for path in (planted, *planted.iterdir()):
            os.chown(path, 54_321, -1)
    else:
        planted.chmod(0o777)
    assert main(["render", "s.privspec.yaml", "-f", "json", "-o", "s.json"]) == 0
    assert victim.read_text(encoding="utf-8") == "mine\n"
    assert (planted / "0").exists()
