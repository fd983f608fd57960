"""``privspec calibrate``: closed forms, soundness of every returned value, agreement with
dp-accounting's ``calibrate_dp_mechanism`` on the safe side, and the file edit."""

from __future__ import annotations

import json
import math
import os
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import privspec
from privspec.cli.app import main
from privspec.report.evaluation import evaluate
from privspec.spec.knobs import resolve
from privspec.spec.loader import load_yaml_text, spec_from_data
from privspec.workflows.calibration import CalibrationError, _on_grid, _step, calibrate
from privspec.workflows.targets import Target, TargetError, with_target_figures


def _spec(mechanism: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"privspec": 1, "title": "t", "unit": "one record",
            "neighbouring": "add-or-remove", "mechanism": mechanism, **extra}


def _figure(data: dict[str, Any], target: str) -> float:
    parsed = Target.parse(target)
    return parsed.measure(evaluate(with_target_figures(spec_from_data(data), [parsed])))


# -- closed forms ------------------------------------------------------------------


@pytest.mark.parametrize(("mu", "sensitivity", "expected"), [
    (0.5, 1.0, 2.0), (0.3, 1.0, 3.334), (1.0, 2.5, 2.5), (2.0, 0.1, 0.05)])
def test_a_gaussian_gets_sigma_delta_over_mu_rounded_up(mu: float, sensitivity: float,
                                                        expected: float) -> None:
    data = _spec({"gaussian": {"sigma": 1.0, "sensitivity": sensitivity}})
    result = calibrate(data, "sigma", [f"mu={mu}"])
    assert result.value == expected
    assert result.value >= sensitivity / mu
    assert result.neighbour is not None and result.neighbour < sensitivity / mu


def test_a_stage_is_calibrated_against_the_rest_of_the_mechanism() -> None:
    """μ² add up: the free stage gets σ = 1/√(μ_t² − μ_fixed²)."""
    data = _spec({"compose": [
        {"name": "fixed", "mechanism": {"gaussian": {"sigma": 2.0}}},
        {"name": "free", "repeat": 4, "mechanism": {"gaussian": {"sigma": 1.0}}}]})
    result = calibrate(data, "free/sigma", ["mu=1"])
    exact = 2 / math.sqrt(1 - 0.25)  # 4 runs: μ = 2/σ
    assert result.value == _on_grid(exact, result.knob, up=True)
    assert result.binding == Target("mu", 1.0)


def test_runs_are_whole_and_the_next_one_misses() -> None:
    data = _spec({"repeat": {"count": 1, "mechanism": {"gaussian": {"sigma": 10.0}}}})
    result = calibrate(data, "count", ["mu=1"])
    assert result.value == 100 and result.neighbour == 101  # μ = √n/10


# -- sound by construction ---------------------------------------------------------


@settings(max_examples=int(os.environ.get("PRIVSPEC_CALIBRATE_EXAMPLES", "25")), deadline=None)
@given(sigma=st.floats(0.05, 50), sensitivity=st.floats(0.1, 10), mu=st.floats(0.05, 5),
       metric=st.sampled_from(["mu", "advantage", "epsilon@1e-5", "tpr@0.001", "beta@0.01"]))
def test_every_returned_value_meets_its_target_and_its_neighbour_does_not(
        sigma: float, sensitivity: float, mu: float, metric: str) -> None:
    data = _spec({"gaussian": {"sigma": sigma, "sensitivity": sensitivity}})
    # a target each metric can reach: the figure of a Gaussian with that μ
    probe = calibrate(_spec({"gaussian": {"sigma": 1 / mu}}), "sigma", [f"mu={mu}"])
    figure = Target.parse(f"{metric}=0.5").measure(_report_with(probe, metric))
    if not 1e-6 < figure < (math.inf if metric.startswith(("mu", "eps")) else 0.999):
        return
    target = f"{metric}={figure:.6g}"
    result = calibrate(data, "sigma", [target])
    parsed = Target.parse(target)
    assert parsed.excess(result.report) <= 1
    chosen = spec_from_data(result.data)
    assert chosen.mechanism.gaussian.sigma == result.value  # type: ignore[union-attr]
    assert _on_grid(result.value, result.knob, up=True) == result.value
    if result.neighbour is not None:
        assert result.neighbour == _step(result.value, result.knob, up=False)
        missed = _figure(_spec({"gaussian": {"sigma": result.neighbour,
                                             "sensitivity": sensitivity}}), target)
        assert Target.parse(target).ratio(missed) > 1


def _report_with(calibration: Any, metric: str) -> Any:
    return evaluate(with_target_figures(calibration.spec, [Target.parse(f"{metric}=0.5")]))


DPSGD = _spec({"dpsgd": {"noise_multiplier": 1.1, "sampling_rate": 0.004, "steps": 10000}})


def test_dpsgd_noise_for_mu_in_few_evaluations() -> None:
    result = calibrate(DPSGD, "noise_multiplier", ["mu=1"])
    assert result.report.gdp.mu is not None and result.report.gdp.mu <= 1
    assert result.evaluations <= 5 and result.evaluations + result.rough_evaluations < 10
    again = privspec.evaluate(result.data)
    assert again.gdp.mu == result.report.gdp.mu  # the returned value, evaluated as render does


def test_beta_target_is_met_on_the_safe_side() -> None:
    """riskcal's (FPR, FNR) calibration returned σ with β(0.01) = 0.8995 for a target
    of 0.9: searched on the wrong side. Here β ≥ 0.9 holds at the value returned."""
    result = calibrate(DPSGD, "noise_multiplier", ["beta@0.01=0.9"])
    row = next(r for r in result.report.tradeoff if r.alpha == 0.01)
    assert row.beta >= 0.9


def test_several_targets_the_binding_one_is_named() -> None:
    result = calibrate(DPSGD, "steps", ["mu=5", "epsilon@1e-5=2"])
    assert result.binding == Target("epsilon", 2.0, 1e-5)
    assert result.figures["mu=5"] < 5 and result.figures["epsilon@1e-05=2"] <= 2


def test_agrees_with_calibrate_dp_mechanism_and_is_never_unsafe() -> None:
    """dp-accounting's own calibration to ε = 2 at δ = 10⁻⁵ (PLD accountant, its default
    tolerance): privspec's σ is within 1 % of it, and dp-accounting's ε at privspec's
    σ meets the target."""
    import dp_accounting
    from dp_accounting.pld import pld_privacy_accountant

    q, steps, delta, epsilon = 0.004, 10000, 1e-5, 2.0

    def event(sigma: float) -> Any:
        return dp_accounting.SelfComposedDpEvent(dp_accounting.PoissonSampledDpEvent(
            q, dp_accounting.GaussianDpEvent(sigma)), steps)

    def accountant() -> Any:
        return pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)

    theirs = dp_accounting.calibrate_dp_mechanism(
        accountant, event, epsilon, delta,
        dp_accounting.LowerEndpointAndGuess(0.3, 1.0))
    ours = calibrate(DPSGD, "noise_multiplier", [f"epsilon@{delta}={epsilon}"])
    assert ours.value == pytest.approx(theirs, rel=1e-2)
    assert accountant().compose(event(ours.value)).get_epsilon(delta) <= epsilon


def test_unreachable_targets_say_what_the_rest_already_spends() -> None:
    data = _spec({"compose": [
        {"name": "fixed", "mechanism": {"gaussian": {"sigma": 1.0}}},
        {"name": "free", "mechanism": {"gaussian": {"sigma": 1.0}}}]})
    with pytest.raises(CalibrationError, match=r"no value of .* μ = 1\.01 \(target ≤ 0\.5\)"):
        calibrate(data, "free/sigma", ["mu=0.5"])


def test_a_target_met_at_the_end_of_the_allowed_range_says_so() -> None:
    data = _spec({"poisson_sampled": {"sampling_rate": 0.01,
                                      "mechanism": {"gaussian": {"sigma": 10.0}}}})
    result = calibrate(data, "sampling_rate", ["mu=1"])
    assert result.value == 1.0 and result.limited_by_domain


@pytest.mark.parametrize(("text", "says"), [
    ("mu", "allowed: mu=V"), ("mu=x", "not a number"), ("tpr=0.1", "needs @FPR"),
    ("mu@0.1=1", "takes no @"), ("beta@2=0.5", "between 0 and 1"),
    ("advantage=1.5", "between 0 and 1"), ("rho=1", "allowed")])
def test_bad_targets_are_refused_in_words(text: str, says: str) -> None:
    with pytest.raises(TargetError, match=says):
        Target.parse(text)


def test_a_path_must_name_one_field_privacy_depends_on() -> None:
    data = load_yaml_text(Path("examples/mixed-pipeline.privspec.yaml").read_text())
    with pytest.raises(CalibrationError, match="names 2 fields"):
        calibrate(data, "noise_multiplier", ["mu=1"])
    with pytest.raises(CalibrationError, match="names no field"):
        calibrate(data, "title", ["mu=1"])
    training = ("mechanism", "compose", 1, "mechanism", "dpsgd", "noise_multiplier")
    assert resolve(data, "training/noise_multiplier").path == training
    assert resolve(data, "mechanism/compose/1/mechanism/dpsgd/noise_multiplier").path == training
    assert resolve(data, "mechanism.compose[2].repeat").path == ("mechanism", "compose", 2,
                                                                 "repeat")


# -- the command -------------------------------------------------------------------

COMMENTED = """\
# A training run, with comments that must survive calibration.
privspec: 1
title: DP-SGD   # trailing comment
unit: one training example
neighbouring: add-or-remove
mechanism:
  dpsgd:
    # the noise we will calibrate
    noise_multiplier: 1.1   # was chosen by hand
    sampling_rate: 0.004
    steps: 10000
"""


def test_output_keeps_comments_and_changes_only_the_value(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    spec = tmp_path / "run.privspec.yaml"
    spec.write_text(COMMENTED, encoding="utf-8")
    out = tmp_path / "calibrated.privspec.yaml"
    assert main(["calibrate", str(spec), "--vary", "noise_multiplier", "-t", "mu=1",
                 "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "noise_multiplier = 0.7754 meets every target (was 1.1)" in printed
    assert "change: line 9: noise_multiplier: 1.1 → 0.7754" in printed
    assert out.read_text() == COMMENTED.replace(
        "noise_multiplier: 1.1 ", "noise_multiplier: 0.7754 ") + (
        "calibrated: {field: mechanism.dpsgd.noise_multiplier, value: 0.7754, targets: [mu=1]}\n")
    assert spec.read_text() == COMMENTED  # untouched without --in-place
    assert main(["calibrate", str(spec), "--vary", "noise_multiplier", "-t", "mu=1",
                 "--in-place", "-f", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["value"] == 0.7754 and result["binding"] == "mu=1"
    assert spec.read_text() == out.read_text()


def test_a_field_at_its_default_is_written_into_its_mapping(tmp_path: Path) -> None:
    spec = tmp_path / "g.privspec.yaml"
    stages = ("  compose:\n"
              "    - name: releases  # ten σ = 10 releases make μ = 1\n"
              "      mechanism:\n"
              "        gaussian: {sigma: 10}\n")
    spec.write_text(COMMENTED.split("  dpsgd:")[0] + stages, encoding="utf-8")
    assert main(["calibrate", str(spec), "--vary", "releases/repeat", "-t", "mu=1",
                 "--in-place"]) == 0
    assert spec.read_text().endswith(stages.replace(
        "    - name", "    - repeat: 100\n      name") + "calibrated: {field: "
        "'mechanism.compose[0].repeat', value: 100, targets: [mu=1]}\n")


@pytest.mark.parametrize(("arguments", "says"), [
    (["--vary", "sigma", "-t", "mu=1"], "names no field"),
    (["--vary", "noise_multiplier", "-t", "mu"], "allowed: mu=V"),
    (["--vary", "noise_multiplier", "-t", "mu=1", "-o", "x.yaml", "--in-place"],
     "not both"),
])
def test_bad_input_exits_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         arguments: list[str], says: str) -> None:
    spec = tmp_path / "run.privspec.yaml"
    spec.write_text(COMMENTED, encoding="utf-8")
    assert main(["calibrate", str(spec), *arguments]) == 2
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert spec.read_text() == COMMENTED and not (tmp_path / "x.yaml").exists()


def test_python_api() -> None:
    result = privspec.calibrate(DPSGD, vary="steps", targets=["mu=1"])
    assert isinstance(result.value, int) and result.report.gdp.mu is not None


def _kind(mechanism: dict[str, Any], relation: str = "add-or-remove") -> dict[str, Any]:
    return {**_spec(mechanism), "neighbouring": relation}


@pytest.mark.parametrize(("data", "vary", "target"), [
    (_kind({"laplace": {"scale": 1.0}}), "scale", "mu=0.5"),
    (_kind({"laplace": {"scale": 1.0, "sensitivity": 1.0}}), "sensitivity", "advantage=0.1"),
    (_kind({"randomized_response": {"flip_probability": 0.25, "categories": 2}},
           "replace-one"), "flip_probability", "mu=0.5"),
    (_kind({"randomized_response": {"flip_probability": 0.25, "categories": 2}},
           "replace-one"), "flip_probability", "mu=0.001"),  # near its limit 1/2
    (_kind({"randomized_response": {"epsilon": 2.0, "categories": 4}}, "replace-one"),
     "epsilon", "tpr@0.01=0.05"),
    (_kind({"discrete_gaussian": {"rho": 0.5}}), "rho", "mu=0.5"),
    (_kind({"discrete_laplace": {"scale": 2.0}}), "scale", "epsilon@1e-6=0.3"),
    (_kind({"repeat": {"count": 100, "mechanism": {"pure_dp": {"epsilon": 0.1}}}}), "count",
     "mu=2"),
    (_kind({"approximate_dp": {"epsilon": 1.0, "delta": 1e-6}}), "epsilon",
     "epsilon@1e-5=0.5"),
    (_kind({"dpsgd": {"noise_multiplier": 1.0, "batch_size": 256, "dataset_size": 60000,
                      "epochs": 10}}), "epochs", "mu=1"),
    (_kind({"dpsgd": {"noise_multiplier": 1.0, "batch_size": 256, "dataset_size": 60000,
                      "epochs": 10}}), "dataset_size", "mu=1"),
    (_kind({"fixed_size_sampled": {"batch_size": 100, "dataset_size": 10000,
                                   "mechanism": {"gaussian": {"sigma": 1.0}}}}, "replace-one"),
     "batch_size", "mu=0.5"),
])
def test_other_mechanisms_meet_their_target_and_the_next_value_misses(
        data: dict[str, Any], vary: str, target: str) -> None:
    result = calibrate(data, vary, [target])
    parsed = Target.parse(target)
    assert parsed.excess(result.report) <= 1
    assert result.evaluations + result.rough_evaluations <= 20
    assert result.neighbour is not None
    from privspec.spec.knobs import with_value

    missed = _figure(with_value(data, result.knob.path, result.neighbour), target)
    assert parsed.ratio(missed) > 1


def test_the_end_of_what_a_field_allows_is_tried_directly() -> None:
    data = _kind({"dpsgd": {"noise_multiplier": 1.1, "sampling_rate": 0.004, "steps": 10000}})
    result = calibrate(data, "steps", ["mu=100"])
    assert result.value == 10_000_000 and result.limited_by_domain
    assert result.evaluations + result.rough_evaluations <= 4


def test_a_search_span_too_short_says_so() -> None:
    with pytest.raises(CalibrationError, match=r"within a factor of 1e\+06"):
        calibrate(_kind({"gaussian": {"sigma": 1.0}}), "sigma", ["mu=1e-9"])


def test_the_end_of_what_the_field_allows_says_so() -> None:
    with pytest.raises(CalibrationError, match="most private value the spec allows"):
        calibrate(DPSGD, "steps", ["mu=1e-7"])


def test_an_unwritable_output_exits_2_in_one_line(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "run.privspec.yaml"
    spec.write_text(COMMENTED, encoding="utf-8")
    blocker = tmp_path / "a-file"  # a file where a directory would have to be
    blocker.write_text("x", encoding="utf-8")
    code = main(["calibrate", str(spec), "--vary", "noise_multiplier", "-t", "mu=1",
                 "-o", str(blocker / "x.yaml")])
    err = capsys.readouterr().err
    assert code == 2 and "cannot write" in err and "Traceback" not in err
    assert spec.read_text(encoding="utf-8") == COMMENTED


def test_the_written_spec_says_what_was_calibrated_and_stays_honest(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """-o adds a one-line calibrated: note (validated: it must match the field), reports
    print it, and calibrating again replaces it, even after the field was edited by hand."""
    spec = tmp_path / "run.privspec.yaml"
    spec.write_text(COMMENTED, encoding="utf-8")
    assert main(["calibrate", str(spec), "--vary", "noise_multiplier", "-t", "mu=1",
                 "--in-place"]) == 0
    text = spec.read_text(encoding="utf-8")
    assert text.endswith("calibrated: {field: mechanism.dpsgd.noise_multiplier, "
                         "value: 0.7754, targets: [mu=1]}\n")
    report = privspec.evaluate(spec)
    assert report.calibrated is not None and report.calibrated.targets == ["mu=1"]
    from privspec.report.render import render

    text_of_report = render(report, "markdown")
    assert "was chosen by privspec calibrate" in text_of_report
    assert "meets μ ≤ 1." in text_of_report and "mu=1" not in text_of_report  # words, not options
    spec.write_text(text.replace("noise_multiplier: 0.7754", "noise_multiplier: 1.5"),
                    encoding="utf-8")
    capsys.readouterr()
    assert main(["validate", str(spec)]) == 2  # the note no longer holds
    # The message gives the one command that calibrates again, or the line to delete.
    message = capsys.readouterr().err.splitlines()[0]
    assert message.startswith(f"{spec}:{text.count(chr(10))}:")
    assert "or delete this 'calibrated:' line to keep 1.5" in message
    again = re.search(r"calibrate again with '([^']*)'", message)
    assert again is not None
    assert again.group(1) == (f"privspec calibrate {spec} --vary "
                              "mechanism.dpsgd.noise_multiplier -t mu=1 --in-place")
    assert main(shlex.split(again.group(1))[1:]) == 0
    assert main(["validate", str(spec)]) == 0
    assert "noise_multiplier: 0.7754" in spec.read_text(encoding="utf-8")
    assert main(["calibrate", str(spec), "--vary", "noise_multiplier", "-t", "mu=2",
                 "--in-place"]) == 0
    assert main(["validate", str(spec)]) == 0
    assert spec.read_text(encoding="utf-8").count("calibrated:") == 1


def test_a_refused_value_next_to_the_most_private_one_ends_the_search_with_its_reason(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing meets μ ≤ 10⁻³ below σ = 50, and σ above 50 is refused (as a discrete
    Gaussian's support limit refuses σ > 83,333): the search went round in circles
    there; it now says which value was refused, and why."""
    import privspec.report.evaluation as evaluation
    from privspec.errors import EvaluationError

    real = evaluation.evaluate

    def refusing_above_50(spec: Any, **budgets: Any) -> Any:
        if spec.mechanism.block.sigma > 50:
            raise EvaluationError("σ above 50 is refused here", ("mechanism",))
        return real(spec, **budgets)

    monkeypatch.setattr(evaluation, "evaluate", refusing_above_50)
    with pytest.raises(CalibrationError) as refused:
        calibrate(_spec({"gaussian": {"sigma": 1.0}}), "sigma", ["mu=1e-3"])
    message = str(refused.value)
    assert "the most private value tried" in message and "cannot be evaluated" in message
    assert "σ above 50 is refused here" in message and "bug" not in message
