"""One error base class, and diagnostic codes that the README lists from the enum."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

import privspec
from privspec.errors import Code, EvaluationError, PrivspecError, codes_markdown
from privspec.report.render import RenderError
from privspec.spec.diagnostics import SpecError
from privspec.workflows.git import DiffError
from privspec.workflows.pull_request import ActionError

ROOT = Path(__file__).resolve().parent.parent
BLOCK = re.compile(r"<!-- diagnostic-codes -->\n(.*?)\n<!-- /diagnostic-codes -->", re.S)


def test_readme_lists_every_code() -> None:
    """Regenerate with ``PRIVSPEC_REGENERATE=1``."""
    readme = ROOT / "README.md"
    text = readme.read_text(encoding="utf-8")
    if os.environ.get("PRIVSPEC_REGENERATE") == "1":
        readme.write_text(BLOCK.sub(lambda _: "<!-- diagnostic-codes -->\n" + codes_markdown()
                                    + "\n<!-- /diagnostic-codes -->", text), encoding="utf-8")
        text = readme.read_text(encoding="utf-8")
    match = BLOCK.search(text)
    assert match is not None
    assert match.group(1) == codes_markdown()


def test_every_code_in_the_golden_diagnostics_is_listed() -> None:
    used = set()
    for expected in (ROOT / "tests" / "invalid").glob("*.expected"):
        used |= set(re.findall(r"\[([a-z]+/[a-z-]+)\]$", expected.read_text(encoding="utf-8"),
                               re.M))
    assert used and used <= {code.value for code in Code}


def test_errors_share_one_base_class() -> None:
    for error in (SpecError, EvaluationError, RenderError, DiffError, ActionError):
        assert issubclass(error, PrivspecError)


def test_an_invalid_dict_gets_the_loaders_diagnostics() -> None:
    with pytest.raises(SpecError) as caught:
        privspec.evaluate({"privspec": 1, "title": "t", "unit": "u",
                           "neighbouring": "add-or-remove",
                           "mechanism": {"gaussian": {"sigma": -1}}})
    (problem,) = caught.value.diagnostics
    assert problem.file == "<dict>" and problem.code == Code.SPEC_INVALID_VALUE
    assert problem.path == "mechanism.gaussian.sigma"
