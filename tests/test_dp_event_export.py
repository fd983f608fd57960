"""``privspec export --dp-event``: every example re-checked with dp-accounting's own
accountants.  privspec's ε(δ) is at most the PLD accountant's at the same
discretization (privspec is as tight as dp-accounting; that it is never optimistic is
checked against closed forms elsewhere) and at most the RDP accountant's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dp_accounting import NeighboringRelation
from dp_accounting.pld.pld_privacy_accountant import PLDAccountant
from dp_accounting.rdp.rdp_privacy_accountant import RdpAccountant

import privspec
from privspec.cli.app import main
from privspec.spec.loader import load_spec
from privspec.workflows.dp_event import DpEventError, dp_event_from_json, export_dp_event

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted([*(ROOT / "examples").glob("*.privspec.yaml"),
                   *(ROOT / "examples" / "de-et-al-2022").glob("*.privspec.yaml")])


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_dp_accounting_agrees_with_every_example(path: Path) -> None:
    spec = load_spec(path)
    exported = export_dp_event(spec)
    event = dp_event_from_json(json.loads(json.dumps(exported.event)))
    relation = NeighboringRelation[exported.neighboring_relation]
    report = privspec.evaluate(spec)
    checked = 0
    accountant = PLDAccountant(neighboring_relation=relation,
                               value_discretization_interval=spec.accounting.discretization)
    if accountant.supports(event):
        accountant.compose(event)
        for row in report.epsilons:
            ours = float("inf") if row.epsilon is None else row.epsilon
            theirs = accountant.get_epsilon(row.delta)
            assert ours <= theirs * (1 + 1e-3) + 1e-3, (row.delta, ours, theirs)
            checked += 1
    rdp = RdpAccountant(neighboring_relation=relation)
    if rdp.supports(event):
        rdp.compose(event)
        for row in report.epsilons:
            ours = float("inf") if row.epsilon is None else row.epsilon
            assert ours <= rdp.get_epsilon(row.delta) * (1 + 1e-9), row.delta
            checked += 1
    assert checked or exported.notes  # an unsupported event says why


def test_the_command_writes_the_event(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                      ) -> None:
    assert main(["export", "--dp-event", str(ROOT / "examples" /
                                               "cifar10-dpsgd-eps8.privspec.yaml")]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["neighboring_relation"] == "ADD_OR_REMOVE_ONE"
    assert data["event"]["class_name"] == "SelfComposedDpEvent"
    assert data["event"]["count"] == 2000
    assert main(["export", str(ROOT / "examples" / "cifar10-dpsgd-eps8.privspec.yaml")]) == 2


@pytest.mark.parametrize(("data", "says"), [
    ({"class_name": "os.system"}, "not an event privspec reads"),
    ({"module_name": "evil", "class_name": "GaussianDpEvent"}, "needs 'noise_multiplier'"),
    ({"class_name": "GaussianDpEvent", "noise_multiplier": "1"}, "expected a number"),
    ({"class_name": "SelfComposedDpEvent", "count": 2, "event": [1]}, "event.event"),
    ([], "expected an event"),
])
def test_event_files_are_read_without_trusting_them(data: object, says: str) -> None:
    """Never imports the module an input names (dp-accounting's from_named_tuple would)."""
    with pytest.raises(DpEventError, match=says):
        dp_event_from_json(data)


def _exported(mechanism: dict[str, object]) -> dict[str, object]:
    from privspec.spec.loader import spec_from_data

    return export_dp_event(spec_from_data({
        "privspec": 1, "title": "t", "unit": "one user", "neighbouring": "add-or-remove",
        "mechanism": mechanism})).event


@pytest.mark.parametrize(("mechanism", "field", "value"), [
    # σ/Δ = 1e400 was exported as Infinity (no privacy loss at all, and not JSON)
    ({"gaussian": {"sigma": 1e200, "sensitivity": 1e-200}}, "noise_multiplier",
     1.7976931348623157e308),
    ({"laplace": {"scale": 1e200, "sensitivity": 1e-200}}, "noise_multiplier",
     1.7976931348623157e308),
    # σ/Δ = 1/10 rounds to a double above it (more noise than the spec's): now the one below
    ({"gaussian": {"sigma": 1.0, "sensitivity": 10.0}}, "noise_multiplier",
     0.09999999999999999),
    # ρ = 1/(2·10⁶⁰⁰) was 0 (no privacy loss): now the least double
    ({"discrete_gaussian": {"sigma": 1e300, "sensitivity": 1}}, "rho", 5e-324),
])
def test_an_exported_noise_is_rounded_down_and_rho_up(mechanism: dict[str, object],
                                                      field: str, value: float) -> None:
    assert _exported(mechanism)[field] == value


def test_a_rho_beyond_double_range_is_refused_not_a_traceback() -> None:
    from privspec.errors import EvaluationError

    with pytest.raises(EvaluationError, match="beyond double range"):
        _exported({"discrete_gaussian": {"sigma": 1e-300, "sensitivity": 1}})
