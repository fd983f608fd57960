"""The report cache (``privspec.report.cache``): the same bytes with and without it, never
trusting a damaged or foreign entry, concurrent writers, bypasses, ``privspec cache``,
the size bound, and a cache directory that cannot be written."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cache_fixtures import evaluations as evaluations  # fixtures
from cache_fixtures import folder as folder

import privspec
from privspec.cli import main
from privspec.report import cache, figures, store
from privspec.report.model import Report
from privspec.report.render import FORMATS, render

ROOT = Path(__file__).resolve().parent.parent
CIFAR = str(ROOT / "examples" / "cifar10-dpsgd-eps8.privspec.yaml")


def _spec(scale: float = 1.0, **accounting: float) -> dict[str, Any]:
    data: dict[str, Any] = {"privspec": 1, "title": "Counts", "unit": "one person",
                            "neighbouring": "add-or-remove",
                            "mechanism": {"laplace": {"scale": scale, "sensitivity": 1}}}
    if accounting:
        data["accounting"] = accounting
    return data


def _entries(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.entry")) if folder.exists() else []


def _outputs(report: Report) -> dict[str, bytes]:
    rendered = {fmt: render(report, fmt).encode("utf-8") for fmt in FORMATS}
    if figures.available():
        for form in ("svg", "png"):
            rendered[form] = figures.figure_bytes(report, form)
            rendered[f"risk-{form}"] = figures.risk_figure_bytes(report, form)
    return rendered


def test_a_report_read_from_the_cache_renders_to_the_same_bytes(
        folder: Path, evaluations: list[object]) -> None:
    computed = privspec.evaluate(CIFAR, cache=False)
    first = privspec.evaluate(CIFAR)  # evaluated, kept
    second = privspec.evaluate(CIFAR)  # read
    assert len(evaluations) == 2
    assert second == computed  # every field, the caveats' values too
    assert second.warnings and all(w.values == c.values
                                   for w, c in zip(second.warnings, computed.warnings, strict=True))
    expected = _outputs(computed)
    assert _outputs(first) == expected  # figures drawn, then kept
    assert _outputs(second) == expected  # read from the cache


def test_render_writes_the_same_files_from_the_cache(
        folder: Path, tmp_path: Path, evaluations: list[object]) -> None:
    written = []
    for _ in ("evaluated", "read"):  # into the same directory: the command is printed
        assert main(["render", CIFAR, "-f", "markdown,latex,html,json,registry",
                     "--output-dir", str(tmp_path / "out")]) == 0
        written.append({path.name: path.read_bytes() for path in (tmp_path / "out").iterdir()})
        for path in (tmp_path / "out").iterdir():
            path.unlink()
    assert len(evaluations) == 1
    assert written[0] == written[1] and len(written[0]) >= 5


def test_spec_path_is_filled_in_not_stored(folder: Path, tmp_path: Path,
                                           evaluations: list[object]) -> None:
    text = json.dumps(_spec())
    one, two = tmp_path / "one.privspec.yaml", tmp_path / "two.privspec.yaml"
    one.write_text(text, encoding="utf-8")
    two.write_text("# a comment does not change the spec\n" + text, encoding="utf-8")
    assert privspec.evaluate(str(one)).spec_path == str(one)
    assert privspec.evaluate(str(two)).spec_path == str(two)
    assert privspec.evaluate(_spec()).spec_path is None
    assert len(evaluations) == 1
    (entry,) = _entries(folder)
    assert b"one.privspec" not in entry.read_bytes()


def test_what_changes_a_figure_changes_the_key(folder: Path, evaluations: list[object]) -> None:
    privspec.evaluate(_spec())
    privspec.evaluate(_spec(), memory_budget=2.0)  # a budget in force
    privspec.evaluate(_spec(2.0))  # the mechanism
    privspec.evaluate(_spec(discretization=1e-4))  # written (the default: not chosen)
    assert len(evaluations) == len(_entries(folder)) == 4
    privspec.evaluate(_spec(), memory_budget=2.0)
    privspec.evaluate(_spec(), memory_budget=None)  # the same as none given
    assert len(evaluations) == 4


@pytest.mark.parametrize("damage", [
    lambda data: data[: len(data) // 2],  # truncated
    lambda data: re.sub(rb'"advantage":[^,]+', b'"advantage":0.5', data),  # a figure: the checksum
    lambda data: b"not json\n" + data.partition(b"\n")[2],
    lambda data: data.replace(b'"format": 1', b'"format": 0'),  # another layout
    lambda data: b"",
])
def test_a_damaged_entry_is_evaluated_again_and_replaced(
        folder: Path, evaluations: list[object], damage: Callable[[bytes], bytes]) -> None:
    expected = privspec.evaluate(_spec())
    (entry,) = _entries(folder)
    good = entry.read_bytes()
    entry.write_bytes(damage(good))
    assert privspec.evaluate(_spec()) == expected
    assert len(evaluations) == 2
    assert entry.read_bytes() == good


def test_a_foreign_entry_under_the_right_name_is_not_trusted(
        folder: Path, evaluations: list[object]) -> None:
    wanted = privspec.evaluate(_spec(1.0))
    (mine,) = _entries(folder)
    other = privspec.evaluate(_spec(2.0))
    (theirs,) = set(_entries(folder)) - {mine}
    assert mine.exists() and theirs.exists()
    mine.write_bytes(theirs.read_bytes())  # another spec's entry, intact
    assert privspec.evaluate(_spec(1.0)) == wanted != other
    # An entry naming this key, with a right checksum, that is not a report.
    body = json.dumps({"title": "forged"}).encode()
    header = {"format": store.ENTRY_FORMAT, "key": mine.stem,
              "sha256": hashlib.sha256(body).hexdigest()}
    mine.write_bytes(json.dumps(header).encode() + b"\n" + body)
    assert privspec.evaluate(_spec(1.0)) == wanted
    assert len(evaluations) == 4


def test_two_concurrent_renders_both_succeed_and_leave_a_valid_entry(
        folder: Path, tmp_path: Path) -> None:
    (tmp_path / "spec.privspec.yaml").write_text(json.dumps(_spec()), encoding="utf-8")
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    runs = [subprocess.Popen([sys.executable, "-m", "privspec.cli", "render", "spec.privspec.yaml",
                              "-f", "json", "-o", f"{name}.json"], cwd=tmp_path,
                             env=environment, stderr=subprocess.PIPE)
            for name in ("a", "b")]
    for run in runs:
        assert run.wait(timeout=300) == 0, run.stderr.read() if run.stderr else ""
        if run.stderr:
            run.stderr.close()
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    (entry,) = _entries(folder)
    assert not [p for p in folder.iterdir() if p.name.startswith(".")]  # no temporary left
    assert cache.load(entry.stem, None) == privspec.evaluate(_spec(), cache=False)


def test_no_cache_and_the_environment_bypass_it(
        folder: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        evaluations: list[object]) -> None:
    spec = tmp_path / "spec.privspec.yaml"
    spec.write_text(json.dumps(_spec()), encoding="utf-8")
    privspec.evaluate(_spec(), cache=False)
    assert main(["--no-cache", "evaluate", str(spec)]) == 0
    monkeypatch.setenv("PRIVSPEC_NO_CACHE", "1")
    privspec.evaluate(_spec())
    assert main(["evaluate", str(spec)]) == 0
    assert _entries(folder) == [] and len(evaluations) == 4
    monkeypatch.setenv("PRIVSPEC_NO_CACHE", "0")
    assert main(["evaluate", str(spec)]) == 0  # kept
    assert main(["--no-cache", "evaluate", str(spec)]) == 0  # not read
    assert main(["evaluate", str(spec)]) == 0  # read
    assert len(_entries(folder)) == 1 and len(evaluations) == 6


def test_cache_info_and_clear(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    privspec.evaluate(_spec(1.0))
    privspec.evaluate(_spec(2.0))
    size = sum(p.stat().st_size for p in _entries(folder))
    (folder / "notes.txt").write_text("not the cache's", encoding="utf-8")
    capsys.readouterr()
    assert main(["cache", "info"]) == 0
    shown = capsys.readouterr().out
    assert f"directory: {folder}\n" in shown and "reports: 2\n" in shown
    assert f"size: {size / 2**20:.1f} MiB" in shown
    assert main(["cache", "clear"]) == 0
    assert capsys.readouterr().out == f"removed 2 reports ({size / 2**20:.1f} MiB) from {folder}\n"
    assert _entries(folder) == [] and (folder / "notes.txt").exists()
    assert main(["cache", "info"]) == 0
    assert "reports: 0\n" in capsys.readouterr().out


def test_the_least_recently_used_entries_go_beyond_the_bound(
        folder: Path, monkeypatch: pytest.MonkeyPatch, evaluations: list[object]) -> None:
    privspec.evaluate(_spec(1.0))
    (first,) = _entries(folder)
    monkeypatch.setattr(store, "MAX_BYTES", int(first.stat().st_size * 2.5))  # two entries
    privspec.evaluate(_spec(2.0))
    (second,) = set(_entries(folder)) - {first}
    os.utime(first, (1, 1))
    os.utime(second, (2, 2))
    privspec.evaluate(_spec(1.0))  # read: the first is now the most recently used
    privspec.evaluate(_spec(3.0))  # kept; the second, least recently used, goes
    assert len(evaluations) == 3
    assert first.exists() and not second.exists() and len(_entries(folder)) == 2


def test_a_cache_that_cannot_be_written_never_fails_a_command(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        evaluations: list[object]) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("", encoding="utf-8")
    monkeypatch.setenv("PRIVSPEC_CACHE_DIR", str(blocked))  # its reports/ cannot be made
    monkeypatch.delenv("PRIVSPEC_NO_CACHE")
    monkeypatch.setattr(store, "_warned", False)
    expected = privspec.evaluate(_spec(), cache=False)
    assert privspec.evaluate(_spec()) == expected
    assert privspec.evaluate(_spec(2.0)).gdp.mu is not None
    warning = capsys.readouterr().err
    assert warning.count("\n") == 1 and warning.startswith("privspec: warning: cannot keep")
    assert len(evaluations) == 3


def test_without_a_home_directory_the_cache_is_never_a_relative_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("PRIVSPEC_CACHE_DIR", "XDG_CACHE_HOME", "PRIVSPEC_NO_CACHE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(os.path, "expanduser", lambda path: path)  # "~" stays "~"
    monkeypatch.setattr(store, "_warned", False)
    monkeypatch.chdir(tmp_path)
    assert privspec.evaluate(_spec()).gdp.mu is not None
    assert "PRIVSPEC_CACHE_DIR" in capsys.readouterr().err
    assert main(["cache", "info"]) == 2
    assert capsys.readouterr().err == ("privspec cache info: error: no home directory: set "
                                       "PRIVSPEC_CACHE_DIR\n")
    assert list(tmp_path.iterdir()) == []
