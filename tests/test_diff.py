"""``privspec diff``: a PR-style comparison of two versions of a spec, from files or git
revisions, with the numbers of ``privspec.evaluate`` and conservative rounding."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from git_repo import GIT_ENV, commit, dpsgd_spec, init_repo

import privspec
from privspec.cli import main
from privspec.report import formatting as fmt
from privspec.report.model import Report
from privspec.spec.loader import load_spec_text
from privspec.workflows.diffing import (
    _change,
    changes_summary,
    percent_text,
    spec_changes,
    value_text,
)

SPEC = "specs/train.privspec.yaml"


@pytest.fixture(autouse=True)
def _hermetic_git(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in GIT_ENV.items():
        monkeypatch.setenv(name, value)


@pytest.fixture(scope="module")
def reports() -> tuple[Report, Report]:
    """privspec.evaluate of the two versions (noise multiplier 1.1, then 0.9)."""
    return (privspec.evaluate(load_spec_text(dpsgd_spec(1.1))),
            privspec.evaluate(load_spec_text(dpsgd_spec(0.9))))


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Two commits: the second lowers the noise multiplier from 1.1 to 0.9."""
    root = init_repo(tmp_path / "repo")
    commit(root, {SPEC: dpsgd_spec(1.1)}, "train with noise 1.1")
    commit(root, {SPEC: dpsgd_spec(0.9)}, "lower the noise to 0.9")
    monkeypatch.chdir(root)
    return root


def test_lower_noise_commit_gives_a_weaker_pr_comment(
        repo: Path, reports: tuple[Report, Report], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", "--rev", "HEAD~1", SPEC]) == 0
    out = capsys.readouterr().out
    before, after = reports
    assert before.gdp.mu is not None and after.gdp.mu is not None
    assert after.gdp.mu > before.gdp.mu
    mu_b, mu_a = fmt.fmt_mu(before.gdp.mu), fmt.fmt_mu(after.gdp.mu)
    assert out.startswith("### ⚠️ Small DP-SGD run\n")
    assert f"`HEAD~1:{SPEC}` → `{SPEC}`" in out
    assert f"**Privacy got weaker.** μ {mu_b} → {mu_a}, +" in out
    assert f"| μ-GDP | {mu_b} | {mu_a} | +" in out
    assert ", weaker |" in out
    # the best attack's advantage in percent, its change in percentage points
    adv_b, adv_a = before.gdp.advantage, after.gdp.advantage
    points = fmt.format_number((adv_a - adv_b) * 100, "up")
    assert (f"the best attack's advantage {percent_text(adv_b)} → {percent_text(adv_a)}, "
            f"+{points} percentage points") in out
    for old, new in zip(before.epsilons, after.epsilons, strict=True):
        assert (f"| ε at δ = {fmt.fmt_given(old.delta)} | {fmt.fmt_epsilon(old.epsilon)} | "
                f"{fmt.fmt_epsilon(new.epsilon)} |") in out
    assert "Spec changes: `mechanism.dpsgd.noise_multiplier` 1.1 → 0.9." in out
    # details collapsed: the Tier II rows and every change
    details = out[out.index("<details>"):]
    assert "</details>" in details
    row = next(r for r in after.tradeoff if r.alpha == 1e-4)
    old_row = next(r for r in before.tradeoff if r.alpha == 1e-4)
    assert (f"| 10⁻⁴ | {fmt.fmt_tpr(old_row.tpr, old_row.beta)} | "
            f"{fmt.fmt_tpr(row.tpr, row.beta)} |") in details
    assert "- `mechanism.dpsgd.noise_multiplier`: 1.1 → 0.9" in details


def test_json_has_the_unrounded_numbers_of_evaluate(
        repo: Path, reports: tuple[Report, Report], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", "--rev", "HEAD~1", "--head-rev", "HEAD", SPEC, "-f", "json"]) == 0
    (diff,) = json.loads(capsys.readouterr().out)
    before, after = reports
    assert diff["verdict"] == "weaker" and diff["comparable"] is True
    assert diff["before_label"] == f"HEAD~1:{SPEC}" and diff["after_label"] == f"HEAD:{SPEC}"
    rows = {row["key"] if row["key"] != "epsilon" else row["delta"]: row for row in diff["rows"]}
    assert rows["mu"]["before"] == before.gdp.mu and rows["mu"]["after"] == after.gdp.mu
    assert rows["advantage"]["after"] == after.gdp.advantage
    assert rows["regret"]["before"] == before.gdp.regret
    for entry in after.epsilons:
        assert rows[entry.delta]["after"] == entry.epsilon
    assert [c["path"] for c in diff["changes"]] == ["mechanism.dpsgd.noise_multiplier"]
    tprs = {row["alpha"]: row["after"] for row in diff["tradeoff"]}
    assert tprs == {r.alpha: r.tpr for r in after.tradeoff if not r.is_alpha_star}


def test_two_files_stronger_and_unchanged(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    old, new = tmp_path / "old.privspec.yaml", tmp_path / "new.privspec.yaml"
    old.write_text(dpsgd_spec(0.9, steps=300), encoding="utf-8")
    new.write_text(dpsgd_spec(1.1, steps=300), encoding="utf-8")
    assert main(["diff", str(old), str(new)]) == 0
    out = capsys.readouterr().out
    assert "**Privacy got stronger.**" in out and "⚠️" not in out
    assert ", stronger |" in out
    assert main(["diff", str(new), str(new), "--fail-on-weaker"]) == 0
    out = capsys.readouterr().out
    assert "**Privacy is unchanged.**" in out
    assert "The specs describe the same mechanism and report." in out
    assert "| μ-GDP |" in out and "| — |" in out


def test_fail_on_weaker_and_github_annotations(repo: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", "--rev", "HEAD~1", SPEC, "--fail-on-weaker", "-f", "github"]) == 1
    out = capsys.readouterr().out.strip()
    assert out.startswith(f"::warning file={SPEC},title=privspec diff::Privacy got weaker: μ ")
    assert "%25" in out  # percent signs escaped in workflow commands
    assert len(out.splitlines()) == 1


def test_steps_change_is_read_as_a_reviewer_would(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    old, new = tmp_path / "old.privspec.yaml", tmp_path / "new.privspec.yaml"
    old.write_text(dpsgd_spec(1.1, steps=100), encoding="utf-8")
    new.write_text(dpsgd_spec(0.9, steps=20000), encoding="utf-8")
    before, after = load_spec_text(old.read_text()), load_spec_text(new.read_text())
    changes = spec_changes(before, after)
    assert [(c.path, c.before_text, c.after_text) for c in changes] == [
        ("mechanism.dpsgd.noise_multiplier", "1.1", "0.9"),
        ("mechanism.dpsgd.steps", "100", "20,000"),
    ]
    assert changes_summary(changes) == ("mechanism.dpsgd.noise_multiplier 1.1 → 0.9, "
                                        "steps 100 → 20,000")


@pytest.mark.parametrize(("change", "warning"), [
    ({"neighbouring": "replace-one"}, "The neighbouring relation changed (add-or-remove → "
                                      "replace-one)"),
    ({"unit": "one user"}, "The privacy unit changed ('one training example' → 'one user')"),
])
def test_different_relation_or_unit_warns_loudly(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict[str, str],
        warning: str) -> None:
    old, new = tmp_path / "old.privspec.yaml", tmp_path / "new.privspec.yaml"
    old.write_text(dpsgd_spec(1.1), encoding="utf-8")
    new.write_text(dpsgd_spec(1.1, **change), encoding="utf-8")
    assert main(["diff", str(old), str(new)]) == 0
    out = capsys.readouterr().out
    assert "> [!WARNING]\n> **Not comparable.** " + warning in out
    assert "not comparable" in out
    assert main(["diff", str(old), str(new), "-f", "json"]) == 0
    (diff,) = json.loads(capsys.readouterr().out)
    assert diff["comparable"] is False and diff["warnings"][0].startswith(warning)
    assert "(but the numbers protect different things)" in diff["summary"]
    assert main(["diff", str(old), str(new), "--fail-on-weaker", "-f", "github"]) == 1
    annotations = capsys.readouterr().out.splitlines()
    assert annotations[0].startswith("::warning file=")
    assert annotations[1].startswith("::warning file=") and "not comparable" in annotations[1]


def test_kind_change_and_new_sections_are_listed() -> None:
    base = {"privspec": 1, "title": "t", "unit": "u", "neighbouring": "add-or-remove",
            "mechanism": {"gaussian": {"noise_multiplier": 2.0}}}
    head = {**base, "mechanism": {"compose": [
        {"name": "search", "repeat": 8, "mechanism": {"gaussian": {"noise_multiplier": 12.0}}},
        {"mechanism": {"laplace": {"scale": 2.0}}}]},
        "report": {"deltas": [1e-5]}, "budget": {"max_mu": 1}}
    changes = spec_changes(privspec.spec.models.Spec.model_validate(base),
                           privspec.spec.models.Spec.model_validate(head))
    by_path = {c.path: c for c in changes}
    assert by_path["mechanism"].change == "changed"  # another kind: one change, not two
    assert by_path["mechanism"].before_text == "{gaussian: {noise_multiplier: 2}}"
    assert by_path["mechanism"].after_text.startswith("{compose: [{name: 'search', repeat: 8, ")
    assert by_path["report.deltas"].before_text == "[10⁻⁵, 10⁻⁶, 10⁻⁹]"
    assert by_path["report.deltas"].after_text == "[10⁻⁵]"
    assert by_path["budget"].change == "added" and by_path["budget"].after_text.startswith(
        "{max_mu: 1, ")


def test_budget_change_is_a_spec_change(tmp_path: Path) -> None:
    old = load_spec_text(dpsgd_spec(budget="max_mu: 0.5"))
    new = load_spec_text(dpsgd_spec(budget="max_mu: 2"))
    assert [(c.path, c.before_text, c.after_text) for c in spec_changes(old, new)] == [
        ("budget.max_mu", "0.5", "2")]


def test_values_and_changes_are_rounded_towards_less_privacy() -> None:
    assert value_text(20000) == "20,000" and value_text(1e-5) == "10⁻⁵"
    assert value_text(0.1) == "0.1" and value_text("a\nb") == "'a b'" and value_text(None) == "unset"
    assert _change(0.5, 0.61234) == "+0.113 (+22.5%)"  # increase rounded up
    assert _change(0.61234, 0.5) == "−0.112 (−18.3%)"  # decrease rounded towards zero
    assert _change(0.5, 0.5) == "—"
    assert _change(0.5, float("inf")) == "→ ∞ (unbounded)"
    assert percent_text(0.123456) == "12.4%" and percent_text(0.9999) == "1 − 9.99 × 10⁻⁵"


@pytest.mark.parametrize(("args", "message"), [
    (["--rev", "no-such-branch", SPEC], "privspec diff: error: unknown revision "
                                        "'no-such-branch'"),
    (["--rev", "HEAD~1", "specs/new.privspec.yaml"],
     "privspec diff: error: specs/new.privspec.yaml does not exist at revision HEAD~1"),
    (["--rev", "HEAD~1", "--head-rev", "HEAD~5", SPEC], "privspec diff: error: unknown revision"),
    ([SPEC], "privspec diff: error: give two specs (BASE HEAD), or --rev REV with specs; got 1"),
    (["--head-rev", "HEAD", SPEC, SPEC], "privspec diff: error: --head-rev goes with --rev"),
])
def test_bad_revisions_and_arguments_give_one_line_and_exit_2(
        repo: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    assert main(["diff", *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(message)
    assert len(captured.err.strip().splitlines()) == 1


def test_not_a_git_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    spec = tmp_path / "plain" / "a.privspec.yaml"
    spec.parent.mkdir()
    spec.write_text(dpsgd_spec(), encoding="utf-8")
    assert main(["diff", "--rev", "HEAD", str(spec)]) == 2
    err = capsys.readouterr().err
    assert err == f"privspec diff: error: not a git repository: {spec.parent}\n"


def test_missing_file_and_invalid_old_version(repo: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", "missing.privspec.yaml", SPEC]) == 2
    assert "missing.privspec.yaml:1:1: error: no such file [io/not-found]" in \
        capsys.readouterr().err
    commit(repo, {SPEC: dpsgd_spec(-1.0)}, "a broken spec")
    commit(repo, {SPEC: dpsgd_spec(1.0)}, "fixed")
    assert main(["diff", "--rev", "HEAD~1", SPEC]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"HEAD~1:{SPEC}:8:23: error: mechanism.dpsgd.noise_multiplier: "
                          "must be greater than 0")


BLACK_BOX = """privspec: 1
title: Black box
unit: one person
neighbouring: add-or-remove
mechanism: {approximate_dp: {epsilon: EPS, delta: 1e-6}}
accounting: {discretization: 1e-3}
"""


def test_without_finite_mu_the_advantage_decides(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    old, new = tmp_path / "old.privspec.yaml", tmp_path / "new.privspec.yaml"
    old.write_text(BLACK_BOX.replace("EPS", "1"), encoding="utf-8")
    new.write_text(BLACK_BOX.replace("EPS", "2"), encoding="utf-8")
    assert main(["diff", str(old), str(new)]) == 0
    out = capsys.readouterr().out
    assert "**Privacy got weaker.** No finite μ before or after; the best attack's advantage " \
        in out
    assert "| μ-GDP | no finite μ | no finite μ | — |" in out


def test_numbers_moving_against_the_verdict_are_named(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old, new = tmp_path / "old.privspec.yaml", tmp_path / "new.privspec.yaml"
    old.write_text(BLACK_BOX.replace("EPS", "1"), encoding="utf-8")
    new.write_text(BLACK_BOX.replace("{approximate_dp: {epsilon: EPS, delta: 1e-6}}",
                                     "{gaussian: {noise_multiplier: 2}}"), encoding="utf-8")
    assert main(["diff", str(old), str(new), "-f", "json"]) == 0
    (diff,) = json.loads(capsys.readouterr().out)
    assert diff["verdict"] == "stronger"  # a finite μ where there was none
    assert "ε at δ = 10⁻⁵" in diff["contrary"]  # but ε at δ = 10⁻⁵ grew from 1 to 2
    assert main(["diff", str(old), str(new)]) == 0
    out = capsys.readouterr().out
    assert "**Privacy got stronger.** μ is now finite: 0.5 (there was no finite μ)" in out
    assert "Not every number moved the same way: ε at δ = 10⁻⁵" in out
    assert "Spec changes: `mechanism` {approximate\\_dp: {epsilon: 1, delta: 10⁻⁶}} → " in out


@pytest.mark.parametrize(("extra", "others"), [("", "record"),
                                               ("unit_level: true\n", "unit"),
                                               ("records_per_unit: 3\n", "unit's records")])
def test_the_risk_rows_say_what_the_attacker_knows_of_the_unit(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: str, others: str) -> None:
    """As the report does: every other record, unit (sampled and bounded as one) or
    unit's records (the diff said "record" whoever was protected)."""
    old, new = tmp_path / "old.privspec.yaml", tmp_path / "new.privspec.yaml"
    risk = "risk:\n  - membership: {fpr: 1e-3}\n"
    old.write_text(dpsgd_spec(1.1, steps=100) + extra + risk, encoding="utf-8")
    new.write_text(dpsgd_spec(1.2, steps=100) + extra + risk, encoding="utf-8")
    assert main(["diff", str(old), str(new)]) == 0
    out = capsys.readouterr().out
    assert f"What an attacker who knows every other {others} can do" in out
