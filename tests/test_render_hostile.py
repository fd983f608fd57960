"""User text from strangers (titles, descriptions, stage names, file names) stays text in
every format: no line of any output starts with a workflow command (``::error``), no
Markdown or HTML markup appears, and JSON stays valid JSON holding the same strings."""

from __future__ import annotations

import json
from html.parser import HTMLParser

import pytest
from markdown_it import MarkdownIt
from report_fixtures import FIXTURES

from privspec.report.model import Report
from privspec.report.render import FORMATS, VARIANTS, render

#: The registry record is YAML data, written by privspec.report.registry (not a template).
TARGETS = [(fmt, variant) for fmt in FORMATS for variant in VARIANTS[fmt] if fmt != "registry"]
FORGED = "::error file=README.md,line=1::forged"


def _hostile() -> Report:
    base = FIXTURES["special-characters"]()
    stages = [stage.model_copy(update={"name": f"{FORGED}\n{FORGED}",
                                       "description": f"\n{FORGED}"})
              for stage in base.mechanism.stages]
    return base.model_copy(update={
        "title": f"{FORGED}\n::add-mask::secret\r::stop-commands::x",
        "description": f"{FORGED}\n\n::add-mask::secret\n\n- a list\n\n+ another\n\n"
                       "1. ordered\n\n7) ordered\n\n---\n\n===\n\n<script>alert(1)</script>",
        "unit": f"one record\n{FORGED}",
        "spec_path": f"x\n{FORGED}\n.privspec.yaml",
        "mechanism": base.mechanism.model_copy(update={"summary": f"\n{FORGED}",
                                                       "stages": stages}),
    })


@pytest.mark.parametrize(("fmt", "variant"), TARGETS)
def test_no_line_starts_a_workflow_command(fmt: str, variant: str) -> None:
    text = render(_hostile(), fmt, variant=variant)
    assert "forged" in text
    assert not [line for line in text.splitlines() if line.lstrip().startswith("::")]


@pytest.mark.parametrize("variant", VARIANTS["markdown"])
def test_paragraphs_start_no_markdown_block(variant: str) -> None:
    """A description's paragraph that looks like a list, a rule or a heading's underline
    prints as the same characters, in a plain paragraph."""
    report = _hostile()
    tokens = MarkdownIt("commonmark").enable("table").parse(render(report, "markdown",
                                                                   variant=variant))
    opened = [token.type for token in tokens]
    assert "hr" not in opened and "html_block" not in opened
    inside = [next(t.content for t in tokens[index:] if t.type == "inline")
              for index, kind in enumerate(opened) if kind in ("list_item_open", "heading_open")]
    assert not [text for text in inside if "list" in text or "ordered" in text
                or "another" in text or text == "==="]
    texts = [token.content for token in tokens if token.type == "inline"]
    for paragraph in ("- a list", "+ another", "1. ordered", "7) ordered", "---", "===",
                      "::add-mask::secret"):
        # (the same characters a reader sees: word joiners are invisible)
        assert any(MarkdownIt().renderInline(text).strip().replace("\u2060", "") == paragraph
                   for text in texts) == (variant == "report"), paragraph


def test_html_escapes_every_user_string() -> None:
    report = _hostile()
    page = render(report, "html")
    tags: list[str] = []

    class Tags(HTMLParser):
        def handle_starttag(self, tag: str, attrs: object) -> None:
            tags.append(tag)

    Tags().feed(page)
    assert "script" not in tags
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


@pytest.mark.parametrize(("fmt", "variant"), [t for t in TARGETS if t[0] != "json"])
def test_no_terminal_escape_or_bidi_override_is_printed(fmt: str, variant: str) -> None:
    """Printed to a terminal, a report carries no escape sequence (ESC, BEL) and no
    bidirectional override that would make a name read differently."""
    base = _hostile()
    report = base.model_copy(update={"title": "a\x1b]0;owned\x07\x1b[2Jb\u202egnp.exe",
                                      "spec_path": "x\x1b[31m\u202e.privspec.yaml"})
    text = render(report, fmt, variant=variant, command=f"privspec render {report.spec_path}")
    assert not {"\x1b", "\x07", "\u202e"} & set(text)


def test_json_stays_json_with_the_same_strings() -> None:
    report = _hostile()
    data = json.loads(render(report, "json"))
    assert data["title"] == report.title
    assert data["description"] == report.description
    assert data["spec_path"] == report.spec_path
