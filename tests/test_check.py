"""``privspec check``: budgets from the spec and the command line, exit codes 0 / 1 / 2,
one line per violated limit, unrounded comparison and conservative printing."""

from __future__ import annotations

import math
from decimal import Decimal
from pathlib import Path

import pytest
from git_repo import dpsgd_spec

import privspec
from privspec.cli import main
from privspec.report import formatting as fmt
from privspec.report.model import Report
from privspec.spec.diagnostics import SpecError
from privspec.spec.loader import load_spec_text
from privspec.spec.models import with_figures
from privspec.workflows.budget import Limit, check_report, limits_from_options

NO_MU = """privspec: 1
title: A black box
unit: one person
neighbouring: add-or-remove
mechanism: {approximate_dp: {epsilon: 1, delta: 1e-6}}
accounting: {discretization: 1e-3}
"""


@pytest.fixture(scope="module")
def report() -> Report:
    return privspec.evaluate(load_spec_text(dpsgd_spec(0.9)))


def _write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_within_budget_exits_0(tmp_path: Path, report: Report,
                               capsys: pytest.CaptureFixture[str]) -> None:
    spec = _write(tmp_path, "a.privspec.yaml", dpsgd_spec(0.9))
    assert main(["check", spec, "--max-mu", "1.0", "--max-advantage", "0.5"]) == 0
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"{spec}: within budget: μ = {fmt.fmt_mu(report.gdp.mu)} ≤ 1 (--max-mu)" in \
        captured.err
    assert captured.err.endswith("1 spec within budget\n")


def test_over_budget_exits_1_with_one_line_per_limit(
        tmp_path: Path, report: Report, capsys: pytest.CaptureFixture[str]) -> None:
    spec = _write(tmp_path, "a.privspec.yaml", dpsgd_spec(0.9))
    assert report.gdp.mu is not None and report.gdp.tier == 2
    args = ["check", spec, "--max-mu", "0.5", "--max-epsilon", "1", "--delta", "1e-5",
            "--max-advantage", "0.01", "--require-tier1"]
    assert main(args) == 1
    lines = capsys.readouterr().out.splitlines()
    eps = next(e.epsilon for e in report.epsilons if e.delta == 1e-5)
    assert lines == [
        f"{spec}: μ = {fmt.fmt_mu(report.gdp.mu)} exceeds the limit 0.5 (--max-mu)",
        f"{spec}: ε at δ = 10⁻⁵ = {fmt.fmt_epsilon(eps)} exceeds the limit 1 (--max-epsilon)",
        f"{spec}: the best attack's advantage = {fmt.fmt_advantage(report.gdp.advantage)} "
        "exceeds the limit 0.01 (--max-advantage)",
        f"{spec}: Tier II: regret {fmt.fmt_regret(report.gdp.regret or 0)} exceeds 0.01, so μ "
        "alone does not describe the mechanism, but Tier I is required (--require-tier1)",
    ]


def test_budget_in_the_spec_and_on_the_command_line_both_apply(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = _write(tmp_path, "a.privspec.yaml", dpsgd_spec(0.9, budget="max_mu: 0.5"))
    assert main(["check", spec]) == 1
    assert capsys.readouterr().out.endswith("exceeds the limit 0.5 (budget.max_mu)\n")
    assert main(["check", spec, "--max-mu", "2"]) == 1  # the stricter spec limit still holds
    out = capsys.readouterr().out
    assert "(budget.max_mu)" in out and "(--max-mu)" not in out
    relaxed = _write(tmp_path, "b.privspec.yaml", dpsgd_spec(0.9, budget="max_mu: 5"))
    assert main(["check", relaxed, "--max-mu", "0.5"]) == 1
    out = capsys.readouterr().out
    assert "(--max-mu)" in out and "(budget.max_mu)" not in out


def test_epsilon_budget_at_a_delta_the_report_does_not_list(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = load_spec_text(dpsgd_spec(0.9, budget="max_epsilon: 1\ndelta: 1e-3"))
    assert 1e-3 not in spec.report.deltas
    expected = privspec.evaluate(with_figures(spec, deltas=[1e-3])).epsilons[-1]
    assert expected.delta == 1e-3 and expected.epsilon is not None
    path = _write(tmp_path, "a.privspec.yaml", dpsgd_spec(0.9, budget="max_epsilon: 1\n"
                                                                       "delta: 1e-3"))
    assert main(["check", path]) == (0 if expected.epsilon <= 1 else 1)
    captured = capsys.readouterr()
    assert f"ε at δ = 0.001 = {fmt.fmt_epsilon(expected.epsilon)}" in captured.out + captured.err


def test_no_finite_mu_violates_any_max_mu(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    spec = _write(tmp_path, "box.privspec.yaml", NO_MU)
    assert main(["check", spec, "--max-mu", "1000"]) == 1
    assert capsys.readouterr().out == (f"{spec}: μ = ∞ (no finite μ exists) exceeds the limit "
                                       "1000 (--max-mu)\n")
    assert main(["check", spec, "--max-epsilon", "100", "--delta", "1e-7"]) == 1
    assert "(unbounded) exceeds the limit 100" in capsys.readouterr().out
    assert main(["check", spec, "--require-tier1"]) == 1
    assert "Tier II: no finite μ exists, but Tier I is required" in capsys.readouterr().out


def test_compares_unrounded_values(report: Report) -> None:
    mu = report.gdp.mu
    assert mu is not None
    rounded_up = float(fmt.fmt_mu(mu))
    (at_rounded,) = check_report(report, [Limit("max_mu", rounded_up, "--max-mu")])
    assert at_rounded.ok
    just_below = math.nextafter(mu, 0)
    (below,) = check_report(report, [Limit("max_mu", just_below, "--max-mu")])
    assert not below.ok and below.actual == mu
    # within the limit by a hair: enough digits that the printed μ is not above the limit
    hair = mu * (1 + 1e-9)
    (ok,) = check_report(report, [Limit("max_mu", hair, "--max-mu")])
    assert ok.ok
    shown = ok.message.split(" = ")[1].split(" ")[0]
    assert Decimal(shown) <= Decimal(repr(hair)) and Decimal(shown) >= Decimal(repr(mu))


def test_specs_without_limits_pass_with_a_note(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    spec = _write(tmp_path, "a.privspec.yaml", dpsgd_spec())
    assert main(["check", spec]) == 0
    assert "no budget to check" in capsys.readouterr().err
    assert main(["check", spec, "-q"]) == 0
    assert capsys.readouterr().err == ""


def test_github_annotations(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = _write(tmp_path, "a.privspec.yaml", dpsgd_spec(0.9))
    assert main(["check", spec, "--max-mu", "0.1", "-f", "github", "-q"]) == 1
    out = capsys.readouterr().out
    # A limit of the command line: at the mechanism, whose μ exceeds it.
    assert out.startswith(f"::error file={spec},line=6,col=1,title=budget/exceeded::--max-mu: μ =")


def test_github_annotations_stand_at_the_limit_in_the_spec(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = _write(tmp_path, "a.privspec.yaml", dpsgd_spec(0.9, budget="max_mu: 9\n"
                                                           "require_tier1: true"))
    assert main(["check", spec, "-f", "github", "-q"]) == 1
    assert capsys.readouterr().out.startswith(
        f"::error file={spec},line=16,col=3,title=budget/exceeded::budget.require_tier1: ")


@pytest.mark.parametrize(("args", "message"), [
    (["--max-epsilon", "1"], "--max-epsilon needs --delta"),
    (["--delta", "1e-5"], "--delta goes with --max-epsilon"),
    (["--max-mu", "-1"], "--max-mu must be a positive number, got -1"),
    (["--max-advantage", "2"], "--max-advantage is a probability in (0, 1], got 2"),
    (["--max-epsilon", "1", "--delta", "2"], "--delta must be in (0, 1), got 2"),
])
def test_bad_limits_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                           args: list[str], message: str) -> None:
    spec = _write(tmp_path, "a.privspec.yaml", dpsgd_spec())
    assert main(["check", spec, *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("privspec check: error: ") and message in err
    assert len(err.splitlines()) == 1


def test_invalid_spec_and_missing_file_exit_2(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    bad = _write(tmp_path, "bad.privspec.yaml", dpsgd_spec(0.9, budget="max_epsilon: 1"))
    assert main(["check", bad, str(tmp_path / "missing.privspec.yaml"), "--max-mu", "1"]) == 2
    err = capsys.readouterr().err
    assert ("budget.max_epsilon: 'max_epsilon' needs 'delta': ε is only meaningful at a given δ "
            "[spec/conflict]") in err
    assert "missing.privspec.yaml:1:1: error: no such file [io/not-found]" in err


def test_budget_section_is_validated_and_left_out_of_the_report_hash() -> None:
    with pytest.raises(SpecError, match="a budget needs at least one limit"):
        load_spec_text(dpsgd_spec(budget="require_tier1: false"))
    with pytest.raises(SpecError, match="'delta' goes with 'max_epsilon'"):
        load_spec_text(dpsgd_spec(budget="delta: 1e-5"))
    with pytest.raises(SpecError, match="did you mean 'max_advantage'"):
        load_spec_text(dpsgd_spec(budget="max_advantag: 0.1"))
    from privspec.report.evaluation import spec_sha256

    plain = load_spec_text(dpsgd_spec())
    budgeted = load_spec_text(dpsgd_spec(budget="max_mu: 1\nrequire_tier1: true"))
    assert budgeted.budget is not None and budgeted.budget.require_tier1
    assert spec_sha256(plain) == spec_sha256(budgeted)
    assert "budget" not in budgeted.model_dump()


def test_limits_from_options_keeps_the_order() -> None:
    limits = limits_from_options(max_mu=1, max_epsilon=2, delta=1e-5, max_advantage=0.1,
                                 require_tier1=True)
    assert [(lim.kind, lim.source) for lim in limits] == [
        ("max_mu", "--max-mu"), ("max_epsilon", "--max-epsilon"),
        ("max_advantage", "--max-advantage"), ("require_tier1", "--require-tier1")]
