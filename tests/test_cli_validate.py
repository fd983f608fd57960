"""``privspec validate``: exit codes, output formats, and staying light and fast."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from privspec.cli import main
from privspec.cli.app import run_typer
from privspec.cli.validation import (
    CHECKED_VARIABLES,
    DIAGNOSTICS_FORMAT_OPTION,
    FLAG_VARIABLES,
    PLAIN_FLAG_VALUES,
    QUIET_OPTIONS,
    run_plain,
)

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted(str(p) for p in (ROOT / "examples").glob("*.privspec.yaml"))
BAD = str(ROOT / "tests" / "invalid" / "negative-or-zero-scale.privspec.yaml")
HEAVY = ("numpy", "scipy", "dp_accounting", "jinja2")


def test_examples_are_valid(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", *EXAMPLES]) == 0
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"{len(EXAMPLES)} specs valid\n"


def test_invalid_spec_exits_2_with_gcc_lines_and_a_summary(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", EXAMPLES[0], BAD]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 5
    assert lines[0].startswith(f"{BAD}:8:27: error: mechanism.compose[0].mechanism.gaussian.sigma")
    assert lines[-1] == "found 4 problems in 1 of 2 specs"


def test_missing_file_and_directory_exit_2_without_a_traceback(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "-q", str(tmp_path / "nope.yaml"), str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "[io/not-found]" in err
    assert "[io/is-a-directory]" in err
    assert "Traceback" not in err


def test_json_format(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "--diagnostics-format", "json", BAD]) == 2
    captured = capsys.readouterr()
    problems = json.loads(captured.out)
    assert len(problems) == 4
    assert problems[0]["code"] == "spec/invalid-value"
    assert problems[0]["path"] == "mechanism.compose[0].mechanism.gaussian.sigma"
    assert (problems[0]["line"], problems[0]["column"]) == (8, 27)


def test_json_format_when_valid(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "--diagnostics-format", "json", "-q", EXAMPLES[0]]) == 0
    assert json.loads(capsys.readouterr().out) == []


def test_github_format(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "--diagnostics-format", "github", "-q", BAD]) == 2
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 4
    assert out[0].startswith("::error file=")
    assert ",line=8,col=27,title=spec/invalid-value::" in out[0]


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate"]) == 2
    assert main(["validate", "--diagnostics-format", "xml", EXAMPLES[0]]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_validate_does_not_import_the_numerical_stack() -> None:
    script = textwrap.dedent(f"""
        import sys
        from privspec.cli import main
        code = main(["validate", "-q", *{EXAMPLES!r}])
        heavy = sorted(m for m in sys.modules if m.split(".")[0] in {HEAVY!r})
        print(code, heavy)
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == "0 []"


def test_validate_imports_no_other_command_nor_the_workflows() -> None:
    """A run imports the module of its command alone (issue 29: validate in a blink);
    help lists every command all the same."""
    script = textwrap.dedent(f"""
        import contextlib, io, sys
        from privspec.cli import main
        code = main(["validate", "-q", *{EXAMPLES!r}])
        loaded = sorted(m for m in sys.modules if m.startswith(("privspec.cli.",
                                                                "privspec.workflows")))
        print(code, loaded)
        with contextlib.redirect_stdout(io.StringIO()) as help_text:
            main(["--help"])
        print("render" in help_text.getvalue() and "cache" in help_text.getvalue())
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            check=True)
    assert result.stdout.splitlines() == [
        "0 ['privspec.cli.app', 'privspec.cli.validation']", "True"]


def test_plain_validate_imports_neither_typer_nor_click_nor_rich() -> None:
    script = textwrap.dedent(f"""
        import sys
        from privspec.cli import main
        code = main(["validate", "--diagnostics-format", "json", "-q", *{EXAMPLES!r}])
        print(code, sorted(m for m in sys.modules if m.split(".")[0] in ("typer", "click",
                                                                        "rich")))
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            check=True)
    assert result.stdout.splitlines()[-1] == "0 []"


@pytest.mark.parametrize("example", ["cifar10-dpsgd-eps8", "census-discrete-gaussian"])
def test_validate_builds_the_models_of_the_kinds_the_spec_uses_only(example: str) -> None:
    """Pydantic builds a kind's models on first use (issue 29: building them all took
    half of validate's time); the JSON Schema still has every kind."""
    script = textwrap.dedent(f"""
        from privspec.spec.loader import load_spec
        from privspec.spec.models import NODE_TYPES, walk
        spec = load_spec({str(ROOT / "examples" / f"{example}.privspec.yaml")!r})
        print(sorted(kind for kind, node in NODE_TYPES.items() if node.__pydantic_complete__)
              == sorted({{kind for _, kind, _ in walk(spec.mechanism)}}))
        from privspec.spec.schema import json_schema
        from privspec.spec.kinds import KINDS
        print(len(json_schema()["properties"]["mechanism"]["oneOf"]) == len(NODE_TYPES)
              == len(KINDS))
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            check=True)
    assert result.stdout.splitlines() == ["True", "True"]


def _plain_cases(tmp: Path) -> list[list[str]]:
    """Plain ``validate`` command lines (their arguments) over valid, invalid, missing
    and hostile files, with every option in each of its spellings."""
    missing, hostile = str(tmp / "nope.yaml"), str(tmp / "::a\x1b[31mb\n##[c.yaml")
    dashed = tmp / "-dashed.privspec.yaml"
    dashed.write_text(Path(EXAMPLES[0]).read_text(encoding="utf-8"), encoding="utf-8")
    valid, other = EXAMPLES[0], EXAMPLES[-1]
    return [[valid], [valid, other], [BAD], [missing], [str(tmp)], [hostile],
            [valid, BAD, missing, BAD], ["-q", BAD], ["--quiet", valid, "-q"],
            [BAD, "--diagnostics-format", "json"], ["--diagnostics-format=github", BAD],
            ["--diagnostics-format", "gcc", "-q", valid, other], ["--diagnostics-format",
            "json", valid], ["--diagnostics-format=github", valid], ["-"],
            ["--", str(dashed), "-q"], ["--diagnostics-format", "json", "--", hostile]]


def test_plain_validate_prints_what_typer_prints(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """The command lines run without typer print the same bytes, and exit with the same
    code, as through typer."""
    for args in _plain_cases(tmp_path):
        code = run_plain(["validate", *args])
        plain = capfd.readouterr()
        assert code is not None, args
        assert run_typer(["validate", *args]) == code, args
        assert capfd.readouterr() == plain, args


@pytest.mark.parametrize("args", [
    [], ["--help"], ["-q"], ["--diagnostics-format", "JSON", BAD], ["--diagnostics-format"],
    ["-x", BAD], ["-qq", BAD], ["--quiet=1", BAD], ["--diagnostics-forma", "json", BAD],
    ["--diagnostics-format", "--", BAD]])
def test_other_validate_command_lines_go_through_typer(args: list[str]) -> None:
    assert run_plain(["validate", *args]) is None
    assert run_plain(["--quiet", "validate", BAD]) is None


@pytest.mark.parametrize(("variable", "value"), [
    ("PRIVSPEC_NO_CACHE", "garbage"), ("PRIVSPEC_DEBUG", "maybe"),
    ("PRIVSPEC_MEMORY_BUDGET", "0"), ("PRIVSPEC_TIME_BUDGET", "10"),
    ("_PRIVSPEC_COMPLETE", "bash_source")])
def test_global_options_environment_goes_through_typer(
        variable: str, value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(variable, value)
    assert run_plain(["validate", BAD]) is None


def test_the_plain_command_lines_know_the_options_typer_declares(
        monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> None:
    """Option names and environment variables of the typer path are those the plain path
    reads, and typer takes every flag value the plain path lets through."""
    import typer.main

    from privspec.cli.app import application

    root = typer.main.get_command(application("validate"))
    command = root.commands["validate"]  # type: ignore[attr-defined]
    options = {param.name: param for param in command.params}
    assert options["diagnostics_format"].opts == [DIAGNOSTICS_FORMAT_OPTION]
    assert tuple(options["quiet"].opts + options["quiet"].secondary_opts) == QUIET_OPTIONS
    flags = {param.envvar for param in root.params if param.envvar and param.is_flag}
    valued = {param.envvar for param in root.params if param.envvar and not param.is_flag}
    assert flags == set(FLAG_VARIABLES)
    assert valued | {"_PRIVSPEC_COMPLETE"} == set(CHECKED_VARIABLES)
    for value in PLAIN_FLAG_VALUES:
        for variable in FLAG_VARIABLES:
            monkeypatch.setenv(variable, value)
        assert run_typer(["validate", "-q", EXAMPLES[0]]) == 0, value
    assert capfd.readouterr().err == ""


@pytest.mark.parametrize(("fields", "conflict", "problems"), [
    ("noise_multiplier: abc, batch_size: 70000, dataset_size: 60000, epochs: 3",
     "mechanism.dpsgd.batch_size: a batch of 70,000 records is larger than the dataset", 2),
    ("noise_multiplier: -1, batch_size: 100, dataset_size: 1000, steps: 10, epochs: 2",
     "mechanism.dpsgd.epochs: give 'steps' or 'epochs', not both", 2),
])
def test_a_conflict_is_reported_with_the_type_errors_of_its_block(
        fields: str, conflict: str, problems: int, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """'Every problem at once': a block's cross-field conflict does not wait until its
    fields' own errors are fixed."""
    spec = tmp_path / "run.privspec.yaml"
    spec.write_text("privspec: 1\ntitle: t\nunit: one example\nneighbouring: replace-one\n"
                    f"mechanism:\n  dpsgd: {{{fields}}}\n", encoding="utf-8")
    assert main(["validate", str(spec)]) == 2
    err = capsys.readouterr().err
    assert "mechanism.dpsgd.noise_multiplier: must be" in err
    assert conflict in err
    assert f"found {problems} problems" in err
