"""Closed-form oracles (docs/math.md §1, §6, §7): μ, curves and regret where the answer is known.

Every case builds a spec, evaluates it end to end (``privspec.evaluate``) and compares the
report with a formula that does not go through dp-accounting.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from example_reports import example_report
from scipy.special import ndtri

import privspec
from privspec.numerics.accounting import pmfs_from_spec
from privspec.numerics.curve import curve_from_pmfs
from privspec.spec.models import Spec

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def make_spec(mechanism: dict[str, Any], relation: str = "add-or-remove",
              **accounting: float) -> Spec:
    data: dict[str, Any] = {
        "privspec": 1, "title": "oracle", "unit": "one record",
        "neighbouring": relation, "mechanism": mechanism,
    }
    if accounting:
        data["accounting"] = accounting
    return Spec.model_validate(data)


def pure_dp_mu(epsilon: float) -> float:
    """μ of randomized response / pure ε-DP: 2Φ⁻¹(e^ε/(1 + e^ε)) (docs/math.md §6, Prop 6.1)."""
    return float(2 * ndtri(math.exp(epsilon) / (1 + math.exp(epsilon))))


def pure_dp_mu_at_floor(epsilon: float, floor: float = 1e-12) -> float:
    """The tightest μ with f ≥ G_μ − τ for pure ε-DP: decided at the kink α* = 1/(1 + e^ε),
    −Φ⁻¹(α*) − Φ⁻¹(α* + τ) (a vertex; the curve is linear between)."""
    star = 1 / (1 + math.exp(epsilon))
    return float(-ndtri(star) - ndtri(star + floor))


def pure_dp_curve(alpha: np.ndarray, epsilon: float) -> np.ndarray:
    """max{0, 1 − e^ε α, e^{−ε}(1 − α)}."""
    return np.maximum.reduce([np.zeros_like(alpha), 1 - math.exp(epsilon) * alpha,
                              math.exp(-epsilon) * (1 - alpha)])


def laplace_curve(alpha: np.ndarray, epsilon: float) -> np.ndarray:
    """Laplace, sensitivity 1, ε = 1/b (docs/math.md §6)."""
    low = math.exp(-epsilon) / 2
    out = np.where(alpha < low, 1 - math.exp(epsilon) * alpha,
                   math.exp(-epsilon) / (4 * np.maximum(alpha, 1e-300)))
    return np.where(alpha > 0.5, math.exp(-epsilon) * (1 - alpha), out)


ALPHAS = np.unique(np.concatenate((np.logspace(-12, -1, 56), np.linspace(0.0, 1.0, 201))))


# -- Gaussian: μ = Δ/σ, composition √Σμᵢ² (docs/math.md §1) ----------------------------------


@pytest.mark.parametrize("sigma", [0.5, 1.0, 2.0, 5.0])
def test_one_gaussian_is_one_over_sigma(sigma: float) -> None:
    report = privspec.evaluate(make_spec({"gaussian": {"sigma": sigma}}))
    assert report.gdp.mu == pytest.approx(1 / sigma, rel=1e-6)
    assert report.gdp.mu >= 1 / sigma * (1 - 1e-12)  # never optimistic
    assert report.gdp.regret is not None and report.gdp.regret < 1e-6
    assert report.gdp.tier == 1


@pytest.mark.parametrize("sigma", [0.5, 3.0, 7e14, 1e12])
def test_a_gaussians_advantage_is_erf_even_where_one_minus_two_phi_cancels(sigma: float) -> None:
    """η = 2Φ(μ/2) − 1 = erf(μ/(2√2)): at μ = 1.4 × 10⁻¹⁵, 1 − 2Φ(−μ/2) read 2.6 % low."""
    mu = 1 / sigma
    exact = math.erf(mu / (2 * math.sqrt(2)))
    advantage = privspec.evaluate(make_spec({"gaussian": {"sigma": sigma}})).gdp.advantage
    assert advantage == pytest.approx(exact, rel=1e-12)


@pytest.mark.parametrize(("sensitivity", "sigma"), [(3.0, 2.0), (0.5, 1.0), (2.0, 4.0)])
def test_gaussian_sensitivity_over_sigma(sensitivity: float, sigma: float) -> None:
    report = privspec.evaluate(make_spec({"gaussian": {"sigma": sigma,
                                                       "sensitivity": sensitivity}},
                                         discretization=1e-3))
    assert report.gdp.mu == pytest.approx(sensitivity / sigma, rel=1e-5)


@pytest.mark.parametrize(("k", "sigma"), [(5, 3.0), (100, 10.0)])
def test_k_gaussians_compose_to_root_k_over_sigma(k: int, sigma: float) -> None:
    repeated = make_spec({"repeat": {"count": k, "mechanism": {"gaussian": {"sigma": sigma}}}})
    staged = make_spec({"compose": [{"repeat": k, "mechanism": {"gaussian": {"sigma": sigma}}}]})
    for spec in (repeated, staged):
        assert privspec.evaluate(spec).gdp.mu == pytest.approx(math.sqrt(k) / sigma, rel=1e-6)


def test_heterogeneous_gaussians_compose_exactly() -> None:
    sigmas = [1.0, 2.0, 3.0, 7.5]
    spec = make_spec({"compose": [{"mechanism": {"gaussian": {"sigma": s}}} for s in sigmas]})
    expected = math.sqrt(sum(1 / s**2 for s in sigmas))
    assert privspec.evaluate(spec).gdp.mu == pytest.approx(expected, rel=1e-6)


def test_gaussian_through_the_pld_path_composes_with_merged_gaussians() -> None:
    # A rate-1 Poisson-sampled Gaussian is lowered to a PLD, not merged algebraically:
    # the composition of the PLD with the exact Gaussian part must still be √(1 + 1/4).
    spec = make_spec({"compose": [
        {"mechanism": {"gaussian": {"sigma": 1.0}}},
        {"mechanism": {"poisson_sampled": {"sampling_rate": 1.0, "mechanism": {
            "gaussian": {"noise_multiplier": 2.0}}}}},
    ]})
    assert privspec.evaluate(spec).gdp.mu == pytest.approx(math.sqrt(1.25), rel=1e-5)


@pytest.mark.parametrize("z", [1.0, 2.0, 8.0])
@pytest.mark.parametrize("form", ["gaussian", "poisson_rate_one", "dpsgd_rate_one"])
def test_noise_multiplier_under_replace_one_is_two_over_z(z: float, form: str) -> None:
    mechanism: dict[str, Any] = {
        "gaussian": {"gaussian": {"noise_multiplier": z}},
        "poisson_rate_one": {"poisson_sampled": {"sampling_rate": 1.0, "mechanism": {
            "gaussian": {"noise_multiplier": z}}}},
        "dpsgd_rate_one": {"dpsgd": {"noise_multiplier": z, "sampling_rate": 1.0,
                                     "steps": 1}},
    }[form]
    replace = privspec.evaluate(make_spec(mechanism, "replace-one", discretization=1e-3))
    add_remove = privspec.evaluate(make_spec(mechanism, "add-or-remove", discretization=1e-3))
    assert replace.gdp.mu == pytest.approx(2 / z, rel=1e-5)
    assert add_remove.gdp.mu == pytest.approx(1 / z, rel=1e-5)


# -- Pure ε-DP and randomized response (docs/math.md §6) ----------------------------------------


def test_pure_dp_reference_value() -> None:
    assert pure_dp_mu(1.0) == pytest.approx(1.2320, abs=5e-5)


PURE_CASES = [
    ("pure_dp", 0.5), ("pure_dp", 1.0), ("pure_dp", 2.0),
    ("randomized_response", 1.0), ("randomized_response", 3.0),
    ("discrete_laplace", 1.0),  # sensitivity 1: losses ±ε only, exactly randomized response
]


@pytest.mark.parametrize(("kind", "epsilon"), PURE_CASES)
def test_pure_dp_mu_curve_and_regret(kind: str, epsilon: float) -> None:
    relation = "replace-one" if kind == "randomized_response" else "add-or-remove"
    spec = make_spec({kind: {"epsilon": epsilon}}, relation)
    report = privspec.evaluate(spec)
    assert report.gdp.mu == pytest.approx(pure_dp_mu(epsilon), abs=1e-9)
    assert report.pure_epsilon == pytest.approx(epsilon, abs=1e-9)
    curve = curve_from_pmfs(pmfs_from_spec(spec))
    np.testing.assert_allclose(curve.beta_at(ALPHAS), pure_dp_curve(ALPHAS, epsilon),
                               rtol=0, atol=1e-12)
    # The curve has the three-segment shape: (0,1), corner, (1,0).
    assert curve.alpha_star == pytest.approx(1 / (1 + math.exp(epsilon)), abs=1e-12)
    assert report.gdp.regret is not None and report.gdp.regret > 0.02
    assert report.gdp.tier == 2


def test_randomized_response_epsilon_one_regret_value() -> None:
    report = privspec.evaluate(make_spec({"randomized_response": {"epsilon": 1.0}},
                                         "replace-one"))
    assert report.gdp.mu == pytest.approx(1.2320, abs=1e-4)
    # Independent brute force (tests/test_regret.py) gives 0.057546 for this curve.
    assert report.gdp.regret == pytest.approx(0.057546, abs=2e-6)


def test_randomized_response_flip_probability_example() -> None:
    report = example_report("randomized-response-survey")
    # flip 1/4 of 2 answers: ε = ln 3, between two grid points (h = 1e-4): connect-the-dots
    # keeps the curve at or below the exact one, so μ at τ is at least the exact μ at τ.
    assert report.gdp.mu == pytest.approx(pure_dp_mu(math.log(3)), abs=2e-4)
    assert report.gdp.mu >= pure_dp_mu_at_floor(math.log(3))
    assert report.gdp.tier == 2


# -- Laplace (docs/math.md §6–7) ----------------------------------------------------------------


def test_laplace_b1_curve_mu_and_regret() -> None:
    spec = make_spec({"laplace": {"scale": 1.0}})
    report = privspec.evaluate(spec)
    assert report.gdp.mu == pytest.approx(1.0301, abs=1e-3)
    assert report.gdp.regret == pytest.approx(0.0370, abs=1e-3)
    assert report.gdp.tier == 2
    curve = curve_from_pmfs(pmfs_from_spec(spec))
    exact = laplace_curve(ALPHAS, 1.0)
    got = curve.beta_at(ALPHAS)
    # Pessimistic discretization: at most a hair below the exact curve, never above it.
    assert np.all(got <= exact + 1e-12)
    np.testing.assert_allclose(got, exact, rtol=0, atol=1e-4)


def test_laplace_via_epsilon_equals_via_scale() -> None:
    by_scale = privspec.evaluate(make_spec({"laplace": {"scale": 2.0, "sensitivity": 1}}))
    by_eps = privspec.evaluate(make_spec({"laplace": {"epsilon": 0.5, "sensitivity": 1}}))
    assert by_scale.gdp.mu == by_eps.gdp.mu


# -- (ε, δ) black box: no finite μ (docs/math.md §2, §6) ----------------------------------------


@pytest.mark.parametrize(("epsilon", "delta"), [(1.0, 1e-6), (8.0, 1e-5), (0.0, 1e-3)])
def test_approximate_dp_black_box_has_no_finite_mu(epsilon: float, delta: float) -> None:
    report = privspec.evaluate(make_spec({"approximate_dp": {"epsilon": epsilon,
                                                             "delta": delta}}))
    assert report.gdp.mu is None
    assert report.gdp.regret is None
    assert report.gdp.tier == 2
    assert report.gdp.mass_at_infinity == pytest.approx(delta, rel=1e-9)
    assert report.gdp.no_finite_mu_reason
    assert any(w.code == "report/no-finite-mu" for w in report.warnings)


def test_approximate_dp_example() -> None:
    report = example_report("approximate-dp-black-box")
    assert report.gdp.mu is None and report.gdp.tier == 2
    by_delta = {e.delta: e.epsilon for e in report.epsilons}
    assert by_delta[1e-5] == pytest.approx(8.0, abs=1e-3)


# -- Published DP-SGD run and the census example (docs/math.md §7) --------------------------------


def test_dpsgd_cifar10_reference_values() -> None:
    report = example_report("cifar10-dpsgd-eps8")
    assert report.accounting.discretization == 1e-4 and report.accounting.floor == 1e-12
    assert report.gdp.mu is not None and 1.567 <= report.gdp.mu <= 1.569
    assert report.gdp.regret is not None and 1.0e-3 <= report.gdp.regret <= 1.3e-3
    assert report.gdp.tier == 1
    by_delta = {e.delta: e.epsilon for e in report.epsilons}
    assert by_delta[1e-5] == pytest.approx(7.42, abs=0.01)


def test_census_discrete_gaussians_close_to_zcdp_budget() -> None:
    report = example_report("census-discrete-gaussian")
    rho_total = 4 * 0.05 + 20 * 0.02 + 100 * 0.005
    bound = math.sqrt(2 * rho_total)
    assert report.gdp.mu is not None
    assert bound <= report.gdp.mu <= bound * (1 + 1e-3)
    assert report.gdp.tier == 1


@pytest.mark.parametrize("sigma", [2.0, 10.0])
def test_one_discrete_gaussian_near_continuous(sigma: float) -> None:
    # Large σ: the discrete Gaussian behaves like the continuous one, μ ≈ 1/σ.
    report = privspec.evaluate(make_spec({"discrete_gaussian": {"sigma": sigma}}))
    assert report.gdp.mu == pytest.approx(1 / sigma, rel=2e-2)


@pytest.mark.parametrize("kind", ["pure_dp", "randomized_response"])
@pytest.mark.parametrize("epsilon", [1e-6, 3.7e-5, 0.012345, 0.7, 3.3])
def test_tiny_and_off_grid_epsilons_stay_close_to_the_exact_mu(kind: str, epsilon: float) -> None:
    """Issue 19: ε = 10⁻⁶ read μ = 3.14 (rounding the loss up to the grid left Q short,
    which the symmetrized curve read as a δ of 5 × 10⁻⁵). Never below the exact μ at τ,
    and within what the grid h = 10⁻⁴ costs."""
    relation = "replace-one" if kind == "randomized_response" else "add-or-remove"
    report = privspec.evaluate(make_spec({kind: {"epsilon": epsilon}}, relation))
    exact = pure_dp_mu_at_floor(epsilon)
    # (to rounding: on the grid the curve is the exact one, and Φ⁻¹ rounds either way)
    assert report.gdp.mu is not None
    assert exact * (1 - 1e-14) <= report.gdp.mu <= pure_dp_mu(epsilon + 1e-4)
    assert report.gdp.mass_at_infinity == 0
