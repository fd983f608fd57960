"""Rendering a :class:`~privspec.report.model.Report` as Markdown, LaTeX, HTML or JSON.

Every format is a pure function of the report: this module only arranges
values the evaluator computed.  Numbers go through the filters of
:mod:`privspec.report.formatting` (conservative rounding, one place); user strings go
through an explicit escape filter per format (``esc``), since autoescaping is
off.  Templates are Jinja2 with ``StrictUndefined`` (a missing value is an
error, never a blank), rendered in a sandbox with limits (:mod:`privspec.report.sandbox`;
any failure is one :class:`RenderError`), and ship in the package under
``privspec/report/templates/``; a user directory with the same layout overrides them.

LaTeX templates use delimiters that do not collide with TeX: ``((* block *))``,
``((( expression )))`` and ``((= comment =))`` (nbconvert's convention).

Formats and variants (``variant=None`` is the first one listed):

* ``markdown``: ``report`` (a full report, GitHub and Hugging Face flavoured)
  and ``model-card`` (a ``## Privacy`` section sized for a model card);
* ``latex``: ``fragment`` (two files: macros ``\\newcommand``'s and a fragment
  to ``\\input``, needing ``booktabs``) and ``standalone`` (one document that
  compiles with pdflatex);
* ``html``: ``report``, one self-contained page (inline CSS and SVG figure, no
  scripts, nothing fetched from the network);
* ``json``: ``report``, exactly ``Report.model_dump_json(indent=2)`` plus a
  newline;
* ``registry``: ``report``, a draft record for the OpenDP Deployments Registry
  (:mod:`privspec.report.registry`).

Figures (:mod:`privspec.report.figures`): LaTeX draws the trade-off curve natively with
pgfplots from the report's curve values; HTML inlines the SVG figure when
matplotlib is installed (a note in the page otherwise); Markdown links a figure
file when told where it is (``figure=``, see :func:`figure_paths`), which the CLI
writes beside the report.

A user template directory may add variants: ``markdown/<name>.md.j2`` and
``latex/<name>.tex.j2`` render as one document each.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any, Literal

import jinja2

from privspec.errors import PrivspecError
from privspec.report import formatting
from privspec.report.escaping import (
    escape_latex,
    latex_comment,
    markdown_code,
    markdown_fenced,
    one_line,
)
from privspec.report.filters import NUMBER_FILTERS, filters
from privspec.report.naming import ascii_folded, slug_for, spec_stem
from privspec.report.sandbox import (
    MAX_CHARACTERS,
    MAX_USER_CHARACTERS,
    LimitedSandbox,
    TemplateLimitError,
    limited_filters,
)

if TYPE_CHECKING:  # (the model's display renders it: no import back at run time)
    from privspec.report.model import Caveat, Report, RiskRow, TradeoffRow

Format = Literal["markdown", "latex", "html", "json", "registry"]
FORMATS: tuple[Format, ...] = ("markdown", "latex", "html", "json", "registry")
#: Built-in variants of each format; the first is the default.
VARIANTS: dict[str, tuple[str, ...]] = {
    "markdown": ("report", "model-card"),
    "latex": ("fragment", "standalone"),
    "html": ("report",),
    "json": ("report",),
    "registry": ("report",),
}
_EXTENSIONS = {"markdown": ".md", "latex": ".tex", "html": ".html", "json": ".json",
               "registry": ".registry.yaml"}
_STYLES: dict[str, formatting.Style] = {"markdown": "unicode", "latex": "latex",
                                        "html": "unicode"}
#: What follows a report's file stem in its figure files' names (``.svg`` and ``.png``).
FIGURE_SUFFIX = "-tradeoff"
#: What follows a report's file stem in its risk figure's names (``.svg`` and ``.png``).
RISK_FIGURE_SUFFIX = "-risk"
#: What follows a report's file stem in its audit figure's names (``.svg`` and ``.png``).
AUDIT_FIGURE_SUFFIX = "-audit"
#: What the report calls the thing it describes, by the root mechanism's kind.
_DIGIT_WORDS = ("Zero", "One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine")


class RenderError(PrivspecError):
    """A report could not be rendered (unknown format or variant, a broken template)."""


@dataclass(frozen=True)
class Document:
    """One rendered file: ``part`` names it, ``suffix`` follows the file stem."""

    part: str
    suffix: str
    text: str


def _ascii_words(text: str) -> list[str]:
    return re.findall(r"[A-Za-z]+|[0-9]", ascii_folded(text))


def macro_prefix_for(report: Report) -> str:
    r"""The LaTeX macro prefix of a report: ``\privspec`` + a CamelCase name.

    The name comes from the spec file's stem (or the title when the report has
    no file), digits spelled out because TeX macro names are letters only:
    ``cifar10-eps8.privspec.yaml`` gives ``privspecCifarOneZeroEpsEight``.  Two
    reports in one paper thus get different macros; ``\newcommand`` makes a
    remaining clash a compile error, never a silent redefinition.
    """
    base = spec_stem(report.spec_path) if report.spec_path else report.title
    words = _ascii_words(base)
    name = "".join(
        _DIGIT_WORDS[int(word)] if word.isdigit() else word[:1].upper() + word[1:].lower()
        for word in words
    )
    return "privspec" + (name or "Report")


def label_for(report: Report) -> str:
    """A LaTeX label key for the report's table: ``tab:privspec-<slug>``."""
    return f"tab:privspec-{slug_for(report)}"


def figure_label_for(report: Report) -> str:
    """The LaTeX label of the report's figure: ``fig:privspec-<slug>``."""
    return "fig:" + label_for(report).removeprefix("tab:")


def figure_paths(document_path: str | os.PathLike[str], *, audit: bool = False
                 ) -> tuple[str, ...]:
    """The figure files beside a Markdown report, named after its stem: the trade-off
    curve's SVG and PNG, then the risk figure's (then, with ``audit``, the audit
    figure's): ``out/cifar10.md`` -> (``out/cifar10-tradeoff.svg``, ``….png``,
    ``out/cifar10-risk.svg``, ``….png``)."""
    path = os.fspath(document_path)
    stem = os.path.splitext(path)[0]
    if stem.endswith("-model-card"):
        stem = stem.removesuffix("-model-card")
    suffixes = (FIGURE_SUFFIX, RISK_FIGURE_SUFFIX, *((AUDIT_FIGURE_SUFFIX,) if audit else ()))
    return tuple(stem + suffix + extension for suffix in suffixes
                 for extension in (".svg", ".png"))


def _link(path: str) -> str:
    """A relative path as a Markdown link destination (percent-encoded, '/' kept)."""
    from urllib.parse import quote

    return quote(PurePath(path).as_posix(), safe="/")


def default_command(report: Report, fmt: str, variant: str | None = None,
                    options: Sequence[str] = (), global_options: Sequence[str] = ()
                    ) -> str | None:
    """The command that re-renders this document, run in the spec file's folder, when
    the report names its spec file: ``privspec GLOBAL_OPTIONS render NAME --format F
    OPTIONS``, with the spec's file name alone (however its path was typed) and every
    word shell-quoted; paths in ``options`` (``-o FILE``) are the caller's to give
    relative to that folder."""
    if not report.spec_path:
        return None
    target = fmt if not variant or variant == VARIANTS.get(fmt, (None,))[0] else f"{fmt}:{variant}"
    return shlex.join(["privspec", *global_options, "render", PurePath(report.spec_path).name,
                       "--format", target, *options])


def delta_key(delta: float) -> str:
    """A δ as the key of the LaTeX ε(δ) lookup: ``1e-05`` -> ``1e-5`` (exact, shortest)."""
    return formatting.format_number(delta, "nearest", "plain", digits=17)




def _latex_macro_name(text: str) -> str:
    if not re.fullmatch(r"[A-Za-z]+", text):
        raise RenderError(f"a LaTeX macro prefix is letters only, got {text!r}")
    return text


def _environment(fmt: str, template_dir: str | os.PathLike[str] | None) -> LimitedSandbox:
    loaders: list[jinja2.BaseLoader] = []
    if template_dir is not None:
        directory = Path(template_dir)
        if not directory.is_dir():
            raise RenderError(f"template directory {os.fspath(directory)!r} does not exist")
        loaders.append(jinja2.FileSystemLoader(os.fspath(directory)))
    loaders.append(jinja2.PackageLoader("privspec.report", "templates"))
    options: dict[str, Any] = {
        "loader": jinja2.ChoiceLoader(loaders),
        "undefined": jinja2.StrictUndefined,
        "autoescape": False,
        "keep_trailing_newline": True,
        "trim_blocks": True,
        "lstrip_blocks": True,
    }
    if fmt == "latex":
        options.update(
            block_start_string="((*",
            block_end_string="*))",
            variable_start_string="(((",
            variable_end_string=")))",
            comment_start_string="((=",
            comment_end_string="=))",
            line_statement_prefix=None,
        )
    environment = LimitedSandbox(
        MAX_CHARACTERS if template_dir is None else MAX_USER_CHARACTERS, **options)
    environment.filters.update(filters(_STYLES[fmt]))
    if fmt == "html":
        environment.filters["esc"] = _escape_html
        environment.filters["paragraphs"] = _html_paragraphs
    environment.filters["code"] = markdown_code
    environment.filters["comment"] = latex_comment if fmt == "latex" else one_line
    environment.filters["deltakey"] = delta_key
    if fmt == "latex":
        environment.filters["caveat"] = latex_caveat
    environment.filters["risk"] = lambda row, report, part="sentence": risk_text(
        row, report, part, fmt)
    environment.filters["scope"] = lambda report: scope_text(report, fmt)
    environment.filters["target_parts"] = target_parts
    environment.filters["gdp_gap"] = lambda report: gap_text(report, fmt)
    limited_filters(environment)
    return environment


def caveat_template(code: str) -> str:
    """The template that words the caveat ``code``: ``a/b`` -> ``text/caveats/a-b.txt.j2``."""
    return f"text/caveats/{code.replace('/', '-')}.txt.j2"


_SLOT = re.compile("\ue000([0-9]+)\ue001")


def latex_caveat(warning: Caveat) -> str:
    """A caveat in LaTeX: its sentence template rendered with LaTeX's number notation and
    its words escaped, so that it reads like the rest of the document.  A caveat without
    its numbers (a report read back from JSON) or without a template prints its message."""
    if not warning.values:
        return escape_latex(warning.message)
    try:
        return _latex_text(caveat_template(warning.code), warning.values)
    except jinja2.TemplateNotFound:
        return escape_latex(warning.message)


def _latex_text(template: str, values: Mapping[str, Any]) -> str:
    """A plain-text template (``text/…``) rendered for LaTeX: numbers in LaTeX's notation
    (the filters' LaTeX style), every other character escaped."""
    environment = _environment("markdown", None)
    notation: list[str] = []
    latex_filters = filters("latex")

    def slot(name: str) -> Any:
        def kept(*args: Any, **kwargs: Any) -> str:
            notation.append(str(latex_filters[name](*args, **kwargs)))
            return f"\ue000{len(notation) - 1}\ue001"

        return kept

    environment.filters.update({name: slot(name) for name in NUMBER_FILTERS})
    text = environment.get_template(template).render(values)
    pieces = _SLOT.split(" ".join(text.split()))
    return "".join(notation[int(piece)] if index % 2 else _escape_latex_keeping_spaces(piece)
                   for index, piece in enumerate(pieces))


def text_for(template: str, values: Mapping[str, Any], fmt: str) -> str:
    """A plain-text template (``text/…``) for ``fmt``: plain text for Markdown and HTML
    (their templates escape it), LaTeX for LaTeX."""
    if fmt == "latex":
        return _latex_text(template, values)
    text = _environment("markdown", None).get_template(template).render(values)
    return " ".join(text.split())


def risk_text(row: RiskRow, report: Report, part: str, fmt: str) -> str:
    """A risk row's name or sentence (``text/risk.txt.j2``)."""
    return text_for("text/risk.txt.j2", {**row.model_dump(), "part": part, "unit": report.unit,
                                         "records": report.records_per_unit,
                                         "unit_level": report.unit_level,
                                         "relation": report.neighbouring}, fmt)


def target_parts(target: str) -> tuple[str, float | None, float]:
    """A calibration target as ``privspec calibrate`` writes it (``tpr@0.001=0.01``) in
    parts, for words: (metric, the number after ``@`` or None, the value)."""
    name, _, value = target.partition("=")
    metric, _, at = name.partition("@")
    return metric, float(at) if at else None, float(value)


def gap_values(rows: Sequence[TradeoffRow]) -> dict[str, float]:
    """Where G_μ is loosest among the table's FPRs, for ``text/gdp-gap.txt.j2``: the α at
    which G_μ's TPR is the largest multiple of the exact curve's (the ratio, rounded down:
    how many times more true positives μ allows there than any attack achieves) and
    that ratio at the table's lowest α; the ratio 1 alone where G_μ is nowhere above the
    curve at them."""
    above = [row for row in rows if row.tpr_gdp is not None and row.tpr_gdp > row.tpr > 0]
    if not above:
        return {"ratio": 1.0}

    def ratio(row: TradeoffRow) -> float:
        assert row.tpr_gdp is not None
        return formatting.round_float(row.tpr_gdp / row.tpr, "down")

    loosest, lowest = max(above, key=ratio), min(rows, key=lambda row: row.alpha)
    return {"alpha": loosest.alpha, "ratio": ratio(loosest), "lowest_alpha": lowest.alpha,
            "lowest_ratio": ratio(lowest) if lowest in above else 1.0}


def gap_text(report: Report, fmt: str) -> str:
    """Where μ overstates the risk most (``text/gdp-gap.txt.j2``)."""
    return text_for("text/gdp-gap.txt.j2", gap_values(report.tradeoff), fmt)


def scope_text(report: Report, fmt: str) -> str:
    """What the guarantee covers, and what no privacy number does (``text/scope.txt.j2``)."""
    fields = report.scope.model_dump() if report.scope is not None else {
        name: None for name in ("released", "covers", "trust_model", "releases",
                                "unprotected", "code")}
    calibrated = None if report.calibrated is None else {
        **report.calibrated.model_dump(), "value": f"{report.calibrated.value:.12g}"}
    return text_for("text/scope.txt.j2", {**fields, "calibrated": calibrated}, fmt)


def _escape_latex_keeping_spaces(text: str) -> str:
    """:func:`escape_latex` of a piece of a sentence, keeping the spaces at its ends."""
    lead = " " if text[:1].isspace() else ""
    trail = " " if text[-1:].isspace() and text.strip() else ""
    return lead + escape_latex(text, starts_line=False) + trail


def render_markdown(template: str, **context: Any) -> str:
    """A built-in Markdown template other than a report's (a pull-request comment), with
    the Markdown filters plus ``cell`` (a table cell) and ``fenced`` (a code block)."""
    environment = _environment("markdown", None)
    environment.filters["cell"] = lambda text: str(text).replace("|", "\\|")
    environment.filters["fenced"] = markdown_fenced
    return environment.get_template(template).render(**context)


def _escape_html(text: str) -> str:
    """``text`` as HTML text or attribute value, on one line."""
    import html

    return html.escape(one_line(text), quote=True)


def _html_paragraphs(text: str) -> list[str]:
    chunks = re.split(r"\n\s*\n", text)
    return [_escape_html(" ".join(chunk.split())) for chunk in chunks if chunk.strip()]


def _template_exists(environment: jinja2.Environment, name: str) -> bool:
    try:
        environment.get_template(name)
    except jinja2.TemplateNotFound:
        return False
    return True


def _plan(fmt: str, variant: str) -> list[tuple[str, str, str]]:
    """(part, template name, file suffix) of each document of a format's variant."""
    extension = _EXTENSIONS[fmt]
    if fmt == "latex" and variant == "fragment":
        return [
            ("macros", "latex/macros.tex.j2", "-macros.tex"),
            ("fragment", "latex/fragment.tex.j2", ".tex"),
        ]
    default = VARIANTS[fmt][0]
    suffix = extension if variant == default else f"-{variant}{extension}"
    return [(variant, f"{fmt}/{variant}{extension}.j2", suffix)]


def render_documents(
    report: Report,
    fmt: str,
    *,
    variant: str | None = None,
    template_dir: str | os.PathLike[str] | None = None,
    command: str | None = None,
    macro_prefix: str | None = None,
    figure: tuple[str, ...] | None = None,
    basename: str | None = None,
) -> list[Document]:
    """Every file of ``report`` in format ``fmt`` (LaTeX's fragment variant has two).

    ``command`` is printed in the reproducibility section (default: ``privspec
    render <the spec's file name> --format <fmt>``, run in the spec's folder);
    ``macro_prefix`` overrides the LaTeX macro prefix (letters only) derived by
    :func:`macro_prefix_for`.
    ``figure`` holds the figure files relative to the Markdown document, as
    :func:`figure_paths` names them (the trade-off curve's SVG and PNG, then the risk
    figure's), which it then shows as SVG and links as PNG (nothing by default:
    text printed to a terminal has no place for a figure).  ``basename`` is the file
    name the documents are written under, without suffix (default: the spec's stem):
    the LaTeX fragment names its macros file from it.
    Raises :class:`RenderError` for an unknown format or variant or a template
    that fails.
    """
    if fmt not in FORMATS:
        raise RenderError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    chosen = variant or VARIANTS[fmt][0]
    if fmt in ("json", "registry"):
        if chosen != "report":
            raise RenderError(f"the {fmt} format has no variants")
        if fmt == "registry":
            from privspec.report.registry import render_registry

            return [Document("report", _EXTENSIONS[fmt], render_registry(report))]
        return [Document("report", ".json", report.model_dump_json(indent=2) + "\n")]
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", chosen):
        raise RenderError(f"a variant name is lower-case letters, digits and '-', got {chosen!r}")
    environment = _environment(fmt, template_dir)
    plan = _plan(fmt, chosen)
    if chosen not in VARIANTS[fmt] and not _template_exists(environment, plan[0][1]):
        known = ", ".join(VARIANTS[fmt])
        raise RenderError(f"unknown {fmt} variant {chosen!r}; built in: {known} "
                          f"(or a template {plan[0][1]} in --template-dir)")
    context = dict(_context(report, fmt, chosen, command, macro_prefix, basename))
    context.update(_figure_context(report, fmt, figure))
    documents = []
    for part, name, suffix in plan:
        documents.append(Document(part, suffix, _rendered(environment, name, context)))
    return documents


def render(
    report: Report,
    fmt: str,
    *,
    variant: str | None = None,
    template_dir: str | os.PathLike[str] | None = None,
    command: str | None = None,
    macro_prefix: str | None = None,
    figure: tuple[str, ...] | None = None,
) -> str:
    """``report`` rendered as one text (LaTeX's macros come before its fragment)."""
    documents = render_documents(report, fmt, variant=variant, template_dir=template_dir,
                                 command=command, macro_prefix=macro_prefix, figure=figure)
    return "\n".join(document.text for document in documents)


def render_table(
    reports: Sequence[Report],
    fmt: str,
    *,
    template_dir: str | os.PathLike[str] | None = None,
) -> str:
    """A before/after table of several reports (e.g. a paper's rows): the published
    claim, privspec's ε at its δ, μ, regret and the verdict, one row per report."""
    if fmt == "json":
        rows = [
            {"title": r.title, "label": label, "spec_path": r.spec_path,
             "published": None if r.published is None else r.published.model_dump(),
             "mu": r.gdp.mu, "regret": r.gdp.regret, "tier": r.gdp.tier,
             "epsilons": [e.model_dump() for e in r.epsilons]}
            for r, label in zip(reports, row_labels(reports), strict=True)
        ]
        return json.dumps(rows, indent=2, ensure_ascii=False) + "\n"
    if fmt not in ("markdown", "latex"):
        raise RenderError(f"unknown format {fmt!r}; choose one of markdown, latex, json")
    environment = _environment(fmt, template_dir)
    return _rendered(environment, f"{fmt}/table{_EXTENSIONS[fmt]}.j2",
                     {"reports": list(reports), "labels": row_labels(reports)})


def _rendered(environment: LimitedSandbox, name: str, context: Mapping[str, Any]) -> str:
    """The template ``name`` rendered within the sandbox's limits; any failure of the
    template (an error, a limit, a runaway recursion) is one :class:`RenderError`."""
    environment.start()
    pieces: list[str] = []
    size = 0
    try:
        for piece in environment.get_template(name).generate(context):
            size += len(piece)
            if size > MAX_CHARACTERS:
                raise TemplateLimitError(f"an output longer than {MAX_CHARACTERS:,} characters")
            pieces.append(piece)
    except Exception as error:  # a stranger's template: every failure is one line
        raise RenderError(_template_problem(name, error)) from error
    return "".join(pieces)


def row_labels(reports: Sequence[Report]) -> list[str]:
    """What names each report's row in a table: its title, followed by its spec file's
    name when another row has the same title (the path as given when the names are the
    same too; the row's number without a file), so that no two rows read alike."""
    titles = [report.title for report in reports]
    names = [PurePath(report.spec_path).name if report.spec_path else None
             for report in reports]
    labels = []
    for number, (report, name) in enumerate(zip(reports, names, strict=True), start=1):
        if titles.count(report.title) == 1:
            labels.append(report.title)
            continue
        same_name = sum(1 for other, title in zip(names, titles, strict=True)
                        if title == report.title and other == name)
        which = (f"row {number}" if name is None else
                 report.spec_path if same_name > 1 and report.spec_path else name)
        labels.append(f"{report.title} ({which})")
    return labels


def _template_problem(name: str, error: Exception) -> str:
    """``template NAME (FILE:LINE): what went wrong``, on one line."""
    import traceback

    where = name
    if isinstance(error, jinja2.TemplateSyntaxError):
        where = f"{name} ({PurePath(error.filename or error.name or name).name}:{error.lineno})"
    else:
        lines = [(frame.filename, frame.lineno) for frame in traceback.extract_tb(
            error.__traceback__) if frame.filename.endswith(".j2")]
        if lines:
            where = f"{name} ({PurePath(lines[-1][0]).name}:{lines[-1][1]})"
    what = getattr(error, "message", None) or str(error)
    if not isinstance(error, jinja2.TemplateError):
        what = f"{what} ({type(error).__name__})" if what else type(error).__name__
    return one_line(f"template {where}: {what}")


def _figure_context(report: Report, fmt: str,
                    figure: tuple[str, ...] | None) -> Mapping[str, Any]:
    """What the templates need of the figure: file links (Markdown), pgfplots
    coordinates (LaTeX) or the inline SVG (HTML; None without matplotlib)."""
    from privspec.report import figures

    if fmt == "markdown":
        return {"figure": None if figure is None else tuple(_link(path) for path in figure)}
    if fmt == "latex":
        return {"pgf": figures.pgfplots_coordinates(report),
                "figure_label": figure_label_for(report)}
    if fmt == "html":
        drawn = figures.available()
        return {"svg": figures.svg_for_html(report) if drawn else None,
                "risk_svg": figures.risk_svg_for_html(report) if drawn else None,
                "audit_svg": (figures.audit_svg_for_html(report)
                              if drawn and report.audit is not None else None),
                "install_hint": figures.INSTALL_HINT}
    return {}


def _context(
    report: Report, fmt: str, variant: str, command: str | None, macro_prefix: str | None,
    basename: str | None,
) -> Mapping[str, Any]:
    if basename is None:
        basename = spec_stem(report.spec_path) if report.spec_path else "privacy"
    return {
        "report": report,
        "format": fmt,
        "variant": variant,
        "noun": report.mechanism.noun,
        "command": command if command is not None else default_command(report, fmt, variant),
        "prefix": _latex_macro_name(macro_prefix) if macro_prefix else macro_prefix_for(report),
        "label": label_for(report),
        "versions": sorted(report.accounting.versions.items()),
        "show_stages": len(report.mechanism.stages) > 1
        or any(stage.name for stage in report.mechanism.stages),
        "macros_file": basename + "-macros.tex",
    }


__all__ = [
    "AUDIT_FIGURE_SUFFIX",
    "FIGURE_SUFFIX",
    "FORMATS",
    "RISK_FIGURE_SUFFIX",
    "VARIANTS",
    "Document",
    "RenderError",
    "caveat_template",
    "default_command",
    "delta_key",
    "figure_label_for",
    "figure_paths",
    "label_for",
    "latex_caveat",
    "macro_prefix_for",
    "render",
    "render_documents",
    "render_table",
    "row_labels",
    "spec_stem",
]
