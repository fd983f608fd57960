"""Who is protected, in every output: ``unit_level`` (units sampled and bounded as one),
the unit and its k records in every report and risk sentence, the group table, and
the commands (calibrate, check, diff, export/import of dp events, import jax-privacy)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import privspec
from privspec.cli.app import main
from privspec.render import render
from privspec.report.render import risk_text
from privspec.spec.diagnostics import SpecError
from privspec.spec.loader import load_spec_text
from privspec.spec.models import Spec
from privspec.workflows.calibration import calibrate
from privspec.workflows.dp_event import export_dp_event
from privspec.workflows.importing import RecordError, spec_from_dp_event

_GAUSSIAN = {"gaussian": {"sigma": 40.0}}
_DPSGD = {"dpsgd": {"noise_multiplier": 2.0, "sampling_rate": 0.01, "steps": 100}}


def _data(mechanism: dict[str, Any], unit: str = "one patient", **extra: Any) -> dict[str, Any]:
    return {"privspec": 1, "title": "t", "unit": unit, **extra,
            "neighbouring": "add-or-remove", "mechanism": mechanism}


def _spec(mechanism: dict[str, Any], unit: str = "one patient", **extra: Any) -> Spec:
    return Spec.model_validate(_data(mechanism, unit, **extra))


def _evaluate(spec: Spec) -> Any:
    return privspec.evaluate(spec, cache=False)


def _yaml(data: dict[str, Any]) -> str:
    return json.dumps(data)  # (JSON is YAML)


# -- 1. unit_level ---------------------------------------------------------------------


def test_unit_level_is_said_and_excludes_records_per_unit() -> None:
    spec = load_spec_text(_yaml(_data(_DPSGD, "one user", unit_level=True)))
    report = _evaluate(spec)
    assert report.unit_level and json.loads(report.model_dump_json())["unit_level"] is True
    plain = _evaluate(_spec(_DPSGD, "one user", records_per_unit=1))
    assert report.gdp == plain.gdp  # the ordinary accounting, units counted
    assert "unit_level" not in json.loads(plain.model_dump_json())
    assert "unit_level" not in _spec(_DPSGD).model_dump()  # unstated: same SHA-256
    for form in ("markdown", "html", "latex"):
        assert "sampled and bounded as one" in render(report, form)
    assert "user-level sampling" in render(report, "registry")
    with pytest.raises(SpecError) as error:
        load_spec_text(_yaml(_data(_DPSGD, "one user", unit_level=True, records_per_unit=4)))
    (line,) = str(error.value).splitlines()[:1]
    assert "records_per_unit" in line and "unit_level" in line


def test_a_unit_level_report_speaks_of_units_not_records() -> None:
    """Units sampled and bounded as one are what the attack and the risk sentences are
    about: the report does not call them records after saying they are not."""
    report = _evaluate(_spec(_GAUSSIAN, "one user", unit_level=True))
    for form in ("markdown", "html", "latex"):
        text = " ".join(render(report, form).split())
        assert "knows every other unit " in text and "every other record" not in text
        assert "the share of the units that were in the data" in text
        assert "a unit (one user)" in text and "a record" not in text
    assert "identifies the one a unit (one user) belongs to" in risk_text(
        report.risk.rows[-1], report, "sentence", "markdown")


@pytest.mark.parametrize("mechanism", [_GAUSSIAN, {"laplace": {"scale": 2.0}},
                                       {"pure_dp": {"epsilon": 1.0}}])
def test_a_person_over_any_kind_without_a_bound_is_warned_about(
        mechanism: dict[str, Any]) -> None:
    (warning,) = [w for w in _evaluate(_spec(mechanism, "one patient")).warnings
                  if w.code == "report/unit-bound-unstated"]
    assert "records_per_unit" in warning.message and "unit_level: true" in warning.message
    assert "one patient" in warning.message
    for stated in ({"records_per_unit": 1}, {"unit_level": True}):
        assert not [w for w in _evaluate(_spec(mechanism, "one patient", **stated)).warnings
                    if w.code == "report/unit-bound-unstated"]


# -- 2. the unit and k in every format -------------------------------------------------


def test_every_format_names_the_unit_with_its_records() -> None:
    report = _evaluate(_spec(_GAUSSIAN, records_per_unit=8))
    who = "one patient with up to 8 records"
    for form in ("markdown", "html", "latex"):
        text = render(report, form)
        assert f"no membership-inference attack on {who} can do better" in text
        assert f"An attack says whether {who} was in the data" in text
        assert "knows every other unit's records" in text
    assert f"privacy_unit: {who}" in render(report, "registry")
    assert "RecordsPerUnit}{8}" in render(report, "latex", variant="macros")
    one = _evaluate(_spec(_GAUSSIAN, records_per_unit=1))
    assert "with up to" not in render(one, "markdown")


@pytest.mark.parametrize("form", ["markdown", "latex"])
def test_every_risk_sentence_names_the_unit_with_its_records(form: str) -> None:
    report = _evaluate(_spec(_GAUSSIAN, records_per_unit=8, risk=[
        {"membership": {"fpr": 0.001}}, {"membership": {"base_rate": 0.1}},
        {"membership": {"base_rate": 0.1, "fpr": 0.01}},
        {"attribute_inference": {"values": 4}}, {"reidentification": {"candidates": 100}},
        {"reconstruction": {"baseline": 0.001}}]))
    assert len({row.scenario for row in report.risk.rows}) == 6
    for row in report.risk.rows:
        for part in ("sentence", "definition"):
            text = risk_text(row, report, part, form)
            assert "one patient with up to 8 records" in text, text
            assert "a record" not in text, text


# -- 3. the group table ----------------------------------------------------------------


def test_group_sizes_are_powers_of_two_and_k() -> None:
    from privspec.spec.group import group_sizes

    assert group_sizes(1) == [1]
    assert group_sizes(2) == [1, 2]
    assert group_sizes(5) == [1, 2, 4, 5]
    assert group_sizes(8) == [1, 2, 4, 8]


def test_the_group_table_shares_the_reports_time_budget(monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    """records_per_unit: 1000 evaluated 10 group rows, each with the whole time budget
    (a mixture of 64 Gaussians alone took 40 s): the rows split one budget between them."""
    from privspec.report import evaluation

    budgets: list[float] = []
    original = evaluation._evaluated

    def recording(model: Spec) -> Any:
        budgets.append(model.accounting.time_budget)
        return original(model)

    monkeypatch.setattr(evaluation, "_evaluated", recording)
    report = _evaluate(_spec(_GAUSSIAN, records_per_unit=1000,
                             accounting={"time_budget": 30}))
    assert len(report.groups) == 11 and len(budgets) == 10  # the last row is the report
    assert sum(budgets) <= 30 * (1 + 1e-12)


def test_the_group_table_evaluates_each_size_by_the_same_route() -> None:
    report = _evaluate(_spec(_DPSGD, records_per_unit=5))
    assert [row.size for row in report.groups] == [1, 2, 4, 5]
    h = report.accounting.discretization
    for row in report.groups:
        alone = _evaluate(_spec({"dpsgd": _DPSGD["dpsgd"]}, records_per_unit=row.size,
                                accounting={"discretization": h}))
        assert row.mu == alone.gdp.mu and row.epsilon == alone.epsilons[0].epsilon
    assert report.groups[-1].mu == report.gdp.mu
    mus = [row.mu for row in report.groups]
    assert mus == sorted(mus) and len(set(mus)) == 4
    assert json.loads(report.model_dump_json())["groups"][2]["size"] == 4
    markdown = render(report, "markdown")
    assert "**Groups of records.**" in markdown and "| 4 | 0.258 | 0.871 |" in markdown
    assert "<th>ε at δ = 10⁻⁵</th>" in render(report, "html")
    latex = render(report, "latex")
    assert "Groups of records." in latex
    assert r"records & $\mu$ & $\varepsilon$ at $\delta = \ensuremath{10^{-5}}$ \\" in latex
    one = _evaluate(_spec(_DPSGD, records_per_unit=1))
    assert not one.groups and "groups" not in json.loads(one.model_dump_json())
    assert "Groups of records" not in render(one, "markdown")


#: A unit accounted by group privacy: sampled Laplace, repeated (a composition to share).
_SAMPLED_LAPLACE = {"poisson_sampled": {"sampling_rate": 0.01,
                                        "mechanism": {"laplace": {"scale": 2.0}}}}


@pytest.mark.parametrize("mechanism", [_DPSGD, {"repeat": {"count": 10,
                                                            "mechanism": _SAMPLED_LAPLACE}}])
def test_every_route_to_the_report_gives_its_group_table(
        mechanism: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The evaluation itself, privspec.evaluate (through the cache: evaluated, then read
    back) and a search's report (``groups=False``, stored first) give one report."""
    from privspec.report import cache, evaluation

    monkeypatch.setenv("PRIVSPEC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("PRIVSPEC_NO_CACHE", raising=False)
    spec = _spec(mechanism, records_per_unit=4)
    direct = evaluation.evaluate(spec)
    assert [row.size for row in direct.groups] == [1, 2, 4]
    searched = cache.evaluate(spec, groups=False)  # stored without the table, maybe
    assert searched.gdp == direct.gdp
    assert privspec.evaluate(spec) == direct  # the stored report lacked it: evaluated
    assert privspec.evaluate(spec) == direct  # read back
    assert list(tmp_path.glob("cache/reports/*.entry"))


def test_group_privacy_composes_one_records_mechanism_once_for_every_row(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """k = 8 by group privacy: one composition of one record's mechanism for the report
    and its rows 1, 2, 4 (before: one per size); for one release, whose accounting no
    group size changes, each row is what the report for that size says."""
    import privspec.numerics.accounting as accounting

    compose = accounting.compose_directions
    compositions: list[int] = []

    def counting(*args: Any, **kwargs: Any) -> Any:
        compositions.append(1)
        return compose(*args, **kwargs)

    monkeypatch.setattr(accounting, "compose_directions", counting)
    report = _evaluate(_spec({"repeat": {"count": 10, "mechanism": _SAMPLED_LAPLACE}},
                             records_per_unit=8))
    assert report.unit_routes == ["group-privacy"] and len(compositions) == 1
    assert [row.size for row in report.groups] == [1, 2, 4, 8]
    monkeypatch.setattr(accounting, "compose_directions", compose)
    once = _evaluate(_spec(_SAMPLED_LAPLACE, records_per_unit=8))
    h = once.accounting.discretization
    for row in once.groups:
        alone = _evaluate(_spec(_SAMPLED_LAPLACE, records_per_unit=row.size,
                                accounting={"discretization": h}))
        assert (row.mu, row.epsilon) == (alone.gdp.mu, alone.epsilons[0].epsilon)


def test_the_exact_accounting_sentence_is_decided_once() -> None:
    """A unit's curve iterated from one record's exact one (k runs of an ε-DP worst
    case) says that only one record's curve is exact, in every format; one record's
    exact curve says it is exact."""
    unit, one = (_evaluate(_spec({"pure_dp": {"epsilon": 0.5}}, records_per_unit=k))
                 for k in (4, 1))
    assert unit.exact_accounting == ("one record's curve exact (nothing discretized, "
                                     "truncated or composed numerically)")
    assert one.exact_accounting == "nothing discretized, truncated or composed numerically"
    for form in ("markdown", "html", "latex"):
        assert f"; {unit.exact_accounting}." in render(unit, form, variant="standalone"
                                                       if form == "latex" else None)
        assert f"; {one.exact_accounting}." in render(one, form, variant="standalone"
                                                      if form == "latex" else None)
    assert _evaluate(_spec(_SAMPLED_LAPLACE, records_per_unit=4)).exact_accounting is None


def test_the_summary_table_names_who_each_row_protects(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = []
    for name, extra in (("records", {"records_per_unit": 4}), ("users", {"unit_level": True}),
                        ("plain", {})):
        path = tmp_path / f"{name}.privspec.yaml"
        path.write_text(_yaml({**_data(_GAUSSIAN, "one *patient*", **extra), "title": name}),
                        encoding="utf-8")
        paths.append(str(path))
    assert main(["--no-cache", "table", *paths]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    assert rows[1].startswith(r"| records (protects one \*patient\* with up to 4 records) |")
    assert rows[2].startswith(r"| users (protects one \*patient\*, sampled and bounded as one) |")
    assert rows[3].startswith("| plain |")
    assert main(["--no-cache", "table", *paths, "-f", "latex"]) == 0
    assert "(protects one *patient* with up to 4 records)" in capsys.readouterr().out


# -- 4. the commands -------------------------------------------------------------------


def test_calibrate_holds_the_target_for_the_whole_unit(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one = calibrate(_data({"gaussian": {"sigma": 1.0}}, records_per_unit=1), "sigma",
                    ["mu=0.5"])
    four = calibrate(_data({"gaussian": {"sigma": 1.0}}, records_per_unit=4), "sigma",
                     ["mu=0.5"])
    assert one.value == pytest.approx(2.0) and four.value == pytest.approx(8.0)
    path = tmp_path / "s.privspec.yaml"
    path.write_text(_yaml(_data({"gaussian": {"sigma": 1.0}}, records_per_unit=4)),
                    encoding="utf-8")
    assert main(["--no-cache", "calibrate", str(path), "--vary", "sigma", "-t", "mu=0.5"]) == 0
    assert "  achieves for one patient with up to 4 records: μ = 0.5," in capsys.readouterr().out


def test_check_names_the_unit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.privspec.yaml"
    path.write_text(_yaml({**_data({"gaussian": {"sigma": 10.0}}, records_per_unit=4),
                           "budget": {"max_mu": 0.3}}), encoding="utf-8")
    assert main(["--no-cache", "check", str(path)]) == 1
    assert ("μ for one patient with up to 4 records = 0.4 exceeds the limit 0.3"
            in capsys.readouterr().out)


def test_diff_says_who_is_protected_changed(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    old, new = tmp_path / "old.privspec.yaml", tmp_path / "new.privspec.yaml"
    old.write_text(_yaml(_data(_GAUSSIAN, records_per_unit=1)), encoding="utf-8")
    new.write_text(_yaml(_data(_GAUSSIAN, records_per_unit=3)), encoding="utf-8")
    assert main(["--no-cache", "diff", str(old), str(new), "-f", "json"]) == 0
    (diff,) = json.loads(capsys.readouterr().out)
    assert diff["comparable"] is False
    assert diff["warnings"][0].startswith(
        "Who is protected changed ('one patient' → 'one patient with up to 3 records')")


@pytest.mark.parametrize("mechanism", [
    {"dpsgd": {"noise_multiplier": 1.5, "sampling_rate": 0.02, "steps": 50}},
    {"compose": [{"mechanism": {"poisson_sampled": {"sampling_rate": 0.013, "mechanism": {
        "gaussian": {"noise_multiplier": 0.9}}}}},
                 {"mechanism": {"dpsgd": {"noise_multiplier": 1.5, "sampling_rate": 0.02,
                                          "steps": 50}}}]}])
def test_a_units_dp_event_imports_back_to_its_spec(mechanism: dict[str, Any]) -> None:
    spec = _spec(mechanism, "one user", records_per_unit=3)
    exported = export_dp_event(spec)
    back = spec_from_dp_event(json.loads(json.dumps(exported.event)), unit="one user",
                              neighbouring="add-or-remove", sampling="poisson")
    assert back.records_per_unit == 3
    assert back.mechanism == spec.mechanism
    assert _evaluate(back).gdp == _evaluate(spec).gdp


def test_a_mixture_beside_other_releases_is_refused() -> None:
    spec = _spec({"compose": [{"mechanism": _GAUSSIAN}, {"mechanism": _DPSGD}]}, "one user",
                 records_per_unit=3)
    event = json.loads(json.dumps(export_dp_event(spec).event))
    with pytest.raises(RecordError, match="beside other releases"):
        spec_from_dp_event(event, unit="one user", neighbouring="add-or-remove",
                           sampling="poisson")
    event = json.loads(json.dumps(export_dp_event(_spec(_DPSGD, records_per_unit=3)).event))
    event["event"]["sampling_probs"][1] += 0.01
    with pytest.raises(RecordError, match="Binomial"):
        spec_from_dp_event(event, unit="one user", neighbouring="add-or-remove",
                           sampling="poisson")


def _jax(tmp_path: Path, record: dict[str, Any], *options: str) -> tuple[int, Path]:
    path, out = tmp_path / "dp_params.json", tmp_path / "jax.privspec.yaml"
    path.write_text(json.dumps(record), encoding="utf-8")
    out.unlink(missing_ok=True)
    return main(["import", "jax-privacy", str(path), "--unit", "one user", "--neighbouring",
                 "add-or-remove", "--sampling", "poisson", *options, "-o", str(out)]), out


_JAX = {"noise_multipliers": 1.2, "num_samples": 10_000, "batch_size": 100,
        "num_updates": 200}


def test_jax_privacy_examples_per_user_and_user_level_sampling(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _jax(tmp_path, {**_JAX, "examples_per_user": 4})
    assert code == 0
    spec = load_spec_text(out.read_text(encoding="utf-8"))
    assert spec.records_per_unit == 4 and not spec.unit_level
    assert "examples_per_user 4" in (spec.description or "")
    code, out = _jax(tmp_path, _JAX, "--unit-level")
    assert code == 0
    spec = load_spec_text(out.read_text(encoding="utf-8"))
    assert spec.unit_level and spec.records_per_unit == 1
    assert "unit_level" in (spec.description or "")  # asserted, not recorded
    capsys.readouterr()
    code, out = _jax(tmp_path, {**_JAX, "examples_per_user": 4}, "--unit-level")
    err = capsys.readouterr().err
    assert code == 2 and "--unit-level" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_the_group_table_says_how_its_rows_were_found() -> None:
    """By group privacy the rows come from one composed curve, not from the spec evaluated
    at each size (the sentence said the latter for every route)."""
    by_group = _evaluate(_spec({"repeat": {"count": 10, "mechanism": _SAMPLED_LAPLACE}},
                               records_per_unit=4))
    assert by_group.unit_routes == ["group-privacy"]
    assert "by f-DP group privacy on the one composed curve" in render(by_group, "markdown")
    by_size = _evaluate(_spec(_DPSGD, records_per_unit=4))
    assert by_size.unit_routes != ["group-privacy"]
    text = render(by_size, "markdown")
    assert "records\\_per\\_unit set to each size" in text and "group privacy on" not in text
