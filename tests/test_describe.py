"""How a report restates a composition in words (``privspec.spec.kinds.compose``)."""

from __future__ import annotations

from typing import Any

from privspec.report.describe import describe
from privspec.spec.loader import spec_from_data


def _described(stages: list[dict[str, Any]]) -> str:
    spec = spec_from_data({"privspec": 1, "title": "t", "unit": "one person",
                           "neighbouring": "add-or-remove",
                           "mechanism": {"compose": stages}})
    return describe(spec.mechanism)


def _gaussian(sigma: float, name: str | None = None, repeat: int = 1) -> dict[str, Any]:
    stage: dict[str, Any] = {"mechanism": {"gaussian": {"sigma": sigma, "sensitivity": 1}}}
    if name is not None:
        stage["name"] = name
    if repeat > 1:
        stage["repeat"] = repeat
    return stage


def test_named_stages_that_do_the_same_share_one_description() -> None:
    text = _described([_gaussian(2, "a"), _gaussian(2, "b"), _gaussian(2, "c")])
    assert text.startswith("3 stages on the same data, each Gaussian")
    assert text.endswith(": a, b, c")
    assert text.count("Gaussian") == 1


def test_alike_stages_are_grouped_in_order_of_first_appearance() -> None:
    text = _described([_gaussian(2, "a"), _gaussian(3, "b"), _gaussian(2, "c"),
                       _gaussian(3, "d", repeat=2)])
    first, second, third = text.split(": ", 1)[1].split("; ")
    assert first.startswith("a, c: each Gaussian")
    assert second.startswith("b: Gaussian")
    assert third.startswith("d: Gaussian") and third.endswith("(×2)")


def test_unnamed_stages_stay_one_by_one() -> None:
    text = _described([_gaussian(2), _gaussian(2)])
    assert text.startswith("2 stages on the same data: Gaussian")
    assert text.count("Gaussian") == 2
