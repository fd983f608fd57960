"""``privspec sweep --resume`` trusts no journal row: a row is used only when it carries
this sweep's key, its checksum matches, it is a well-formed row of a point of the grid
and its figures agree with each other; every other row is recomputed (said once), and a
file that is not a journal is refused in one line, exit 2, never read without bound or
waited on."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from spec_texts import ONE_GAUSSIAN

from privspec.spec.loader import load_yaml_text
from privspec.workflows.sweep import parse_axis, points, row

ROOT = Path(__file__).resolve().parent.parent
SPEC = ONE_GAUSSIAN
VARY = "sigma=1,2"


def _sweep(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "g.privspec.yaml").write_text(SPEC, encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "privspec", "--quiet", "sweep", "g.privspec.yaml", "--vary",
         VARY, "-j", "1", "--journal", "j", "--resume", *args],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
        text=True, check=False, timeout=120)


def _grid(vary: str = VARY) -> tuple[list[Any], Any]:
    """The points of the sweep of ``vary`` and its key (privspec's 'sweep_key', which
    privspec used not to have: None then)."""
    from privspec.workflows import sweep

    data = load_yaml_text(SPEC)
    axes = (parse_axis(data, vary),)
    key = getattr(sweep, "sweep_key", lambda *_: None)(data, axes, (None, None))
    return points(data, axes, (None, None)), key


def _ok_row(point: Any, mu: float) -> dict[str, Any]:
    """A row with the figures of μ-GDP (as the Gaussian's report has them)."""
    advantage = math.erf(mu / (2 * math.sqrt(2)))
    return {"point": point.index, "values": list(point.values), "key": point.key,
            "status": "ok", "mu": mu, "regret": 0.0, "tier": 1, "advantage": advantage,
            "epsilons": [[1e-5, 4.4]], "caveats": [], "spec_sha256": "a" * 64,
            "refusal": None}


def _resumed(path: Path, key: str, grid: list[Any]) -> Any:
    """The journal at ``path`` read to resume ``grid`` (and closed)."""
    from privspec.workflows.sweep_runs import Journal

    journal = Journal(str(path), key, grid)
    journal.close()
    return journal


def _mu(out: str) -> list[float]:
    return [float(line.split(",")[3]) for line in out.splitlines()[1:]]


def test_a_tampered_row_of_an_old_journal_is_not_printed(tmp_path: Path) -> None:
    """The attack of issue 38: a row written as privspec used to write them, μ lowered
    from 1 to 0.001; it used to be printed."""
    grid, _ = _grid()
    forged = {**_ok_row(grid[0], 1.0), "mu": 0.001}
    (tmp_path / "j").write_text('{"privspec sweep journal":1}\n' + json.dumps(forged) + "\n")
    done = _sweep(tmp_path)
    assert done.returncode == 0, done.stderr
    assert _mu(done.stdout) == [1.0, 0.5]
    assert "1 journal row was not used and is recomputed" in done.stderr


def test_rows_are_kept_only_with_the_key_checksum_and_consistent_figures(tmp_path: Path) -> None:
    from privspec.workflows.sweep_runs import Journal, _checksum

    grid, key = _grid()
    journal = Journal(str(tmp_path / "j"), key)
    journal.add(_ok_row(grid[0], 1.0))
    journal.add(_ok_row(grid[1], 0.5))
    journal.close()
    assert _resumed(tmp_path / "j", key, grid).rows == {
        0: _ok_row(grid[0], 1.0), 1: _ok_row(grid[1], 0.5)}
    lines = (tmp_path / "j").read_text().splitlines()
    first, second = json.loads(lines[1]), json.loads(lines[2])
    first["mu"] = 0.001  # the checksum no longer matches
    second["mu"] = 0.001  # and an attacker who recomputes it: the advantage contradicts μ
    second["checksum"] = _checksum({k: v for k, v in second.items() if k != "checksum"})
    (tmp_path / "j").write_text("\n".join([lines[0], json.dumps(first), json.dumps(second)])
                                + "\n")
    resumed = _resumed(tmp_path / "j", key, grid)
    assert (resumed.rows, resumed.unused) == ({}, 2)
    other = _grid("sigma=1,3")[1]
    assert other != key
    assert _resumed(tmp_path / "j", other, grid).unused == 0  # (rewritten: no rows)
    journal = Journal(str(tmp_path / "j"), key)
    journal.add(_ok_row(grid[0], 1.0))
    journal.close()
    mismatched = _resumed(tmp_path / "j", other, grid)
    assert (mismatched.rows, mismatched.unused) == ({}, 1)  # a row of another sweep


def _sealed(key: str, entry: Any) -> str:
    """A line as the journal writes it (an honest checksum over whatever ``entry`` is)."""
    from privspec.workflows.sweep_runs import _checksum

    bound = {**entry, "sweep": key} if isinstance(entry, dict) else entry
    if isinstance(bound, dict):
        bound["checksum"] = _checksum(bound)
    return json.dumps(bound)


def _malformed(grid: list[Any]) -> list[Any]:
    good = _ok_row(grid[0], 1.0)
    return [
        {**good, "mu": -1.0}, {**good, "mu": "1"}, {**good, "mu": True},
        {**good, "mu": None}, {**good, "tier": True}, {**good, "tier": 3},
        {**good, "regret": None}, {**good, "advantage": 1.5}, {**good, "point": 1},
        {**good, "values": [1]}, {**good, "values": [2.0]}, {**good, "key": "k"},
        {**good, "status": "fine"}, {**good, "extra": 1},
        {k: v for k, v in good.items() if k != "caveats"},
        {**good, "epsilons": [[1e-5, -1.0]]}, {**good, "epsilons": [[2.0, 1.0]]},
        {**good, "epsilons": [[1e-5, 1e-3]]},  # ε too small for the advantage
        {**good, "epsilons": "[]"}, {**good, "caveats": ["<script>"]},
        {**good, "spec_sha256": "x"}, {**good, "refusal": "no"},
        {**row(grid[0], None, "r"), "mu": 0.1}, {**row(grid[0], None, "")},
        [good], "row", None, 7,
    ]


def test_malformed_rows_are_recomputed_not_trusted_nor_crashed_on(tmp_path: Path) -> None:
    from privspec.workflows.sweep_runs import Journal

    grid, key = _grid()
    header = json.dumps({"privspec sweep journal": 2, "sweep": key})
    bad = [_sealed(key, entry) for entry in _malformed(grid)]
    garbage = ["{", "[" * 20_000, '{"mu": NaN}', '{"point": ' + "1" * 5000 + "}",
               '{"mu": 1e999}', json.dumps({"sweep": key, "refusal": "\ud800",
                                            "checksum": "0" * 64})]
    body = "\n".join([header, *bad, *garbage]) + "\n"
    (tmp_path / "j").write_bytes(body.encode() + b"\xff\xfe\x00 binary\n"
                                 + b"x" * (Journal.MAX_LINE + 10) + b"\n"
                                 + (_sealed(key, _ok_row(grid[1], 0.5)) + "\n").encode())
    resumed = _resumed(tmp_path / "j", key, grid * 40)  # (enough lines are read)
    assert resumed.rows == {}  # the good row after an overlong line is not read either
    assert resumed.unused == len(bad) + len(garbage) + 2


def test_only_one_row_a_point_and_one_line_a_point_are_read(tmp_path: Path) -> None:

    grid, key = _grid()
    header = json.dumps({"privspec sweep journal": 2, "sweep": key})
    lines = [header, *[_sealed(key, _ok_row(grid[0], 1.0))] * 5]
    (tmp_path / "j").write_text("\n".join(lines) + "\n")
    resumed = _resumed(tmp_path / "j", key, grid)
    assert set(resumed.rows) == {0} and resumed.unused == 2  # (header + 2 points + 1 read)


def test_a_sweep_resumed_from_a_journal_with_bad_rows_says_so_once(tmp_path: Path) -> None:
    grid, key = _grid()
    header = json.dumps({"privspec sweep journal": 2, "sweep": key})
    forged = {**_ok_row(grid[0], 1.0), "mu": 0.001}
    (tmp_path / "j").write_text("\n".join([header, _sealed(key, forged), "{oops",
                                           _sealed(key, _ok_row(grid[1], 0.5))]) + "\n")
    done = _sweep(tmp_path)
    assert done.returncode == 0, done.stderr
    assert _mu(done.stdout) == [1.0, 0.5]
    assert done.stderr.count("journal rows were not used") == 1, done.stderr
    assert "2 journal rows were not used and are recomputed" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("make", ["garbage", "huge", "directory", "fifo", "device", "spec"])
def test_a_file_that_is_no_journal_is_refused_in_one_line(tmp_path: Path, make: str) -> None:
    journal = tmp_path / "j"
    if make == "garbage":
        journal.write_bytes(b"\x7fELF\x00\x01" * 1000)
    elif make == "huge":
        journal.write_bytes(b"{" * (3 << 20))
    elif make == "directory":
        journal.mkdir()
    elif make == "fifo":
        os.mkfifo(journal)
    elif make == "device":
        journal.symlink_to("/dev/zero")
    else:
        journal.symlink_to("g.privspec.yaml")
    before = journal.read_bytes() if make in ("garbage", "huge") else None
    done = _sweep(tmp_path)  # (a FIFO or /dev/zero read would hang or fill memory)
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.splitlines()) == 1 and "j" in done.stderr, done.stderr
    if before is not None:
        assert journal.read_bytes() == before and "j:1: not a privspec sweep journal" in done.stderr
    else:
        assert journal.is_symlink() or journal.is_dir() or journal.is_fifo()


def test_the_journal_is_no_file_the_sweep_writes(tmp_path: Path) -> None:
    done = _sweep(tmp_path, "-o", "j.csv", "--journal", "j.csv")
    assert done.returncode == 2 and "--journal j.csv is also a file the sweep writes" in done.stderr


def test_the_consistency_slack_covers_the_floor_and_the_bounds_margin() -> None:
    """A sound row is never rejected: its advantage exceeds 2Φ(μ/2) − 1 by at most the
    floor τ plus what a closed-form μ within BOUND_MARGIN below the numerical one moves."""
    from privspec.report.assembly import BOUND_MARGIN, LARGEST_FLOOR
    from privspec.workflows.sweep import CONSISTENCY_SLACK

    moved = max(math.erf(mu / (2 * math.sqrt(2))) - math.erf(mu * (1 - BOUND_MARGIN)
                                                              / (2 * math.sqrt(2)))
                for mu in (i / 100 for i in range(1, 2000)))
    assert LARGEST_FLOOR + moved <= CONSISTENCY_SLACK < 3 * LARGEST_FLOOR


def test_the_journal_is_never_written_through_a_link_beside_it(tmp_path: Path) -> None:
    """The journal is started at FILE.new and renamed: a symbolic link found there was
    followed, and the file it named truncated."""
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me\n")
    (tmp_path / "j.new").symlink_to(precious)
    done = _sweep(tmp_path)
    assert done.returncode == 0, done.stderr
    assert precious.read_text() == "keep me\n"
