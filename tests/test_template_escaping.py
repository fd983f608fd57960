"""Every value a built-in template prints passes a filter that makes it safe for the
template's output: an escaping filter of its format, or a number filter, or it is on
an explicit list of values privspec makes itself (macro names, labels, enumerations).
A new raw ``{{ report.title }}`` fails here.  Jinja's own parser finds the values.

``text/`` templates are exempt: they are plain text that every format escapes whole
(Markdown and HTML with ``esc``, LaTeX in ``render._latex_text``, numbers apart).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest
from jinja2 import nodes

from privspec.report.filters import NUMBER_FILTERS
from privspec.report.render import _environment

TEMPLATES = Path(__file__).resolve().parent.parent / "privspec" / "report" / "templates"
#: The filters that make any value safe in each format's output.
ESCAPING = {
    "markdown": {"esc", "code", "comment", "cell", "fenced", "paragraphs"},
    # risk, scope and gdp_gap render text/ templates for LaTeX (render._latex_text)
    "latex": {"esc", "comment", "paragraphs", "caveat", "risk", "scope", "gdp_gap"},
    "html": {"esc", "paragraphs"},
}
#: Filters whose output is a number privspec formats (or a δ as a lookup key).
NUMBERS = {*NUMBER_FILTERS, "deltakey"}
#: Filters that keep what they are given (safe when their input is).
KEEPING = {"trim"}
#: Values privspec makes itself, printed as they are.
PRIVSPEC_MADE = {
    "noun",  # the mechanism kind's noun ("training run")
    "p", "prefix",  # the LaTeX macro prefix: letters only (render._latex_macro_name)
    "label", "figlabel", "figure_label",  # LaTeX labels: ASCII letters, digits and '-'
    "report.neighbouring",  # one of three names (the model's Literal)
    "report.spec_sha256",  # hexadecimal
    "report.exact_accounting",  # one of two fixed sentences (Report.exact_accounting)
    "report.others",  # 'record', 'unit' or "unit's records" (spec.group.attacker_knows)
    "svg", "risk_svg", "audit_svg",  # the HTML page's figures, drawn by privspec.report.figures
    "files[]",  # a Markdown figure link: percent-encoded by render._link
}
#: Markdown that privspec built with these same filters before it reached the template
#: (privspec.workflows.diffing and pull_request, tested against hostile names by
#: tests/test_hostile_names.py), and counts.
PRIVSPEC_MARKDOWN = {
    "marker",  # the comment's own marker, <!-- privspec-action -->
    "hashes",  # a heading's "#"s
    "heading_note", "preface", "changes",  # Markdown made by diffing.markdown_from_diff
    "row.label",  # the diff table's own row names (μ, regret, ε at δ …)
    "s.problem",  # "invalid spec" or "cannot evaluate"
    "s.budget", "s.details",  # Markdown rendered from budget.md.j2 and diff.md.j2
    "over", "invalid",  # counts of sections
}
#: pgfplots coordinates and axis limits: numbers written by privspec.report.figures.
PRIVSPEC_MADE_PREFIXES = ("pgf.",)
_COUNTED = "privspec_counted"  # the sandbox's loop counter (privspec.report.sandbox)


@dataclass
class Scope:
    """What a template defines: macros, imported templates, names bound to safe values."""

    fmt: str
    macros: set[str] = field(default_factory=set)
    imports: set[str] = field(default_factory=set)
    safe: set[str] = field(default_factory=set)


def _dotted(node: nodes.Node) -> str | None:
    if isinstance(node, nodes.Name):
        return node.name
    if isinstance(node, nodes.Getattr):
        inner = _dotted(node.node)
        return None if inner is None else f"{inner}.{node.attr}"
    if isinstance(node, nodes.Getitem):
        inner = _dotted(node.node)
        return None if inner is None else f"{inner}[]"
    return None


def _safe(node: nodes.Node | None, scope: Scope) -> bool:
    """Whether the value of ``node`` may be printed as it is in ``scope.fmt``."""
    if node is None or isinstance(node, nodes.Const):
        return True
    if isinstance(node, nodes.Filter):
        if node.name == _COUNTED or node.name in KEEPING:
            return _safe(node.node, scope)
        return node.name in ESCAPING[scope.fmt] | NUMBERS or node.name == "length"
    if isinstance(node, nodes.CondExpr):
        return _safe(node.expr1, scope) and _safe(node.expr2, scope)
    if isinstance(node, nodes.Concat):
        return all(_safe(part, scope) for part in node.nodes)
    if isinstance(node, nodes.Call):  # a macro's output: its own values are checked
        if isinstance(node.node, nodes.Getattr) and node.node.attr in ("rstrip", "strip"):
            return _safe(node.node.node, scope)  # white space off a safe value
        callee = _dotted(node.node) or ""
        return callee in scope.macros or callee.split(".")[0] in scope.imports
    if isinstance(node, nodes.Sub | nodes.Add):  # arithmetic on counts
        return _count(node.left) and _count(node.right)
    if isinstance(node, nodes.Getitem) and isinstance(node.node, nodes.Dict):
        return all(isinstance(pair.value, nodes.Const) for pair in node.node.items)  # a word
    name = _dotted(node)
    return name is not None and (name in scope.safe or name in PRIVSPEC_MADE
                                 or (scope.fmt == "markdown" and name in PRIVSPEC_MARKDOWN)
                                 or name.startswith(PRIVSPEC_MADE_PREFIXES))


def _count(node: nodes.Node) -> bool:
    """Whether ``node`` is a count: a ``length``, a whole-number constant or a loop bound."""
    return ((isinstance(node, nodes.Filter) and node.name == "length")
            or (isinstance(node, nodes.Const) and isinstance(node.value, int))
            or _dotted(node) in ("listed",))


def _names(target: nodes.Node) -> set[str]:
    """The names an assignment or a loop binds."""
    found = [target] if isinstance(target, nodes.Name) else target.find_all(nodes.Name)
    return {name.name for name in found}


def raw_values(source: str, fmt: str, name: str = "<template>") -> list[str]:
    """The values ``source`` prints without making them safe for ``fmt``, located."""
    tree = _environment(fmt, None).parse(source, name)
    scope = Scope(fmt)
    scope.macros = {macro.name for macro in tree.find_all(nodes.Macro)}
    scope.imports = {str(imported.target) for imported in tree.find_all(nodes.Import)}
    for block in tree.find_all(nodes.AssignBlock):  # {% set x %}…{% endset %}: template text
        scope.safe |= _names(block.target)
    assigned = list(tree.find_all(nodes.Assign))
    scope.safe |= {name for assign in assigned if _safe(assign.node, scope)
                   for name in _names(assign.target)}
    scope.safe -= {name for assign in assigned if not _safe(assign.node, scope)
                   for name in _names(assign.target)}
    for loop in tree.find_all(nodes.For):
        if _safe(loop.iter, scope):
            scope.safe |= _names(loop.target)
    return [f"{name}:{node.lineno}: {_dotted(node) or type(node).__name__}"
            for output in tree.find_all(nodes.Output) for node in output.nodes
            if not isinstance(node, nodes.TemplateData) and not _safe(node, scope)]


def _templates() -> list[Path]:
    return sorted(path for path in TEMPLATES.rglob("*.j2")
                  if path.relative_to(TEMPLATES).parts[0] != "text")


@pytest.mark.parametrize("path", _templates(), ids=lambda p: str(p.relative_to(TEMPLATES)))
def test_every_printed_value_is_escaped_or_privspec_made(path: Path) -> None:
    fmt = path.relative_to(TEMPLATES).parts[0]
    assert raw_values(path.read_text(encoding="utf-8"), fmt, path.name) == []


@pytest.mark.parametrize(("fmt", "source"), [
    ("markdown", "{{ report.title }}"),
    ("markdown", "{{ report.title | capfirst }}"),
    ("markdown", "{% set t = report.title %}{{ t | trim }}"),
    ("markdown", "{% set t = report.title | esc %}{% set t = report.unit %}{{ t }}"),
    ("html", "{{ report.unit if x else report.title | esc }}"),
    ("html", "{{ report | scope }}"),
    ("latex", r"\input{((( macros_file )))}"),
    ("latex", "((( report.title | code )))"),
    ("latex", "((( report.title.upper() )))"),
])
def test_a_raw_value_is_found(fmt: str, source: str) -> None:
    assert raw_values(source, fmt) != []
