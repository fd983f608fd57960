"""``privspec render``: stdout vs files, several specs and formats, atomic writes,
``--check`` with a diff, and exit codes 0 / 1 / 2 without tracebacks."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from privspec.cli import main

ROOT = Path(__file__).resolve().parent.parent
# Specs of this test's own, in a temporary working directory (the examples may change).
LAPLACE = "laplace-counts.privspec.yaml"
SURVEY = "randomized-response-survey.privspec.yaml"
BAD = str(ROOT / "tests" / "invalid" / "negative-or-zero-scale.privspec.yaml")
ALL_TARGETS = "markdown,markdown:model-card,latex,latex:standalone"
#: The matplotlib that drew the figures in examples/rendered (bytes may differ with others).
FIGURES_DRAWN_WITH_MATPLOTLIB = "3.11.2"
SPECS = {
    LAPLACE: """privspec: 1
title: Ten counting queries with Laplace noise at ε = 0.1 each
unit: one record
neighbouring: add-or-remove
mechanism:
  repeat:
    count: 10
    mechanism: {laplace: {scale: 10, sensitivity: 1}}
""",
    SURVEY: """privspec: 1
title: Yes/no survey by randomized response
unit: one respondent's answer
neighbouring: replace-one
mechanism:
  randomized_response: {flip_probability: 0.25}
report:
  formats: [markdown, json]
""",
}


@pytest.fixture(autouse=True)
def _in_a_work_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "work"
    work.mkdir()
    for name, text in SPECS.items():
        (work / name).write_text(text, encoding="utf-8")
    monkeypatch.chdir(work)


def test_markdown_to_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render", LAPLACE]) == 0  # the spec's default format: markdown
    captured = capsys.readouterr()
    assert captured.out.startswith("## Privacy report: Ten counting queries")
    assert f"`privspec render {LAPLACE} --format markdown`" in captured.out
    assert captured.err == ""


def test_several_specs_and_formats_to_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render", LAPLACE, SURVEY, "-f", "markdown", "--format", "json"]) == 0
    out = capsys.readouterr().out
    assert out.count("## Privacy report:") == 2
    assert out.count('"report_schema": 1') == 2


def test_output_file_writes_fragment_and_macros(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "paper" / "privacy.tex"
    assert main(["render", LAPLACE, "-f", "latex", "-o", str(target)]) == 0
    assert target.read_text(encoding="utf-8").startswith("% privspec report fragment")
    assert r"\input{privacy-macros.tex}" in target.read_text(encoding="utf-8")  # the file written
    macros = tmp_path / "paper" / "privacy-macros.tex"
    assert r"\newcommand{\privspecLaplaceCountsMu}" in macros.read_text(encoding="utf-8")
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"wrote {target}" in captured.err
    assert not [p for p in target.parent.iterdir() if p.name.endswith(".tmp")]


def test_output_dir_and_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = str(tmp_path / "rendered")
    args = ["render", LAPLACE, SURVEY, "-f", ALL_TARGETS, "--output-dir", out]
    assert main(args) == 0
    names = sorted(p.name for p in Path(out).iterdir())
    assert len(names) == 14  # 5 documents and 2 figures (SVG, PNG) per spec
    assert "laplace-counts-model-card.md" in names
    assert "laplace-counts-tradeoff.png" in names
    assert "randomized-response-survey-standalone.tex" in names
    capsys.readouterr()

    assert main([*args, "--check"]) == 0
    assert "14 file(s) up to date" in capsys.readouterr().err

    stale = Path(out) / "laplace-counts.md"
    stale.write_text(stale.read_text(encoding="utf-8").replace("0.317", "0.3"),
                     encoding="utf-8")
    (Path(out) / "randomized-response-survey.tex").unlink()
    before = stale.read_text(encoding="utf-8")
    assert main([*args, "--check"]) == 1
    captured = capsys.readouterr()
    assert "--- " in captured.out and "+++ " in captured.out
    assert "-**This release is 0.3-GDP.**" in captured.out
    assert "+**This release is 0.317-GDP.**" in captured.out
    assert f"{stale}: stale" in captured.err
    assert "randomized-response-survey.tex: missing" in captured.err
    assert stale.read_text(encoding="utf-8") == before  # --check writes nothing


def test_the_committed_examples_are_up_to_date(capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """examples/rendered is what `privspec render ... --output-dir examples/rendered` gives.

    The files record the numerical stack's versions; when the installed ones differ,
    tests/test_render.py still compares everything else and this test skips.
    """
    from privspec.report.assembly import package_versions

    monkeypatch.chdir(ROOT)
    committed = (ROOT / "examples" / "rendered" / "laplace-counts.md").read_text(
        encoding="utf-8")
    installed = ", ".join(f"{name} {version}" for name, version in sorted(package_versions().items()))
    if f"- Versions: {installed}\n" not in committed:
        pytest.skip(f"installed versions ({installed}) differ from the committed render")
    examples = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "examples").glob(
        "*.privspec.yaml"))
    code = main(["render", *examples, "-f", ALL_TARGETS, "--output-dir", "examples/rendered",
                 "--check"])
    captured = capsys.readouterr()
    import matplotlib

    if code and matplotlib.__version__ != FIGURES_DRAWN_WITH_MATPLOTLIB:
        # Another matplotlib may draw other bytes: then only the figures may differ.
        stale = [line for line in captured.err.splitlines()
                 if line.endswith((": stale", ": missing", "(figure)"))]
        assert all(line.endswith("(figure)") for line in stale), captured.out
        pytest.skip(f"matplotlib {matplotlib.__version__} draws other bytes than "
                    f"{FIGURES_DRAWN_WITH_MATPLOTLIB}, which drew the committed figures")
    assert code == 0, captured.out


def test_bad_spec_exits_2_and_writes_nothing(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(["render", LAPLACE, BAD, "--output-dir", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"{BAD}:" in captured.err and "Traceback" not in captured.err
    assert not out.exists()


@pytest.mark.parametrize(("args", "message"), [
    (["-f", "docx"], "unknown format 'docx'"),
    (["-f", "markdown", "-f", "latex", "-o", "x.md"], "--output takes one spec and one format"),
    (["--check"], "--check compares with files"),
    (["-o", "a.md", "--output-dir", "d"], "either --output or --output-dir"),
    (["-f", "markdown:poster"], "unknown markdown variant 'poster'"),
    (["--macro-prefix", "my_prefix"], "letters only"),
    (["--template-dir", "no/such/dir"], "does not exist"),
])
def test_usage_problems_exit_2(args: list[str], message: str,
                               capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render", LAPLACE, *args]) == 2
    captured = capsys.readouterr()
    assert message in captured.err
    assert "Traceback" not in captured.err


def test_unwritable_output_exits_2_and_keeps_good_files(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    out.mkdir()
    good = out / "laplace-counts.tex"
    good.write_text("% a good file from an earlier run\n", encoding="utf-8")
    (out / "laplace-counts-macros.tex").mkdir()  # cannot be replaced by a file
    assert main(["render", LAPLACE, "-f", "latex", "--output-dir", str(out)]) == 2
    captured = capsys.readouterr()
    assert "cannot write" in captured.err and "Traceback" not in captured.err
    assert good.read_text(encoding="utf-8") == "% a good file from an earlier run\n"
    assert sorted(p.name for p in out.iterdir()) == ["laplace-counts-macros.tex",
                                                     "laplace-counts.tex"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write into read-only directories")
def test_read_only_directory_exits_2(tmp_path: Path) -> None:
    out = tmp_path / "ro"
    out.mkdir()
    out.chmod(0o500)
    try:
        assert main(["render", LAPLACE, "--output-dir", str(out)]) == 2
    finally:
        out.chmod(0o700)


def test_user_template_dir_from_the_command_line(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "markdown").mkdir()
    (tmp_path / "markdown" / "tweet.md.j2").write_text(
        "{{ report.title | esc }}: {{ report.gdp.mu | mu }}-GDP\n", encoding="utf-8")
    assert main(["render", LAPLACE, "-f", "markdown:tweet", "--template-dir",
                 str(tmp_path)]) == 0
    assert capsys.readouterr().out == (
        "Ten counting queries with Laplace noise at ε = 0.1 each: 0.317-GDP\n")


@pytest.mark.parametrize("source", ["{{ 1/0 }}", "{{ range(100000000)|list }}",
                                    "{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}"])
def test_a_failing_user_template_is_one_line_exit_2_and_no_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], source: str) -> None:
    (tmp_path / "markdown").mkdir()
    (tmp_path / "markdown" / "report.md.j2").write_text(source, encoding="utf-8")
    out = tmp_path / "out.md"
    assert main(["render", LAPLACE, "-o", str(out), "--template-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("privspec render: error: ") and "template markdown/report.md.j2" in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not out.exists()


def test_same_stem_twice_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    copy = tmp_path / "laplace-counts.privspec.yaml"
    shutil.copy(LAPLACE, copy)
    assert main(["render", LAPLACE, str(copy), "--output-dir", str(tmp_path / "o")]) == 2
    assert "two documents would be written" in capsys.readouterr().err


@pytest.mark.parametrize("command", [["evaluate"], ["table"], ["render"], ["plot", "-o", "x.svg"],
                                     ["check", "--max-mu", "9"]])
def test_an_evaluator_refusal_is_one_line_and_exit_2(
        command: list[str], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Every command that evaluates reports the evaluator's refusal the same way, and
    writes nothing."""
    import privspec.report.evaluation

    def refuse(*_: object, **__: object) -> None:
        raise ValueError("no accounting for this")  # as the numerical stack raises it

    monkeypatch.setattr(privspec.report.evaluation, "assemble", refuse)
    before = sorted(Path().iterdir())
    assert main([command[0], LAPLACE, *command[1:]]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"privspec {command[0]}: error: {LAPLACE}: cannot evaluate: privspec "
                   "failed on this valid spec (ValueError: no accounting for this). This is "
                   "a bug in privspec: please report it with the spec; --debug shows the "
                   "traceback"]
    assert sorted(Path().iterdir()) == before


#: A spec whose figures a memory budget of 0.05 GiB changes (a coarser grid).
SAMPLED = "sampled.privspec.yaml"
SAMPLED_TEXT = """privspec: 1
title: Subsampled Gaussian over 2000 steps
unit: one record
neighbouring: add-or-remove
mechanism:
  dpsgd: {noise_multiplier: 1.0, sampling_rate: 0.01, steps: 2000}
"""


def _printed_command(document: Path) -> list[str]:
    """The words of the command a Markdown report prints to render it again."""
    import re
    import shlex

    found = re.search(r"^- Command, run in the spec file's folder: `([^`]*)`$",
                      document.read_text(encoding="utf-8"), re.MULTILINE)
    assert found is not None
    words = shlex.split(found.group(1))
    assert words[0] == "privspec"
    return words[1:]


@pytest.mark.parametrize("given", ["option", "environment"])
def test_the_printed_command_reproduces_the_bytes(given: str, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A budget given on the command line or in the environment changes the figures; the
    report's command states it, and running that command gives the same bytes."""
    folder = tmp_path / "specs"
    folder.mkdir()
    (folder / SAMPLED).write_text(SAMPLED_TEXT, encoding="utf-8")
    budget = ["--memory-budget", "0.05"] if given == "option" else []
    if given == "environment":
        monkeypatch.setenv("PRIVSPEC_MEMORY_BUDGET", "0.05")
    document = folder / "out" / "sampled.md"
    assert main([*budget, "render", str(folder / SAMPLED), "--output-dir",
                 str(folder / "out")]) == 0
    rendered = document.read_bytes()
    assert b"accounting/coarsened" in rendered  # the budget did change the report
    monkeypatch.delenv("PRIVSPEC_MEMORY_BUDGET", raising=False)
    command = _printed_command(document)
    assert command[:2] == ["--memory-budget", "0.05"]
    document.unlink()
    monkeypatch.chdir(folder)
    assert main(command) == 0
    assert document.read_bytes() == rendered


def test_a_budget_equal_to_the_specs_own_is_not_printed(capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    assert main(["--memory-budget", "1", "render", LAPLACE]) == 0
    assert f"`privspec render {LAPLACE} --format markdown`" in capsys.readouterr().out


def test_the_printed_command_states_the_template_dir_and_macro_prefix(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    templates = Path("templates") / "latex"
    templates.mkdir(parents=True)
    (templates / "standalone.tex.j2").write_text("own: ((( command )))\n", encoding="utf-8")
    assert main(["render", f"./{LAPLACE}", "-f", "latex:standalone", "--template-dir",
                 str(Path("templates").resolve()), "--macro-prefix", "x"]) == 0
    assert capsys.readouterr().out == (
        f"own: privspec render {LAPLACE} --format latex:standalone --macro-prefix x "
        "--template-dir templates\n")


def test_check_does_not_depend_on_how_the_paths_were_typed(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The printed command and the JSON's spec path are the same whether the spec and the
    output folder are given relative, with './', absolute or from another folder."""
    work = Path.cwd()
    formats = ["-f", "markdown,json,latex,html"]
    assert main(["render", f"./{LAPLACE}", *formats, "--output-dir", "./out/"]) == 0
    assert "--output-dir out`" in (work / "out" / "laplace-counts.md").read_text(
        encoding="utf-8")
    capsys.readouterr()
    for folder, spec, out in [(work, LAPLACE, "out"),
                              (work, str(work / LAPLACE), str(work / "out")),
                              (work.parent, f"{work.name}/{LAPLACE}", f"{work.name}/out/"),
                              (work / "out", f"../{LAPLACE}", ".")]:
        monkeypatch.chdir(folder)
        assert main(["render", spec, *formats, "--output-dir", out, "--check"]) == 0, (
            capsys.readouterr().out)


def test_the_reproduce_command_is_shell_quoted(capsys: pytest.CaptureFixture[str]) -> None:
    spaced = Path("my counts.privspec.yaml")
    spaced.write_text(Path(LAPLACE).read_text(encoding="utf-8"), encoding="utf-8")
    assert main(["render", str(spaced), "-f", "markdown:model-card"]) == 0
    assert ("`privspec render 'my counts.privspec.yaml' --format markdown:model-card`"
            in capsys.readouterr().out)


@pytest.mark.parametrize("command", [
    ["render", LAPLACE, "-o", LAPLACE], ["render", LAPLACE, "-f", "json", "-o", LAPLACE],
    ["table", LAPLACE, "-o", LAPLACE], ["export", "--dp-event", LAPLACE, "-o", LAPLACE]])
def test_an_output_that_is_the_input_is_refused(command: list[str],
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """``-o`` naming the spec itself would replace it with the report: refused, exit 2."""
    before = Path(LAPLACE).read_bytes()
    assert main(command) == 2
    assert f"it is the input {LAPLACE}" in capsys.readouterr().err
    assert Path(LAPLACE).read_bytes() == before


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_an_output_that_is_not_a_plain_file_is_left_alone(
        capsys: pytest.CaptureFixture[str]) -> None:
    """A rename onto a FIFO or a device (/dev/null, as root) would replace it: refused."""
    os.mkfifo("pipe")
    assert main(["render", LAPLACE, "-o", "pipe"]) == 2
    assert "not a regular file" in capsys.readouterr().err
    assert Path("pipe").is_fifo() and sorted(os.listdir(".")) == sorted([*SPECS, "pipe"])


@pytest.mark.parametrize("command", [["evaluate"], ["render"], ["check", "--max-mu", "9"]])
def test_a_refusal_at_a_path_not_in_the_file_is_located_at_what_is(
        command: list[str], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A budget left at its default is not written in the file: the refusal points at the
    mechanism (what drives the cost), in the diagnostics' form with its code."""
    import privspec.report.evaluation
    from privspec.errors import EvaluationError

    def refuse(*_: object, **__: object) -> None:
        raise EvaluationError("needs about 204 GiB", ("accounting", "memory_budget"))

    monkeypatch.setattr(privspec.report.evaluation, "assemble", refuse)
    assert main([command[0], LAPLACE, *command[1:]]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"{LAPLACE}:5:1: error: accounting.memory_budget: cannot evaluate: needs about "
        "204 GiB [evaluation/refused]"]


def test_check_in_github_form_annotates_a_refusal(monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """``check -f github`` is read by GitHub: a refusal is an annotation on its line."""
    import privspec.report.evaluation
    from privspec.errors import EvaluationError

    def refuse(*_: object, **__: object) -> None:
        raise EvaluationError("needs about 204 GiB", ("accounting", "memory_budget"))

    monkeypatch.setattr(privspec.report.evaluation, "assemble", refuse)
    assert main(["check", LAPLACE, "--max-mu", "9", "-f", "github"]) == 2
    assert capsys.readouterr().out.splitlines() == [
        f"::error file={LAPLACE},line=5,col=1,title=evaluation/refused::"
        "accounting.memory_budget: cannot evaluate: needs about 204 GiB"]


@pytest.mark.parametrize(("command", "verdict"), [
    (["evaluate"], f"{LAPLACE}: μ = "), (["check", "--max-mu", "0.001"], "exceeds")])
def test_several_specs_go_on_past_a_refused_one(
        command: list[str], verdict: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """One refused spec among several: its line on stderr, the others' figures or
    verdicts on stdout, exit 2 (the rest used to go unevaluated)."""
    import privspec.report.evaluation
    from privspec.errors import EvaluationError

    real = privspec.report.evaluation.assemble

    def refuse_the_survey(model: Any, *args: Any) -> Any:
        if model.neighbouring == "replace-one":
            raise EvaluationError("refused here", ("mechanism",))
        return real(model, *args)

    monkeypatch.setattr(privspec.report.evaluation, "assemble", refuse_the_survey)
    assert main([command[0], SURVEY, LAPLACE, *command[1:]]) == 2
    captured = capsys.readouterr()
    assert verdict in captured.out and LAPLACE in captured.out
    assert captured.err.startswith(f"{SURVEY}:") and "refused here" in captured.err
