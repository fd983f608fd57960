"""Everything a user sees cites papers and the project's own files, never documents the
repository does not ship (design notes, "seed" numbers of a reading list)."""

from __future__ import annotations

import re
from pathlib import Path

from privspec.cli.app import main

ROOT = Path(__file__).resolve().parent.parent
#: Names of documents that are not in the repository.
OUTSIDE = re.compile(r"seed 0\d\d|(?<!docs/)MATH\.md|PRODUCT\.md|REPORT-MOCKUP|STYLE\.md|"
                     r"\.\./shared")


def _user_visible() -> list[Path]:
    return [*(ROOT / "privspec" / "report" / "templates").rglob("*.j2"),
            ROOT / "schemas" / "privspec.schema.json", ROOT / "README.md",
            *(ROOT / "examples").rglob("*.yaml"), *(ROOT / "examples").rglob("*.md"),
            *(ROOT / "docs").rglob("*.md"), *(ROOT / "privspec").rglob("*.py")]


def test_no_file_a_user_reads_names_an_unshipped_document() -> None:
    found = [f"{path.relative_to(ROOT)}: {match.group(0)}"
             for path in _user_visible()
             for match in OUTSIDE.finditer(path.read_text(encoding="utf-8"))]
    assert not found, found


def test_the_documents_cited_are_shipped() -> None:
    for path in _user_visible():
        for cited in re.findall(r"docs/[a-z-]+\.md", path.read_text(encoding="utf-8")):
            assert (ROOT / cited).is_file(), f"{path.relative_to(ROOT)} cites {cited}"


def test_no_command_help_names_an_unshipped_document(capsys) -> None:  # type: ignore[no-untyped-def]
    for command in ("convert", "render", "check", "calibrate", "plot", "evaluate", "diff"):
        main([command, "--help"])
    assert not OUTSIDE.search(capsys.readouterr().out)


def test_version_names_the_numerical_stack(capsys) -> None:  # type: ignore[no-untyped-def]
    from importlib import metadata

    import privspec

    assert main(["--version"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"privspec {privspec.__version__}, dp-accounting "
                          f"{metadata.version('dp-accounting')}, numpy ")


def test_scope_is_printed_in_every_format_and_validated() -> None:
    import pytest

    from privspec.report.render import render_documents
    from privspec.spec.diagnostics import SpecError
    from privspec.spec.loader import load_spec, load_spec_text

    report = __import__("privspec").evaluate(load_spec(ROOT / "examples" /
                                                       "census-dhc-2020.privspec.yaml"))
    assert report.scope is not None and report.scope.trust_model == "central"
    for fmt in ("markdown", "latex", "html"):
        text = "".join(d.text for d in render_documents(report, fmt))
        assert "the total population of each state" in text
        assert "floating-point side channels" in text
    base = ("privspec: 1\ntitle: t\nunit: u\nneighbouring: add-or-remove\n"
            "mechanism: {gaussian: {sigma: 1}}\n")
    for scope, says in (("{trust_model: cloud}", "central"), ("{code: ftp://x.org/a}", "http"),
                        ("{covers: [everything]}", "training")):
        with pytest.raises(SpecError, match=says):
            load_spec_text(base + f"scope: {scope}\n", "s.yaml")
