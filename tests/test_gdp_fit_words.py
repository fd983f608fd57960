"""The Tier II words say where μ overstates the risk most, read from the table: the
FPR at which G_μ's TPR is the largest multiple of the exact curve's (issue 28: the
words said "most of all at low false-positive rates" for a subsampled Gaussian, whose
curve is closest to G_μ there)."""

from __future__ import annotations

import pytest

import privspec
from privspec.report.model import Report, TradeoffRow
from privspec.report.render import gap_values, render, text_for


def _report(relation: str, mechanism: dict[str, object]) -> Report:
    return privspec.evaluate({"privspec": 1, "title": "t", "unit": "one example",
                              "neighbouring": relation, "mechanism": mechanism})


CASES = {
    "subsampled Gaussian": ("add-or-remove", {"dpsgd": {
        "noise_multiplier": 0.8, "sampling_rate": 0.004, "steps": 1000}}),
    "Laplace": ("add-or-remove", {"laplace": {"scale": 1.0, "sensitivity": 1}}),
    "randomized response": ("replace-one", {"randomized_response": {
        "flip_probability": 0.25, "categories": 2}}),
}


@pytest.mark.parametrize(("name", "loosest"), [
    ("subsampled Gaussian", 1e-4),  # tight at the lowest FPRs, loose in between
    ("Laplace", 1e-10),  # e^ε·α against G_μ: loosest at the lowest FPR
    ("randomized response", 1e-10),
])
def test_the_poor_fit_is_worded_from_where_the_table_shows_it(name: str, loosest: float
                                                             ) -> None:
    report = _report(*CASES[name])
    assert report.gdp.tier == 2
    (note,) = [w for w in report.warnings if w.code == "report/gdp-poor-fit"]
    ratios = {row.alpha: row.tpr_gdp / row.tpr for row in report.tradeoff
              if row.tpr_gdp is not None}
    assert max(ratios, key=lambda alpha: ratios[alpha]) == loosest == note.values["alpha"]
    ratio = note.values["ratio"]
    assert isinstance(ratio, float)
    assert 0.99 * ratios[loosest] <= ratio <= ratios[loosest]  # rounded down
    assert "low false-positive rates" not in note.message
    lowest = min(ratios)
    where = "most at FPR 10⁻⁴ among the table's rows" if loosest == 1e-4 else (
        "most at FPR 10⁻¹⁰ among the table's rows")
    assert where in note.message
    assert ("at the lowest FPR" in note.message) == (loosest != lowest)
    for fmt, variant in (("markdown", None), ("html", None), ("latex", "standalone")):
        banner = render(report, fmt, variant=variant).split("read the table", 1)[1][:1500]
        assert "typically those with a low false-positive rate" not in banner
        assert "most at FPR" in banner


def test_a_curve_that_g_mu_meets_at_every_row_is_worded_so() -> None:
    """No row where G_μ's TPR exceeds the exact one: the gap is between the rows."""
    rows = [TradeoffRow(alpha=a, beta=1 - 2 * a, tpr=2 * a, beta_gdp=1 - 2 * a, tpr_gdp=2 * a,
                        is_alpha_star=False) for a in (1e-6, 1e-3)]
    assert gap_values(rows) == {"ratio": 1.0}
    assert text_for("text/gdp-gap.txt.j2", gap_values(rows), "markdown") == (
        "between the table's FPRs: at each of them μ-GDP allows no more than the TPR any "
        "attack achieves")


def test_a_caveat_without_the_gap_read_back_from_json_claims_no_place() -> None:
    """A report written before the gap was recorded (its caveat's values without it) is
    re-worded without one, not as if G_μ met the curve at every row."""
    from privspec.report.wording import caveat

    old = caveat("report/gdp-poor-fit", regret=0.05, resolution=1e-9, threshold=0.01)
    assert old.message == ("Regret 0.05 exceeds the threshold 0.01: μ is a safe bound but "
                           "overstates the risk for some attacks; the trade-off table is the "
                           "accurate description.")
