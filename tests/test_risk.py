"""The risk section: closed forms (Gaussian, Laplace, randomized response), the order of
its three columns, bad scenarios, limits in ``privspec check`` and risk targets in
``privspec calibrate``."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import ndtr, ndtri

import privspec
from privspec.cli.app import main
from privspec.numerics.risk import EpsilonDeltaCurve, GaussianCurve, best_accuracy
from privspec.spec.diagnostics import SpecError
from privspec.spec.loader import load_spec_text
from privspec.workflows.calibration import calibrate

SCENARIOS = [{"membership": {"fpr": 1e-3}}, {"membership": {"base_rate": 0.01, "fpr": 1e-4}},
             {"attribute_inference": {"values": 3}}, {"reidentification": {"candidates": 10**6}},
             {"reconstruction": {"baseline": 1e-7}}]


def _spec(mechanism: dict[str, Any], relation: str = "add-or-remove",
          risk: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"privspec": 1, "title": "t", "unit": "one person", "neighbouring": relation,
            "mechanism": mechanism, "risk": risk or SCENARIOS}


def _rows(report: Any) -> dict[tuple[str, tuple[tuple[str, float], ...]], Any]:
    return {(row.scenario, tuple(sorted(row.parameters.items()))): row
            for row in report.risk.rows}


@pytest.mark.parametrize("sigma", [0.5, 1.0, 4.0])
def test_a_gaussian_bounds_success_by_phi_of_phi_inverse_plus_mu(sigma: float) -> None:
    """Kulynych et al. 2025: success ≤ Φ(Φ⁻¹(κ) + μ), exact for a Gaussian."""
    mu = 1 / sigma
    report = privspec.evaluate(_spec({"gaussian": {"sigma": sigma}}))
    for row in report.risk.rows:
        if row.scenario in ("membership-tpr", "attribute-inference", "reidentification",
                            "reconstruction"):
            kappa = row.baseline
            assert row.bound == pytest.approx(float(ndtr(ndtri(kappa) + mu)), rel=1e-9)
            assert row.bound_gdp == pytest.approx(row.bound, rel=1e-9)


def test_the_alone_columns_are_those_of_the_printed_mu_and_epsilon() -> None:
    """The "μ-GDP alone" and "(ε, δ) alone" columns are what a reader computes from their
    headers (μ and ε rounded up, as printed), and the first agrees with the trade-off
    table's G_μ column at the same FPR."""
    from privspec.report.formatting import round_float

    report = privspec.evaluate(_spec(
        {"dpsgd": {"noise_multiplier": 1.1, "sampling_rate": 0.004, "steps": 2000}}))
    assert report.gdp.mu is not None
    shown_mu = round_float(report.gdp.mu, "up")
    shown_epsilon = round_float(report.risk.epsilon, "up")
    assert shown_mu != report.gdp.mu and shown_epsilon != report.risk.epsilon
    row = _rows(report)[("membership-tpr", (("fpr", 1e-3),))]
    assert row.bound_gdp == pytest.approx(float(ndtr(ndtri(1e-3) + shown_mu)), rel=1e-12)
    tradeoff = next(r for r in report.tradeoff if r.alpha == 1e-3)
    assert row.bound_gdp == pytest.approx(tradeoff.tpr_gdp, rel=1e-12)
    claimed = EpsilonDeltaCurve(shown_epsilon, report.risk.delta)
    assert row.bound_epsilon_delta == pytest.approx(claimed.success(1e-3), rel=1e-12)


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 3.0])
def test_laplace_and_randomized_response_meet_their_closed_form(epsilon: float) -> None:
    """An ε-DP mechanism whose curve is f_ε (Laplace's TPR at small FPR, randomized
    response everywhere): success ≤ min(e^ε κ, 1 − e^{−ε}(1 − κ)); and μ alone says more."""
    for mechanism, relation in (({"laplace": {"epsilon": epsilon}}, "add-or-remove"),
                                ({"randomized_response": {"epsilon": epsilon,
                                                          "categories": 2}}, "replace-one")):
        report = privspec.evaluate(_spec(mechanism, relation))
        for row in report.risk.rows:
            if row.scenario in ("attribute-inference", "reidentification", "reconstruction",
                                "membership-tpr"):
                kappa = row.baseline
                closed = min(math.exp(epsilon) * kappa, 1 - math.exp(-epsilon) * (1 - kappa))
                assert row.bound <= closed * (1 + 1e-6)
                if "randomized_response" in mechanism:
                    assert row.bound == pytest.approx(closed, rel=1e-6)
                assert row.bound_epsilon_delta == pytest.approx(closed, rel=1e-9)  # pure ε
                assert row.bound <= row.bound_gdp * (1 + 1e-9)


MECHANISMS = [
    ({"dpsgd": {"noise_multiplier": 1.1, "sampling_rate": 0.004, "steps": 2000}}, "add-or-remove"),
    ({"laplace": {"epsilon": 0.7}}, "add-or-remove"),
    ({"discrete_gaussian": {"sigma": 3.0}}, "add-or-remove"),
    ({"randomized_response": {"flip_probability": 0.3, "categories": 5}}, "replace-one"),
    ({"approximate_dp": {"epsilon": 1.0, "delta": 1e-7}}, "add-or-remove"),
]


@pytest.mark.parametrize(("mechanism", "relation"), MECHANISMS)
def test_the_columns_are_ordered(mechanism: dict[str, Any], relation: str) -> None:
    """guessing ≤ exact; exact ≤ μ-only (f ≥ G_μ − τ); exact ≤ the (ε, δ) claim (the
    mechanism is (ε, δ)-DP at its own ε(δ))."""
    report = privspec.evaluate(_spec(mechanism, relation))
    for row in report.risk.rows:
        assert row.baseline <= row.bound <= 1
        if row.bound_gdp is not None:
            assert row.bound <= row.bound_gdp * (1 + 1e-9) + 1e-12
        assert row.bound <= row.bound_epsilon_delta * (1 + 1e-9) + 1e-12


@settings(max_examples=40, deadline=None)
@given(mu=st.floats(0.01, 8), base_rate=st.floats(1e-4, 0.9999))
def test_gaussian_accuracy_is_the_bayes_optimum(mu: float, base_rate: float) -> None:
    """1 − min_α[(1 − π)α + π G_μ(α)] against a dense grid of α (never above it)."""
    import numpy as np

    alpha = np.concatenate([np.logspace(-12, -0.3, 20001), 1 - np.logspace(-12, -0.3, 20001),
                            [0.0, 1.0]])
    grid = np.min((1 - base_rate) * alpha + base_rate * ndtr(-ndtri(alpha) - mu))
    closed = best_accuracy(GaussianCurve(mu), base_rate)
    assert closed >= 1 - grid - 1e-12
    assert closed == pytest.approx(1 - grid, abs=1e-6)


@pytest.mark.parametrize(("epsilon", "delta", "kappa", "expected"), [
    (1.0, 0.0, 1e-4, math.e * 1e-4), (1.0, 1e-5, 1e-4, 1e-5 + math.e * 1e-4),
    (5.0, 0.0, 0.5, 1 - math.exp(-5) * 0.5), (math.inf, 1e-5, 1e-9, 1.0)])
def test_epsilon_delta_success(epsilon: float, delta: float, kappa: float,
                               expected: float) -> None:
    assert EpsilonDeltaCurve(epsilon, delta).success(kappa) == pytest.approx(expected, rel=1e-12)


def test_default_scenarios_are_in_every_report() -> None:
    data = _spec({"gaussian": {"sigma": 1.0}})
    del data["risk"]
    report = privspec.evaluate(data)
    assert [row.scenario for row in report.risk.rows] == [
        "membership-tpr", "membership-tpr", "attribute-inference", "reidentification"]


@pytest.mark.parametrize(("risk", "says"), [
    ("[membership: {}]", "give 'fpr', 'base_rate' or both"),
    ("[attribute_inference: {values: 1}]", "must be at least 2"),
    ("[reconstruction: {baseline: 0}]", "must be greater than 0"),
    ("[membership: {base_rate: 1}]", "must be less than 1"),
    ("[{reidentification: {candidates: 10}, membership: {fpr: 0.1}}]", "one scenario per"),
    ("[]", "at least 1"),
])
def test_bad_scenarios_are_located(risk: str, says: str) -> None:
    text = ("privspec: 1\ntitle: t\nunit: u\nneighbouring: add-or-remove\n"
            f"mechanism: {{gaussian: {{sigma: 1}}}}\nrisk: {risk}\n")
    with pytest.raises(SpecError) as raised:
        load_spec_text(text, "s.yaml")
    lines = str(raised.value).splitlines()
    assert any(line.startswith("s.yaml:6:") and says in line for line in lines), lines


def test_check_limits_a_risk_from_the_command_line_and_the_budget(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "run.privspec.yaml"
    spec.write_text("privspec: 1\ntitle: t\nunit: one person\nneighbouring: add-or-remove\n"
                    "mechanism: {gaussian: {sigma: 1}}\nbudget:\n  max_risk:\n"
                    "    - reidentification: {candidates: 10000}\n      at_most: 0.01\n",
                    encoding="utf-8")
    assert main(["check", str(spec)]) == 0  # Φ(Φ⁻¹(10⁻⁴) + 1) = 0.00328
    assert main(["check", str(spec), "--max-risk", "reidentification@10000=0.001"]) == 1
    out = capsys.readouterr().out
    assert "the success of re-identification, 10,000 candidates = 0.00328 exceeds the limit 0.001" in out
    assert main(["check", str(spec), "--max-risk", "attribute@2=0.9",
                 "--max-risk", "reconstruction@1e-6=1e-4"]) == 0
    assert main(["check", str(spec), "--max-risk", "mu=1"]) == 2
    capsys.readouterr()
    assert main(["check", str(spec), "--max-risk", "reidentification@1e30=0.5"]) == 2
    err = capsys.readouterr().err  # one line of ours, not pydantic's
    assert "from 2 to 10¹⁵" in err and "pydantic" not in err and len(err.splitlines()) == 1


def test_calibrate_to_a_risk_target() -> None:
    """σ for re-identification among 10⁴ at most 0.1 %: Φ(Φ⁻¹(10⁻⁴) + 1/σ) ≤ 10⁻³."""
    result = calibrate(_spec({"gaussian": {"sigma": 1.0}}), "sigma",
                       ["reidentification@10000=0.001"])
    exact = 1 / (ndtri(1e-3) - ndtri(1e-4))
    assert result.value >= exact and result.neighbour is not None and result.neighbour < exact


def test_diff_shows_risk_before_and_after(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    texts = ["privspec: 1\ntitle: t\nunit: u\nneighbouring: add-or-remove\n"
             f"mechanism: {{gaussian: {{sigma: {sigma}}}}}\n" for sigma in (2, 1)]
    paths = []
    for i, text in enumerate(texts):
        path = tmp_path / f"{i}.privspec.yaml"
        path.write_text(text, encoding="utf-8")
        paths.append(str(path))
    main(["diff", *paths])
    out = capsys.readouterr().out
    assert "| re-identification, 10,000 candidates |" in out and "weaker" in out


EXTREME_SCENARIOS = [{"membership": {"fpr": 1e-300}},
                     {"membership": {"base_rate": 1e-300, "fpr": 1e-300}},
                     {"membership": {"base_rate": 0.9999999999}},
                     {"attribute_inference": {"values": 10**15}},
                     {"reidentification": {"candidates": 2}},
                     {"reconstruction": {"baseline": 0.9999999999}}]


@pytest.mark.parametrize("mechanism", [
    {"gaussian": {"sigma": 1e-9}}, {"gaussian": {"sigma": 1e9}},
    {"pure_dp": {"epsilon": 1e-9}}, {"pure_dp": {"epsilon": 650}},
    {"dpsgd": {"noise_multiplier": 0.5, "sampling_rate": 0.5, "steps": 100}},
])
def test_extreme_scenarios_and_mechanisms_render(mechanism: dict[str, Any]) -> None:
    """Baselines of 10⁻³⁰⁰ and near 1, ε near overflow: bounds stay probabilities, at
    least the baseline, and every format renders."""
    from privspec.report.render import render

    report = privspec.evaluate(_spec(mechanism, risk=EXTREME_SCENARIOS))
    for row in report.risk.rows:
        for value in (row.bound, row.bound_epsilon_delta, row.bound_gdp):
            assert value is None or row.baseline <= value <= 1
    for fmt in ("markdown", "latex", "html", "json"):
        assert render(report, fmt)
