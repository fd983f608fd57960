"""Every example reproduces the numbers its comment block promises, each checked by a
route independent of privspec's curve code (closed forms, exact fractions, docs/math.md §6–7)."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from example_reports import example_report
from scipy.stats import norm
from test_matrix_factorization import tree_matrix

from privspec.report.model import Report

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def evaluated(name: str) -> Report:
    return example_report(name.removesuffix(".privspec.yaml"))


def test_census_dhc_2020_is_sqrt_two_rho() -> None:
    # Total ρ from the Bureau's global scale 254/485, by exact fractions; the shares
    # (per mille) must spend all of it.
    shares = {"US": 20, "State": 274, "County": 85, "Prim": 131, "Tract_Subset_Group": 131,
              "Tract_Subset": 238, "Block_Group": 118, "Block": 3}
    assert sum(shares.values()) == 1000
    rho = Fraction(485, 254) ** 2
    report = evaluated("census-dhc-2020.privspec.yaml")
    # A discrete Gaussian is ρ-zCDP, yet as a trade-off curve a little less private than
    # the continuous one of the same σ (privspec accounts the discrete PMF itself), so μ
    # sits just above √(2ρ) (Gomez et al. 2025 report 2.70, regret ~1e-9).
    assert report.gdp.mu is not None and report.gdp.regret is not None
    assert math.sqrt(2 * rho) <= report.gdp.mu <= math.sqrt(2 * rho) + 1e-3
    assert report.gdp.regret < 1e-8
    assert report.gdp.tier == 1
    stage_mus = [stage.mu for stage in report.mechanism.stages]
    for (name, share), mu in zip(shares.items(), stage_mus, strict=True):
        assert mu is not None
        assert mu == pytest.approx(math.sqrt(2 * rho * share / 1000), rel=2e-3), name


def test_laplace_counts_is_the_closed_form_tier_ii_case() -> None:
    report = evaluated("laplace-counts.privspec.yaml")
    # docs/math.md §6: f(α) = 1 − e α (α < 1/(2e)), e⁻¹/(4α) (to 1/2), e⁻¹(1 − α).
    e = math.e
    for row in report.tradeoff:
        a = row.alpha
        exact = 1 - e * a if a < 1 / (2 * e) else (1 / (4 * e * a) if a <= 0.5 else (1 - a) / e)
        assert row.beta == pytest.approx(exact, abs=2e-4)
    # μ from the closed form on a dense grid, independently of privspec's breakpoints.
    alphas = np.logspace(-12, math.log10(0.5), 20001)
    f = np.where(alphas < 1 / (2 * e), 1 - e * alphas, 1 / (4 * e * alphas))
    mu = float(np.max(norm.isf(alphas) - norm.ppf(f)))
    assert report.gdp.mu == pytest.approx(mu, abs=2e-4)
    assert report.gdp.mu == pytest.approx(1.0301, abs=1e-3)
    assert report.gdp.regret == pytest.approx(0.0370, abs=1e-3)
    assert report.gdp.tier == 2
    assert report.pure_epsilon == pytest.approx(1.0, abs=1e-3)


def test_randomized_response_survey() -> None:
    report = evaluated("randomized-response-survey.privspec.yaml")
    # Flip probability 1/4 on a yes/no question: ε = ln 3, μ = 2Φ⁻¹(e^ε/(1+e^ε)) (Prop 6.1).
    epsilon = math.log(3)
    assert report.pure_epsilon == pytest.approx(epsilon, abs=1e-3)
    assert report.gdp.mu == pytest.approx(2 * norm.ppf(0.75), abs=1e-3)
    assert report.gdp.regret is not None and report.gdp.regret > 0.01
    assert report.gdp.advantage == pytest.approx(0.5, abs=1e-3)  # 1 − 2 × flip


def test_approximate_dp_black_box_has_no_finite_mu() -> None:
    report = evaluated("approximate-dp-black-box.privspec.yaml")
    assert report.gdp.mu is None and report.gdp.tier == 2
    assert report.gdp.mass_at_infinity == pytest.approx(1e-5)
    assert report.epsilons[0].delta == 1e-5 and report.epsilons[0].epsilon == pytest.approx(8)
    assert all(e.epsilon is None for e in report.epsilons[1:])  # δ below δ∞: unbounded


def test_mixed_pipeline_stages() -> None:
    report = evaluated("mixed-pipeline.privspec.yaml")
    search, training, statistics = report.mechanism.stages
    # Eight unsampled Gaussians with noise multiplier 12: exactly √8 / 12.
    assert search.mu == pytest.approx(math.sqrt(8) / 12, rel=1e-12)
    assert training.mu is not None and statistics.mu is not None
    # The whole is at least as revealing as each part and at most the Gaussian-style
    # sum of squares plus discretization slack.
    total = report.gdp.mu
    assert total is not None
    parts = [search.mu, training.mu, statistics.mu]
    assert max(parts) <= total <= math.sqrt(sum(m * m for m in parts)) + 0.05


def test_cifar10_example_matches_math_md_section_7() -> None:
    report = evaluated("cifar10-dpsgd-eps8.privspec.yaml")
    assert report.gdp.mu is not None and report.gdp.regret is not None
    assert 1.567 <= report.gdp.mu <= 1.569
    assert 1.0e-3 <= report.gdp.regret <= 1.3e-3
    assert report.epsilons[0].epsilon == pytest.approx(7.42, abs=0.01)
    assert report.published is not None and report.published.epsilon == 8


def test_user_level_example_protects_the_user_with_a_group_table() -> None:
    """DP-SGD at noise 2, rate 0.01, 1,000 steps, for a user with up to 8 examples: the
    group table grows from one example's μ (above the CLT's √1000·q·√(e^¼ − 1) ≈ 0.169,
    Dong, Roth & Su 2022) to the report's, about 8 times it."""
    report = evaluated("user-level-email-model.privspec.yaml")
    assert report.records_per_unit == 8 and report.gdp.tier == 2
    assert [row.size for row in report.groups] == [1, 2, 4, 8]
    mus = [row.mu for row in report.groups]
    assert mus[0] is not None and 0.177 <= mus[0] <= 0.179
    assert report.gdp.mu is not None and 1.42 <= report.gdp.mu <= 1.43
    assert mus[-1] == report.gdp.mu and mus == sorted(mus)  # type: ignore[type-var]
    assert report.epsilons[0].epsilon == pytest.approx(6.46, abs=0.01)


def test_the_readme_gallery_prints_what_the_reports_print() -> None:
    """The README's gallery row of each example has the μ, regret and tier its report
    prints (a regret below the composition's resolution as the same bound)."""
    from privspec.report.formatting import fmt_mu, fmt_regret_of

    readme = (EXAMPLES.parent / "README.md").read_text(encoding="utf-8")
    rows = [line for line in readme.splitlines()
            if line.startswith("| [`") and ".privspec.yaml)" in line]
    assert len(rows) >= 7
    for row in rows:
        cells = [cell.strip() for cell in row.strip("|").split(" | ")]
        stem = cells[0].split("`")[1]
        report = example_report(stem)
        mu = "—" if report.gdp.mu is None else fmt_mu(report.gdp.mu)
        assert cells[2:] == [mu, fmt_regret_of(report.gdp), f"Tier {'I' * report.gdp.tier}"], stem


def test_gboard_es_es_against_the_registry_rho() -> None:
    """Google's accounting (σ = 7, 2000 rounds, 6 participations at least 314 apart) gives
    Σ m² = 79 over the online tree, ρ = 79/98 = 0.806, the Registry's 0.81. privspec's
    search finds the same 79 (μ = √79/7), and a pattern attaining 79, built here from the
    tree's definition, shows that no smaller value is sound."""
    report = evaluated("gboard-es-es-dp-ftrl.privspec.yaml")
    assert report.gdp.mu is not None
    assert report.gdp.mu == pytest.approx(math.sqrt(79) / 7, rel=1e-12)
    rounds = [11, 329, 680, 994, 1418, 1732]  # 0-based; gaps of at least 314
    assert min(b - a for a, b in itertools.pairwise(rounds)) >= 314
    chosen = np.zeros(2000)
    chosen[rounds] = 1.0
    attained = float(np.sum((tree_matrix(2000, online=True) @ chosen) ** 2))
    assert attained == 79 and round(attained / (2 * 7**2), 2) == 0.81
    assert report.gdp.mu == pytest.approx(math.sqrt(attained) / 7, rel=1e-12)
    # the exact Gaussian's ε(10⁻¹⁰) is below the published 8.9 (an RDP conversion)
    assert report.epsilons[0].delta == 1e-10 and report.epsilons[0].epsilon < 8.9


def _gaussian_epsilon(mu: float, delta: float) -> float:
    """ε at δ of the Gaussian mechanism μ-GDP, from the closed form δ(ε) = Φ(−ε/μ + μ/2)
    − e^ε Φ(−ε/μ − μ/2) (Balle & Wang 2018, Thm 8), by bisection."""
    low, high = 0.0, 50.0
    for _ in range(200):
        mid = (low + high) / 2
        excess = norm.cdf(-mid / mu + mu / 2) - math.exp(mid) * norm.cdf(-mid / mu - mu / 2)
        low, high = (mid, high) if excess > delta else (low, mid)
    return high


def test_meta_full_urls_follows_the_registry_rho() -> None:
    """The OpenDP Registry's record: ρ = 0.0728 zCDP, ε = 1.453 at δ = 10⁻⁵, "μ-GDP about
    0.376".  For a Gaussian release ρ = μ²/2 exactly; the spec follows ρ, the larger."""
    from privspec.report.registry import registry_record

    report = evaluated("meta-full-urls.privspec.yaml")
    assert report.gdp.mu is not None
    assert report.gdp.mu * report.gdp.mu / 2 == pytest.approx(0.0728, rel=1e-12)
    # The Registry's ε is the exact one of its μ ≈ 0.376, a little below ρ's.
    assert _gaussian_epsilon(0.3762, 1e-5) == pytest.approx(1.453, abs=5e-4)
    first = report.epsilons[0]
    assert first.delta == 1e-5 and first.epsilon is not None
    assert first.epsilon == pytest.approx(_gaussian_epsilon(report.gdp.mu, 1e-5), abs=1e-6)
    assert 1.453 <= first.epsilon <= 1.453 * 1.02
    record = registry_record(report)["deployment"]["privacy_loss"]["privacy_parameters"]
    assert record["delta"] == 1e-5 and 1.453 <= record["epsilon"] <= 1.48


def test_mnist_tutorials_beside_their_rdp_epsilons() -> None:
    """TF Privacy's and Opacus's MNIST tutorials (σ 1.1, batch 256 of 60,000, 60 epochs)
    report RDP ε 3.01 and 2.91 at δ = 10⁻⁵; the PLD's ε is below both."""
    from dp_accounting.pld import privacy_loss_distribution as plds
    from dp_accounting.rdp.rdp_privacy_accountant import (
        _compute_rdp_poisson_subsampled_gaussian as poisson_rdp,
    )

    steps, rate, delta = math.ceil(60 * 60000 / 256), 256 / 60000, 1e-5
    # TF Privacy's 3.01: its orders and the classic RDP conversion (Mironov 2017, Prop. 3).
    orders = [1 + x / 10.0 for x in range(1, 100)] + list(range(12, 64))
    rdp = poisson_rdp(rate, 1.1, orders) * steps
    classic = min(r + math.log(1 / delta) / (order - 1) for r, order in zip(rdp, orders, strict=True))
    assert round(classic, 2) == 3.01
    report = evaluated("mnist-dpsgd-tutorials.privspec.yaml")
    assert report.published is not None and report.published.epsilon == 3.01
    first = report.epsilons[0]
    assert first.delta == delta and first.epsilon is not None
    assert first.epsilon < 2.91
    # dp-accounting's own composition on a ten times coarser pessimistic grid: above
    # privspec's, and close to it.
    coarse = plds.from_gaussian_mechanism(1.1, sampling_prob=rate,
                                          value_discretization_interval=1e-3)
    upper = coarse.self_compose(steps).get_epsilon_for_delta(delta)
    assert upper - 0.05 <= first.epsilon <= upper
    assert report.gdp.mu == pytest.approx(0.597, abs=1e-3)


def _query_rhos(mechanism: dict[str, object]) -> list[Fraction]:
    """The ρ of every discrete Gaussian in a (nested) compose, as written in the spec."""
    if "discrete_gaussian" in mechanism:
        query = mechanism["discrete_gaussian"]
        assert isinstance(query, dict) and query["sensitivity"] == 1
        return [Fraction(repr(query["rho"]))]
    stages = mechanism["compose"]
    assert isinstance(stages, list)
    return [rho for stage in stages for _ in range(stage.get("repeat", 1))
            for rho in _query_rhos(stage["mechanism"])]


@pytest.mark.parametrize(("stem", "total", "stated"), [
    ("census-dhc-2020-final-persons", Fraction(24811, 5000), "4.96"),
    ("census-dhc-2020-final-units", Fraction(15401, 2000), "7.70"),
])
def test_census_dhc_2020_final_is_sqrt_two_rho(stem: str, total: Fraction, stated: str) -> None:
    """The final DHC allocation (production/dhc/person_US.ini and unit_US.ini): the
    strategy's per-query ρ, 80 queries, sum exactly to the Bureau's total; μ sits just
    above √(2ρ) (the discrete Gaussian's excess, accounted by privspec, is below 10⁻⁵),
    and the registry record's ε is privspec's, rounded up, above the continuous one's."""
    import yaml

    from privspec.report.registry import registry_record

    spec = yaml.safe_load((EXAMPLES / f"{stem}.privspec.yaml").read_text(encoding="utf-8"))
    rhos = _query_rhos(spec["mechanism"])
    assert len(rhos) == 80 and sum(rhos) == total and f"{float(total):.2f}" == stated
    report = evaluated(stem)
    assert report.gdp.mu is not None and report.gdp.regret is not None
    assert math.sqrt(2 * total) <= report.gdp.mu <= math.sqrt(2 * total) + 1e-5
    assert report.gdp.regret < 1e-7 and report.gdp.tier == 1
    first = report.epsilons[0]
    assert first.delta == 1e-5 and first.epsilon is not None
    assert _gaussian_epsilon(math.sqrt(2 * total), 1e-5) <= first.epsilon
    record = registry_record(report)["deployment"]["privacy_loss"]["privacy_parameters"]
    assert record["delta"] == 1e-5
    assert first.epsilon <= record["epsilon"] <= first.epsilon * 1.01
