"""``records_per_unit``: a unit of k records, accounted where privspec accounts it
exactly (sensitivity k·Δ; the binomial mixture of Gaussians for Poisson-sampled
Gaussians) against independent routes, by group privacy elsewhere
(``tests/test_group_privacy.py``), and said in the report."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from dp_accounting import NeighboringRelation
from dp_accounting.pld import privacy_loss_distribution as plds
from dp_accounting.pld.pld_privacy_accountant import PLDAccountant
from scipy import stats

import privspec
from privspec.render import render
from privspec.report.render import latex_caveat
from privspec.spec.diagnostics import SpecError
from privspec.spec.loader import load_spec_text
from privspec.spec.models import Spec
from privspec.workflows.dp_event import dp_event_from_json, export_dp_event


def _spec(mechanism: dict[str, Any], records: int | None = None, *, unit: str = "one user",
          relation: str = "add-or-remove") -> Spec:
    data: dict[str, Any] = {"privspec": 1, "title": "t", "unit": unit,
                            "neighbouring": relation, "mechanism": mechanism}
    if records is not None:
        data["records_per_unit"] = records
    return Spec.model_validate(data)


def _evaluate(spec: Spec) -> Any:
    return privspec.evaluate(spec, cache=False)


@pytest.mark.parametrize("records", [1, 2, 5, 64])
def test_gaussians_scale_exactly_by_the_records(records: int) -> None:
    """μ = kΔ√n/σ for n runs of a Gaussian with σ and Δ, and 2k/z for a noise
    multiplier z under replace-one (the closed form)."""
    repeated = {"repeat": {"count": 3, "mechanism": {"gaussian": {"sigma": 40.0,
                                                                  "sensitivity": 2.0}}}}
    mu = _evaluate(_spec(repeated, records)).gdp.mu
    assert mu == pytest.approx(records * 2.0 * math.sqrt(3) / 40.0, rel=1e-12)
    clipped = {"gaussian": {"noise_multiplier": 50.0}}
    mu = _evaluate(_spec(clipped, records, relation="replace-one")).gdp.mu
    assert mu == pytest.approx(2 * records / 50.0, rel=1e-12)


@pytest.mark.parametrize("kind, fields, field", [
    ("laplace", {"scale": 20.0, "sensitivity": 1.5}, "sensitivity"),
    ("discrete_laplace", {"scale": 8.0, "sensitivity": 1}, "sensitivity"),
    ("discrete_gaussian", {"sigma": 12.0, "sensitivity": 2}, "sensitivity"),
])
def test_other_additive_releases_scale_their_sensitivity(kind: str, fields: dict[str, Any],
                                                         field: str) -> None:
    """A unit of k records reports what one record does with k times the sensitivity."""
    records = 3
    grouped = _evaluate(_spec({kind: fields}, records))
    scaled = _evaluate(_spec({kind: {**fields, field: fields[field] * records}}))
    assert grouped.gdp.mu == scaled.gdp.mu
    assert grouped.epsilons == scaled.epsilons
    assert grouped.pure_epsilon == scaled.pure_epsilon
    assert _evaluate(_spec({kind: fields})).gdp.mu < grouped.gdp.mu


def _mnist(records: int) -> Spec:
    return _spec({"dpsgd": {"noise_multiplier": 1.1, "batch_size": 256,
                            "dataset_size": 60_000, "epochs": 60}}, records)


@pytest.mark.parametrize("records", [1, 2, 4, 8])
def test_mnist_user_level_matches_the_mixture_of_gaussians(records: int) -> None:
    """The issue's MNIST run (ε at δ = 10⁻⁵: 2.38, 5.27, 12.15, 30.02 for k = 1, 2, 4, 8):
    at or above dp-accounting's own mixture PLD at a finer grid, and within 0.1 %."""
    rate, steps = 256 / 60_000, math.ceil(60 * 60_000 / 256)
    weights = stats.binom.pmf(range(records + 1), records, rate)
    reference = plds.from_mixture_gaussian_mechanism(
        1.1, list(range(records + 1)), list(weights), pessimistic_estimate=True,
        value_discretization_interval=5e-5).self_compose(steps).get_epsilon_for_delta(1e-5)
    ours = next(row.epsilon for row in _evaluate(_mnist(records)).epsilons
                if row.delta == 1e-5)
    assert reference <= ours <= reference * 1.001
    assert round(reference, 2) == {1: 2.38, 2: 5.26, 4: 12.15, 8: 30.02}[records]


def test_a_sampled_unit_is_far_below_its_unsampled_group() -> None:
    """The mixture keeps the amplification by sampling: far below k·μ of the steps
    without sampling, and above one record's."""
    sampled = {"poisson_sampled": {"sampling_rate": 0.01, "mechanism": {
        "gaussian": {"noise_multiplier": 1.0}}}}
    mechanism = {"repeat": {"count": 100, "mechanism": sampled}}
    one, four = (_evaluate(_spec(mechanism, k)).gdp.mu for k in (1, 4))
    assert one < four < 0.5 * 4 * 10.0  # (unsampled: μ = 4·√100/1)


@pytest.mark.parametrize("mechanism, relation", [
    ({"randomized_response": {"epsilon": 1.0}}, "replace-one"),
    ({"pure_dp": {"epsilon": 1.0}}, "add-or-remove"),
    ({"approximate_dp": {"epsilon": 1.0, "delta": 1e-9}}, "add-or-remove"),
    ({"dpsgd": {"noise_multiplier": 4.0, "sampling_rate": 0.01, "steps": 10}}, "replace-one"),
    ({"dpsgd": {"noise_multiplier": 4.0, "sampling": "fixed-size", "batch_size": 10,
                "dataset_size": 100, "steps": 10}}, "replace-one"),
    ({"poisson_sampled": {"sampling_rate": 0.1, "mechanism": {
        "laplace": {"scale": 4.0, "sensitivity": 1.0}}}}, "add-or-remove"),
    ({"fixed_size_sampled": {"batch_size": 10, "dataset_size": 100, "mechanism": {
        "gaussian": {"noise_multiplier": 4.0}}}}, "replace-one"),
])
def test_units_of_several_records_are_accounted_by_group_privacy_elsewhere(
        mechanism: dict[str, Any], relation: str) -> None:
    """Every kind is accounted for a unit (before: refused), also beside a Gaussian in a
    composition: by f-DP group privacy on the whole curve, never below one record's."""
    import yaml

    composed = {"compose": [{"mechanism": {"gaussian": {"sigma": 10.0}}},
                            {"mechanism": mechanism}]}
    text = yaml.safe_dump({"privspec": 1, "title": "t", "unit": "one person",
                           "records_per_unit": 2, "neighbouring": relation,
                           "mechanism": composed}, sort_keys=False)
    unit = _evaluate(load_spec_text(text, "s.privspec.yaml"))
    one = _evaluate(load_spec_text(text.replace("records_per_unit: 2", "records_per_unit: 1")))
    assert unit.unit_routes == ["group-privacy"]
    assert "f-DP group privacy" in unit.accounting.method
    if one.gdp.mu is None:  # an (ε, δ) black box's δ: no finite μ, for a unit neither
        assert unit.gdp.mu is None
    else:
        assert unit.gdp.mu is None or unit.gdp.mu > one.gdp.mu
    for ours, theirs in zip(unit.epsilons, one.epsilons, strict=True):
        assert ours.epsilon is None or ours.epsilon > (theirs.epsilon or 0.0)
    assert json.loads(unit.model_dump_json())["unit_routes"] == ["group-privacy"]
    assert export_dp_event(unit_spec := load_spec_text(text)).event["class_name"] == (
        "UnsupportedDpEvent")
    assert any("group privacy" in note for note in export_dp_event(unit_spec).notes)


@pytest.mark.parametrize("value", [0, -3, 1.5, True, "2", 10_001])
def test_records_per_unit_is_a_whole_number_from_one(value: Any) -> None:
    def spec(records: Any) -> str:
        return (f"privspec: 1\ntitle: t\nunit: one user\nrecords_per_unit: "
                f"{json.dumps(records)}\nneighbouring: add-or-remove\nmechanism:\n"
                "  gaussian: {sigma: 1}\n")

    assert load_spec_text(spec(10_000)).records_per_unit == 10_000
    with pytest.raises(SpecError, match="records_per_unit: must be"):
        load_spec_text(spec(value))


_DPSGD = {"dpsgd": {"noise_multiplier": 2.0, "sampling_rate": 0.01, "steps": 100}}


@pytest.mark.parametrize("unit, word", [("one patient", "patient"),
                                        ("All Users' messages", "user"),
                                        ("a household", "household")])
def test_a_person_without_a_bound_is_warned_about(unit: str, word: str) -> None:
    report = _evaluate(_spec(_DPSGD, unit=unit))
    (warning,) = [w for w in report.warnings if w.code == "report/unit-bound-unstated"]
    assert "records_per_unit" in warning.message and f"one {word}" in warning.message
    assert report.warnings[0] == warning  # first: it changes what the figures mean
    assert "records\\_per\\_unit" in render(report, "markdown")
    assert "records\\_per\\_unit" in latex_caveat(warning)
    for record in ("one training example", "one superuser account"):
        assert not [w for w in _evaluate(_spec(_DPSGD, unit=record)).warnings
                    if w.code == "report/unit-bound-unstated"]


@pytest.mark.parametrize("records", [1, 3])
def test_no_warning_with_a_bound(records: int) -> None:
    report = _evaluate(_spec(_DPSGD, records, unit="one patient"))
    assert not [w for w in report.warnings if w.code == "report/unit-bound-unstated"]


def test_the_report_names_the_unit_its_records_and_the_route() -> None:
    report = _evaluate(_spec(_DPSGD, 8))
    assert report.records_per_unit == 8
    assert json.loads(report.model_dump_json())["records_per_unit"] == 8
    assert "mixture of Gaussians" in report.accounting.method
    for form in ("markdown", "html", "latex"):
        assert "who contributes at most 8 records" in render(report, form)
    assert "at most 8 records, all protected together" in render(report, "registry")
    scaled = _evaluate(_spec({"gaussian": {"sigma": 4.0}}, 3))
    assert "sensitivity k·Δ" in scaled.accounting.method
    assert report.unit_routes == ["mixture"] and scaled.unit_routes == ["scaled"]
    one = _evaluate(_spec({"gaussian": {"sigma": 4.0}}))
    assert "records_per_unit" not in json.loads(one.model_dump_json())
    assert "unit_routes" not in json.loads(one.model_dump_json())


def test_an_unstated_bound_keeps_the_spec_sha256() -> None:
    mechanism = {"gaussian": {"sigma": 4.0}}
    unstated, stated = _evaluate(_spec(mechanism)), _evaluate(_spec(mechanism, 1))
    assert unstated.spec_sha256 != stated.spec_sha256
    assert "records_per_unit" not in _spec(mechanism).model_dump()


def test_the_dp_event_of_a_unit_is_a_mixture_dp_accounting_agrees_with() -> None:
    spec = _spec({"repeat": {"count": 50, "mechanism": {"poisson_sampled": {
        "sampling_rate": 0.02, "mechanism": {"gaussian": {"noise_multiplier": 1.5}}}}}}, 3)
    exported = export_dp_event(spec)
    inner = exported.event["event"]
    assert inner["class_name"] == "MixtureOfGaussiansDpEvent"
    assert inner["sensitivities"] == [0.0, 1.0, 2.0, 3.0]
    assert any("records_per_unit" in note for note in exported.notes)
    accountant = PLDAccountant(NeighboringRelation.ADD_OR_REMOVE_ONE,
                               value_discretization_interval=1e-4)
    accountant.compose(dp_event_from_json(json.loads(json.dumps(exported.event))))
    ours = next(r.epsilon for r in _evaluate(spec).epsilons if r.delta == 1e-5)
    assert ours == pytest.approx(accountant.get_epsilon(1e-5), rel=1e-3)
    unsampled = export_dp_event(_spec({"gaussian": {"noise_multiplier": 2.0}}, 4))
    assert unsampled.event["noise_multiplier"] == 0.5
