"""The GitHub Action's command (``privspec action``) in a temporary repository, and
the ``action.yml`` and README workflow that run it."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from git_repo import GIT_ENV, commit, dpsgd_spec, git, init_repo
from git_repo import hermetic_git as hermetic_git  # an autouse fixture
from spec_texts import ONE_GAUSSIAN

import privspec
from privspec.cli import main as privspec_main
from privspec.report import formatting as fmt
from privspec.spec.loader import load_spec_text
from privspec.workflows.pull_request import COMMENT_MARKER

ROOT = Path(__file__).resolve().parent.parent
TRAIN = "specs/train.privspec.yaml"
NEW = """privspec: 1
title: New release of ten counts
unit: one person
neighbouring: add-or-remove
mechanism:
  repeat:
    count: 10
    mechanism: {laplace: {scale: 20.0}}
accounting: {discretization: 1e-3}
"""


@pytest.fixture
def pull_request(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str, str]:
    """A base commit and a pull request that lowers the noise of one spec, adds one,
    removes one and leaves one alone."""
    root = init_repo(tmp_path / "repo")
    base = commit(root, {
        TRAIN: dpsgd_spec(1.1, budget="max_mu: 0.5"),
        "specs/old.privspec.yaml": dpsgd_spec(2.0, title="Old run"),
        "specs/same.privspec.yaml": dpsgd_spec(3.0, title="Untouched"),
        "README.md": "hello\n",
    }, "base")
    git(root, "checkout", "-q", "-b", "feature")
    commit(root, {TRAIN: dpsgd_spec(0.9, budget="max_mu: 0.5")}, "lower the noise")
    head = commit(root, {
        "specs/new.privspec.yml": NEW,
        "specs/old.privspec.yaml": None,
        "README.md": "hello again\n",
    }, "add and remove specs")
    monkeypatch.chdir(root)
    return root, base, head


def _run(tmp_path: Path, *args: str) -> tuple[int, str, str, str]:
    """``privspec action ARGS`` (``--memory-budget`` first, before the command)."""
    comment, summary, outputs = (tmp_path / "comment.md", tmp_path / "summary.md",
                                 tmp_path / "outputs.txt")
    summary.write_text("earlier summary\n", encoding="utf-8")
    given = list(args[:2]) if args[:1] == ("--memory-budget",) else []
    code = privspec_main([*given, "action", *args[len(given):], "--comment-file", str(comment),
                          "--summary-file", str(summary), "--github-output", str(outputs)])
    return code, _read(comment), _read(summary), _read(outputs)


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8") if path.exists() else ""


def test_pull_request_comment_summary_and_outputs(
        pull_request: tuple[Path, str, str], tmp_path: Path) -> None:
    _, base, head = pull_request
    code, comment, summary, outputs = _run(tmp_path, "--base", base, "--head", head,
                                           "--max-mu", "", "--require-tier1", "false")
    assert code == 1  # train.privspec.yaml is over its budget after the change
    assert comment.startswith(COMMENT_MARKER + "\n## privspec: privacy of the changed specs\n")
    assert summary == "earlier summary\n" + comment + "\n"
    assert outputs.splitlines() == [f"comment-file={tmp_path / 'comment.md'}", "changed=3",
                                    "weaker=true", "over-budget=true"]
    before = privspec.evaluate(load_spec_text(dpsgd_spec(1.1)))
    after = privspec.evaluate(load_spec_text(dpsgd_spec(0.9)))
    mu_b, mu_a = fmt.fmt_mu(before.gdp.mu), fmt.fmt_mu(after.gdp.mu)
    assert "❌ **1 of 3 changed specs over budget.**" in comment
    assert f"- `{TRAIN}`: Privacy got weaker: μ {mu_b} → {mu_a}, +" in comment
    assert "- `specs/new.privspec.yml`: new spec, μ = " in comment
    assert "- `specs/old.privspec.yaml`: removed" in comment
    assert "same.privspec.yaml" not in comment and "README" not in comment
    short_base, short_head = git(Path.cwd(), "rev-parse", "--short", base), \
        git(Path.cwd(), "rev-parse", "--short", head)
    assert f"`{short_base}:{TRAIN}` → `{short_head}:{TRAIN}`" in comment
    assert (f"**Over budget:**\n\n- `{TRAIN}`: μ = {mu_a} exceeds the limit 0.5 "
            "(budget.max\\_mu)") in comment
    assert "**Privacy got weaker.**" in comment and "<details>" in comment
    new = privspec.evaluate(load_spec_text(NEW))
    assert "### New spec: `specs/new.privspec.yml`\n\nWithin budget." not in comment  # no limits
    assert f"μ = {fmt.fmt_mu(new.gdp.mu)} (regret {fmt.fmt_regret(new.gdp.regret or 0)})" in comment


def test_command_line_limits_apply_to_every_changed_spec(
        pull_request: tuple[Path, str, str], tmp_path: Path) -> None:
    _, base, head = pull_request
    code, comment, _, _ = _run(tmp_path, "--base", base, "--head", head, "--max-mu", "100")
    assert code == 1
    assert "### New spec: `specs/new.privspec.yml`\n\nWithin budget." in comment
    code, comment, _, _ = _run(tmp_path, "--base", base, "--head", head, "--max-mu", "0.01")
    assert code == 1 and "❌ **2 of 3 changed specs over budget.**" in comment


def test_within_budget_and_fail_on_weaker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    root = init_repo(tmp_path / "repo")
    base = commit(root, {TRAIN: dpsgd_spec(1.1, budget="max_mu: 5")}, "base")
    head = commit(root, {TRAIN: dpsgd_spec(0.9, budget="max_mu: 5")}, "weaker, within budget")
    monkeypatch.chdir(root / "specs")  # any directory of the repository
    code, comment, _, outputs = _run(tmp_path, "--base", base, "--head", head)
    assert code == 0
    assert "✅ Every changed spec is within its budget." in comment
    assert "over-budget=false" in outputs and "weaker=true" in outputs
    assert comment in capsys.readouterr().out  # the comment is also in the job's log
    code, _, _, _ = _run(tmp_path, "--base", base, "--head", head, "--fail-on-weaker", "true")
    assert code == 1


def test_renamed_spec_is_compared_with_its_old_name(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    root = init_repo(tmp_path / "repo")
    base = commit(root, {"a.privspec.yaml": dpsgd_spec(1.1)}, "base")
    git(root, "mv", "a.privspec.yaml", "b.privspec.yaml")
    (root / "b.privspec.yaml").write_text(dpsgd_spec(1.2), encoding="utf-8")
    git(root, "add", "b.privspec.yaml")
    git(root, "commit", "-q", "--no-gpg-sign", "-m", "rename")
    monkeypatch.chdir(root)
    code, comment, _, _ = _run(tmp_path, "--base", base)  # head defaults to HEAD
    assert code == 0
    assert "(renamed from `a.privspec.yaml`)" in comment
    assert "**Privacy got stronger.**" in comment


def test_no_changed_spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = init_repo(tmp_path / "repo")
    base = commit(root, {"a.privspec.yaml": dpsgd_spec()}, "base")
    commit(root, {"README.md": "docs\n"}, "docs only")
    monkeypatch.chdir(root)
    code, comment, _, outputs = _run(tmp_path, "--base", base)
    assert code == 0
    assert "No `*.privspec.yaml` file changed between" in comment
    assert "changed=0" in outputs


def test_invalid_spec_in_the_pull_request_exits_2(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    root = init_repo(tmp_path / "repo")
    base = commit(root, {"a.privspec.yaml": dpsgd_spec()}, "base")
    commit(root, {"a.privspec.yaml": dpsgd_spec(-1.0)}, "broken")
    monkeypatch.chdir(root)
    code, comment, _, _ = _run(tmp_path, "--base", base)
    assert code == 2
    assert "### Invalid spec: `a.privspec.yaml`" in comment
    assert ":8:23: error: mechanism.dpsgd.noise_multiplier: must be greater than 0" in comment


@pytest.mark.parametrize(("args", "message"), [
    (["--base", "no-such-sha"], "privspec action: error: unknown revision 'no-such-sha'"),
    (["--base", ""], "privspec action: error: no base revision"),
    (["--base", "HEAD", "--max-epsilon", "1"], "privspec action: error: --max-epsilon needs "
                                                "--delta"),
])
def test_cannot_run_exits_2_with_one_line(
        pull_request: tuple[Path, str, str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    code, comment, _, _ = _run(tmp_path, *args)
    assert code == 2 and comment == ""
    err = capsys.readouterr().err
    assert err.startswith(message) and len(err.splitlines()) == 1


def test_outside_a_repository_and_bad_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    assert privspec_main(["action", "--base", "HEAD"]) == 2
    assert capsys.readouterr().err == f"privspec action: error: not a git repository: {tmp_path}\n"
    assert privspec_main(["action", "--base", "HEAD", "--require-tier1", "maybe"]) == 2
    assert "expected true or false" in capsys.readouterr().err


def test_runs_as_a_module_with_github_environment(
        pull_request: tuple[Path, str, str], tmp_path: Path) -> None:
    root, base, head = pull_request
    summary, outputs = tmp_path / "summary.md", tmp_path / "out.txt"
    env = {**GIT_ENV, "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_OUTPUT": str(outputs),
           "RUNNER_TEMP": str(tmp_path), "PATH": "/usr/bin:/bin", "PRIVSPEC_NO_CACHE": "1"}
    done = subprocess.run([sys.executable, "-m", "privspec.cli", "action", "--base", base, "--head",
                           head, "--max-mu", "", "--max-epsilon", "", "--delta", "",
                           "--max-advantage", "", "--require-tier1", "false",
                           "--fail-on-weaker", "false"],
                          cwd=root, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 1, done.stderr
    assert (tmp_path / "privspec-comment.md").read_text(encoding="utf-8") in summary.read_text(
        encoding="utf-8")
    assert f"comment-file={tmp_path / 'privspec-comment.md'}" in outputs.read_text(
        encoding="utf-8")
    assert "exceeds the limit 0.5 (budget.max_mu)" in done.stderr


def test_action_yml_runs_the_module_with_every_input() -> None:
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    assert action["runs"]["using"] == "composite"
    steps = action["runs"]["steps"]
    install = next(s for s in steps if s.get("name") == "Install privspec")
    assert 'pip install --quiet "$GITHUB_ACTION_PATH"' in install["run"]
    run = next(s for s in steps if s.get("id") == "privspec")
    assert run["run"].startswith("python -m privspec.cli action")
    # every input reaches the script through the environment, never pasted into the script
    assert "${{" not in run["run"]
    for name in action["inputs"]:
        if name == "python-version":
            continue
        variable = "PRIVSPEC_" + name.upper().replace("-", "_")
        assert run["env"][variable] == "${{ inputs." + name + " }}"
        assert f'--{name} "${variable}"' in run["run"]
    assert set(action["outputs"]) == {"comment-file", "changed", "weaker", "over-budget"}


def test_readme_workflow_uses_the_action() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- workflow -->\n```yaml\n(.*?)```", readme, re.S)
    assert block, "README.md documents a workflow between <!-- workflow --> markers"
    workflow = yaml.safe_load(block.group(1))
    steps = workflow["jobs"]["privacy"]["steps"]
    checkout = steps[0]
    assert checkout["uses"].startswith("actions/checkout@") and \
        checkout["with"]["fetch-depth"] == 0
    action = next(s for s in steps if s.get("id") == "privspec")
    assert "privspec" in action["uses"]
    comment = steps[-1]
    assert "steps.privspec.outputs.comment-file" in comment["if"] + comment["run"] + str(
        comment.get("env", {}))
    assert workflow["permissions"]["pull-requests"] == "write"


def test_over_budget_output_holds_when_another_spec_is_invalid(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Exit 2 (a spec cannot be read) must not hide that another spec is over budget."""
    root = init_repo(tmp_path / "repo")
    base = commit(root, {TRAIN: dpsgd_spec(1.1, budget="max_mu: 0.5")}, "base")
    head = commit(root, {TRAIN: dpsgd_spec(0.9, budget="max_mu: 0.5"),
                         "specs/broken.privspec.yaml": "privspec: 1\ntitle: [\n"}, "break one")
    monkeypatch.chdir(root)
    code, _, _, outputs = _run(tmp_path, "--base", base, "--head", head)
    assert code == 2
    assert "over-budget=true" in outputs.splitlines()


@pytest.mark.parametrize("changed", [True, False], ids=["changed", "added"])
def test_a_risk_limit_not_among_the_specs_scenarios_is_checked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, changed: bool) -> None:
    """The budget's max_risk names a scenario the spec's report does not list by default
    (re-identification among 100): the action states it and checks it, for a changed spec
    (compared with its base) and for a new one alike."""
    root = init_repo(tmp_path / "repo")
    limit = ("max_risk:\n  - reidentification: {candidates: 100}\n"
             "    at_most: 0.0101")
    base = commit(root, {TRAIN: dpsgd_spec(2.0, budget=limit), "README.md": "x\n"}
                  if changed else {"README.md": "x\n"}, "base")
    head = commit(root, {TRAIN: dpsgd_spec(0.9, budget=limit)}, "less noise")
    monkeypatch.chdir(root)
    code, comment, _, outputs = _run(tmp_path, "--base", base, "--head", head)
    assert code == 1, comment
    assert "the success of re-identification, 100 candidates" in comment
    assert "over-budget=true" in outputs


AUDITED = ONE_GAUSSIAN


def _score_file(attack_mu: float) -> str:
    """A CSV score file of 5,000 members and 5,000 non-members, an attack of μ ``attack_mu``."""
    rng = np.random.default_rng(0)
    members, non_members = rng.normal(attack_mu, 1.0, 5000), rng.normal(0.0, 1.0, 5000)
    return "\n".join(["score,member", *(f"{float(x)!r},1" for x in members),
                      *(f"{float(x)!r},0" for x in non_members)]) + "\n"


def _audited_spec(scores: str) -> str:
    digest = hashlib.sha256(scores.encode()).hexdigest()
    return AUDITED + f"audit:\n  scores: runs/scores.csv\n  sha256: '{digest}'\n"


@pytest.mark.parametrize(("attack_mu", "expected"), [(2.0, 1), (1.0, 0)],
                         ids=["contradicted", "within"])
def test_the_audit_block_is_run_on_the_committed_scores(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        attack_mu: float, expected: int) -> None:
    """An added spec whose audit: block names committed scores: the action runs the audit
    privspec check runs, and fails on a contradiction (it ignored the block)."""
    root = init_repo(tmp_path / "repo")
    base = commit(root, {"README.md": "x\n"}, "base")
    scores = _score_file(attack_mu)
    head = commit(root, {"specs/runs/scores.csv": scores,
                         "specs/audited.privspec.yaml": _audited_spec(scores)}, "audited")
    monkeypatch.chdir(root)
    assert privspec_main(["check", "specs/audited.privspec.yaml"]) == expected
    capsys.readouterr()
    code, comment, _, outputs = _run(tmp_path, "--base", base, "--head", head)
    assert code == expected, comment
    short = git(root, "rev-parse", "--short", head)
    contradiction = (f"- `specs/audited.privspec.yaml`: audit of {short}:specs/runs/scores.csv: "
                     "contradiction at 95 % confidence: the attack 'score ≥")
    assert (contradiction in comment) is bool(expected)
    assert f"over-budget={str(bool(expected)).lower()}" in outputs
    assert ("✅ Every changed spec is within its budget." in comment) is not bool(expected)
    assert ("audit of" in capsys.readouterr().err) is bool(expected)


def test_audit_scores_only_in_the_working_tree_are_not_used(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A modified spec whose audit: block names scores that are not committed (only in the
    working tree, contradicting it): the action fails closed at the score file."""
    root = init_repo(tmp_path / "repo")
    base = commit(root, {"specs/audited.privspec.yaml": AUDITED}, "base")
    scores = _score_file(2.0)
    head = commit(root, {"specs/audited.privspec.yaml": _audited_spec(scores)}, "audit it")
    (root / "specs" / "runs").mkdir()
    (root / "specs" / "runs" / "scores.csv").write_text(scores, encoding="utf-8")
    monkeypatch.chdir(root)
    code, comment, _, _ = _run(tmp_path, "--base", base, "--head", head)
    assert code == 2, comment
    short = git(root, "rev-parse", "--short", head)
    assert "### Invalid audit scores: `specs/audited.privspec.yaml`" in comment
    assert (f"{short}:specs/runs/scores.csv:1:1: error: no such file at revision {short} "
            "[io/not-found]") in comment
    assert "contradiction" not in comment


def test_an_audit_block_naming_other_scores_is_located_in_the_committed_spec(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Committed scores whose SHA-256 is not the one the spec names: refused at the
    spec's audit.sha256, its line and column in the spec as committed."""
    root = init_repo(tmp_path / "repo")
    base = commit(root, {"README.md": "x\n"}, "base")
    scores = _score_file(1.0)
    head = commit(root, {"specs/runs/scores.csv": scores + "0.5,1\n",
                         "specs/audited.privspec.yaml": _audited_spec(scores)}, "audited")
    monkeypatch.chdir(root)
    code, comment, _, _ = _run(tmp_path, "--base", base, "--head", head)
    short = git(root, "rev-parse", "--short", head)
    assert code == 2, comment
    assert (f"{short}:specs/audited.privspec.yaml:9:3: error: audit.sha256: the score file "
            "runs/scores.csv has SHA-256 ") in comment


def test_the_global_memory_budget_applies_as_it_does_to_check(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``privspec --memory-budget 0.05 action`` evaluates within 0.05 GiB as ``check`` does:
    the 68 MiB reading of a 2,048-step strategy is refused (the action ignored the option
    and evaluated it within the default 1 GiB)."""
    root = init_repo(tmp_path / "repo")
    base = commit(root, {"README.md": "x\n"}, "base")
    np.save(root / "strategy.npy", np.eye(2048))
    digest = hashlib.sha256((root / "strategy.npy").read_bytes()).hexdigest()
    git(root, "add", "strategy.npy")
    spec = ("privspec: 1\ntitle: t\nunit: one user\nneighbouring: add-or-remove\nmechanism:\n"
            "  matrix_factorization:\n"
            f"    strategy: {{matrix: {{file: strategy.npy, sha256: '{digest}'}}}}\n"
            "    steps: 2048\n    noise_multiplier: 2\n    participation: {once: {}}\n"
            "budget: {max_mu: 1}\n")
    head = commit(root, {"mf.privspec.yaml": spec}, "a long strategy")
    monkeypatch.chdir(root)  # (with the budget first: the values read are kept for the run)
    assert privspec_main(["--memory-budget", "0.05", "check", "mf.privspec.yaml"]) == 2
    code, comment, _, _ = _run(tmp_path, "--memory-budget", "0.05", "--base", base,
                               "--head", head)
    assert code == 2, comment
    assert "### Cannot evaluate: `mf.privspec.yaml`" in comment
    assert "more than the 31 MiB" in comment
    assert _run(tmp_path, "--base", base, "--head", head)[0] == 0
