"""The LaTeX output compiles with pdflatex: a standalone document for every fixture and
example (one title full of special characters), and one paper that inputs several
reports' macros and fragments side by side (their macros must not collide).

Without pdflatex these tests skip, unless ``PRIVSPEC_REQUIRE_TEX`` is set (CI sets
it to 1): then a missing pdflatex is a failure.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import unicodedata
from pathlib import Path

import pytest
from report_fixtures import FIXTURES
from test_render import EXAMPLES, example_report

from privspec.report.model import Report
from privspec.report.render import figure_label_for, macro_prefix_for, render_documents


@pytest.fixture(scope="module")
def pdflatex() -> str:
    found = shutil.which("pdflatex")
    if found:
        return found
    if os.environ.get("PRIVSPEC_REQUIRE_TEX"):
        pytest.fail("PRIVSPEC_REQUIRE_TEX is set but pdflatex is not on PATH")
    pytest.skip("pdflatex not installed (set PRIVSPEC_REQUIRE_TEX=1 to make this a failure)")


def _compile(pdflatex: str, directory: Path, name: str) -> str:
    """Run pdflatex twice (for references); return the log; fail with its errors."""
    for _ in range(2):
        result = subprocess.run(
            [pdflatex, "-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape",
             f"{name}.tex"],
            cwd=directory, capture_output=True, text=True, errors="replace", timeout=120,
            check=False, env={**os.environ, "TEXMFOUTPUT": str(directory)})
        log = (directory / f"{name}.log").read_text(encoding="latin-1")
        if result.returncode != 0:
            errors = [line for line in log.splitlines() if line.startswith("!")]
            pytest.fail(f"pdflatex failed on {name}.tex: {errors}\n{result.stdout[-3000:]}")
    assert (directory / f"{name}.pdf").stat().st_size > 0
    assert "Missing character" not in log, "a character was dropped from the PDF"
    assert "There were undefined references" not in log
    return log


def _reports() -> dict[str, Report]:
    return {name: make() for name, make in FIXTURES.items()}


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_fixture_standalone_compiles(pdflatex: str, tmp_path: Path, name: str) -> None:
    (document,) = render_documents(_reports()[name], "latex", variant="standalone")
    (tmp_path / "report.tex").write_text(document.text, encoding="utf-8")
    _compile(pdflatex, tmp_path, "report")


@pytest.mark.parametrize("spec", EXAMPLES, ids=lambda path: path.name)
def test_example_standalone_compiles(pdflatex: str, tmp_path: Path, spec: Path) -> None:
    report = example_report(spec.name.removesuffix(".privspec.yaml"))
    (document,) = render_documents(report, "latex", variant="standalone")
    (tmp_path / "report.tex").write_text(document.text, encoding="utf-8")
    _compile(pdflatex, tmp_path, "report")


def test_several_fragments_in_one_paper(pdflatex: str, tmp_path: Path) -> None:
    """A paper with its own \\mu-like macros inputs every report: no collision; with
    pgfplots loaded, every report's figure is drawn."""
    reports = [(name, report, macro_prefix_for(report)) for name, report in _reports().items()]
    for spec in EXAMPLES:  # the fixtures borrow the examples' file names: rename them
        report = example_report(spec.name.removesuffix(".privspec.yaml"))
        reports.append((f"example-{spec.stem}", report, macro_prefix_for(report) + "Real"))
    preamble, body = [], []
    for name, report, prefix in reports:
        macros, fragment = render_documents(report, "latex", macro_prefix=prefix)
        (tmp_path / f"{name}-macros.tex").write_text(macros.text, encoding="utf-8")
        (tmp_path / f"{name}.tex").write_text(fragment.text, encoding="utf-8")
        preamble.append(f"\\input{{{name}-macros.tex}}")
        body.append(f"\\section{{{name}}}\n\\input{{{name}.tex}}\n"
                    f"Quoted: $\\mu = \\{prefix}Mu$, "
                    f"$\\varepsilon = \\{prefix}Epsilon{{1e-5}}$.\n")
    paper = "\n".join([
        r"\documentclass{article}",
        r"\usepackage{booktabs}",
        r"\usepackage{pgfplots}",
        r"\pgfplotsset{compat=1.16}",
        r"\newcommand{\Mu}{\mu}\newcommand{\Regret}{R}\newcommand{\Epsilon}{E}",
        *preamble,
        r"\begin{document}",
        *body,
        r"\end{document}",
        "",
    ])
    (tmp_path / "paper.tex").write_text(paper, encoding="utf-8")
    log = _compile(pdflatex, tmp_path, "paper")
    assert "privspec Warning" not in log
    aux = (tmp_path / "paper.aux").read_text(encoding="latin-1")
    for _, report, _ in reports:
        assert f"\\newlabel{{{figure_label_for(report)}}}" in aux


def test_standalone_draws_the_figure(pdflatex: str, tmp_path: Path) -> None:
    report = example_report("laplace-counts")
    (document,) = render_documents(report, "latex", variant="standalone")
    assert document.text.count(r"\begin{axis}") == 3  # trade-off (2 panels) and risk
    (tmp_path / "report.tex").write_text(document.text, encoding="utf-8")
    log = _compile(pdflatex, tmp_path, "report")
    assert "privspec Warning" not in log
    aux = (tmp_path / "report.aux").read_text(encoding="latin-1")
    assert f"\\newlabel{{{figure_label_for(report)}}}{{{{1}}" in aux


@pytest.mark.parametrize("documentclass", ["article", "[twocolumn]{article}"])
def test_fragment_without_pgfplots_or_in_a_column(pdflatex: str, tmp_path: Path,
                                                  documentclass: str) -> None:
    """Without pgfplots the fragment still compiles and warns that the figure is left out;
    in a two-column paper the panels stack (one above the other), the five-column table
    spans both columns (table*), and nothing is wider than its column."""
    report = example_report("cifar10-dpsgd-eps8")
    macros, fragment = render_documents(report, "latex")
    (tmp_path / "m.tex").write_text(macros.text, encoding="utf-8")
    (tmp_path / "f.tex").write_text(fragment.text, encoding="utf-8")
    two_columns = "twocolumn" in documentclass
    cls = documentclass if documentclass.startswith("[") else "{" + documentclass + "}"
    packages = r"\usepackage{booktabs}" + (r"\usepackage{pgfplots}" if two_columns else "")
    (tmp_path / "paper.tex").write_text(
        f"\\documentclass{cls}{packages}\\input{{m.tex}}\\begin{{document}}\\input{{f.tex}}"
        "\\end{document}\n", encoding="utf-8")
    log = _compile(pdflatex, tmp_path, "paper")
    assert "Overfull \\hbox" not in log
    if two_columns:
        assert "privspec Warning" not in log
    else:
        assert "The trade-off figure needs" in log


def test_inputting_the_same_macros_twice_is_an_error(pdflatex: str, tmp_path: Path) -> None:
    """\\newcommand refuses to redefine: a clash is loud, never a silent wrong number."""
    macros, _ = render_documents(_reports()["dpsgd-tier1"], "latex")
    (tmp_path / "m.tex").write_text(macros.text, encoding="utf-8")
    (tmp_path / "clash.tex").write_text(
        "\\documentclass{article}\\input{m.tex}\\input{m.tex}\\begin{document}x\\end{document}\n",
        encoding="utf-8")
    result = subprocess.run([pdflatex, "-interaction=nonstopmode", "-halt-on-error",
                             "clash.tex"], cwd=tmp_path, capture_output=True, text=True,
                            timeout=120, check=False)
    assert result.returncode != 0
    assert "already defined" in result.stdout


#: A spec file name that ends the fragment's comment line and runs TeX (issue 27): reads a
#: file into the paper, and with -shell-escape runs a shell command.
HOSTILE_NAME = ("x\n\\input{secret.txt}\\typeout{INJECTED}\\immediate\\write18{touch PWNED}"
                "\n%.privspec.yaml")
#: A title whose ^^M and ^^J would end a comment line if TeX read them as line breaks.
HOSTILE_TITLE = ("t ^^M\\typeout{INJECTED} ^^J\\typeout{INJECTED} \r\\typeout{INJECTED}"
                 "\u2028\\typeout{INJECTED}")


def test_hostile_file_names_and_titles_do_not_run_tex(pdflatex: str, tmp_path: Path) -> None:
    """The file name and title reach comments, \\input hints, macros and the command to
    re-render: with shell escape on, nothing of them runs, reads a file or ends a line."""
    report = _reports()["dpsgd-tier1"].model_copy(update={
        "spec_path": HOSTILE_NAME, "title": HOSTILE_TITLE})
    (tmp_path / "secret.txt").write_text("\\typeout{SECRET READ}\n", encoding="utf-8")
    macros, fragment = render_documents(report, "latex")
    (standalone,) = render_documents(report, "latex", variant="standalone")
    for document in (macros, fragment, standalone):
        assert "INJECTED" in document.text  # the words stay, as text
        for line in document.text.splitlines():
            assert "\\input{secret" not in line or line.startswith("%"), line
    (tmp_path / "m.tex").write_text(macros.text, encoding="utf-8")
    (tmp_path / "f.tex").write_text(fragment.text, encoding="utf-8")
    (tmp_path / "paper.tex").write_text(
        "\\documentclass{article}\\usepackage{booktabs}\\input{m.tex}\\begin{document}"
        "\\input{f.tex}\\end{document}\n", encoding="utf-8")
    (tmp_path / "report.tex").write_text(standalone.text, encoding="utf-8")
    for name in ("paper", "report"):
        result = subprocess.run(
            [pdflatex, "-interaction=nonstopmode", "-halt-on-error", "-shell-escape",
             f"{name}.tex"], cwd=tmp_path, capture_output=True, text=True, timeout=120,
            check=False)
        assert result.returncode == 0, result.stdout[-3000:]
        printed = result.stdout.splitlines()  # \typeout prints its text on a line alone
        assert "INJECTED" not in printed and "SECRET READ" not in printed
        assert not (tmp_path / "PWNED").exists()


#: Every letter and sign of Latin-1, Latin Extended-A, -B and Additional, phonetic
#: superscripts, superscripts and subscripts, and a ligature and a circled letter.
LATIN = "".join(chr(code) for start, end in ((0xA0, 0x250), (0x1D2C, 0x1D6B),
                                              (0x1E00, 0x1F00), (0x2070, 0x20A0))
                for code in range(start, end)
                if unicodedata.category(chr(code))[0] in "LPSN") + " ﬁ ⓐ"
LATIN = " ".join(LATIN[start:start + 12] for start in range(0, len(LATIN), 12))  # lines break


@pytest.mark.parametrize("paper", ["standalone", "OT1", "T1"])
def test_any_latin_title_compiles(pdflatex: str, tmp_path: Path, paper: str) -> None:
    """ę ą « » Ð Þ Đ Ŋ Ħ ĸ Ŀ ŉ Ŧ ſ and every other Latin letter: the standalone document
    (T1) and the fragment, in a paper of either font encoding, compile without dropping
    one (a letter no encoding has prints as its code point, [U+0126])."""
    report = _reports()["dpsgd-tier1"].model_copy(update={
        "title": f"ę ą « » Ð Þ Đ Ŋ Ħ ĸ Ŀ ŉ Ŧ ſ {LATIN}", "unit": "ę ą Ħ ĸ Ŀ ŉ Ŧ ſ Ǎ ǚ",
        "description": LATIN})
    if paper == "standalone":
        (document,) = render_documents(report, "latex", variant="standalone")
        (tmp_path / "paper.tex").write_text(document.text, encoding="utf-8")
    else:
        macros, fragment = render_documents(report, "latex")
        (tmp_path / "m.tex").write_text(macros.text, encoding="utf-8")
        (tmp_path / "f.tex").write_text(fragment.text, encoding="utf-8")
        encoding = r"\usepackage[T1]{fontenc}" if paper == "T1" else ""
        (tmp_path / "paper.tex").write_text(
            f"\\documentclass{{article}}{encoding}\\usepackage{{booktabs}}\\input{{m.tex}}"
            "\\begin{document}\\section*{\\privspecCifarOneZeroDpsgdEpsEightTitle}"
            "\\input{f.tex}\\end{document}\n", encoding="utf-8")
    _compile(pdflatex, tmp_path, "paper")


def test_a_long_unit_of_code_points_compiles(pdflatex: str, tmp_path: Path) -> None:
    """A caption is measured on one line, which TeX stops at 16,384pt: a unit of 300
    letters no encoding has ([U+1F600] each) is named in the text, not in captions."""
    report = _reports()["dpsgd-tier1"].model_copy(update={"unit": "😀" * 300})
    (document,) = render_documents(report, "latex", variant="standalone")
    (tmp_path / "report.tex").write_text(document.text, encoding="utf-8")
    _compile(pdflatex, tmp_path, "report")
