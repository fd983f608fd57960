"""privspec.report.render: golden files, Markdown structure, kinds contract, user templates.

Golden files: ``tests/golden/<fixture><suffix>`` for the hand-built reports of
``report_fixtures.py``, and ``examples/rendered/<example><suffix>`` for every
``examples/*.privspec.yaml`` evaluated for real.  Regenerate after an intended
change with ``PRIVSPEC_REGENERATE=1 python -m pytest -q tests/test_render.py``
and review the diff.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from example_reports import example_report
from golden_files import assert_golden
from markdown_it import MarkdownIt
from markdown_it.token import Token
from report_fixtures import FIXTURES, NASTY, special_characters

from privspec.report.model import Report
from privspec.report.render import (
    FORMATS,
    VARIANTS,
    RenderError,
    macro_prefix_for,
    render,
    render_documents,
)
from privspec.spec.models import MECHANISM_KINDS

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"
EXAMPLES = sorted((ROOT / "examples").glob("*.privspec.yaml"))
RENDERED = ROOT / "examples" / "rendered"
TEMPLATES = ROOT / "privspec" / "templates"
#: Every (format, variant) a report is rendered in.
TARGETS = [(fmt, variant) for fmt in FORMATS for variant in VARIANTS[fmt]]
#: What examples/rendered holds (JSON is left out: full-precision floats vary by platform).
EXAMPLE_TARGETS = [target for target in TARGETS if target[0] != "json"]


def mask_versions(text: str) -> str:
    """Installed versions of the numerical stack vary between machines: mask them, and the
    inline SVG figure of HTML pages (matplotlib's output; tests/test_figures.py checks it)."""
    text = re.sub(r"<svg\b.*?</svg>", "<svg><!-- figure --></svg>", text, flags=re.S)
    return re.sub(r"\b(privspec|dp-accounting|numpy|scipy|python) \d[\w.+-]*",
                  r"\1 <version>", text)


def example_figure(stem: str, fmt: str) -> tuple[str, str] | None:
    """The figure files the CLI links from Markdown written to examples/rendered."""
    if fmt != "markdown":
        return None
    return f"{stem}-tradeoff.svg", f"{stem}-tradeoff.png"


def example_command(stem: str, fmt: str, variant: str) -> str:
    """What the CLI prints as the command when rendering examples/rendered."""
    suffix = "" if variant == VARIANTS[fmt][0] else f":{variant}"
    return (f"privspec render {stem}.privspec.yaml --format {fmt}{suffix} "
            "--output-dir rendered")


# --- golden files -------------------------------------------------------------


@pytest.mark.parametrize(("fmt", "variant"), TARGETS)
@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_fixture_golden(name: str, fmt: str, variant: str) -> None:
    for document in render_documents(FIXTURES[name](), fmt, variant=variant):
        assert_golden(GOLDEN / f"{name}{document.suffix}", document.text,
                      normalize=mask_versions)


@pytest.mark.parametrize(("fmt", "variant"), EXAMPLE_TARGETS)
@pytest.mark.parametrize("spec", EXAMPLES, ids=lambda path: path.name)
def test_example_golden(spec: Path, fmt: str, variant: str) -> None:
    stem = spec.name.removesuffix(".privspec.yaml")
    report = example_report(stem)
    documents = render_documents(report, fmt, variant=variant,
                                 command=example_command(stem, fmt, variant),
                                 figure=example_figure(stem, fmt))
    for document in documents:
        assert_golden(RENDERED / f"{stem}{document.suffix}", document.text,
                      normalize=mask_versions)


def test_every_example_has_rendered_files() -> None:
    stems = {path.name.removesuffix(".privspec.yaml") for path in EXAMPLES}
    rendered = {path.name for path in RENDERED.glob("*")}
    for stem in stems:
        assert f"{stem}.md" in rendered
        assert f"{stem}.tex" in rendered
        assert f"{stem}.html" in rendered
        assert {f"{stem}-tradeoff.svg", f"{stem}-tradeoff.png"} <= rendered
    orphans = {name for name in rendered
               if not any(name.startswith(stem + ext) for stem in stems
                          for ext in (".", "-model-card.", "-macros.", "-standalone.",
                                      "-tradeoff."))}
    assert not orphans, f"rendered files without an example: {sorted(orphans)}"


# --- JSON -------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_json_is_the_report_model(name: str) -> None:
    report = FIXTURES[name]()
    text = render(report, "json")
    assert text == report.model_dump_json(indent=2) + "\n"
    assert Report.model_validate_json(text) == report
    assert json.loads(text)["report_schema"] == 1


# --- Markdown structure -------------------------------------------------------------


def _markdown(text: str) -> list[Token]:
    return MarkdownIt("commonmark").enable("table").parse(text)


def _tables(tokens: list[Token]) -> list[list[list[str]]]:
    """Every table as rows of cell texts (header row first)."""
    tables: list[list[list[str]]] = []
    row: list[str] | None = None
    for index, token in enumerate(tokens):
        if token.type == "table_open":
            tables.append([])
        elif token.type == "tr_open":
            row = []
        elif token.type in ("th_open", "td_open"):
            assert row is not None
            inline = tokens[index + 1]
            row.append(_plain(inline) if inline.type == "inline" else "")
        elif token.type == "tr_close":
            assert row is not None
            tables[-1].append(row)
    return tables


def _plain(inline: Token) -> str:
    """The text a reader sees in an inline token (escapes resolved, code spans kept, the
    invisible word joiners that stop mentions and issue links left out)."""
    return "".join(child.content for child in inline.children or []
                   if child.type in ("text", "code_inline")).replace("\u2060", "")


# TPR only: an FNR column would only repeat 1 − TPR.
TRADEOFF_WITH_MU = ["attack FPR α", "highest TPR (this {noun})", "highest TPR ({mu}-GDP)"]
TRADEOFF_WITHOUT_MU = ["attack FPR α", "highest TPR (this {noun})"]
STAGES = ["stage", "mechanism", "runs"]


def _reports() -> list[tuple[str, Report]]:
    return [(name, make()) for name, make in sorted(FIXTURES.items())]


@pytest.mark.parametrize("variant", VARIANTS["markdown"])
@pytest.mark.parametrize(("name", "report"), _reports(), ids=[n for n, _ in _reports()])
def test_markdown_tables_have_their_columns(name: str, report: Report, variant: str) -> None:
    tokens = _markdown(render(report, "markdown", variant=variant))
    assert not [t for t in tokens if t.type.startswith("html")], "raw HTML in Markdown"
    noun = "training run" if report.mechanism.kind == "dpsgd" else "release"
    from privspec.report.formatting import fmt_mu

    tables = _tables(tokens)
    tradeoff = [t for t in tables if t[0][0] == "attack FPR α"]
    stages = [t for t in tables if t[0][:3] == STAGES]
    risk = [t for t in tables if t[0][0] == "attack"]
    assert len(tradeoff) + len(stages) + len(risk) == len(tables)
    assert len(risk) == 1 and len(risk[0]) == 1 + len(report.risk.rows)
    assert all(len(row) == (5 if report.gdp.mu is not None else 4) and all(row)
               for row in risk[0])
    wants_table = variant == "report" or report.gdp.tier == 2
    assert len(tradeoff) == (1 if wants_table else 0)
    if tradeoff:
        columns = TRADEOFF_WITHOUT_MU if report.gdp.mu is None else TRADEOFF_WITH_MU
        mu = fmt_mu(report.gdp.mu) if report.gdp.mu is not None else ""
        assert tradeoff[0][0] == [c.format(noun=noun, mu=mu) for c in columns]
        body = tradeoff[0][1:]
        assert len(body) == len(report.tradeoff)
        assert all(len(row) == len(columns) and all(row) for row in body)
        assert sum("α*" in row[0] for row in body) == 1
    if stages:
        with_mu = any(stage.mu is not None for stage in report.mechanism.stages)
        assert stages[0][0] == STAGES + (["μ of the stage alone"] if with_mu else [])
        assert [row[0] for row in stages[0][1:]] == [
            s.name or "(unnamed)" for s in report.mechanism.stages]
        assert all(len(row) == len(stages[0][0]) and all(row) for row in stages[0])


@pytest.mark.parametrize("variant", VARIANTS["markdown"])
def test_markdown_shows_user_strings_verbatim(variant: str) -> None:
    report = special_characters()
    tokens = _markdown(render(report, "markdown", variant=variant))
    texts = [_plain(t) for t in tokens if t.type == "inline"]
    if variant == "report":
        assert f"Privacy report: {report.title}" in texts
        assert any(report.mechanism.stages[2].description in text for text in texts)
    assert any(f"{report.mechanism.summary}" in text for text in texts)
    assert any(NASTY in text for text in texts)
    # Nothing of the user's text turned into markup.
    kinds = {child.type for t in tokens if t.type == "inline" for child in t.children or []}
    assert not kinds & {"link_open", "image", "html_inline", "em_open", "s_open"}


# --- the headline tells the truth for each case ------------------------------------------


def test_headlines() -> None:
    tier1 = render(FIXTURES["dpsgd-tier1"](), "markdown")
    assert "**This training run is 1.57-GDP.**" in tier1
    assert "telling apart N(0, 1) and N(1.57, 1)" in tier1
    assert "so μ alone tells the whole story" in tier1
    tier2 = render(FIXTURES["laplace-tier2"](), "markdown")
    assert "**μ-GDP does not describe this release well; read the table.**" in tier2
    for text in (tier1, tier2):  # one order of sections, whatever the tier
        assert (text.index("**What is protected.**") < text.index("**What an attacker can do.**")
                < text.index("| attack FPR α") < text.index("| attack |")
                < text.index("**For comparison with earlier work:**"))
    assert "ε = 1 differentially private with δ = 0 (pure DP)" in tier2
    no_mu = render(FIXTURES["approximate-dp-no-mu"](), "markdown")
    assert no_mu.index("**What is protected.**") < no_mu.index("| attack FPR α")
    assert "No Gaussian privacy guarantee (μ-GDP) holds" in no_mu
    assert "With probability up to 10⁻⁶" in no_mu
    assert "ε = ∞ at δ = 10⁻⁹" in no_mu
    assert "μ does not" not in no_mu
    for text in (tier1, tier2, no_mu):
        assert "For comparison with earlier work" in text
        assert "ε depends on the arbitrary choice of δ" in text
        assert "What an attacker can achieve" not in text  # one section, not two
        assert "FNR" not in text  # a column of 1 − TPR says nothing new


def test_headline_names_the_attack_of_the_relation() -> None:
    """Under replace-one nobody infers membership: the attack tells two versions apart."""
    base = FIXTURES["dpsgd-tier1"]()
    replace_one = base.model_copy(update={"neighbouring": "replace-one"})
    for fmt in ("markdown", "html", "latex"):
        text = render(replace_one, fmt)
        assert "no membership-inference attack" not in text
        assert "no attack that tells which of two versions of one training example" in text
        assert "no membership-inference attack on one training example" in render(base, fmt)


def test_risk_figures_are_stated_once() -> None:
    """Each risk figure stands once, in the table; the words only define its rows."""
    report = FIXTURES["dpsgd-tier1"]()
    text = render(report, "markdown")
    for row in report.risk.rows:
        from privspec.report.formatting import fmt_chance
        assert text.count(f" {fmt_chance(row.bound)} |") >= 1
        assert f"at most {fmt_chance(row.bound)}" not in text


# --- every mechanism kind is handled by every format ------------------------------------


@pytest.mark.parametrize("kind", MECHANISM_KINDS)
@pytest.mark.parametrize(("fmt", "variant"), TARGETS)
def test_every_kind_renders_in_every_format(kind: str, fmt: str, variant: str) -> None:
    for make in FIXTURES.values():
        base = make()
        report = base.model_copy(update={
            "mechanism": base.mechanism.model_copy(update={"kind": kind})})
        text = render(report, fmt, variant=variant)
        if fmt != "json":
            summary_start = base.mechanism.summary.split()[0]
            assert summary_start.strip("():") in text


def test_templates_do_not_special_case_kinds() -> None:
    """Templates describe mechanisms only through the report's words (summary, stages)."""
    for template in TEMPLATES.rglob("*.j2"):
        source = template.read_text(encoding="utf-8")
        assert "mechanism.kind" not in source, template
        for kind in MECHANISM_KINDS:
            assert f'"{kind}"' not in source and f"'{kind}'" not in source, (template, kind)


# --- LaTeX macros -------------------------------------------------------------------------


def test_macro_prefixes_differ_per_report_and_are_letters() -> None:
    prefixes = {name: macro_prefix_for(make()) for name, make in FIXTURES.items()}
    assert len(set(prefixes.values())) == len(prefixes)
    for prefix in prefixes.values():
        assert re.fullmatch(r"privspec[A-Za-z]+", prefix)
    assert prefixes["dpsgd-tier1"] == "privspecCifarOneZeroDpsgdEpsEight"


def test_macros_and_fragment_use_one_prefix() -> None:
    macros, fragment = render_documents(FIXTURES["dpsgd-tier1"](), "latex",
                                        macro_prefix="privspecPaperA")
    assert macros.suffix == "-macros.tex" and fragment.suffix == ".tex"
    defined = set(re.findall(r"\\newcommand\{\\(\w+)\}", macros.text))
    defined |= set(re.findall(r"\\edef\\(\w+)\{", fragment.text))  # the table's float
    used = set(re.findall(r"\\(privspec\w+)", fragment.text))
    assert used and used <= defined
    assert all(name.startswith("privspecPaperA") for name in defined)
    assert r"\csname privspecPaperA@epsilon@1e-5\endcsname{7.43}" in macros.text
    with pytest.raises(RenderError, match="letters only"):
        render(FIXTURES["dpsgd-tier1"](), "latex", macro_prefix="bad_prefix1")


# --- options and user templates ---------------------------------------------------------------


def test_unknown_format_and_variant() -> None:
    report = FIXTURES["dpsgd-tier1"]()
    with pytest.raises(RenderError, match="unknown format"):
        render(report, "pdf")
    with pytest.raises(RenderError, match="unknown markdown variant"):
        render(report, "markdown", variant="poster")
    with pytest.raises(RenderError, match="no variants"):
        render(report, "json", variant="model-card")


def test_command_is_shown_and_overridable() -> None:
    report = FIXTURES["dpsgd-tier1"]()
    assert "`privspec render cifar10-dpsgd-eps8.privspec.yaml --format markdown`" in (
        render(report, "markdown"))
    assert "`make privacy`" in render(report, "markdown", command="make privacy")
    nameless = report.model_copy(update={"spec_path": None})
    assert "Command" not in render(nameless, "markdown")


def test_user_templates_override_and_add_variants(tmp_path: Path) -> None:
    (tmp_path / "markdown").mkdir()
    (tmp_path / "markdown" / "report.md.j2").write_text(
        "μ = {{ report.gdp.mu | mu }} for {{ report.unit | esc }}\n", encoding="utf-8")
    (tmp_path / "markdown" / "tweet.md.j2").write_text(
        "{{ report.title | esc }}: {{ report.gdp.mu | mu }}-GDP\n", encoding="utf-8")
    report = FIXTURES["dpsgd-tier1"]()
    assert render(report, "markdown", template_dir=tmp_path) == (
        "μ = 1.57 for one training example\n")
    documents = render_documents(report, "markdown", variant="tweet", template_dir=tmp_path)
    assert documents[0].suffix == "-tweet.md"
    assert documents[0].text.endswith(": 1.57-GDP\n")
    # Templates that are not overridden still come from the package.
    assert "## Privacy" in render(report, "markdown", variant="model-card",
                                  template_dir=tmp_path)


@pytest.mark.parametrize("source", [
    "{{ report.__class__.__mro__ }}",
    "{{ ''.__class__.__base__.__subclasses__() }}",
    "{{ report.tradeoff.append(1) }}",
])
def test_user_templates_are_sandboxed(tmp_path: Path, source: str) -> None:
    (tmp_path / "markdown").mkdir()
    (tmp_path / "markdown" / "report.md.j2").write_text(source, encoding="utf-8")
    with pytest.raises(RenderError):
        render(FIXTURES["dpsgd-tier1"](), "markdown", template_dir=tmp_path)


@pytest.mark.parametrize(("source", "says"), [
    # Jinja2 3.1.5 printed the environment variable (CVE-2025-27516); 3.1.6 refuses it.
    ("{{ ('{0.__init__.__globals__[sys].modules[os].environ[HOME]}'|attr('format'))"
     "(report) }}", "unsafe"),
    ("{{ 1/0 }}", "division by zero"),
    ("{{ range(100000000)|list }}", "Range too big"),
    ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
     "more than 1,000,000 loop iterations"),
    ("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", "recursion"),
    ("{{ ('x' * 10**9)|length }}", "longer than 1,000,000"),
    ("{{ 10**100000 }}", "above 2^10000"),
    ("{{ 'x'|center(1000000000) }}", "above 1,000,000"),
    ("{{ '%1000000000d' % 1 }}", "longer than 1,000,000"),
    ("{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}"
     "{% endfor %}", "longer than 1,000,000"),
    ("{{ ('ab' * 400000)|list|sort|join|replace('a', 'aaa') }}", "longer than 1,000,000"),
    ("{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}",
     "an output longer than 10,000,000"),
])
def test_runaway_and_failing_templates_are_one_error(tmp_path: Path, source: str,
                                                     says: str) -> None:
    """A stranger's template that fails, escapes or runs away ends in one RenderError of
    one line, naming the template and its line, within seconds and little memory."""
    (tmp_path / "markdown").mkdir()
    (tmp_path / "markdown" / "report.md.j2").write_text("\n" + source, encoding="utf-8")
    with pytest.raises(RenderError, match=re.escape(says)) as raised:
        render(FIXTURES["dpsgd-tier1"](), "markdown", template_dir=tmp_path)
    message = str(raised.value)
    assert message.startswith("template markdown/report.md.j2 (report.md.j2:2): ") or (
        message.startswith("template markdown/report.md.j2: an output")), message
    assert "\n" not in message


def test_jinja2_is_required_at_a_version_without_the_format_escape() -> None:
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "Jinja2>=3.1.6" in config["project"]["dependencies"]


def test_missing_values_are_errors_not_blanks(tmp_path: Path) -> None:
    (tmp_path / "markdown").mkdir()
    (tmp_path / "markdown" / "report.md.j2").write_text("{{ report.nothing }}",
                                                        encoding="utf-8")
    with pytest.raises(RenderError, match="nothing"):
        render(FIXTURES["dpsgd-tier1"](), "markdown", template_dir=tmp_path)
    with pytest.raises(RenderError, match="does not exist"):
        render(FIXTURES["dpsgd-tier1"](), "markdown", template_dir=tmp_path / "absent")


def test_templates_ship_in_the_wheel() -> None:
    """pyproject's package-data covers every template, so `pip install .` finds them."""
    import fnmatch
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = config["tool"]["setuptools"]["package-data"]["privspec"]
    for template in TEMPLATES.rglob("*"):
        if template.is_file():
            relative = template.relative_to(ROOT / "privspec").as_posix()
            assert any(fnmatch.fnmatch(relative, p) for p in patterns), relative


def test_latex_caveats_use_the_documents_notation() -> None:
    """A caveat's numbers are worded by LaTeX's own filters (as in the rest of the PDF),
    its words escaped; the JSON keeps the message only, and a report read back from JSON
    still prints it."""
    from privspec.report.wording import caveat

    warning = caveat("accounting/floor", infinity=1e-15, floor=1e-12)
    assert warning.message == ("The accountant's truncated tails leave a probability of at "
                               "most 10⁻¹⁵ of unbounded loss; μ holds up to the additive "
                               "floor τ = 10⁻¹² in the trade-off curve.")
    report = FIXTURES["dpsgd-tier1"]().model_copy(update={"warnings": [warning]})
    latex = render(report, "latex", variant="standalone")
    assert (r"at most \ensuremath{10^{-15}} of unbounded loss; \ensuremath{\mu} holds up to "
            r"the additive floor \ensuremath{\tau} = \ensuremath{10^{-12}} in") in latex
    dumped = json.loads(report.model_dump_json())
    assert dumped["warnings"] == [{"code": "accounting/floor", "message": warning.message}]
    read_back = Report.model_validate_json(report.model_dump_json())
    assert r"at most 10\ensuremath{^{-15}} of unbounded" in render(read_back, "latex",
                                                                   variant="standalone")
