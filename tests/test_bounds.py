"""Closed-form bounds beside the numerical accounting (privspec.numerics.bounds), the
memory budget and located refusals: extreme but valid specs end in a true report within
the closed forms, or in one located line that says what to change."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import ndtri

import privspec
from privspec.cli import main
from privspec.errors import EvaluationError
from privspec.numerics.bounds import mu_of_pure_epsilon
from privspec.numerics.gdp import gaussian_tradeoff


def spec(mechanism: dict[str, object], relation: str = "add-or-remove",
         **accounting: float) -> dict[str, object]:
    data: dict[str, object] = {"privspec": 1, "title": "t", "unit": "one record",
                               "neighbouring": relation, "mechanism": mechanism}
    if accounting:
        data["accounting"] = accounting
    return data


@given(st.floats(min_value=1e-9, max_value=700))
def test_mu_of_pure_epsilon_is_the_symmetric_point_rounded_up(epsilon: float) -> None:
    """G_μ passes through f_ε's kink α = β = 1/(1 + e^ε) (or just below it)."""
    mu = mu_of_pure_epsilon(epsilon)
    kink = math.exp(-epsilon) / (1 + math.exp(-epsilon))
    if epsilon < 1e-3:  # ndtri near 1/2 loses digits: 2Φ⁻¹(1/2 + x) ≥ 2√(2π)·x
        exact = math.sqrt(2 * math.pi) * math.tanh(epsilon / 2)
        assert exact <= mu <= exact * (1 + 1e-6)
    else:
        exact = -2 * float(ndtri(kink))
        assert exact <= mu <= exact * (1 + 1e-9)
        assert gaussian_tradeoff(kink, mu) <= kink * (1 + 1e-9)


def test_tiny_pure_epsilon_is_reported_exactly() -> None:
    """ε = 10⁻⁶ read μ = 3.5 × 10⁻⁵ on the 10⁻⁴ grid; exactly it is 1.2533 × 10⁻⁶."""
    report = privspec.evaluate(spec({"pure_dp": {"epsilon": 1e-6}}))
    # (Within the floor τ = 10⁻¹², f ≥ G_μ − τ holds for a μ a little below 2Φ⁻¹(…).)
    assert report.gdp.mu == pytest.approx(math.sqrt(2 * math.pi) / 2 * 1e-6, rel=1e-5)
    assert report.warnings == [] and not report.gdp.bound
    assert report.accounting.method.startswith("exact")
    assert report.pure_epsilon == pytest.approx(1e-6)


@pytest.mark.parametrize(("release", "runs", "epsilon"), [
    ({"pure_dp": {"epsilon": 0.01}}, 5000, 50.0),  # exactly, binomially
    ({"discrete_laplace": {"epsilon": 0.01, "sensitivity": 1}}, 3000, 30.0),  # on a grid
])
def test_pure_epsilon_is_the_largest_loss_even_where_its_probability_underflows(
        release: dict[str, object], runs: int, epsilon: float) -> None:
    """k runs of an ε-DP release are exactly kε-DP: the outcome where all k agree has loss
    kε and probability about e⁻⁸⁵⁰ here, 0 in double precision.  The composed curve has
    lost it; the pure ε must not (it read 26.8 instead of 50, and 20.2 instead of 30)."""
    report = privspec.evaluate(spec({"repeat": {"count": runs, "mechanism": release}}))
    assert report.pure_epsilon is not None
    assert epsilon <= report.pure_epsilon <= epsilon * (1 + 1e-9)


def test_many_tiny_pure_releases_obey_basic_and_gdp_composition() -> None:
    """10⁷ runs of ε = 10⁻⁶: μ ≤ √(10⁷)·μ(10⁻⁶) and ε(δ) ≤ 10 (basic composition)."""
    report = privspec.evaluate(spec({"repeat": {"count": 10_000_000,
                                                "mechanism": {"pure_dp": {"epsilon": 1e-6}}}}))
    assert report.gdp.mu is not None
    assert report.gdp.mu <= math.sqrt(1e7) * mu_of_pure_epsilon(1e-6) * (1 + 1e-12)
    assert all(e.epsilon is not None and e.epsilon <= 10 for e in report.epsilons)


def test_sampling_near_one_is_never_worse_than_no_sampling() -> None:
    """q = 0.999999 printed "no finite μ" (or μ = 33.4); √T/σ = 31.62 holds without any
    amplification."""
    report = privspec.evaluate(spec({"dpsgd": {"noise_multiplier": 1,
                                               "sampling_rate": 0.999999, "steps": 1000}}))
    assert report.gdp.mu is not None and report.gdp.mu <= math.sqrt(1000) * (1 + 1e-12)


def test_a_costly_discretization_is_coarsened_and_said() -> None:
    report = privspec.evaluate(spec({"laplace": {"epsilon": 650}}))
    assert report.accounting.discretization > 1e-4
    assert report.warnings[0].code == "accounting/coarsened"
    assert report.gdp.mu is not None and report.gdp.mu <= mu_of_pure_epsilon(650)


def test_beyond_any_budget_is_a_located_refusal(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "huge.privspec.yaml"
    path.write_text("privspec: 1\ntitle: t\nunit: one record\nneighbouring: add-or-remove\n"
                    "mechanism:\n  compose:\n    - mechanism:\n        gaussian: {sigma: 1}\n"
                    "    - mechanism:\n        discrete_gaussian: {rho: 1000000}\n",
                    encoding="utf-8")
    assert main(["render", str(path), "-f", "json", "-o", str(tmp_path / "out.json")]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"{path}:10:9: error: mechanism.compose[1].mechanism."
                           "discrete_gaussian: cannot evaluate: ")
    assert "a release has a privacy loss of 1e+06" in line and "more noise" in line
    assert line.endswith("[evaluation/refused]")
    assert not (tmp_path / "out.json").exists()


def test_where_the_numbers_cannot_be_tight_the_closed_form_bound_is_reported() -> None:
    sampled = privspec.evaluate(spec({"poisson_sampled": {
        "sampling_rate": 0.5, "mechanism": {"gaussian": {"sigma": 1e-4}}}}))
    assert sampled.gdp.mu == pytest.approx(1e4) and sampled.gdp.bound
    nested = privspec.evaluate(spec({"repeat": {"count": 10**6, "mechanism": {"repeat": {
        "count": 10**6, "mechanism": {"pure_dp": {"epsilon": 0.1}}}}}}))
    assert nested.gdp.bound and "accounting/too-costly" in {w.code for w in nested.warnings}
    assert nested.gdp.mu == pytest.approx(1e6 * mu_of_pure_epsilon(0.1))


@pytest.mark.parametrize("sensitivity", [1e300, 1e200])
def test_gaussian_mu_beyond_double_precision_is_refused_in_words(sensitivity: float) -> None:
    with pytest.raises(EvaluationError) as refused:
        privspec.evaluate(spec({"gaussian": {"sigma": 1, "sensitivity": sensitivity}}))
    assert refused.value.path == ("mechanism", "gaussian")
    assert "more noise" in str(refused.value)


@pytest.mark.parametrize("sigma", [1e200, 1e300])
def test_a_gaussian_mu_below_double_range_is_rounded_up_not_to_0(sigma: float) -> None:
    """Δ/σ = 10⁻⁴⁰⁰ underflows to 0: μ was reported as 0, below the true one."""
    found = privspec.evaluate(spec({"gaussian": {"sigma": sigma, "sensitivity": 1e-200}}))
    assert found.gdp.mu is not None and found.gdp.mu > 0


def test_an_internal_failure_says_it_is_a_bug(monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    import privspec.numerics.accounting as accounting

    def broken(*_: object, **__: object) -> None:
        raise IndexError("index 0 is out of bounds for axis 0 with size 0")

    monkeypatch.setattr(accounting, "laplace_pld", broken)
    example = str(Path(__file__).resolve().parent.parent / "examples"
                  / "laplace-counts.privspec.yaml")
    assert main(["render", example, "-f", "json"]) == 2
    err = capsys.readouterr().err
    assert "This is a bug in privspec: please report it with the spec" in err
    assert "Traceback" not in err
    assert main(["--debug", "render", example, "-f", "json"]) == 2
    assert "Traceback" in capsys.readouterr().err


@settings(max_examples=10, deadline=None)
@given(epsilon=st.floats(min_value=1e-9, max_value=5.0), count=st.integers(1, 10**7))
def test_pure_compositions_stay_within_their_closed_forms(epsilon: float, count: int) -> None:
    report = privspec.evaluate(spec({"repeat": {"count": count,
                                                "mechanism": {"pure_dp": {"epsilon": epsilon}}}}))
    assert report.gdp.mu is not None
    assert report.gdp.mu <= math.sqrt(count) * mu_of_pure_epsilon(epsilon) * (1 + 1e-9)
    for row in report.epsilons:
        assert row.epsilon is not None and row.epsilon <= count * epsilon * (1 + 1e-9)


def test_a_huge_discrete_gaussian_is_refused_in_seconds_with_its_reason() -> None:
    """σ = 10⁶ took 28 s and 2.4 GB summing 24 million noise values."""
    with pytest.raises(EvaluationError) as refused:
        privspec.evaluate(spec({"discrete_gaussian": {"sigma": 1e6}}))
    assert refused.value.path == ("mechanism", "discrete_gaussian")
    assert "noise values to sum over" in str(refused.value)


def test_many_distinct_stages_skip_their_own_mu_and_say_so() -> None:
    stages = [{"mechanism": {"dpsgd": {"noise_multiplier": 1 + i / 100, "sampling_rate": 0.01,
                                       "steps": 10}}} for i in range(40)]
    report = privspec.evaluate(spec({"compose": stages}))
    assert all(stage.mu is None for stage in report.mechanism.stages)
    assert "report/stage-mu-skipped" in {w.code for w in report.warnings}
    assert report.gdp.mu is not None


def test_connect_the_dots_of_a_strong_gaussian_stays_finite() -> None:
    """e^ε overflows far above a σ = 0.01 Gaussian's bulk; the masses there came out as
    inf, and the composition refused the PLD as a bug."""
    import numpy as np

    from privspec.numerics import cost
    from privspec.numerics.curve import pmfs_from_pld
    from privspec.numerics.portable_pld import gaussian_pld

    with cost.budget(4 * 2**30):
        (pmf,) = pmfs_from_pld(gaussian_pld(0.01, discretization=5e-3))
    assert np.all(np.isfinite(pmf.probs))
    assert abs(float(pmf.probs.sum()) + pmf.infinity_mass - 1) < 1e-9


def test_losses_beyond_double_precision_are_said_to_be_so() -> None:
    """μ = 100 beside a discrete Gaussian: no finite μ (its losses, far beyond double
    precision, count as unbounded), never "a bug"."""
    report = privspec.evaluate(spec({"compose": [
        {"mechanism": {"gaussian": {"sigma": 0.01}}},
        {"mechanism": {"discrete_gaussian": {"sigma": 5}}}]}))
    assert report.gdp.mu is None
    assert report.gdp.no_finite_mu_reason is not None
    assert report.gdp.mass_at_infinity == 1.0


def test_progress_goes_to_a_hook_and_the_cli_line_only_to_a_terminal(
        capsys: pytest.CaptureFixture[str]) -> None:
    from privspec.numerics import progress

    seen: list[tuple[str, float]] = []
    with progress.reporting(lambda what, done: seen.append((what, done))):
        privspec.evaluate(spec({"dpsgd": {"noise_multiplier": 1.1, "sampling_rate": 0.004,
                                          "steps": 10_000}}))
    assert seen and all(0 <= done <= 1 for _, done in seen)
    assert {what for what, _ in seen} >= {"composing", "building releases at h = 0.0001"}
    example = str(Path(__file__).resolve().parent.parent / "examples"
                  / "laplace-counts.privspec.yaml")
    assert main(["render", example, "-f", "json"]) == 0  # stderr is not a terminal here
    assert "privspec:" not in capsys.readouterr().err


def test_the_progress_line_never_goes_back(monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """DP-SGD composes in several passes, each from 0 %: the line shows how much of the
    whole run is done, which only grows (it went from 21 % back to 5 %)."""
    import importlib
    import re
    import sys

    cli = importlib.import_module("privspec.cli.loading")
    monkeypatch.setattr(cli.ProgressLine, "DELAY", 0.0)
    monkeypatch.setattr(cli.ProgressLine, "INTERVAL", 0.0)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    example = str(Path(__file__).resolve().parent.parent / "examples"
                  / "cifar10-dpsgd-eps8.privspec.yaml")
    assert main(["evaluate", example]) == 0
    shown = [int(percent) for percent in re.findall(r"(\d+)%", capsys.readouterr().err)]
    assert len(shown) >= 5
    assert shown == sorted(shown) and shown[-1] < 100


def test_the_memory_budget_on_the_command_line_keeps_the_specs_hash(tmp_path: Path) -> None:
    example = str(Path(__file__).resolve().parent.parent / "examples"
                  / "laplace-counts.privspec.yaml")
    assert main(["--memory-budget", "0.05", "render", example, "-f", "json",
                 "-o", str(tmp_path / "small.json")]) == 0
    assert main(["render", example, "-f", "json", "-o", str(tmp_path / "default.json")]) == 0
    import json

    small = json.loads((tmp_path / "small.json").read_text(encoding="utf-8"))
    default = json.loads((tmp_path / "default.json").read_text(encoding="utf-8"))
    assert small["spec_sha256"] == default["spec_sha256"]


def test_a_spec_without_a_discretization_gets_one_its_finest_release_needs() -> None:
    """DP-SGD with z = 2, q = 0.001 spreads one step's loss over five default steps: the
    default grid was 0.27 % loose; a user's explicit choice is kept."""
    dpsgd = {"dpsgd": {"noise_multiplier": 2, "sampling_rate": 0.001, "steps": 10_000}}
    chosen = privspec.evaluate(spec(dpsgd))
    assert chosen.accounting.discretization == 5e-5
    assert chosen.warnings[0].code == "accounting/discretization-chosen"
    kept = privspec.evaluate(spec(dpsgd, discretization=1e-4))
    assert kept.accounting.discretization == 1e-4
    assert "accounting/discretization-chosen" not in {w.code for w in kept.warnings}
    assert chosen.gdp.mu is not None and kept.gdp.mu is not None
    assert chosen.gdp.mu < kept.gdp.mu / 1.002
    finest = privspec.evaluate(spec(dpsgd, discretization=1e-6))
    assert finest.gdp.mu is not None and chosen.gdp.mu <= finest.gdp.mu * 1.001


def test_a_time_budget_coarsens_the_grid_and_the_report_says_why() -> None:
    """Time is estimated from sizes before the work starts, so the same spec gets the
    same report on any machine; above the budget the grid coarsens, as for memory."""
    dpsgd = {"dpsgd": {"noise_multiplier": 1.1, "sampling_rate": 0.004, "steps": 20_000}}
    quick = privspec.evaluate(spec(dpsgd, discretization=1e-5, time_budget=3))
    assert quick.accounting.discretization > 1e-5
    (why,) = [w for w in quick.warnings if w.code == "accounting/coarsened"]
    assert why.values["resource"] == "time" and "accounting.time_budget" in why.message
    again = privspec.evaluate(spec(dpsgd, discretization=1e-5), time_budget=3)
    assert again.gdp == quick.gdp  # the override on the command line or in Python
    full = privspec.evaluate(spec(dpsgd, discretization=1e-5), memory_budget=2)
    assert full.accounting.discretization == 1e-5
    assert quick.gdp.mu is not None and full.gdp.mu is not None
    assert full.gdp.mu <= quick.gdp.mu  # coarser is as pessimistic, looser


def test_many_distinct_releases_beyond_the_time_budget_get_the_closed_form_bound() -> None:
    """Each distinct release costs time at any grid: 1,000 of them do not fit in 1 s."""
    stages = [{"mechanism": {"dpsgd": {"noise_multiplier": 1 + i / 1000, "sampling_rate": 0.01,
                                       "steps": 10}}} for i in range(1000)]
    report = privspec.evaluate(spec({"compose": stages}, time_budget=1))
    assert report.gdp.bound
    (why,) = [w for w in report.warnings if w.code == "accounting/too-costly"]
    assert "time budget of 1 s" in why.message


def test_a_mechanism_without_closed_form_beyond_the_time_budget_is_refused_with_the_field(
        ) -> None:
    """An (ε, δ) release has no μ-GDP bound of its own: no closed form to fall back on."""
    stages = [{"mechanism": {"laplace": {"scale": 1 + i / 1000}}} for i in range(1000)]
    stages.append({"mechanism": {"approximate_dp": {"epsilon": 1, "delta": 1e-9}}})
    with pytest.raises(EvaluationError) as refused:
        privspec.evaluate(spec({"compose": stages}, time_budget=1))
    assert "accounting.time_budget" in str(refused.value)
    assert "on a 2-core laptop" in str(refused.value)
    assert refused.value.path == ("mechanism",)


def test_the_time_budget_on_the_command_line(tmp_path: Path) -> None:
    data = spec({"dpsgd": {"noise_multiplier": 1.1, "sampling_rate": 0.004, "steps": 20_000}},
                discretization=1e-5)
    spec_file = tmp_path / "run.privspec.yaml"
    spec_file.write_text(yaml.safe_dump(data), encoding="utf-8")
    out = tmp_path / "run.md"
    assert main(["--time-budget", "3", "render", str(spec_file), "-o", str(out)]) == 0
    assert "time budget of 3 s" in " ".join(out.read_text(encoding="utf-8").split())


def test_a_time_budget_spent_on_failed_attempts_still_leaves_a_numerical_report() -> None:
    """Each retry's grid is chosen for the time that is left after the work already done;
    it was chosen for the time before it, failed again and again, and fell to the closed-form
    bound (μ = 186 where the numerical accounting gives 3.2 within 1 s)."""
    stages = [{"mechanism": {"dpsgd": {"noise_multiplier": 0.8, "sampling_rate": 0.01,
                                       "steps": 20_000}}},
              {"mechanism": {"dpsgd": {"noise_multiplier": 1.2, "sampling_rate": 0.02,
                                       "steps": 5_000}}},
              {"mechanism": {"laplace": {"epsilon": 0.1}}}]
    report = privspec.evaluate(spec({"compose": stages}, time_budget=1))
    assert not report.gdp.bound
    assert report.gdp.mu is not None and report.gdp.mu < 4


def test_a_sampled_gaussian_whose_sampled_runs_reveal_everything_gets_the_bound_at_once(
        ) -> None:
    """z = 10⁻⁹, q = 0.01: a sampled run's loss is about 5 × 10¹⁷, far past the grid; the
    grid up to loss 700 was built anyway (10 s, 0.9 GB) before the composition gave up."""
    report = privspec.evaluate(spec({"dpsgd": {"noise_multiplier": 1e-9, "sampling_rate": 0.01,
                                               "steps": 100_000}}))
    assert report.gdp.bound
    assert report.warnings[0].code == "accounting/beyond-range"
    assert report.gdp.mu == pytest.approx(math.sqrt(100_000) / 1e-9, rel=1e-9)


def test_both_directions_of_a_sampled_release_are_costed_before_either_is_built() -> None:
    """A Poisson-sampled Gaussian has a remove and an add grid: refused half-way, the
    first one's time was spent on nothing, and the retry had less left (a 1 s budget
    took DP-SGD at h = 10⁻⁶ to h = 0.02 instead of 0.005)."""
    from privspec.numerics import cost
    from privspec.numerics.portable_pld import gaussian_pld

    with cost.budget(2**30, 1.0):
        with pytest.raises(cost.CostError) as refused:
            gaussian_pld(1.1, sampling_prob=0.004, discretization=2e-6)
        tally = cost._TALLY.get()
        assert tally is not None and tally.spent == 0.0  # nothing built, nothing spent
    assert refused.value.resource == "time"


@pytest.mark.parametrize(("mechanism", "relation", "largest"), [
    # Poisson sampling at q: the removal direction's largest loss, log(1 + q(e^ε − 1))
    ({"poisson_sampled": {"sampling_rate": 0.5, "mechanism": {"laplace": {"epsilon": 1}}}},
     "add-or-remove", math.log1p(0.5 * math.expm1(1))),
    ({"poisson_sampled": {"sampling_rate": 0.1,
                          "mechanism": {"discrete_laplace": {"epsilon": 1, "sensitivity": 1}}}},
     "add-or-remove", math.log1p(0.1 * math.expm1(1))),
    # fixed-size sampling of 1 in 100 under replace-one (Balle et al. 2018)
    ({"fixed_size_sampled": {"batch_size": 1, "dataset_size": 100,
                             "mechanism": {"laplace": {"epsilon": 1}}}},
     "replace-one", math.log1p(0.01 * math.expm1(1))),
    ({"randomized_response": {"epsilon": 1, "categories": 5}}, "replace-one", 1.0),
    ({"compose": [{"mechanism": {"laplace": {"epsilon": 1}}},
                  {"repeat": 3, "mechanism": {"randomized_response": {
                      "epsilon": 0.5, "categories": 3}}}]}, "replace-one", 2.5),
])
def test_pure_epsilon_is_never_below_the_largest_loss(
        mechanism: dict[str, object], relation: str, largest: float) -> None:
    """The pure ε is the largest privacy loss any outcome has: never below it (an
    optimistic claim), and above it only by the grid's rounding (h = 10⁻⁴ a release)."""
    report = privspec.evaluate(spec(mechanism, relation))
    assert report.pure_epsilon is not None
    assert largest * (1 - 1e-12) <= report.pure_epsilon <= largest + 5e-4


def _discrete_laplace_stages(count: int) -> dict[str, object]:
    return {"compose": [{"mechanism": {"discrete_laplace": {
        "scale": 900_000.0 + 17 * i, "sensitivity": 999_999}}} for i in range(count)]}


def test_discrete_laplace_sums_are_costed_at_any_grid_and_fall_to_the_bound() -> None:
    """dp-accounting loops over all Δ + 1 = 10⁶ noise values of each release in Python
    (about 0.5 s each, whatever the grid): 5 distinct ones took 10.7 s and 30 took 60 s
    with a time budget of 1 s.  Now their cost is estimated before the first is built,
    and no coarser grid being of help, the closed-form bound is reported at once."""
    report = privspec.evaluate(spec(_discrete_laplace_stages(5), time_budget=1))
    assert report.gdp.bound
    (why,) = [w for w in report.warnings if w.code == "accounting/too-costly"]
    assert why.values["resource"] == "time"


@pytest.mark.parametrize(("mechanism", "seconds"), [
    # Δ + 1 noise values at 5 × 10⁻⁷ s, no sampling (one direction)
    ({"discrete_laplace": {"scale": 900_000.0, "sensitivity": 999_999}}, 0.5),
    # two directions of Δ + 1 values at 1.5 × 10⁻⁶ s when sampled
    ({"poisson_sampled": {"sampling_rate": 0.01, "mechanism": {
        "discrete_laplace": {"scale": 900_000.0, "sensitivity": 999_999}}}}, 3.0),
    # privspec's discrete Gaussian: its noise values within dp-accounting's truncation
    ({"discrete_gaussian": {"sigma": 80_000.0, "sensitivity": 1}}, 2.78),
])
def test_discrete_releases_are_costed_by_their_noise_values(
        mechanism: dict[str, object], seconds: float) -> None:
    from privspec.numerics import cost
    from privspec.numerics.accounting import account
    from privspec.spec.loader import spec_from_data

    with cost.budget(2**30, 0.1), pytest.raises(cost.CostError) as refused:
        account(spec_from_data(spec(mechanism)))
    assert refused.value.resource == "time" and math.isinf(refused.value.factor)
    assert refused.value.estimate == pytest.approx(seconds, rel=0.02)


def test_a_sampled_laplace_gets_the_grid_it_needs_and_stays_within_a_thousandth() -> None:
    """Poisson-sampled Laplace (ε = 1) at q = 0.001 over 10,000 steps kept h = 10⁻⁴ and
    printed ε 0.116 % above the truth.  Checked against dp-accounting's own PLDs at
    h = 2 × 10⁻⁶: its connect-the-dots composition (pessimistic, about 10⁻⁶ above the
    truth at this step) and its optimistic privacy buckets (below the truth)."""
    from dp_accounting.pld import privacy_loss_distribution as plds

    mechanism = {"repeat": {"count": 10_000, "mechanism": {"poisson_sampled": {
        "sampling_rate": 0.001, "mechanism": {"laplace": {"scale": 1.0}}}}}}
    report = privspec.evaluate(spec(mechanism))
    assert report.accounting.discretization == 5e-5
    ours = {row.delta: row.epsilon for row in report.epsilons}

    def reference(pessimistic: bool) -> dict[float, float]:
        pld = plds.from_laplace_mechanism(
            1.0, sampling_prob=0.001, value_discretization_interval=2e-6,
            pessimistic_estimate=pessimistic, use_connect_dots=pessimistic).self_compose(10_000)
        return {delta: pld.get_epsilon_for_delta(delta) for delta in ours}

    upper, lower = reference(True), reference(False)
    for delta, epsilon in ours.items():
        assert lower[delta] <= epsilon <= 1.001 * upper[delta]


def test_a_finer_grid_never_publishes_weaker_guarantees_than_the_coarse_one() -> None:
    """User-level DP-FedAvg (z = 1, 100 of 342,477 users, 1,000 rounds): the default
    budget once coarsened it to h = 10⁻³ on an estimate of 2.8 GB (its peak: 340 MB), and
    following the caveat's advice (8 GiB) gave h = 10⁻⁴ composed without an error bound, with other
    figures.  Now the uncertified h = 10⁻⁴ is reported beside the certified figures,
    which are the same whatever the budget, and the caveat says to publish those."""
    fedavg = spec({"dpsgd": {"noise_multiplier": 1.0, "batch_size": 100,
                             "dataset_size": 342_477, "steps": 1000}})
    default, generous = privspec.evaluate(fedavg), privspec.evaluate(fedavg, memory_budget=8)
    for report in (default, generous):
        codes = [w.code for w in report.warnings]
        assert "accounting/uncertified-composition" not in codes
        assert "accounting/coarsened" not in codes
        (why,) = [w for w in report.warnings if w.code == "accounting/uncertified-finer"]
        assert why.values["finer"] == 1e-4 and "publish these" in why.message
    assert default.gdp.mu == generous.gdp.mu
    assert default.accounting.discretization == generous.accounting.discretization


def test_what_the_process_computed_before_never_changes_a_report() -> None:
    """A memory budget is checked against this report's own work: the FFT plans an
    earlier evaluation left in scipy's (process-wide) cache used to count, so a spec
    rendered after another one could fall to the closed-form bound (μ 44.8 instead of
    0.686) where it alone was coarsened."""
    spec = {"privspec": 1, "title": "t", "unit": "one record", "neighbouring": "add-or-remove",
            "mechanism": {"dpsgd": {"noise_multiplier": 1.0, "sampling_rate": 0.01,
                                    "steps": 2000}}}
    alone = privspec.evaluate(spec, memory_budget=0.05, cache=False)
    privspec.evaluate({**spec, "mechanism": {"dpsgd": {
        "noise_multiplier": 0.9, "sampling_rate": 0.02, "steps": 3000}}}, cache=False)
    after = privspec.evaluate(spec, memory_budget=0.05, cache=False)
    assert after.model_dump_json() == alone.model_dump_json()
    assert "accounting/coarsened" in {w.code for w in alone.warnings}


@settings(max_examples=200)
@given(st.lists(st.tuples(st.floats(min_value=1e-3, max_value=1e3),
                          st.floats(min_value=1e-3, max_value=1e3),
                          st.integers(min_value=1, max_value=10**6)), min_size=1, max_size=4))
def test_plain_gaussians_compose_to_mu_rounded_up_never_down(
        releases: list[tuple[float, float, int]]) -> None:
    """μ of plain Gaussian releases is √(Σ k·(Δ/σ)²) rounded up: Δ/σ, each sum and the
    root were rounded to nearest, so three releases of μ = 1 were reported a half-ulp
    below √3."""
    from fractions import Fraction

    from privspec.numerics.accounting import account
    from privspec.spec.loader import spec_from_data

    stages = [{"repeat": count, "mechanism": {"gaussian": {
        "sigma": sigma, "sensitivity": sensitivity}}} for sigma, sensitivity, count in releases]
    mu = account(spec_from_data(spec({"compose": stages}))).exact_mu
    assert mu is not None
    exact = sum(count * (Fraction(sensitivity) / Fraction(sigma)) ** 2
                for sigma, sensitivity, count in releases)
    assert Fraction(mu) ** 2 >= exact
    assert Fraction(math.nextafter(mu, 0)) ** 2 < exact * (1 + Fraction(1, 10**12))


def test_a_gaussian_run_split_into_phases_has_the_same_mu_to_the_bit() -> None:
    """Counts are integers and μ is composed exactly, so 2,000 steps written as one stage
    or as phases of 700 and 1,300 give the same double (sums of rounded μ² did not)."""
    from privspec.numerics.accounting import account
    from privspec.spec.loader import spec_from_data

    def run(*counts: int) -> float | None:
        stages = [{"repeat": count, "mechanism": {"gaussian": {
            "sigma": 9.4, "sensitivity": 1}}} for count in counts]
        return account(spec_from_data(spec({"compose": stages}))).exact_mu

    assert run(2000) == run(700, 1300) == run(1, 1999) == run(*[100] * 20)


def test_plain_gaussians_of_an_exact_mu_report_it_exactly() -> None:
    """100 releases of σ = 10 are exactly 1-GDP (μ = 1, not the double above it, which
    prints 1.01); 100 distinct σ (composed from doubles rounded up) are never below."""
    from fractions import Fraction

    from privspec.numerics.accounting import EXACT_GAUSSIANS, account
    from privspec.spec.loader import spec_from_data

    ten = {"repeat": {"count": 100, "mechanism": {"gaussian": {"sigma": 10}}}}
    assert account(spec_from_data(spec(ten))).exact_mu == 1.0
    sigmas = [3 + i / 7 for i in range(EXACT_GAUSSIANS + 36)]
    stages = [{"mechanism": {"gaussian": {"sigma": sigma}}} for sigma in sigmas]
    mu = account(spec_from_data(spec({"compose": stages}))).exact_mu
    assert mu is not None
    exact = sum(1 / Fraction(sigma) ** 2 for sigma in sigmas)
    assert exact <= Fraction(mu) ** 2 < exact * (1 + Fraction(1, 10**14))
