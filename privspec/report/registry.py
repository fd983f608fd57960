"""A report as a draft record for the OpenDP Deployments Registry.

The registry (https://registry.opendp.org) describes a deployment in YAML: basic facts
(curator, intended use, publication date), the DP variant, the privacy unit and
parameters, the deployment model, accounting and implementation.  privspec fills in
what the spec and its report establish and marks the rest for the author to fill in;
the record is valid against the registry's schema as written, with status ``Draft``.

μ-GDP is not one of the registry's named variants: it goes under ``Custom`` with μ, the
regret and the trade-off table's meaning in ``privacy_parameters_details``, beside the
(ε, δ) pair the report states at its first δ (Gomez et al. 2025 recommend exactly
this: μ first, (ε, δ) for comparison).  Numbers are rounded as the other formats round
them: ε and μ up, to the digits the report prints.  The record's ``tier`` is the
registry's own (how complete the description is, 1 to 3), not privspec's Tier I/II; its
line says which it is and why.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import yaml

from privspec.report.formatting import REGRET_RESOLUTION, round_float
from privspec.report.naming import slug_for

if TYPE_CHECKING:
    from privspec.report.model import Report

#: What privspec cannot know: the author fills these in (the schema requires them).
FILL_IN = "FILL IN"
_MODELS = {"central": "Central", "local": "Local", "shuffle": "Shuffle",
           "federated": "Federated"}
_RELATIONS = {
    "add-or-remove": "Adjacent datasets differ by adding or removing the data of one "
                     "privacy unit (add-or-remove neighbouring).",
    "replace-one": "Adjacent datasets have the same size and differ in the data of one "
                   "privacy unit, replaced by other data (replace-one neighbouring).",
    "zero-out": "Adjacent datasets have the same, public size and differ in the data of one "
                "privacy unit, replaced by a null record that contributes nothing (zero-out "
                "neighbouring).",
}


def _up(value: float) -> float:
    """``value`` rounded up as reports print it."""
    return round_float(value, "up")


def _regret(regret: float, resolution: float) -> str:
    """The regret rounded up, or the bound the report prints when it is below what the
    accounting resolves (never a digit the computation does not give)."""
    resolution = max(resolution, REGRET_RESOLUTION)
    return f"< {_up(resolution):g}" if regret < resolution else f"{_up(regret):g}"


def _gdp_details(report: Report) -> str:
    """μ, its fit and the (ε, δ) pairs, in words, citing where each comes from."""
    gdp = report.gdp
    epsilons = "; ".join(f"ε = {_up(row.epsilon):g} at δ = {row.delta:g}"
                         for row in report.epsilons if row.epsilon is not None)
    if report.pure_epsilon is not None:
        first = (f"Pure ε-DP with ε = {_up(report.pure_epsilon):g} (the parameter above). "
                 f"(ε, δ) at the report's δ's: {epsilons}.")
    else:
        first = (f"The (ε, δ) above is one point of the guarantee; at the report's δ's: "
                 f"{epsilons}.")
    if gdp.mu is None:
        return f"{first} No finite μ-GDP guarantee: {gdp.no_finite_mu_reason}"
    if gdp.bound:  # the regret and the tiers describe the bound, not the mechanism
        return (f"Gaussian differential privacy (Dong, Roth & Su 2022): μ-GDP with μ = "
                f"{_up(gdp.mu):g}, a closed-form bound that holds release by release; the "
                f"mechanism's own trade-off curve lies above it. {first}")
    fit = ("μ alone describes the mechanism well (Tier I, regret at most "
           f"{gdp.regret_threshold:g})" if gdp.tier == 1 else
           "μ alone does not describe the mechanism well (Tier II): the report's "
           "trade-off table gives the exact curve")
    regret = "" if gdp.regret is None else f", regret {_regret(gdp.regret, gdp.regret_resolution)}"
    return (f"Gaussian differential privacy (Dong, Roth & Su 2022): μ-GDP with μ = "
            f"{_up(gdp.mu):g}{regret}; {fit}. {first} Reported as Gomez et al. "
            f"(2025) recommend: μ with its regret, (ε, δ) for comparison.")


def registry_record(report: Report) -> dict[str, Any]:
    """The registry record of ``report``, as YAML data (see the module docstring)."""
    scope = report.scope
    first = next((row for row in report.epsilons if row.epsilon is not None), None)
    parameters: dict[str, Any] = {}
    if report.pure_epsilon is not None:
        parameters = {"epsilon": _up(report.pure_epsilon)}
    elif first is not None and first.epsilon is not None:
        parameters = {"epsilon": _up(first.epsilon), "delta": first.delta}
    # Pure ε is a named variant; μ-GDP (and (ε, δ) as one point of it) is "Custom";
    # without a finite μ what remains is (ε, δ).
    variant = ("Pure DP" if report.pure_epsilon is not None else
               "Custom" if report.gdp.mu is not None else "Approximate DP")
    dp_variant: dict[str, Any] = {"variant_name": variant}
    if scope is not None and scope.unprotected:
        dp_variant["unprotected_quantities"] = "; ".join(scope.unprotected)
    model: dict[str, Any] = {}
    if scope is not None and scope.trust_model:
        model["model_name"] = _MODELS[scope.trust_model]
    if scope is not None and scope.releases:
        model["release_type"] = "One release" if scope.releases == "one" else "Many releases"
    implementation: dict[str, Any] = {"mechanisms": report.mechanism.summary}
    if scope is not None and scope.code:
        implementation["mechanisms"] += f" Code: {scope.code}"
    if scope is not None and scope.covers:
        implementation["preprocessing_and_hyperparameter_tuning"] = (
            "The guarantee accounts for these data accesses: " + ", ".join(scope.covers)
            + "; any other access to the data is not covered.")
    versions = ", ".join(f"{name} {version}" for name, version
                         in sorted(report.accounting.versions.items()))
    deployment: dict[str, Any] = {
        "basic": {
            "name": report.title,
            "data_curators": [FILL_IN],
            "intended_use": FILL_IN,
            "data_product_type": ("Machine learning model"
                                  if report.mechanism.noun in ("training run", "pipeline")
                                  else "Summary statistics"),
            "data_product_region": FILL_IN,
            "description": report.description or report.mechanism.summary,
            "publication_date": "1900-01-01",
        },
        "dp_variant": dp_variant,
        "privacy_loss": {
            "privacy_unit": report.unit + (f" with up to {report.records_per_unit:,} records"
                                           if report.records_per_unit > 1 else ""),
            "privacy_unit_details": _RELATIONS[report.neighbouring] + (
                f" One unit contributes at most {report.records_per_unit:,} records, all "
                "protected together." if report.records_per_unit > 1 else "") + (
                " The mechanism samples units, not records, and bounds each one's whole "
                "contribution (user-level sampling): its counts count units."
                if report.unit_level else ""),
            "privacy_parameters": parameters,
            "privacy_parameters_details": _gdp_details(report),
        },
        **({"deployment_model": model} if model else {}),
        "accounting": {"composition": (
            f"Accounted by privspec: {report.accounting.method}; numerical floor "
            f"τ = {report.accounting.floor:g}.")},
        "implementation": implementation,
        "administrative": {
            "notes": " ".join([f"Generated by privspec ({versions}) from the spec with "
                               f"SHA-256 {report.spec_sha256}.",
                               *(f"Caveat: {w.message}" for w in report.warnings)]),
            "registry_authors": [FILL_IN],
        },
    }
    return {"url_slug": slug_for(report, "_"), "status": "Draft",
            "tier": _record_tier(model), "deployment": deployment}


def _record_tier(model: dict[str, Any]) -> int:
    """The registry's tier of the record: how complete its description is (1 to 3), not
    privspec's Tier I/II.  Tier 2 describes the DP variant, the privacy unit and
    parameters (always filled in) and the deployment model (from ``scope.trust_model``);
    tier 3 needs what privspec cannot know (post-processing, a justification)."""
    return 2 if "model_name" in model else 1


def _tier_comment(tier: int) -> str:
    """Why the record has the tier it has, for the line that states it."""
    why = ("the DP variant, privacy unit and parameters and the deployment model are "
           "filled in" if tier == 2 else
           "the deployment model is not filled in: add scope.trust_model to the spec, "
           "or deployment_model here, for tier 2")
    return (f"  # the registry's tier: how complete this description is (1 to 3), not "
            f"privspec's Tier I/II; {tier}: {why}")


class _OneLineDumper(yaml.SafeDumper):
    """A YAML writer that keeps every value on one line: text with line breaks is written
    double-quoted with ``\n`` escapes, so that no line of the record starts with a
    stranger's text (``::error`` is a GitHub workflow command when a record is printed
    in a job's log)."""


def _text(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    style = '"' if any(char in text for char in "\r\n\x85\u2028\u2029") else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_OneLineDumper.add_representer(str, _text)


def render_registry(report: Report) -> str:
    """The registry record as YAML, with a header saying what to fill in."""
    # One line per value (no folding): a record's text must not depend on where the
    # versions it names happen to wrap.
    record = registry_record(report)
    body = yaml.dump(record, Dumper=_OneLineDumper, sort_keys=False, allow_unicode=True,
                     width=2**31 - 1)
    line = f"\ntier: {record['tier']}\n"  # (a top-level key: one line at column 0)
    body = body.replace(line, line[:-1] + _tier_comment(record["tier"]) + "\n", 1)
    header = (
        "# A draft record for the OpenDP Deployments Registry, written by privspec from\n"
        "# its report. Replace every 'FILL IN' and the publication date (1900-01-01),\n"
        "# check data_product_type, then submit it as the registry describes.\n")
    return header + body
