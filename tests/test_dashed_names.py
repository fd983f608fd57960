"""File names that begin with '-' (``--output-dir=x.privspec.yaml``, committed by a
stranger): before ``--`` every command refuses them in one line, exit 2, instead of
reading them as options; after ``--`` they are files.  The published pre-commit hooks
(entry + args + file names, as pre-commit runs them) end their args with ``--``."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
import yaml

from privspec.cli import main
from privspec.cli.app import COMMANDS

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "laplace-counts.privspec.yaml"
DASHED = "--output-dir=x.privspec.yaml"
HOOKS = {hook["id"]: hook for hook in yaml.safe_load(
    (ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))}
#: The args the README shows for each hook (privspec-validate takes none).
DOCUMENTED_ARGS = {"privspec-validate": [], "privspec-check": ["--max-mu", "1.0"],
                   "privspec-render-check": ["--output-dir", "reports"]}


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder with a valid spec and, under a name that spells an option, one over its
    budget."""
    text = EXAMPLE.read_text(encoding="utf-8")
    (tmp_path / "good.privspec.yaml").write_text(text, encoding="utf-8")
    (tmp_path / DASHED).write_text(text + "budget: {max_mu: 0.001}\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _refused(err: str, command: str, position: int) -> bool:
    return (len(err.splitlines()) == 1 and err.startswith(
        f"privspec {command}: error: argument {position} ('{DASHED}') begins with '-' and "
        "names a file") and "put file names after '--'" in err)


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_refuses_a_dashed_file_name_before_double_dash(
        folder: Path, command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([command, DASHED, "good.privspec.yaml"]) == 2
    assert _refused(capsys.readouterr().err, command, 2)
    assert main(["--quiet", command, "good.privspec.yaml", DASHED]) == 2  # anywhere before --
    assert _refused(capsys.readouterr().err, command, 4)
    assert not list(folder.glob("x.privspec.yaml*"))  # nothing written


@pytest.mark.parametrize("hook", sorted(HOOKS))
def test_hooks_as_pre_commit_runs_them_never_take_a_file_for_an_option(
        folder: Path, hook: str, capsys: pytest.CaptureFixture[str]) -> None:
    """entry + args + file names, with the README's args ended by the hook's default
    '--'; and with args that a user forgot to end with '--'."""
    entry = shlex.split(HOOKS[hook]["entry"])
    assert entry[0] == "privspec" and HOOKS[hook]["args"] == ["--"]
    documented = DOCUMENTED_ARGS[hook]
    code = main([*entry[1:], *documented, *HOOKS[hook]["args"], "good.privspec.yaml", DASHED])
    out, err = capsys.readouterr()
    assert "begins with '-'" not in err
    if hook == "privspec-validate":
        assert code == 0 and "2 specs valid" in err
    elif hook == "privspec-check":  # over its budget
        assert code == 1 and f"{DASHED}: μ = " in out
    else:
        assert code == 1 and "reports/--output-dir=x.md: missing" in out + err
    assert main([*entry[1:], *documented, "good.privspec.yaml", DASHED]) == 2
    assert _refused(capsys.readouterr().err, entry[1], len(entry) + len(documented) + 1)


def test_plain_validate_refuses_too(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The fast path (no typer) reads '-q' as its quiet flag: a file of that name is
    refused, not skipped."""
    (folder / "-q").write_text("not: a spec\n", encoding="utf-8")
    assert main(["validate", "-q", "good.privspec.yaml"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("privspec validate: error: argument 2 ('-q') begins with '-'")
    assert main(["validate", "--", "-q"]) == 2  # after '--' it is a file (not a spec)
    assert "-q:1:1: error:" in capsys.readouterr().err


def test_dashes_that_name_no_file_are_options(folder: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "-q", "good.privspec.yaml"]) == 0
    assert main(["validate", "--diagnostics-format=json", "good.privspec.yaml"]) == 0
    assert capsys.readouterr().out.strip() == "[]"
