"""The published pre-commit hooks, run by a real ``pre-commit run --all-files``.

The test repository's ``.pre-commit-config.yaml`` is made from ``.pre-commit-hooks.yaml``
itself (same ids, entries, file patterns), as ``repo: local`` hooks with ``language:
system`` calling this interpreter's privspec, so that pre-commit neither clones nor
installs anything (no network).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from git_repo import GIT_ENV, dpsgd_spec, git, init_repo

ROOT = Path(__file__).resolve().parent.parent
PRE_COMMIT = shutil.which("pre-commit", path=os.pathsep.join(
    [str(Path(sys.executable).parent), os.environ.get("PATH", "")]))

pytestmark = pytest.mark.skipif(PRE_COMMIT is None, reason="pre-commit is not installed "
                                "(pip install '.[test]')")


def _manifest() -> list[dict[str, Any]]:
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    assert isinstance(hooks, list)
    return hooks


def test_manifest_is_valid_for_pre_commit() -> None:
    assert PRE_COMMIT is not None
    done = subprocess.run([PRE_COMMIT, "validate-manifest", str(ROOT / ".pre-commit-hooks.yaml")],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    hooks = {hook["id"]: hook for hook in _manifest()}
    assert set(hooks) == {"privspec-validate", "privspec-check", "privspec-render-check"}
    assert hooks["privspec-validate"]["entry"] == "privspec validate"
    assert hooks["privspec-check"]["entry"].startswith("privspec check")
    assert hooks["privspec-render-check"]["entry"] == "privspec render --check"
    for hook in hooks.values():
        assert hook["language"] == "python"
        assert hook["files"] == r"\.privspec\.ya?ml$"
        assert hook["args"] == ["--"]  # file names are never read as options


def _local_config(args: dict[str, list[str]]) -> str:
    """The published hooks as local, offline hooks running this interpreter's privspec."""
    command = f"{shlex.quote(sys.executable)} -m privspec.cli"
    hooks = []
    for hook in _manifest():
        local = {**hook, "language": "system",
                 "entry": hook["entry"].replace("privspec", command, 1)}
        if hook["id"] in args:
            local["args"] = args[hook["id"]]
        hooks.append(local)
    return yaml.safe_dump({"repos": [{"repo": "local", "hooks": hooks}]}, sort_keys=False)


def _pre_commit(repo: Path, home: Path) -> subprocess.CompletedProcess[str]:
    assert PRE_COMMIT is not None
    env = {**os.environ, **GIT_ENV, "PRE_COMMIT_HOME": str(home), "PRE_COMMIT_COLOR": "never",
           "SKIP": ""}
    return subprocess.run([PRE_COMMIT, "run", "--all-files"], cwd=repo, env=env,
                          capture_output=True, text=True, check=False, timeout=120)


def _status(output: str, name: str) -> str:
    line = next(line for line in output.splitlines() if line.startswith(name))
    return line.rsplit(".", 1)[-1].split()[-1] if "." in line else line.split()[-1]


def test_hooks_pass_then_catch_an_invalid_spec_a_stale_report_and_a_blown_budget(
        tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    (repo / ".pre-commit-config.yaml").write_text(_local_config({
        "privspec-render-check": ["--output-dir", "reports", "--"],
    }), encoding="utf-8")
    spec = repo / "train.privspec.yaml"
    spec.write_text(dpsgd_spec(1.1, budget="max_mu: 0.5"), encoding="utf-8")
    (repo / "notes.yaml").write_text("not: a spec\n", encoding="utf-8")  # not a spec file
    from privspec.cli import main

    cwd = Path.cwd()
    os.chdir(repo)
    try:
        assert main(["render", "train.privspec.yaml", "--output-dir", "reports"]) == 0
    finally:
        os.chdir(cwd)
    git(repo, "add", ".")
    home = tmp_path / "pre-commit-home"

    done = _pre_commit(repo, home)
    assert done.returncode == 0, done.stdout + done.stderr
    assert _status(done.stdout, "privspec validate") == "Passed"
    assert _status(done.stdout, "privspec check") == "Passed"
    assert _status(done.stdout, "privspec render --check") == "Passed"

    # lower the noise: the committed report is stale and the budget is blown
    spec.write_text(dpsgd_spec(0.9, budget="max_mu: 0.5"), encoding="utf-8")
    done = _pre_commit(repo, home)
    assert done.returncode == 1
    assert _status(done.stdout, "privspec validate") == "Passed"
    assert _status(done.stdout, "privspec check") == "Failed"
    assert "train.privspec.yaml: μ = " in done.stdout
    assert "exceeds the limit 0.5 (budget.max_mu)" in done.stdout
    assert _status(done.stdout, "privspec render --check") == "Failed"
    assert "reports/train.md: stale" in done.stdout

    # a typo: validate names the file, line and key
    spec.write_text(dpsgd_spec(1.1).replace("steps:", "stepz:"), encoding="utf-8")
    done = _pre_commit(repo, home)
    assert done.returncode == 1
    assert _status(done.stdout, "privspec validate") == "Failed"
    assert ("train.privspec.yaml:11:5: error: mechanism.dpsgd.stepz: unknown key 'stepz'; "
            "did you mean 'steps'?") in done.stdout


def test_a_file_named_like_an_option_does_not_redirect_render_check(tmp_path: Path) -> None:
    """A stranger commits ``--output-dir=x.privspec.yaml`` and fresh reports in
    ``x.privspec.yaml/``: pre-commit would pass the name after the user's args, where it
    moved the reports checked away from the stale ones in ``reports/``."""
    from privspec.cli import main

    repo = init_repo(tmp_path / "repo")
    (repo / ".pre-commit-config.yaml").write_text(_local_config({
        "privspec-render-check": ["--output-dir", "reports"],  # no '--', as a user may write
    }), encoding="utf-8")
    spec = repo / "train.privspec.yaml"
    spec.write_text(dpsgd_spec(1.1), encoding="utf-8")
    cwd = Path.cwd()
    os.chdir(repo)
    try:
        assert main(["render", "train.privspec.yaml", "--output-dir", "reports"]) == 0
        spec.write_text(dpsgd_spec(0.5), encoding="utf-8")  # weaker: reports/ is stale
        assert main(["render", "train.privspec.yaml", "--output-dir", "x.privspec.yaml"]) == 0
    finally:
        os.chdir(cwd)
    (repo / "--output-dir=x.privspec.yaml").write_text(dpsgd_spec(), encoding="utf-8")
    git(repo, "add", ".")
    done = _pre_commit(repo, tmp_path / "pre-commit-home")
    assert done.returncode == 1, done.stdout
    assert _status(done.stdout, "privspec validate") == "Passed"  # read as a spec
    assert _status(done.stdout, "privspec render --check") == "Failed"
    assert ("privspec render: error: argument 5 ('--output-dir=x.privspec.yaml') begins "
            "with '-' and names a file") in done.stdout
