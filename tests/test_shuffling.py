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


def test_balls_in_bins_is_refused_naming_random_allocation() -> None:
    with pytest.raises(SpecError, match="written 'random-allocation'"):
        privspec.evaluate(_spec("balls-in-bins"))


@pytest.mark.parametrize("relation", ["add-or-remove", "zero-out"])
def test_random_allocation_lies_between_an_attack_and_no_amplification(relation: str) -> None:
    """N = 1,050, expected batch 100: ⌊N/B⌋ = 10 steps an epoch, 25 steps reach 3 epochs.
    Each example is in exactly one step of each epoch, so the reported μ is at most the
    no-amplification bound √3/z; and it is at least what summing each epoch's 10 outputs
    proves (the example's clipped gradient once in noise of variance 10z²: √(3/10)/z).
    Random allocation is near Poisson sampling at rate 1/10 (Feldman & Shenfeld 2025)."""
    z, epochs, per_epoch = 2.0, 3, 10
    fields = {"noise_multiplier": z, "batch_size": 100, "dataset_size": 1050, "steps": 25}
    report = privspec.evaluate(_spec("random-allocation", relation, **fields))
    assert report.gdp.mu is not None
    assert report.gdp.mu <= math.sqrt(epochs) / z * (1 + 1e-12)
    assert report.gdp.mu >= math.sqrt(epochs / per_epoch) / z
    poisson = privspec.evaluate(_spec("poisson", "add-or-remove", **fields))
    assert poisson.gdp.mu is not None
    assert 0.8 * poisson.gdp.mu <= report.gdp.mu <= 1.25 * poisson.gdp.mu
    assert "random allocation" in report.mechanism.summary


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


def _pytorch_run(**fields: object) -> dict[str, object]:
    """Issue 28's run: a DataLoader(shuffle=True) of 120,000 examples in batches of 512."""
    return _spec("shuffled", "replace-one", noise_multiplier=0.8, batch_size=512,
                 dataset_size=120_000, **{"steps": None, "epochs": 3, **fields})


def _without_none(data: dict[str, object]) -> dict[str, object]:
    block = data["mechanism"]["dpsgd"]  # type: ignore[index]
    data["mechanism"] = {"dpsgd": {k: v for k, v in block.items() if v is not None}}
    return data


@pytest.mark.parametrize(("partial", "steps", "per_epoch", "every"), [
    ({"partial_batch": "kept"}, 705, 235, "exactly 3"),  # drop_last=False, PyTorch's default
    ({"partial_batch": "dropped"}, 702, 234, "at most 3"),  # drop_last=True
    ({}, 702, 234, "at most 3"),  # unstated: dropped, as specs meant before
])
def test_shuffled_epochs_count_the_batches_as_they_were_drawn(
        partial: dict[str, object], steps: int, per_epoch: int, every: str) -> None:
    """3 epochs are 3 batches per example, either way (2·√3/0.8 = 4.33 under replace-one),
    and the words say the count: 704 steps and "at most 4 of them" (μ = 5) contradicted
    the 3 epochs."""
    report = privspec.evaluate(_without_none(_pytorch_run(**partial)))
    assert report.gdp.mu == pytest.approx(2 * math.sqrt(3) / 0.8, rel=1e-12)
    words = report.mechanism.summary
    assert f"DP-SGD: {steps} steps (3 epochs)" in words
    assert f"{per_epoch} an epoch" in words and f"each example in {every} of them" in words
    (note,) = [w for w in report.warnings if w.code == "accounting/shuffled"]
    poisson = privspec.evaluate(_spec("poisson", "replace-one", noise_multiplier=0.8,
                                      batch_size=512, dataset_size=120_000, steps=steps))
    assert note.values["poisson"] == poisson.gdp.mu  # the Poisson claim for the same steps


@pytest.mark.parametrize(("partial", "participations"), [("kept", 2), ("dropped", 4)])
def test_shuffled_steps_reach_as_many_epochs_as_the_batches_of_one_allow(
        partial: str, participations: int) -> None:
    """N = 199, B = 100, 4 steps: two batches an epoch with the partial one kept (two
    epochs), one without it (four)."""
    report = privspec.evaluate(_spec("shuffled", batch_size=100, dataset_size=199, steps=4,
                                     partial_batch=partial))
    assert report.gdp.mu == pytest.approx(math.sqrt(participations), rel=1e-12)
    assert f"in {'exactly' if partial == 'kept' else 'at most'} {participations} of them" in (
        report.mechanism.summary)


def test_a_partial_batch_is_only_for_shuffled_batches() -> None:
    with pytest.raises(SpecError, match="only 'shuffled' batches"):
        privspec.evaluate(_spec("poisson", "add-or-remove", partial_batch="kept"))


def test_calibrating_the_pytorch_run_asks_for_the_noise_three_batches_need() -> None:
    """μ = 1 over 3 batches under replace-one: z = 2√3 = 3.4641 (4.0 when counted as 4)."""
    found = privspec.calibrate(_without_none(_pytorch_run(partial_batch="kept")),
                               vary="noise_multiplier", targets=["mu=1"])
    assert found.value == pytest.approx(3.465)


def test_spec_from_dpsgd_states_the_partial_batch() -> None:
    spec = privspec.spec_from_dpsgd(noise_multiplier=0.8, batch_size=512, dataset_size=120_000,
                                    epochs=3, sampling="shuffled", partial_batch="kept",
                                    neighbouring="replace-one", title="t")
    assert spec.mechanism.block.times() == 705
    assert "partial_batch: kept" in privspec.spec_to_yaml(spec)


def test_kept_partial_batches_are_within_the_gaussian_composition() -> None:
    """Soundness, computed outright: N = 3, B = 2, one epoch of a batch of 2 and a partial
    batch of 1; the other examples' gradients 0, the replaced one +1 or −1 (two norms),
    noise z = 2.  The two outputs' exact δ(ε) (a mixture over where the example falls) is
    within the report's ε(10⁻⁵), which counts one batch of sensitivity 2."""
    import numpy as np
    from scipy.stats import norm

    report = privspec.evaluate(_spec("shuffled", "replace-one", noise_multiplier=2.0,
                                     batch_size=2, dataset_size=3, steps=2,
                                     partial_batch="kept"))
    assert report.gdp.mu == pytest.approx(1.0, rel=1e-12)
    epsilon = report.epsilons[0].epsilon
    assert report.epsilons[0].delta == 1e-5 and epsilon is not None
    x = np.linspace(-16, 16, 3201)
    a, b = np.meshgrid(x, x, indexing="ij")  # the two batch sums, in clipping norms

    def density(g: float) -> np.ndarray:
        return (2 / 3 * norm.pdf(a, g, 2) * norm.pdf(b, 0, 2)
                + 1 / 3 * norm.pdf(a, 0, 2) * norm.pdf(b, g, 2))

    step = (x[1] - x[0]) ** 2
    delta = float(np.sum(np.maximum(density(1) - math.exp(epsilon) * density(-1), 0)) * step)
    assert delta <= 1e-5


@pytest.mark.parametrize("stated", [{}, {"partial_batch": "dropped"}])
def test_a_dropped_partial_batch_weakens_the_attack_and_its_lower_bound(
        stated: dict[str, str]) -> None:
    """N = 199, B = 100, partial batch dropped: the example is in an epoch's batch with
    probability 100/199 only, so the attack's TPR is a mixture; the lower bound is what
    that attack, computed directly, achieves, not what it would if the example were
    always in a batch."""
    import numpy as np
    from scipy.special import ndtri

    z, epochs, q = 1.0, 20, 100 / 199
    report = privspec.evaluate(_spec("shuffled", batch_size=100, dataset_size=199,
                                     steps=epochs, noise_multiplier=z, **stated))
    (note,) = [w for w in report.warnings if w.code == "accounting/shuffled"]
    t = np.linspace(-4.0, 40.0, 44_001)
    alpha = 1 - ndtr(t) ** epochs
    tpr = 1 - (q * ndtr(t - 1 / z) + (1 - q) * ndtr(t)) ** epochs
    usable = (tpr > 1e-300) & (tpr < 1) & (alpha > 0) & (alpha < 1)
    achieved = float(np.max(ndtri(tpr[usable]) - ndtri(alpha[usable])))
    assert note.values["exact"] <= achieved
    assert note.values["exact"] >= 0.99 * achieved


def test_a_unit_of_several_records_compares_one_records_poisson_claim() -> None:
    """A unit of 4 records: μ = 4 without amplification (the main figures as ever), and
    the Poisson comparison is one record's, beside this accounting's μ for one record,
    and says so (the unit's own, a mixture of Gaussians, took 30 to 60 s)."""
    report = privspec.evaluate({**_spec("shuffled"), "records_per_unit": 4})
    assert report.gdp.mu == pytest.approx(4.0, rel=1e-12)
    (note,) = [w for w in report.warnings if w.code == "accounting/shuffled"]
    poisson = privspec.evaluate(_spec("poisson", "add-or-remove"))
    assert note.values["poisson"] == poisson.gdp.mu
    assert note.values["single"] == pytest.approx(1.0, rel=1e-12)
    assert note.values["records"] == 4
    assert "For one of the unit's records, Poisson accounting" in note.message
    assert "unit of 4 records" in note.message
