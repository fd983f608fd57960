"""Golden diagnostics for invalid specs.

Every ``tests/invalid/*.privspec.yaml`` must fail with exactly the GCC-style
lines in the ``.expected`` file beside it, and ``privspec validate`` must exit 2.
Regenerate the golden files after an intended change of wording with::

    PRIVSPEC_REGENERATE=1 python -m pytest -q tests/test_invalid_golden.py

and review the diff before committing.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import pytest

from privspec.cli import main
from privspec.spec.diagnostics import SpecError, format_gcc
from privspec.spec.loader import load_spec

ROOT = Path(__file__).resolve().parent.parent
INVALID = sorted((ROOT / "tests" / "invalid").glob("*.privspec.yaml"))
REGENERATE = os.environ.get("PRIVSPEC_REGENERATE") == "1"


def _expected_path(spec: Path) -> Path:
    return spec.with_name(spec.name.removesuffix(".privspec.yaml") + ".expected")


def _diagnostic_lines(display: str) -> str:
    with pytest.raises(SpecError) as caught:
        load_spec(display)
    return format_gcc(caught.value.diagnostics) + "\n"


def _check(actual: str, expected_file: Path) -> None:
    if REGENERATE:
        expected_file.write_text(actual, encoding="utf-8")
        return
    assert expected_file.exists(), (
        f"{expected_file.name} is missing; create it with PRIVSPEC_REGENERATE=1")
    expected = expected_file.read_text(encoding="utf-8")
    if actual != expected:
        diff = "".join(difflib.unified_diff(
            expected.splitlines(keepends=True), actual.splitlines(keepends=True),
            fromfile=f"{expected_file.name} (expected)", tofile="actual"))
        pytest.fail(f"diagnostics changed (PRIVSPEC_REGENERATE=1 to accept):\n{diff}",
                    pytrace=False)


def test_there_are_enough_invalid_specs() -> None:
    assert len(INVALID) >= 15


@pytest.mark.parametrize("spec", INVALID, ids=[p.name.split(".")[0] for p in INVALID])
def test_invalid_spec_gives_expected_lines(spec: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    display = spec.relative_to(ROOT).as_posix()
    _check(_diagnostic_lines(display), _expected_path(spec))


@pytest.mark.parametrize("spec", INVALID, ids=[p.name.split(".")[0] for p in INVALID])
def test_validate_prints_the_same_lines_and_exits_2(
    spec: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    display = spec.relative_to(ROOT).as_posix()
    assert main(["validate", "--quiet", display]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    if not REGENERATE:
        assert captured.err == _expected_path(spec).read_text(encoding="utf-8")


def test_every_expected_file_has_a_spec() -> None:
    specs = {p.name.removesuffix(".privspec.yaml") for p in INVALID}
    expected = {p.name.removesuffix(".expected")
                for p in (ROOT / "tests" / "invalid").glob("*.expected")}
    assert expected <= specs, f"stale golden files: {sorted(expected - specs)}"
