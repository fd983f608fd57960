"""The examples' reports, each evaluated once per test process and shared by every test
file that reads them (reports are frozen, so sharing cannot leak state)."""

from __future__ import annotations

import functools
from pathlib import Path

from privspec.report.model import Report

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@functools.cache
def example_report(stem: str) -> Report:
    """The report of ``examples/<stem>.privspec.yaml`` as ``privspec render`` makes it
    from the repository's root."""
    from privspec.report.cache import evaluate  # (with the group table, as render's)

    return evaluate(EXAMPLES / f"{stem}.privspec.yaml",
                    spec_path=f"examples/{stem}.privspec.yaml")
