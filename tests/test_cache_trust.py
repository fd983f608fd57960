"""The report cache trusts no entry someone else could have written: not in a folder of
another user's or one others may write, not through a symbolic link, not one another
user owns; and not a report whose figures contradict each other (a μ, an advantage or
an ε too small for its own curve) or that is another spec's (``report/store.py``,
``report/cache.py``, ``report/consistency.py``)."""

from __future__ import annotations

import hashlib
import json
import math
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cache_fixtures import evaluations as evaluations  # fixtures
from cache_fixtures import folder as folder

import privspec
from privspec.cli import main
from privspec.report import store
from privspec.report.consistency import inconsistency
from privspec.report.model import Report
from privspec.spec.loader import spec_from_data

OTHER_USER = 54_321  # no account of the sandbox's: root may still give it files
pytestmark = pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX owners")


def _spec(scale: float = 1.0) -> dict[str, Any]:
    return {"privspec": 1, "title": "Counts", "unit": "one person",
            "neighbouring": "add-or-remove",
            "mechanism": {"laplace": {"scale": scale, "sensitivity": 1}}}


def _plant(entry: Path, report: Report | dict[str, Any]) -> None:
    """Write ``report`` as the entry ``entry`` with a right header and checksum."""
    body = (store.report_json(report) if isinstance(report, Report)
            else json.dumps(report).encode("utf-8"))
    header = {"format": store.ENTRY_FORMAT, "key": entry.name.removesuffix(".entry"),
              "sha256": hashlib.sha256(body).hexdigest()}
    entry.write_bytes(json.dumps(header, sort_keys=True).encode("utf-8") + b"\n" + body)


def _sampled(sigma: float = 2.0) -> dict[str, Any]:
    """DP-SGD's shape: its releases alone force little (their lower bound is far below μ)."""
    return {**_spec(), "mechanism": {"repeat": {"count": 300, "mechanism": {"poisson_sampled": {
        "sampling_rate": 0.01, "mechanism": {"gaussian": {"sigma": sigma}}}}}}}


def _forged_entry(folder: Path) -> tuple[Path, Report, Report]:
    """The entry of ``_sampled()``, its true report, and a forgery no figure gives away:
    a more private spec's report, every figure agreeing, named as ``_sampled()``'s."""
    true = privspec.evaluate(_sampled())
    (entry,) = folder.glob("*.entry")
    forged = privspec.evaluate(_sampled(8.0), cache=False).model_copy(
        update={"spec_sha256": true.spec_sha256})
    assert inconsistency(forged, spec_from_data(_sampled())) is None
    assert true.gdp.mu is not None and forged.gdp.mu is not None
    assert forged.gdp.mu < true.gdp.mu / 3
    _plant(entry, forged)
    return entry, true, forged


def _others_may_write(path: Path) -> None:
    path.chmod(0o777)


def _group_may_write(path: Path) -> None:
    os.chown(path, -1, OTHER_USER)  # a group that is not the user's own
    path.chmod(0o770)


def _another_users(path: Path) -> None:
    os.chown(path, OTHER_USER, -1)


def _sticky_for_all(path: Path) -> None:
    path.chmod(0o1777)  # anyone may add an entry to a sticky folder


@pytest.mark.parametrize(("damage", "where"), [
    *((damage, where) for damage in (_others_may_write, _group_may_write, _another_users)
      for where in ("reports", "above")),
    (_sticky_for_all, "reports"),  # (a sticky folder above it is trusted: the next test)
])
def test_no_entry_is_read_from_a_folder_someone_else_may_write(
        folder: Path, evaluations: list[object], capsys: pytest.CaptureFixture[str],
        damage: Callable[[Path], None], where: str) -> None:
    why = {_others_may_write: "is writable by other users", _sticky_for_all: "is writable "
           "by other users", _group_may_write: "is writable by its group",
           _another_users: "belongs to another user"}
    entry, true, _ = _forged_entry(folder)
    damaged = folder if where == "reports" else folder.parent
    planted = entry.read_bytes()
    damage(damaged)
    capsys.readouterr()
    assert privspec.evaluate(_sampled()) == true
    assert privspec.evaluate(_sampled()) == true
    assert len(evaluations) == 4  # (two for the forgery) evaluated, then never read
    warning = capsys.readouterr().err
    assert warning == (f"privspec: warning: not using the report cache: {damaged} "
                       f"{why[damage]}, so its reports cannot be trusted; PRIVSPEC_CACHE_DIR "
                       "can name a folder of your own\n")
    assert entry.read_bytes() == planted  # not written there either


def test_a_sticky_folder_above_the_cache_is_trusted(
        folder: Path, evaluations: list[object], capsys: pytest.CaptureFixture[str]) -> None:
    expected = privspec.evaluate(_spec())
    folder.parent.chmod(0o1777)  # as /tmp: no one else may rename the user's folder in it
    assert privspec.evaluate(_spec()) == expected
    assert len(evaluations) == 1 and capsys.readouterr().err == ""


def test_an_entry_of_another_user_or_that_others_may_write_is_not_read(
        folder: Path, evaluations: list[object]) -> None:
    entry, true, _ = _forged_entry(folder)
    os.chown(entry, OTHER_USER, -1)
    assert privspec.evaluate(_sampled()) == true  # evaluated again, and replaced
    assert entry.stat().st_uid == os.geteuid()
    _forged_entry(folder)
    entry.chmod(0o666)
    assert privspec.evaluate(_sampled()) == true
    assert len(evaluations) == 5  # (two for the first forgery, one for the second)


def test_a_symbolic_link_as_an_entry_is_not_followed(
        folder: Path, tmp_path: Path, evaluations: list[object]) -> None:
    entry, true, _ = _forged_entry(folder)
    planted = entry.read_bytes()
    elsewhere = tmp_path / "elsewhere.entry"
    entry.rename(elsewhere)
    entry.symlink_to(elsewhere)
    assert privspec.evaluate(_sampled()) == true
    assert len(evaluations) == 3 and not entry.is_symlink()  # (two for the forgery)
    assert elsewhere.read_bytes() == planted  # the link replaced, its target left alone


def test_the_cache_folders_privspec_makes_are_the_users_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, evaluations: list[object]) -> None:
    monkeypatch.setenv("PRIVSPEC_CACHE_DIR", str(tmp_path / "a" / "b"))
    monkeypatch.delenv("PRIVSPEC_NO_CACHE", raising=False)
    before = os.umask(0o002)  # a user-private-group system's umask
    try:
        privspec.evaluate(_spec())
    finally:
        os.umask(before)
    for made in (tmp_path / "a", tmp_path / "a" / "b", tmp_path / "a" / "b" / "reports"):
        assert stat.S_IMODE(made.stat().st_mode) == 0o700
    privspec.evaluate(_spec())
    assert len(evaluations) == 1  # and trusted


def test_a_folder_writable_by_the_users_own_group_is_trusted(
        folder: Path, evaluations: list[object], monkeypatch: pytest.MonkeyPatch) -> None:
    expected = privspec.evaluate(_spec())
    folder.chmod(0o770)
    monkeypatch.setattr(store, "_own_group", lambda group, user: True)
    assert privspec.evaluate(_spec()) == expected
    assert len(evaluations) == 1


def test_without_posix_owners_the_cache_still_works(
        folder: Path, evaluations: list[object], monkeypatch: pytest.MonkeyPatch) -> None:
    expected = privspec.evaluate(_spec())
    monkeypatch.delattr(os, "geteuid")
    assert privspec.evaluate(_spec()) == expected
    assert len(evaluations) == 1


def test_cache_info_says_when_the_cache_is_not_used(
        folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    privspec.evaluate(_spec())
    assert main(["cache", "info"]) == 0
    assert "not used" not in capsys.readouterr().out
    folder.chmod(0o777)
    assert main(["cache", "info"]) == 0
    assert (f"not used: {folder} is writable by other users, so its reports cannot be "
            "trusted\n") in capsys.readouterr().out


def _mu(data: dict[str, Any]) -> None:
    data["gdp"]["mu"] = 0.01


def _mu_and_curve(data: dict[str, Any]) -> None:
    """μ = 0.01 and a curve and table raised to G_0.01 (advantage and ε's left)."""
    from privspec.numerics.gdp import gaussian_tpr

    data["gdp"]["mu"] = 0.01
    for point in [*data["curve"], *data["tradeoff"]]:
        point["tpr"] = float(gaussian_tpr(point["alpha"], 0.01))
        point["beta"] = 1 - point["tpr"]


def _advantage(data: dict[str, Any]) -> None:
    data["gdp"]["advantage"] /= 10


def _epsilon(data: dict[str, Any]) -> None:
    """ε = 0 at every δ: the advantage it allows, δ, is below what the releases force."""
    for row in data["epsilons"]:
        row["epsilon"] = 0.0


def _curve_below_mu(data: dict[str, Any]) -> None:
    point = data["curve"][len(data["curve"]) // 2]
    point["beta"] /= 2
    point["tpr"] = 1 - point["beta"]


def _beta_alone(data: dict[str, Any]) -> None:
    data["tradeoff"][-1]["beta"] = min(1.0, data["tradeoff"][-1]["beta"] + 0.1)


def _not_a_number(data: dict[str, Any]) -> None:
    data["gdp"]["mu"] = math.nan


def _no_curve(data: dict[str, Any]) -> None:
    data["curve"], data["tradeoff"] = [], []  # nothing left to check μ against


def _another_spec(data: dict[str, Any]) -> None:
    data["spec_sha256"] = "0" * 64


@pytest.mark.parametrize("forge", [_mu, _mu_and_curve, _advantage, _epsilon, _curve_below_mu,
                                   _beta_alone, _not_a_number, _no_curve, _another_spec])
def test_a_report_whose_figures_disagree_is_evaluated_again_and_replaced(
        folder: Path, evaluations: list[object], forge: Callable[[dict[str, Any]], None]
        ) -> None:
    """A right checksum, in the user's own folder: the figures themselves are checked
    (of a spec whose releases alone force a μ far below its own: the forgeries are above it)."""
    true = privspec.evaluate(_sampled())
    (entry,) = folder.glob("*.entry")
    good = entry.read_bytes()
    data = json.loads(good.partition(b"\n")[2])
    forge(data)
    _plant(entry, data)
    assert privspec.evaluate(_sampled()) == true
    assert len(evaluations) == 2
    assert entry.read_bytes() == good


@pytest.mark.parametrize("mechanism", [
    {"gaussian": {"sigma": 2.0}},  # exact: G_μ itself
    {"pure_dp": {"epsilon": 1.0}},
    # the closed-form bound: G_μ as the curve, basic composition's ε below its ε(δ)
    {"compose": [{"mechanism": {"discrete_laplace": {"scale": 9e5 + i, "sensitivity": 999_999}}}
                 for i in range(5)]},
    {"poisson_sampled": {"sampling_rate": 0.5, "mechanism": {"gaussian": {"sigma": 1e-4}}}},
    {"repeat": {"count": 300, "mechanism": {"poisson_sampled": {
        "sampling_rate": 0.01, "mechanism": {"gaussian": {"sigma": 1.0}}}}}},
])
def test_the_reports_privspec_makes_agree_with_themselves(mechanism: dict[str, Any]) -> None:
    data = {**_spec(), "mechanism": mechanism}
    report = privspec.evaluate(data, cache=False)
    assert inconsistency(report, spec_from_data(data)) is None


@pytest.mark.parametrize("data", [
    # ε(δ) = 0 at every δ: nothing to hold against μ
    {**_spec(), "mechanism": {"pure_dp": {"epsilon": 1e-6}}},
    # a δ of 10⁻⁹ at ε = 18: in Φ's far tail, where NormalDist.cdf has no digits left
    {**_spec(), "records_per_unit": 64, "neighbouring": "replace-one",
     "mechanism": {"gaussian": {"noise_multiplier": 50.0}}},
])
def test_tiny_and_far_tail_figures_agree_with_themselves(data: dict[str, Any]) -> None:
    report = privspec.evaluate(data, cache=False)
    assert inconsistency(report, spec_from_data(data)) is None


def test_a_consistent_forgery_below_what_the_specs_releases_force_is_not_trusted(
        folder: Path, evaluations: list[object]) -> None:
    """Every figure of a far more private spec's report agrees with the others; one
    Laplace release alone forces its advantage, 1 − e^(−Δ/2b), and so its μ."""
    true = privspec.evaluate(_spec())
    (entry,) = folder.glob("*.entry")
    forged = privspec.evaluate(_spec(100.0), cache=False).model_copy(
        update={"spec_sha256": true.spec_sha256})
    assert inconsistency(forged) is None  # the figures alone do not give it away
    _plant(entry, forged)
    assert privspec.evaluate(_spec()) == true
    assert len(evaluations) == 3


@pytest.mark.parametrize("mechanism", [
    {"laplace": {"scale": 2.0, "sensitivity": 1}},
    {"pure_dp": {"epsilon": 0.5}},
    {"approximate_dp": {"epsilon": 0.5, "delta": 1e-3}},
    {"compose": [{"mechanism": {"gaussian": {"sigma": 3.0}}, "repeat": 4},
                 {"mechanism": {"laplace": {"scale": 5.0, "sensitivity": 1}}}]},
    {"repeat": {"count": 50, "mechanism": {"poisson_sampled": {
        "sampling_rate": 0.2, "mechanism": {"gaussian": {"sigma": 1.0}}}}}},
])
def test_what_the_releases_force_is_below_the_advantage_and_mu(
        mechanism: dict[str, Any]) -> None:
    from privspec.report.consistency import advantage_lower_bound

    data = {**_spec(), "mechanism": mechanism}
    report = privspec.evaluate(data, cache=False)
    lower = advantage_lower_bound(spec_from_data(data))
    assert 0 < lower <= report.gdp.advantage
    if report.gdp.mu is not None:  # μ at the floor τ: G_μ's advantage plus τ at least
        assert math.erf(report.gdp.mu / (2 * math.sqrt(2))) + report.accounting.floor >= lower


def test_a_cache_folder_linked_to_another_users_is_not_read(
        folder: Path, tmp_path: Path, evaluations: list[object]) -> None:
    _, true, _ = _forged_entry(folder)
    theirs = tmp_path / "theirs"
    folder.rename(theirs)
    folder.symlink_to(theirs)  # the link the user's; where it leads another user's
    os.chown(theirs, OTHER_USER, -1)
    assert privspec.evaluate(_sampled()) == true
    assert len(evaluations) == 3


def test_nothing_is_made_in_a_folder_another_user_may_write(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, evaluations: list[object]) -> None:
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    monkeypatch.setenv("PRIVSPEC_CACHE_DIR", str(shared / "privspec"))
    monkeypatch.delenv("PRIVSPEC_NO_CACHE", raising=False)
    monkeypatch.setattr(store, "_warned", False)
    privspec.evaluate(_spec())
    privspec.evaluate(_spec())
    assert list(shared.iterdir()) == [] and len(evaluations) == 2
