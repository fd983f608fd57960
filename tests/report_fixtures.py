"""Hand-built, realistic :class:`privspec.report.model.Report` values for the renderer's tests.

The numbers are close to what the evaluator computes for these mechanisms
(the curves are the closed forms of docs/math.md §6, G_μ from
scipy), written as literals so that golden files do not depend on a scipy
version.  They exercise every branch of the templates: Tier I, Tier II, no
finite μ (mass at infinity, an unbounded ε(δ)), pure DP, warnings, named
stages, and user strings full of LaTeX and Markdown special characters.
"""

from __future__ import annotations

from collections.abc import Callable

from privspec.report.model import (
    GDP,
    Accounting,
    Caveat,
    CurvePoint,
    EpsilonAtDelta,
    MechanismSummary,
    PublishedComparison,
    Report,
    Risk,
    RiskRow,
    StageSummary,
    TradeoffRow,
)

_VERSIONS = {"privspec": "0.1.0", "dp-accounting": "0.6.0", "python": "3.11"}
_METHOD = "dp-accounting PLD, connect-the-dots, pessimistic estimate"


def _row(alpha: float, *, beta: float, tpr: float, beta_gdp: float | None = None,
         tpr_gdp: float | None = None, star: bool = False) -> TradeoffRow:
    return TradeoffRow(alpha=alpha, beta=beta, tpr=tpr, beta_gdp=beta_gdp, tpr_gdp=tpr_gdp,
                       is_alpha_star=star)


def _accounting(relative_error: float) -> Accounting:
    return Accounting(method=_METHOD, discretization=1e-4, floor=1e-12,
                      tail_mass_truncation=1e-15, relative_error=relative_error,
                      versions=dict(_VERSIONS))


def _risk(epsilon: float | None, delta: float,
          rows: list[tuple[str, dict[str, float], float, float, float | None, float]]) -> Risk:
    return Risk(epsilon=epsilon, delta=delta, rows=[
        RiskRow(scenario=kind, parameters=parameters, baseline=baseline, bound=bound,  # type: ignore[arg-type]
                bound_gdp=gdp, bound_epsilon_delta=claimed)
        for kind, parameters, baseline, bound, gdp, claimed in rows])


def _curve(rows: list[TradeoffRow]) -> list[CurvePoint]:
    return [CurvePoint(alpha=row.alpha, beta=row.beta, tpr=row.tpr) for row in rows]


def dpsgd_tier1() -> Report:
    """WRN-16-4 on CIFAR-10, DP-SGD at the ε = 8 setting: Tier I."""
    rows = [
        _row(1e-10, beta=0.9999991856081405, tpr=8.1439185950305e-07,
             beta_gdp=0.999999179867211, tpr_gdp=8.201327890262336e-07),
        _row(1e-08, beta=0.9999739105931659, tpr=2.6089406834162706e-05,
             beta_gdp=0.9999737266799253, tpr_gdp=2.6273320074685503e-05),
        _row(1e-06, beta=0.9992823494196248, tpr=0.0007176505803752432,
             beta_gdp=0.9992772904527943, tpr_gdp=0.000722709547205683),
        _row(0.0001, beta=0.9843727128911555, tpr=0.015627287108844538,
             beta_gdp=0.9842625507463801, tpr_gdp=0.015737449253619876),
        _row(0.001, beta=0.9364723866004527, tpr=0.06352761339954727,
             beta_gdp=0.9360245585100229, tpr_gdp=0.06397544148997711),
        _row(0.01, beta=0.7774474724420434, tpr=0.2225525275579566,
             beta_gdp=0.775878622801655, tpr_gdp=0.22412137719834502),
        _row(0.1, beta=0.39155646997255134, tpr=0.6084435300274487,
             beta_gdp=0.38726734136208596, tpr_gdp=0.612732658637914),
        _row(0.21750000000000003, beta=0.21750000000000003, tpr=0.7825,
             beta_gdp=0.21554266974561848, tpr_gdp=0.7844573302543816, star=True),
    ]
    return Report(
        title="WRN-16-4 on CIFAR-10 at the ε = 8 setting (De et al. 2022)",
        description=None,
        unit="one training example",
        neighbouring="add-or-remove",
        mechanism=MechanismSummary(
            kind="dpsgd",
            noun="training run",
            summary="DP-SGD: 2,000 steps, Poisson sampling with expected batch 16,384 of "
            "50,000 examples (rate 0.32768), noise multiplier 9.4. All intermediate models "
            "are covered.",
            stages=[StageSummary(name=None, description="DP-SGD, 2,000 steps at noise "
                                 "multiplier 9.4, Poisson sampling rate 0.32768", repeat=1)],
        ),
        gdp=GDP(mu=1.5679, no_finite_mu_reason=None, regret=0.0011823, regret_threshold=0.01,
                tier=1, advantage=0.56497, alpha_star=0.21750000000000003,
                mass_at_infinity=0.0),
        tradeoff=rows,
        epsilons=[EpsilonAtDelta(delta=1e-5, epsilon=7.4271),
                  EpsilonAtDelta(delta=1e-6, epsilon=8.2134),
                  EpsilonAtDelta(delta=1e-9, epsilon=10.2917)],
        pure_epsilon=None,
        risk=_risk(7.4271, 1e-5, [
            ("membership-tpr", {"fpr": 1e-3}, 1e-3, 0.0633348, 0.0640128, 0.9994041),
            ("membership-tpr", {"fpr": 1e-5}, 1e-5, 0.0034611, 0.0035026, 0.0167737),
            ("attribute-inference", {"values": 2}, 0.5, 0.9407331, 0.9415942, 0.9997017),
            ("reidentification", {"candidates": 10000}, 1e-4, 0.0155665, 0.0157492, 0.1676468),
        ]),
        published=PublishedComparison(epsilon=8.0, delta=1e-5, epsilon_privspec=7.4271,
                                      source="De et al. 2022, Table 14 (RDP accountant)"),
        curve=_curve(rows),
        accounting=_accounting(1.6e-8),
        warnings=[],
        spec_sha256="3f1c9b0e5a7d2c4b8e6f1a3d5c7b9e0f2a4c6e8b0d2f4a6c8e0b2d4f6a8c0e2f",
        spec_path="examples/cifar10-dpsgd-eps8.privspec.yaml",
    )


def laplace_tier2() -> Report:
    """County counts with the Laplace mechanism at ε = 1: Tier II, pure DP."""
    rows = [
        _row(1e-10, beta=0.9999999997281718, tpr=2.718281828459045e-10,
             beta_gdp=0.9999999512280376, tpr_gdp=4.8771962384411175e-08),
        _row(1e-08, beta=0.9999999728171816, tpr=2.718281828459045e-08,
             beta_gdp=0.9999976961625255, tpr_gdp=2.3038374744671146e-06),
        _row(1e-06, beta=0.9999972817181715, tpr=2.718281828459045e-06,
             beta_gdp=0.9999016916508275, tpr_gdp=9.83083491725104e-05),
        _row(0.0001, beta=0.9997281718171541, tpr=0.00027182818284590454,
             beta_gdp=0.9964157824582097, tpr_gdp=0.003584217541790234),
        _row(0.001, beta=0.997281718171541, tpr=0.002718281828459045,
             beta_gdp=0.980307052907429, tpr_gdp=0.01969294709257097),
        _row(0.01, beta=0.9728171817154095, tpr=0.027182818284590453,
             beta_gdp=0.9025549496403589, tpr_gdp=0.09744505035964107),
        _row(0.1, beta=0.7281718171540955, tpr=0.27182818284590454,
             beta_gdp=0.5992674977729663, tpr_gdp=0.4007325022270337),
        _row(0.3032653298563167, beta=0.3032653298563167, tpr=0.6967346701436833,
             beta_gdp=0.30325275111565686, tpr_gdp=0.6967472488843431, star=True),
    ]
    return Report(
        title="County counts with the Laplace mechanism",
        description="Population counts per county, each released once with Laplace noise.",
        unit="one person",
        neighbouring="add-or-remove",
        mechanism=MechanismSummary(
            kind="laplace",
            noun="release",
            summary="One Laplace release of a count (sensitivity 1) with scale 1, so ε = 1.",
            stages=[StageSummary(name=None, description="Laplace mechanism, scale 1, "
                                 "sensitivity 1", repeat=1)],
        ),
        gdp=GDP(mu=1.0301, no_finite_mu_reason=None, regret=0.0370, regret_threshold=0.01,
                tier=2, advantage=0.3934693402873666, alpha_star=0.3032653298563167,
                mass_at_infinity=0.0),
        tradeoff=rows,
        epsilons=[EpsilonAtDelta(delta=1e-5, epsilon=0.99998),
                  EpsilonAtDelta(delta=1e-6, epsilon=0.999998),
                  EpsilonAtDelta(delta=1e-9, epsilon=1.0)],
        pure_epsilon=1.0,
        risk=_risk(1.0, 0.0, [
            ("membership-tpr", {"fpr": 1e-3}, 1e-3, 0.002718, 0.019691, 0.002718),
            ("membership-accuracy", {"base_rate": 0.01}, 0.99, 0.99, 0.99, 0.99),
            ("membership-precision", {"base_rate": 0.01, "fpr": 1e-3}, 0.01, 0.026724,
             0.165903, 0.026724),
            ("attribute-inference", {"values": 2}, 0.5, 0.81606, 0.84851, 0.81606),
            ("reidentification", {"candidates": 10000}, 1e-4, 0.000272, 0.003584, 0.000272),
            ("reconstruction", {"baseline": 1e-6}, 1e-6, 3e-06, 9.8e-05, 3e-06),
        ]),
        curve=_curve(rows),
        accounting=_accounting(0.0),
        warnings=[Caveat(code="report/gdp-poor-fit",
                          message="regret 0.037 exceeds 0.01: μ alone overstates the risk; "
                          "report the trade-off table (Tier II)")],
        spec_sha256="a0b1c2d3e4f5061728394a5b6c7d8e9fa0b1c2d3e4f5061728394a5b6c7d8e9f",
        spec_path="examples/laplace-counts.privspec.yaml",
    )


def approximate_dp_no_mu() -> Report:
    """A black box known only as (1, 10⁻⁶)-DP: no finite μ, ε(10⁻⁹) unbounded."""
    rows = [
        _row(1e-10, beta=0.9999989997281717, tpr=1.0002718281828459e-06),
        _row(1e-08, beta=0.9999989728171816, tpr=1.0271828182845904e-06),
        _row(1e-06, beta=0.9999962817181716, tpr=3.7182818284590446e-06),
        _row(0.0001, beta=0.9997271718171541, tpr=0.00027282818284590457),
        _row(0.001, beta=0.997280718171541, tpr=0.0027192818284590453),
        _row(0.01, beta=0.9728161817154095, tpr=0.027183818284590454),
        _row(0.1, beta=0.7281708171540955, tpr=0.2718291828459045),
        _row(0.26894115242857375, beta=0.26894115242857375, tpr=0.7310588475714263,
             star=True),
    ]
    return Report(
        title="A black box known only as (1, 1e-6)-DP",
        description=None,
        unit="one training example",
        neighbouring="add-or-remove",
        mechanism=MechanismSummary(
            kind="approximate_dp",
            noun="release",
            summary="A mechanism known only by its (ε, δ) = (1, 10⁻⁶) guarantee, accounted "
            "as the worst mechanism that meets it.",
            stages=[StageSummary(name=None, description="(1, 10⁻⁶)-DP black box", repeat=1)],
        ),
        gdp=GDP(mu=None,
                no_finite_mu_reason="the privacy loss is +∞ with probability 10⁻⁶ (the δ of "
                "the (ε, δ) claim), so the trade-off curve starts below 1 at α = 0 and no "
                "Gaussian curve lies under it.",
                regret=None, regret_threshold=0.01, tier=2, advantage=0.4621176951428525,
                alpha_star=0.26894115242857375, mass_at_infinity=1e-6),
        tradeoff=rows,
        epsilons=[EpsilonAtDelta(delta=1e-5, epsilon=0.9999876889969385),
                  EpsilonAtDelta(delta=1e-6, epsilon=1.0),
                  EpsilonAtDelta(delta=1e-9, epsilon=None)],
        pure_epsilon=None,
        risk=_risk(0.9999876889969385, 1e-5, [
            ("membership-tpr", {"fpr": 1e-3}, 1e-3, 0.00271928, None, 0.00272825),
            ("membership-tpr", {"fpr": 1e-5}, 1e-5, 2.818e-05, None, 3.718e-05),
            ("attribute-inference", {"values": 2}, 0.5, 0.81606065, None, 0.81606169),
            ("reidentification", {"candidates": 10000}, 1e-4, 0.00027283, None, 0.00028182),
        ]),
        curve=_curve(rows),
        accounting=_accounting(0.0),
        warnings=[Caveat(code="report/no-finite-mu",
                          message="no finite μ: the mechanism has probability 10⁻⁶ of an "
                          "infinite privacy loss"),
                  Caveat(code="report/epsilon-unbounded",
                          message="ε is unbounded at δ = 10⁻⁹, below the mass at infinity")],
        spec_sha256="0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        spec_path="examples/approximate-dp-black-box.privspec.yaml",
    )


#: Every character LaTeX and Markdown treat specially, plus Unicode that pdflatex must handle.
NASTY = r"& % $ # _ { } ~ ^ \ < > | \" * ` [ ] ( ) ! + - . 50% $x$ \textbf{no} é ε μ ≤ ∞"


def special_characters() -> Report:
    """A composed pipeline whose user strings are full of special characters: Tier I."""
    base = dpsgd_tier1()
    stages = [
        StageSummary(name="search_{lr} & wd #1", description="8 Gaussian releases at noise "
                     "multiplier 12", repeat=8, mu=0.2357),
        StageSummary(name="training ~50% ^data^ \\o/", description="DP-SGD, 20,000 steps at "
                     "noise multiplier 1.1, Poisson sampling rate 0.004", repeat=1, mu=1.021),
        StageSummary(name="stats | $counts$ <b>*bold*</b>", description="Laplace count "
                     "queries, scale 2, sensitivity 1", repeat=3),
    ]
    return base.model_copy(update={
        "title": f"Ω & Co.: 100% of $5 on model_v2 #{{1}} ~x^2 \\path — {NASTY}",
        "description": "First paragraph with `code`, *stars* and a | pipe.\n\n"
        "Second paragraph: 5% & $3 #tag {braces} under_score ~tilde ^caret \\back.",
        "unit": "one user's records {id} & 50% \\ #1",
        "mechanism": MechanismSummary(
            kind="compose",
            noun="release",
            summary=f"Three named stages run on the same data: {NASTY}",
            stages=stages,
        ),
        "warnings": [Caveat(code="report/special_chars",
                             message=f"a caveat with special characters: {NASTY}")],
        "spec_path": "examples/special & chars_100%.privspec.yaml",
        "published": PublishedComparison(epsilon=8.0, delta=1e-5, epsilon_privspec=None,
                                         source=f"a source with {NASTY}"),
    })


#: Every fixture by name, the golden files' base names.
FIXTURES: dict[str, Callable[[], Report]] = {
    "dpsgd-tier1": dpsgd_tier1,
    "laplace-tier2": laplace_tier2,
    "approximate-dp-no-mu": approximate_dp_no_mu,
    "special-characters": special_characters,
}
