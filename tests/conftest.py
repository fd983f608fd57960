"""For the whole session: no time limits on Hypothesis's examples (a busy machine is not
a defect: the targets are in ``benchmarks/``); the report cache off and, if a test turns it
on, kept in a temporary directory (never the user's), so that no test reads a report
another evaluated (``tests/test_cache.py`` turns it on where it tests it)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import settings

settings.register_profile("privspec", deadline=None)
settings.load_profile("privspec")


@pytest.fixture(autouse=True, scope="session")
def _no_report_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PRIVSPEC_CACHE_DIR", str(tmp_path_factory.mktemp("report-cache")))
        patch.setenv("PRIVSPEC_NO_CACHE", "1")
        yield
