"""Very strong and very weak guarantees: tiny β must keep its digits (docs/math.md §2)."""

from __future__ import annotations

import math

import pytest
from scipy.stats import norm

import privspec
from privspec.numerics.gdp import gaussian_delta


def gaussian(sigma: float) -> dict[str, object]:
    return {"privspec": 1, "title": "one Gaussian", "unit": "one record",
            "neighbouring": "add-or-remove", "mechanism": {"gaussian": {"sigma": sigma}}}


@pytest.mark.parametrize("sigma", [0.2, 0.1])
def test_large_mu_gaussian_keeps_its_tail(sigma: float) -> None:
    # μ = 1/σ = 10: α* = Φ(−μ/2) ≈ 2.9e-7, where 1 − TPR rounds to nothing unless β is
    # kept as head − excess.  A curve that lost it would put α* in the wrong decade and
    # could even declare "no finite μ".
    report = privspec.evaluate(gaussian(sigma))
    assert report.gdp.mu == pytest.approx(1 / sigma, rel=1e-9)
    assert report.gdp.alpha_star == pytest.approx(norm.cdf(-0.5 / sigma), rel=1e-3)
    assert report.gdp.tier == 1


def _numerical(mechanism: dict[str, object], **accounting: float) -> dict[str, object]:
    spec: dict[str, object] = {"privspec": 1, "title": "t", "unit": "one record",
                               "neighbouring": "add-or-remove", "mechanism": mechanism}
    if accounting:
        spec["accounting"] = accounting
    return spec


#: A release too weak to matter, which keeps a Gaussian off the closed form.
NEGLIGIBLE = {"laplace": {"scale": 1e6}}


def test_excess_mass_is_pessimistic_and_said() -> None:
    # A PMF of μ = 20 holding 10⁻⁷ more than 1 (as a pessimistic discretization may):
    # that extra mass dwarfs α* ≈ 7.6e-24, so the curve is looser than the mechanism
    # there. μ must stay on the safe side, and the report must say why it is loose.
    import dataclasses

    from privspec.numerics import cost
    from privspec.numerics.accounting import Accounted
    from privspec.numerics.curve import curve_from_pmfs, pmfs_from_pld
    from privspec.numerics.portable_pld import gaussian_pld
    from privspec.report import assembly
    from privspec.spec.models import Spec

    with cost.budget(8 * 2**30):
        (pmf,) = pmfs_from_pld(gaussian_pld(0.05, discretization=1e-4))
    heavy = dataclasses.replace(pmf, probs=pmf.probs * (1 + 1e-7))
    curve = curve_from_pmfs((heavy,))
    spec = Spec.model_validate(gaussian(0.05))
    figures = assembly._figures(curve, spec)
    assert figures.mu is not None and figures.mu >= 20
    accounted = Accounted((heavy,), (), truncation=0.0)
    tradeoff = assembly._tradeoff_rows(curve, spec.report.alphas, figures.mu)
    codes = {w.code for w in assembly._caveats(curve, spec, figures, accounted, tradeoff)}
    assert "accounting/excess-mass" in codes


def test_coarse_discretization_is_said_and_a_finer_one_tightens_mu() -> None:
    # Laplace with ε = 10⁻⁵ has μ ≈ 1.25 × 10⁻⁵, a tenth of the default h = 10⁻⁴:
    # rounding losses up to multiples of h inflates μ several-fold (safe, but the report
    # must say so and say what helps).
    # (One ε-DP release, or many equal ones, is accounted exactly; releases with two ε
    # and a δ below the floor keep this one numerical.)
    coarse = privspec.evaluate(_numerical({"compose": [
        {"mechanism": {"approximate_dp": {"epsilon": 1e-5, "delta": 1e-14}}},
        {"mechanism": {"approximate_dp": {"epsilon": 2e-5, "delta": 1e-14}}}]}))
    assert coarse.gdp.mu is not None and coarse.gdp.mu >= 1.25e-5
    assert "accounting/coarse-discretization" in {w.code for w in coarse.warnings}
    fine = privspec.evaluate(_numerical({"laplace": {"epsilon": 1e-4}}, discretization=1e-6))
    # small ε: μ ≈ ε·√(π/2) (pure DP's 2Φ⁻¹(e^ε/(1 + e^ε)), which Laplace meets here)
    assert fine.gdp.mu == pytest.approx(1e-4 * math.sqrt(math.pi / 2), rel=2e-2)
    assert "accounting/coarse-discretization" not in {w.code for w in fine.warnings}


@pytest.mark.parametrize(("mechanism", "mu"), [
    ({"gaussian": {"sigma": 1e-6}}, 1e6),
    ({"gaussian": {"sigma": 1e-3, "sensitivity": 2}}, 2e3),
    ({"dpsgd": {"noise_multiplier": 1, "sampling_rate": 1.0, "steps": 10**7}}, math.sqrt(1e7)),
    ({"compose": [{"repeat": 10**7, "mechanism": {"gaussian": {"sigma": 1 + i / 1000}}}
                  for i in range(1000)]},
     math.sqrt(sum(1e7 / (1 + i / 1000) ** 2 for i in range(1000)))),
])
def test_plain_gaussians_are_reported_in_closed_form(mechanism: dict[str, object],
                                                     mu: float) -> None:
    """Issue 19: μ² of plain Gaussian releases adds exactly, so any size is a true report
    in closed form (these asked for 71 PiB, 750 GiB and 1.2 TiB): G_μ itself, regret 0."""
    report = privspec.evaluate(_numerical(mechanism))
    assert report.gdp.mu == pytest.approx(mu, rel=1e-12) and report.gdp.tier == 1
    assert report.gdp.regret == 0 and report.accounting.method.startswith("closed form")
    assert not report.warnings
    epsilon = report.epsilons[0].epsilon
    assert epsilon is not None and gaussian_delta(epsilon, mu) <= report.epsilons[0].delta


def test_dpsgd_on_the_whole_dataset_is_exactly_gaussian() -> None:
    # Sampling rate 1: every step is a plain Gaussian release, μ = √T / z exactly (the
    # exact μ² algebra, not T discretized self-compositions, which read 12.5 here).
    report = privspec.evaluate({**gaussian(1.0), "mechanism": {"dpsgd": {
        "noise_multiplier": 2.0, "sampling_rate": 1.0, "steps": 400}}})
    assert report.gdp.mu is not None and 10.0 <= report.gdp.mu <= 10.0 * (1 + 1e-9)


def test_tail_truncation_counts_repeated_stages_at_every_depth() -> None:
    from privspec.numerics.accounting import tail_mass_truncation
    from privspec.spec.models import Spec

    spec = Spec.model_validate({**gaussian(1.0), "accounting": {"floor": 1e-14}, "mechanism": {
        "compose": [{"mechanism": {"compose": [
            {"repeat": 2, "mechanism": {"gaussian": {"sigma": 1.0}}},
            {"repeat": 3, "mechanism": {"laplace": {"scale": 1.0}}}]}}]}})
    # 2 + four nodes + two repeated stages (each one more truncating self-composition)
    assert tail_mass_truncation(spec) == 1e-14 / (10 * 8)


def _with_floor(mechanism: dict[str, object], floor: float) -> dict[str, object]:
    return {"privspec": 1, "title": "floor", "unit": "one record",
            "neighbouring": "add-or-remove", "mechanism": mechanism,
            "accounting": {"floor": floor}}


DPSGD_SHORT = {"dpsgd": {"noise_multiplier": 1.1, "sampling_rate": 0.004, "steps": 2000}}


def test_smaller_floors_are_met_and_cost_a_larger_mu() -> None:
    """Issue 12, item 4: a floor far below 10⁻¹² is met (each Gaussian release cuts its
    tails to a millionth of the composition's budget), and μ grows as τ shrinks."""
    mus = []
    for floor in (1e-9, 1e-12, 1e-20, 1e-30, 1e-60):
        report = privspec.evaluate(_with_floor(DPSGD_SHORT, floor))
        assert report.accounting.floor == floor and report.accounting.requested_floor is None
        assert report.gdp.mu is not None, floor
        assert report.gdp.mass_at_infinity <= floor
        mus.append(report.gdp.mu)
    assert mus == sorted(mus) and mus[0] < mus[-1]


def test_a_floor_the_accounting_cannot_meet_is_raised_and_said() -> None:
    """dp-accounting cuts a discrete Gaussian's noise at 11.6σ, leaving ~10⁻³⁰ at +∞: a
    floor of 10⁻⁴⁰ cannot be met, so μ is stated at the smallest power of ten that can."""
    report = privspec.evaluate(_with_floor(
        {"repeat": {"count": 5, "mechanism": {"discrete_gaussian": {"sigma": 3, "sensitivity": 1}}}},
        1e-40))
    assert report.accounting.requested_floor == 1e-40
    assert 1e-40 < report.accounting.floor <= 1e-20
    assert report.gdp.mu is not None
    assert "accounting/floor-raised" in {w.code for w in report.warnings}
    # At the raised floor, asked for directly, the same μ and no caveat.
    direct = privspec.evaluate(_with_floor(
        {"repeat": {"count": 5, "mechanism": {"discrete_gaussian": {"sigma": 3, "sensitivity": 1}}}},
        report.accounting.floor))
    assert direct.accounting.requested_floor is None
    assert "accounting/floor-raised" not in {w.code for w in direct.warnings}


def test_a_genuine_delta_is_never_hidden_by_raising_the_floor() -> None:
    """An (ε, δ) release with δ > τ has no finite μ (Gomez et al. 2025, Prop. 6.2): the floor is
    not raised to swallow δ."""
    report = privspec.evaluate(_with_floor({"approximate_dp": {"epsilon": 1.0, "delta": 1e-6}},
                                           1e-12))
    assert report.gdp.mu is None and report.accounting.requested_floor is None


def test_a_million_dpsgd_steps_stay_tight() -> None:
    """10⁶ steps of z = 1.1, q = 0.004: connect-the-dots' excess mass (rounding below
    the bulk, clipped at 0) once made the curve 1.3 % heavier and μ 9.29; the CLT
    approximation of Dong, Roth & Su (Thm 3.4), μ ≈ q·√(T(e^{1/z²} − 1)) = 4.53, is
    what a tight accounting approaches at this length."""
    steps, z, q = 10**6, 1.1, 0.004
    report = privspec.evaluate(_with_floor(
        {"dpsgd": {"noise_multiplier": z, "sampling_rate": q, "steps": steps}}, 1e-12))
    clt = q * math.sqrt(steps * math.expm1(1 / z**2))
    assert report.gdp.mu is not None and 0.98 * clt <= report.gdp.mu <= 1.02 * clt
    assert "accounting/excess-mass" not in {w.code for w in report.warnings}


@pytest.mark.parametrize(("mechanism", "relation", "says"), [
    ({"approximate_dp": {"epsilon": 1000, "delta": 1e-6}}, "add-or-remove", "privacy loss of 1000"),
    ({"compose": [{"mechanism": {"discrete_gaussian": {"sigma": 0.01}}},
                  {"mechanism": {"pure_dp": {"epsilon": 1}}}]}, "add-or-remove",
     "privacy loss of 5000"),
])
def test_releases_beyond_range_are_refused_in_words(mechanism: dict[str, object], relation: str,
                                                    says: str) -> None:
    """No raw Python message ("Unable to allocate 71.1 PiB", "math range error", "index 0
    is out of bounds") and no gigabytes: a refusal that says why and what helps."""
    from privspec.errors import EvaluationError

    spec = {"privspec": 1, "title": "t", "unit": "one record", "neighbouring": relation,
            "mechanism": mechanism}
    with pytest.raises(EvaluationError) as refused:
        privspec.evaluate(spec)
    assert says in str(refused.value)
    assert "more noise (or a smaller ε)" in str(refused.value)


@pytest.mark.parametrize(("mechanism", "relation", "epsilon"), [
    ({"laplace": {"epsilon": 1000}}, "add-or-remove", 1000.0),
    ({"pure_dp": {"epsilon": 10_000}}, "add-or-remove", 10_000.0),
    ({"randomized_response": {"epsilon": 1000}}, "replace-one", 1000.0),
])
def test_epsilon_dp_beyond_double_precision_is_reported_in_closed_form(
        mechanism: dict[str, object], relation: str, epsilon: float) -> None:
    """ε from 700 up gave "math range error", then a refusal; the closed form of ε-DP,
    μ = 2Φ⁻¹(e^ε/(1 + e^ε)) in log space, holds at any ε."""
    from privspec.numerics.bounds import mu_of_pure_epsilon

    report = privspec.evaluate({"privspec": 1, "title": "t", "unit": "one record",
                                "neighbouring": relation, "mechanism": mechanism})
    assert report.gdp.bound and report.gdp.mu == mu_of_pure_epsilon(epsilon)
    assert report.warnings[0].code == "accounting/beyond-range"
    assert all(row.epsilon is not None and row.epsilon <= epsilon * (1 + 1e-12)
               for row in report.epsilons)


def test_a_repeated_release_within_a_few_grid_steps_is_said_to_be_loose() -> None:
    """10⁷ runs of ε = 10⁻⁶ read μ = 0.0317 at h = 10⁻⁴ (exactly about 0.004): safe but
    several times too large, which μ against h alone does not show; a finer h tightens it
    and the caveat goes."""
    def repeated(epsilon: float, count: int, **accounting: float) -> dict[str, object]:
        # A δ far below the floor keeps it off the closed-form bound of ε-DP releases,
        # and a second ε off their exact composition.
        return _numerical({"compose": [
            {"repeat": count, "mechanism": {"approximate_dp": {
                "epsilon": epsilon, "delta": 1e-30}}},
            {"mechanism": {"approximate_dp": {"epsilon": epsilon / 2, "delta": 1e-30}}}]},
            **accounting)

    coarse = privspec.evaluate(repeated(1e-6, 10**7))
    assert "accounting/coarse-release" in {w.code for w in coarse.warnings}
    fine = privspec.evaluate(repeated(1e-3, 1000, discretization=1e-5))
    assert "accounting/coarse-release" not in {w.code for w in fine.warnings}
    assert fine.gdp.mu is not None and coarse.gdp.mu is not None


def test_a_sampled_gaussian_too_weak_to_matter_is_reported_not_a_bug() -> None:
    """σ/Δ = 10²⁸⁸ overflowed σ² in the sampled Gaussian's PLD; its sampling is ignored
    (pessimistic); μ = Δ/σ, whose square is below double range, is rounded up, not to 0."""
    report = privspec.evaluate(_numerical({"poisson_sampled": {
        "sampling_rate": 1e-12, "mechanism": {"gaussian": {"sigma": 1e-12,
                                                           "sensitivity": 1e-300}}}}))
    assert report.gdp.mu is not None and 1e-288 <= report.gdp.mu < 1e-150  # never below


@pytest.mark.parametrize("rate", [1e-16, 5e-16, 1e-17, 1e-300])
def test_sampling_rates_below_what_the_library_resolves_are_accounted_as_1e_minus_12(
        rate: float) -> None:
    """q ≤ 10⁻¹⁶ made dp-accounting's 1 − 1/q a domain error (and calibrate went round
    in circles on it); a larger rate only weakens the guarantee, so 10⁻¹² is accounted."""
    def mu(q: float, kind: str) -> float | None:
        mechanism = ({"poisson_sampled": {"sampling_rate": q,
                                          "mechanism": {"gaussian": {"sigma": 1}}}}
                     if kind == "sampled" else
                     {"dpsgd": {"noise_multiplier": 1, "sampling_rate": q, "steps": 100}})
        return privspec.evaluate({"privspec": 1, "title": "t", "unit": "one record",
                                  "neighbouring": "add-or-remove",
                                  "mechanism": mechanism}).gdp.mu

    for kind in ("sampled", "dpsgd"):
        assert mu(rate, kind) == mu(1e-12, kind)
    said = privspec.evaluate({"privspec": 1, "title": "t", "unit": "one record",
                              "neighbouring": "add-or-remove", "mechanism": {"dpsgd": {
                                  "noise_multiplier": 1, "sampling_rate": rate,
                                  "steps": 100}}}).warnings
    assert "accounting/rate-raised" in {w.code for w in said}


def test_a_releases_own_delta_within_the_floor_keeps_mu_but_is_tier_ii() -> None:
    """δ = 10⁻¹³ < τ: μ holds up to the floor, but an outright leak is no Gaussian's
    (Gomez et al. 2025, Prop. 6.2), so μ alone is not the story (docs/math.md §2)."""
    report = privspec.evaluate({"privspec": 1, "title": "t", "unit": "one record",
                                "neighbouring": "add-or-remove", "mechanism": {"compose": [
                                    {"mechanism": {"gaussian": {"sigma": 1}}},
                                    {"mechanism": {"approximate_dp": {
                                        "epsilon": 0.01, "delta": 1e-13}}}]}})
    assert report.gdp.mu is not None and report.gdp.mu >= 1
    assert report.gdp.regret is not None and report.gdp.regret <= 0.01
    assert report.gdp.tier == 2
    codes = [w.code for w in report.warnings]
    assert "report/delta-within-floor" in codes and "report/gdp-poor-fit" not in codes
