"""``render --format registry``: a draft OpenDP Deployments Registry record that the
registry's schema accepts, with μ under the "Custom" variant."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

import privspec
from privspec.cli.app import main
from privspec.report.render import render

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.privspec.yaml"))


def _text(**extra: Any) -> dict[str, Any]:
    return {"type": "string", **extra}


def _object(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": False, "properties": properties,
            "required": list(required)}


# The registry's deployment schema (schemas/deployments-schema.yaml of
# opendp/deployments-registry-data, 2026): its structure, required fields and enums.
SCHEMA = _object({
    "url_slug": _text(),
    "status": _text(enum=["Converted", "Draft", "Pending", "Changes Required", "Approved",
                          "Approved (Update Requested)", "Approved (Pending)"]),
    "tier": {"type": "integer", "enum": [1, 2, 3]},
    "deployment": _object({
        "basic": _object({
            "name": _text(),
            "data_curators": {"type": "array", "items": _text(), "minItems": 1},
            "intended_use": _text(),
            "data_product_type": _text(enum=["Summary statistics", "Machine learning model",
                                             "Dataset", "Synthetic data", "Interactive API",
                                             "SQL queries"]),
            "data_product_region": _text(),
            "description": _text(),
            "publication_date": _text(format="date"),
            "data_product_sector": _text(enum=["Technology", "Healthcare", "Education",
                                               "Government", "Energy", "Finance"]),
        }, ("name", "data_curators", "description", "intended_use", "data_product_type",
            "data_product_region", "publication_date")),
        "dp_variant": _object({
            "variant_name": _text(enum=["Pure DP", "Approximate DP", "Zero-concentrated DP",
                                        "Renyi DP", "Custom"]),
            "data_domain": _text(), "unprotected_quantities": _text()}),
        "privacy_loss": _object({
            "privacy_unit": _text(), "privacy_unit_details": _text(),
            "privacy_parameters": _object({"epsilon": {"type": "number"},
                                           "delta": {"type": ["number", "string"]},
                                           "rho": {"type": "number"}}),
            "privacy_parameters_details": {}}),
        "deployment_model": _object({
            "model_name": _text(enum=["Local", "Central", "Shuffle", "Federated", "Varies"]),
            "model_name_details": _text(), "actors": _text(),
            "release_type": _text(enum=["One release", "Many releases"]),
            "release_type_details": _text(),
            "data_source_type": _text(enum=["Static", "Dynamic"]),
            "data_source_type_details": {},
            "access_type": _text(enum=["Interactive", "Non-interactive"]),
            "access_type_details": _text()}),
        "accounting": _object({"post_processing": _text(), "composition": _text()}),
        "implementation": _object({"preprocessing_and_hyperparameter_tuning": _text(),
                                   "mechanisms": _text(), "justification": _text()}),
        "administrative": _object({"sources": _text(), "notes": _text(),
                                   "registry_authors": {"type": "array", "items": _text(),
                                                        "minItems": 1}},
                                  ("registry_authors",)),
    }, ("basic",)),
}, ("url_slug", "status", "tier", "deployment"))


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda path: path.name)
def test_every_example_renders_a_record_the_registry_accepts(example: Path) -> None:
    report = privspec.evaluate(example)
    text = render(report, "registry")
    assert text.startswith("# A draft record for the OpenDP Deployments Registry")
    record = yaml.safe_load(text)
    jsonschema.validate(record, SCHEMA, format_checker=jsonschema.FormatChecker())
    loss = record["deployment"]["privacy_loss"]
    records = report.records_per_unit
    assert loss["privacy_unit"] == report.unit + (f" with up to {records:,} records"
                                                  if records > 1 else "")
    details = loss["privacy_parameters_details"]
    variant = record["deployment"]["dp_variant"]["variant_name"]
    if report.pure_epsilon is not None:
        assert variant == "Pure DP"
    elif report.gdp.mu is not None:
        assert variant == "Custom"
    else:
        assert variant == "Approximate DP"
    if report.gdp.mu is not None:
        assert "μ-GDP with μ = " in details
    epsilon = loss["privacy_parameters"].get("epsilon")
    if epsilon is not None:  # rounded up, never below the report's own figure
        own = report.pure_epsilon if report.pure_epsilon is not None else next(
            row.epsilon for row in report.epsilons if row.epsilon is not None)
        assert own is not None and own <= epsilon <= own * 1.01


def test_the_scope_block_fills_the_deployment_model(tmp_path: Path) -> None:
    spec = (ROOT / "examples" / "cifar10-dpsgd-eps8.privspec.yaml").read_text(encoding="utf-8")
    spec += ("scope:\n  trust_model: central\n  releases: one\n"
             "  covers: [training, hyper-parameter tuning]\n"
             "  unprotected: [the number of training examples]\n"
             "  code: https://example.org/train.py\n")
    path = tmp_path / "run.privspec.yaml"
    path.write_text(spec, encoding="utf-8")
    assert main(["render", str(path), "-f", "registry", "--output-dir", str(tmp_path)]) == 0
    record = yaml.safe_load((tmp_path / "run.registry.yaml").read_text(encoding="utf-8"))
    jsonschema.validate(record, SCHEMA, format_checker=jsonschema.FormatChecker())
    deployment = record["deployment"]
    assert deployment["deployment_model"] == {"model_name": "Central",
                                              "release_type": "One release"}
    assert deployment["dp_variant"]["unprotected_quantities"] == \
        "the number of training examples"
    assert "hyper-parameter tuning" in \
        deployment["implementation"]["preprocessing_and_hyperparameter_tuning"]
    assert "https://example.org/train.py" in deployment["implementation"]["mechanisms"]


def test_the_records_tier_is_how_complete_it_is_and_says_so(tmp_path: Path) -> None:
    """The registry's tier (1 to 3) is the completeness of the record, not privspec's Tier
    I/II: 2 with the deployment model, 1 without, and the line says which and why."""
    spec = (ROOT / "examples" / "laplace-counts.privspec.yaml").read_text(encoding="utf-8")
    (tmp_path / "bare.privspec.yaml").write_text(spec, encoding="utf-8")
    (tmp_path / "scoped.privspec.yaml").write_text(
        spec + "scope:\n  trust_model: central\n", encoding="utf-8")
    for name, tier in (("bare", 1), ("scoped", 2)):
        assert main(["render", str(tmp_path / f"{name}.privspec.yaml"), "-f", "registry",
                     "--output-dir", str(tmp_path)]) == 0
        text = (tmp_path / f"{name}.registry.yaml").read_text(encoding="utf-8")
        assert yaml.safe_load(text)["tier"] == tier
        line = next(line for line in text.splitlines() if line.startswith("tier:"))
        assert "not privspec's Tier I/II" in line
        assert ("add scope.trust_model" in line) == (tier == 1)


def test_a_closed_form_bound_is_not_described_as_a_fit_and_caveats_travel() -> None:
    stages = [{"mechanism": {"dpsgd": {"noise_multiplier": 1 + i / 1000, "sampling_rate": 0.01,
                                       "steps": 10}}} for i in range(1000)]
    report = privspec.evaluate({"privspec": 1, "title": "t", "unit": "one example",
                                "neighbouring": "add-or-remove",
                                "accounting": {"time_budget": 1},
                                "mechanism": {"compose": stages}})
    assert report.gdp.bound
    record = yaml.safe_load(render(report, "registry"))
    jsonschema.validate(record, SCHEMA, format_checker=jsonschema.FormatChecker())
    details = record["deployment"]["privacy_loss"]["privacy_parameters_details"]
    assert "closed-form bound" in details and "Tier" not in details and "regret" not in details
    assert "Caveat: The numerical accounting would take longer" in \
        record["deployment"]["administrative"]["notes"]
    assert "closed-form bound" in record["deployment"]["accounting"]["composition"]


def test_a_regret_below_the_resolution_is_the_bound_the_report_prints() -> None:
    """A regret the accounting does not resolve is "< 1e-09" in the record, as "< 10⁻⁹"
    in the report, never a digit the computation does not give ("regret 0")."""
    report = privspec.evaluate({"privspec": 1, "title": "t", "unit": "one example",
                                "neighbouring": "add-or-remove",
                                "mechanism": {"gaussian": {"sigma": 2.0}}}, cache=False)
    assert report.gdp.regret is not None and report.gdp.regret < 1e-9
    assert "(regret < 10⁻⁹ ≤ 0.01)" in render(report, "markdown")
    record = yaml.safe_load(render(report, "registry"))
    details = record["deployment"]["privacy_loss"]["privacy_parameters_details"]
    assert "μ-GDP with μ = 0.5, regret < 1e-09;" in details


def test_no_line_of_the_record_starts_with_a_strangers_text() -> None:
    """A multi-line description was written as folded YAML, one paragraph a line, so
    '::error …' started a line: a workflow command when the record is printed in a job."""
    import privspec
    from privspec.render import render

    spec = {"privspec": 1, "title": "t", "unit": "one record", "neighbouring": "add-or-remove",
            "description": "para one\n\n::error file=README.md::x\n\n- a list\n\n1. item",
            "mechanism": {"gaussian": {"sigma": 2}}}
    text = render(privspec.evaluate(spec, cache=False), "registry")
    assert not [line for line in text.splitlines() if line.lstrip().startswith("::")]
    record = yaml.safe_load(text)
    assert record["deployment"]["basic"]["description"] == spec["description"]
