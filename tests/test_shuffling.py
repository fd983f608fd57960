"""DP-SGD's ``sampling:``: shuffled batches are reported without amplification, between
a lower bound and the Poisson figure that does not hold for them; unaccounted schemes
are refused with the reason."""

from __future__ import annotations

import math

import pytest
from scipy.special import ndtr

import privspec
from privspec.numerics.shuffling import shuffled_lower_mu
from privspec.spec.diagnostics import SpecError


def _spec(sampling: str, relation: str = "zero-out", **fields: object) -> dict[str, object]:
    block = {"noise_multiplier": 1.0, "batch_size": 60, "dataset_size": 60000, "steps": 1000,
             "sampling": sampling, **fields}
    return {"privspec": 1, "title": "t", "unit": "one example", "neighbouring": relation,
            "mechanism": {"dpsgd": block}}


def test_shuffled_is_the_gaussian_without_amplification() -> None:
    """1,000 steps of 60 from 60,000: each example in one batch, μ = 1/z exactly."""
    report = privspec.evaluate(_spec("shuffled"))
    assert report.gdp.mu == pytest.approx(1.0, rel=1e-12)
    (note,) = [w for w in report.warnings if w.code == "accounting/shuffled"]
    assert note.values["lower"] <= note.values["upper"]
    assert note.values["poisson"] < note.values["upper"]
    assert 0.8 < note.values["exact"] < 1.0  # Chua et al.: little amplification at τ → 0
    many = privspec.evaluate(_spec("shuffled", steps=5000))  # five epochs: √5
    assert many.gdp.mu == pytest.approx(math.sqrt(5), rel=1e-12)


def test_the_lower_bound_is_what_its_attack_achieves() -> None:
    """Sound: some threshold's (FPR, TPR), computed directly, needs at least that μ;
    and nearly the best such threshold."""
    import numpy as np
    from scipy.special import ndtri

    z, b, e, tau = 1.0, 1000, 1, 1e-12
    lower = shuffled_lower_mu(z, b, e, tau)
    t = np.linspace(5.0, 9.0, 4001)
    alpha = 1 - ndtr(t) ** (b * e)
    tpr = 1 - ndtr(t - 1 / z) ** e * ndtr(t) ** ((b - 1) * e)
    with np.errstate(invalid="ignore"):
        needed = np.nanmax(np.where(tpr > tau, ndtri(tpr - tau) - ndtri(alpha), np.nan))
    assert lower <= needed and needed <= lower * 1.01


def test_shuffled_batches_under_add_or_remove_are_refused() -> None:
    """A fixed-size batch: an added example pushes another out (two norms: an attack on
    B = N reaches μ = 2√T/z, which one norm would report as √T/z)."""
    with pytest.raises(SpecError, match="pushes another out of its batch"):
        privspec.evaluate(_spec("shuffled", "add-or-remove"))
    replaced = privspec.evaluate(_spec("shuffled", "replace-one", batch_size=1000,
                                       dataset_size=1000, steps=4, noise_multiplier=2))
    assert replaced.gdp.mu == pytest.approx(2.0, rel=1e-12)  # 2·√4/2


def test_shuffled_participations_count_the_epochs_a_dropped_partial_batch_adds() -> None:
    """N = 199, B = 100: one full batch an epoch (the partial one dropped), so 3 steps
    are 3 epochs and 3 batches per example, where ⌈T·B/N⌉ said 2."""
    report = privspec.evaluate(_spec("shuffled", batch_size=100, dataset_size=199, steps=3))
    assert report.gdp.mu == pytest.approx(math.sqrt(3), rel=1e-12)


def test_balls_in_bins_has_no_sound_accountant_and_is_refused() -> None:
    with pytest.raises(SpecError, match="Monte-Carlo estimates are not bounds"):
        privspec.evaluate(_spec("balls-in-bins"))


def test_zero_out_is_accounted_as_add_or_remove_and_said_in_the_report() -> None:
    poisson = {"noise_multiplier": 1.0, "batch_size": 500, "dataset_size": 50_000,
               "steps": 1000, "sampling": "poisson"}
    spec = {"privspec": 1, "title": "t", "unit": "one example", "neighbouring": "zero-out",
            "mechanism": {"dpsgd": poisson}}
    zero_out = privspec.evaluate(spec)
    assert zero_out.gdp == privspec.evaluate({**spec, "neighbouring": "add-or-remove"}).gdp
    from privspec.report.render import render

    assert "zero-out neighbouring datasets: the record replaced by a null one" in render(
        zero_out, "markdown")


@pytest.mark.parametrize("cap", [620, 700])
def test_truncated_poisson_matches_dp_accounting_on_the_safe_side(cap: int) -> None:
    """Batches of 500 expected from 50,000, cut at 620 (truncated with probability 10⁻⁷:
    dp-accounting's mixture) or 700 (10⁻¹⁷: taken as an infinite loss with that
    probability, within the floor); ε(10⁻⁵) at or above dp-accounting's own, within 0.1 %."""
    import dp_accounting
    from dp_accounting.pld import pld_privacy_accountant
    from dp_accounting.pld import privacy_loss_distribution as plds

    block = {"noise_multiplier": 1.0, "batch_size": 500, "dataset_size": 50_000, "steps": 1000,
             "sampling": "truncated-poisson", "truncated_batch_size": cap}
    spec = {"privspec": 1, "title": "t", "unit": "one example", "neighbouring": "zero-out",
            "mechanism": {"dpsgd": block}}
    ours = privspec.evaluate(spec)
    accountant = pld_privacy_accountant.PLDAccountant(plds.NeighborRel.REPLACE_SPECIAL, 1e-4)
    accountant.compose(dp_accounting.TruncatedSubsampledGaussianDpEvent(50_000, 0.01, cap, 1.0),
                       1000)
    theirs = accountant.get_epsilon(1e-5)
    assert ours.epsilons[0].epsilon is not None
    assert theirs * (1 - 1e-9) <= ours.epsilons[0].epsilon <= theirs * 1.001
    assert "cut to at most" in ours.mechanism.summary
    poisson = privspec.evaluate({**spec, "mechanism": {"dpsgd": {
        **block, "sampling": "poisson", "truncated_batch_size": None}}})
    assert poisson.gdp.mu is not None and ours.gdp.mu is not None
    assert ours.gdp.mu >= poisson.gdp.mu  # truncation never helps


@pytest.mark.parametrize(("relation", "fields", "says"), [
    ("add-or-remove", {"truncated_batch_size": 600}, "zero-out"),
    ("zero-out", {}, "needs truncated_batch_size"),
])
def test_truncated_poisson_needs_zero_out_and_its_cap(relation: str, fields: dict[str, object],
                                                      says: str) -> None:
    with pytest.raises(SpecError, match=says):
        privspec.evaluate(_spec("truncated-poisson", relation, **fields))


def test_fixed_size_needs_replace_one_and_sizes() -> None:
    with pytest.raises(SpecError, match="replace-one"):
        privspec.evaluate(_spec("fixed-size"))
    report = privspec.evaluate(_spec("fixed-size", "replace-one"))
    assert report.gdp.mu is not None and report.gdp.mu < 2.0  # amplified below 2/z
    bad = _spec("shuffled")
    block = bad["mechanism"]["dpsgd"]  # type: ignore[index]
    del block["batch_size"], block["dataset_size"]
    block["sampling_rate"] = 0.001
    with pytest.raises(SpecError, match="not a rate"):
        privspec.evaluate(bad)


def test_a_shuffled_run_shorter_than_an_epoch_has_no_lower_bound_and_no_false_poisson_claim(
        ) -> None:
    """z = 10⁻⁹ under replace-one, 999 batches of 32 from 10⁹: the Poisson run's loss is far
    beyond double range (dp-accounting failed on its grid: "a bug"), so only its closed-form
    bound exists, which is no Poisson claim; and the attack needs a full epoch."""
    report = privspec.evaluate(_spec("shuffled", "replace-one", noise_multiplier=1e-9,
                                     batch_size=32, dataset_size=10**9, steps=999))
    (note,) = [w for w in report.warnings if w.code == "accounting/shuffled"]
    assert "poisson" not in note.values
    assert "proves no lower bound for this run" in note.message
    assert "Poisson accounting" not in note.message


def test_truncated_poisson_that_never_cuts_is_plain_poisson_in_closed_form_at_rate_one() -> None:
    """Batches of the whole dataset, cap above it: no batch is ever cut, so 10⁷ full-batch
    steps are a Gaussian composition, μ = √T/z exactly (it was a 'too costly' bound with
    sensitivity 2)."""
    block = {"noise_multiplier": 3.0, "batch_size": 50_000, "dataset_size": 50_000,
             "steps": 10**7, "sampling": "truncated-poisson", "truncated_batch_size": 500_005}
    report = privspec.evaluate({"privspec": 1, "title": "t", "unit": "one example",
                                "neighbouring": "zero-out", "mechanism": {"dpsgd": block}})
    assert not report.gdp.bound
    assert report.gdp.mu == pytest.approx(math.sqrt(10**7) / 3.0, rel=1e-12)
