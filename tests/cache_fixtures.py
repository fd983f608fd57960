"""Fixtures of the report-cache tests: the cache on, in a folder of the test's own, and
the specs the evaluator was called with."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from privspec.report import evaluation, store
from privspec.report.model import Report


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The cache on, in a directory of this test's own: where its entries are."""
    monkeypatch.setenv("PRIVSPEC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("PRIVSPEC_NO_CACHE", raising=False)
    monkeypatch.setattr(store, "_warned", False)
    return tmp_path / "cache" / "reports"


@pytest.fixture
def evaluations(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The specs the evaluator was called with (a cache hit calls it not)."""
    called: list[object] = []
    evaluate = evaluation.evaluate

    def counting(spec: Any, **kwargs: Any) -> Report:
        called.append(spec)
        return evaluate(spec, **kwargs)

    monkeypatch.setattr(evaluation, "evaluate", counting)
    return called
