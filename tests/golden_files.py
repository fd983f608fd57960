"""Golden-file comparison: ``PRIVSPEC_REGENERATE=1 pytest`` rewrites them."""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import pytest

REGENERATE = os.environ.get("PRIVSPEC_REGENERATE") == "1"


def assert_golden(path: Path, text: str, *, normalize: object = None) -> None:
    """Compare ``text`` with the file at ``path``; on mismatch fail with a unified diff.

    ``normalize`` (a ``str -> str`` function) is applied to both sides before
    comparing, for parts that legitimately vary (installed versions).
    """
    if REGENERATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="")
        return
    if not path.exists():
        pytest.fail(f"golden file {path} is missing; create it with PRIVSPEC_REGENERATE=1 pytest")
    expected = path.read_text(encoding="utf-8")
    fix = normalize if callable(normalize) else (lambda value: value)
    if fix(expected) == fix(text):
        return
    diff = "".join(difflib.unified_diff(
        fix(expected).splitlines(keepends=True), fix(text).splitlines(keepends=True),
        fromfile=f"{path} (golden)", tofile=f"{path} (rendered now)"))
    pytest.fail(f"{path} differs from the rendered output; if the change is intended, "
                f"regenerate with PRIVSPEC_REGENERATE=1 pytest\n{diff}", pytrace=False)
