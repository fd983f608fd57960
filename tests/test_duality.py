"""Duality (docs/math.md §2): the δ(ε) implied by the computed curve is the accountant's δ(ε).

For every example spec and many ε, including large ε where δ ≤ 1e-9, the curve's
δ(ε) = max over α of (1 − e^ε α − f(α)) must equal dp-accounting's
``get_delta_for_epsilon(ε)``.  The curve may never be *more* pessimistic than that
beyond the FFT noise floor, and never optimistic except for the documented case: near ε = 0
the symmetric curve of an asymmetric PLD is tighter than the larger of the two pessimistic
directions (it stays above the smaller one, which still bounds the true, symmetric, total
variation).  The reported μ must cover the profile: δ(ε) ≤ δ_{G_μ}(ε) + τ.

A deliberately wrong symmetrization (the max of both directions' curves instead of the
envelope, Dong, Roth & Su Appendix F) is shown to fail the very same check.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from accountant_reference import accountant_pld

from privspec.numerics.accounting import PLD, pmfs_from_spec
from privspec.numerics.curve import (
    TradeoffCurve,
    curve_from_pmfs,
    delta_from_curve,
    pmfs_from_pld,
)
from privspec.numerics.gdp import gaussian_delta, gaussian_tradeoff, mu_from_curve
from privspec.spec.loader import load_spec
from privspec.spec.models import Spec

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.privspec.yaml"))

#: Relative slack allowed where the curve is *below* the accountant (asymmetric PLDs, ε ≈ 0).
BELOW_RELATIVE = 1e-6
#: Relative slack allowed where the curve is *above* the accountant.
ABOVE_RELATIVE = 1e-12
#: Rounding, absolute: the curve's δ is TPR − e^ε·α, a difference of O(1) numbers when ε
#: sits just below a loss of large mass (randomized response at ε → ln 3 gives 3e-17).
ROUNDING = 1e-15
#: The reference composition's own FFT noise in the tail (absolute).
ACCOUNTANT_NOISE = 1e-12


@functools.cache
def evaluated(path: Path) -> tuple[Spec, PLD, TradeoffCurve, float]:
    spec = load_spec(path)
    pld = accountant_pld(spec)
    curve = curve_from_pmfs(pmfs_from_spec(spec))
    return spec, pld, curve, mu_from_curve(curve, spec.accounting.floor)


@functools.cache
def profile(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """The ε grid of an example and the accountant's δ there (scalar calls, computed once)."""
    _, pld, _, _ = evaluated(path)
    epsilons = epsilons_for(pld)
    return epsilons, np.array([float(pld.get_delta_for_epsilon(e)) for e in epsilons])


@functools.cache
def noise_floor_of(path: Path) -> float:
    return noise_floor(evaluated(path)[1])


def noise_floor(pld: PLD) -> float:
    """Total |mass| of the negative probabilities FFT composition leaves in the PMFs.

    The accountant sums them; the curve drops them (pessimistically).  The difference of
    the two δ's is at most this.
    """
    # dp-accounting's self_compose raises an FFT to the T-th power: its values carry an
    # absolute error of order T·u relative to the peak (docs/math.md §2, "Composition noise"),
    # so far in the tail the reference is itself noisy; 10⁻¹² (the default floor τ)
    # bounds it for the examples.
    return (float(sum(-p.probs[p.probs < 0].sum() for p in pmfs_from_pld(pld)))
            + ROUNDING + ACCOUNTANT_NOISE)


def directional_deltas(pld: PLD, epsilon: float) -> list[float]:
    """δ(ε) of each direction from its PMF, summed with math.fsum."""
    out = []
    for p in pmfs_from_pld(pld):
        above = p.losses > epsilon
        terms = (1 - np.exp(epsilon - p.losses[above])) * p.probs[above]
        out.append(math.fsum(terms.tolist()) + p.infinity_mass)
    return out


def epsilons_for(pld: PLD) -> np.ndarray:
    """A dense ε grid near 0, a coarse one up to 30, and the ε's of tiny δ's."""
    grid = [np.linspace(0.0, 2.0, 41), np.linspace(2.0, 30.0, 57)]
    extra = []
    for delta in (1e-6, 1e-9, 1e-10, 1e-11, 1e-12, 1e-13):
        eps = float(pld.get_epsilon_for_delta(delta))
        if math.isfinite(eps):
            extra += [eps, eps + 0.05]
    return np.unique(np.concatenate([*grid, np.asarray(extra)]))


def widening(curve: TradeoffCurve | None, epsilon: float) -> float:
    """How much the curve's documented widenings can raise its δ(ε): tail sums of j terms
    moved by 2ju towards the attacker, and by the composition's relative error bound r
    (TPR·(1 + r), α·(1 − r); privspec.numerics.curve.points_from_pmf)."""
    if curve is None:
        return 0.0
    terms = max(c.losses.size for c in curve.points) + 1
    k = int(np.argmax(curve.tpr - math.exp(epsilon) * curve.alpha))
    scale = float(curve.tpr[k] + math.exp(epsilon) * curve.alpha[k])
    return (4 * 2.0**-53 * terms + 2 * curve.relative_error) * scale


def duality_violations(curve_delta: Callable[[float], float], path: Path,
                       curve: TradeoffCurve | None = None) -> list[str]:
    """Every ε where the curve's δ is not the accountant's, beyond the allowed slack."""
    floor = noise_floor_of(path)
    problems = []
    for eps, accountant in zip(*profile(path), strict=True):
        ours = curve_delta(float(eps))
        if ours > accountant * (1 + ABOVE_RELATIVE) + floor + widening(curve, float(eps)):
            problems.append(f"ε={eps:.4g}: curve δ={ours:.17g} above accountant {accountant:.17g}")
        if ours < accountant * (1 - BELOW_RELATIVE) - floor:
            problems.append(f"ε={eps:.4g}: curve δ={ours:.17g} below accountant {accountant:.17g}")
    return problems


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name.split(".")[0])
def test_curve_delta_equals_accountant_delta(path: Path) -> None:
    _, _, curve, _ = evaluated(path)
    assert duality_violations(lambda e: delta_from_curve(curve, e), path, curve) == []
    # The check reaches the tails where it matters, not only ε ≈ 0.
    tiny = [d for d in profile(path)[1] if 0 < d <= 1e-9]
    if curve.infinity_mass < 1e-12:
        assert len(tiny) >= 3


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name.split(".")[0])
def test_curve_never_below_the_smaller_direction(path: Path) -> None:
    """Where the curve is tighter than the accountant, it stays sound: the true profile is
    symmetric at ε = 0 (total variation) and each direction's PMF is pessimistic."""
    _, pld, curve, _ = evaluated(path)
    floor = noise_floor_of(path)
    for eps in np.linspace(0.0, 0.2, 11):
        smaller = min(directional_deltas(pld, float(eps)))
        assert delta_from_curve(curve, float(eps)) >= smaller * (1 - 1e-12) - floor


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name.split(".")[0])
def test_reported_mu_covers_the_privacy_profile(path: Path) -> None:
    spec, _, curve, mu = evaluated(path)
    tau = spec.accounting.floor
    if not math.isfinite(mu):
        assert curve.infinity_mass > tau
        return
    floor = noise_floor_of(path)
    for eps, accountant in zip(*profile(path), strict=True):
        bound = gaussian_delta(float(eps), mu) + tau
        # The curve's own profile: exactly what μ was fitted to.
        assert delta_from_curve(curve, float(eps)) <= bound + ROUNDING, eps
        # The accountant's profile too, without slack (docs/math.md §2): μ is fitted to both
        # directions' breakpoints, not only to the (tighter near ε = 0) symmetric curve.
        assert accountant - floor <= bound + ROUNDING, eps


def test_reported_mu_is_the_smallest_that_covers_the_curve() -> None:
    spec, _, curve, mu = evaluated(ROOT / "examples" / "cifar10-dpsgd-eps8.privspec.yaml")
    smaller = mu * (1 - 1e-4)
    # Somewhere the curve dips below G_μ' − τ for a slightly smaller μ'.
    alphas = curve.alpha[(curve.alpha > 0) & (curve.alpha < 1)]
    gap = np.interp(alphas, curve.alpha, curve.beta) - (gaussian_tradeoff(alphas, smaller)
                                                        - spec.accounting.floor)
    assert gap.min() < 0


# -- A wrong symmetrization must be caught ------------------------------------------------


def max_of_directions_delta(pld: PLD) -> Callable[[float], float]:
    """δ(ε) of the WRONG curve max(f_remove, f_add) (each direction symmetrized alone).

    The max of two convex piecewise-linear curves is convex with vertices at either
    curve's breakpoints or where they cross, so evaluating there is exact.  TPR = 1 − f
    is min(TPR_remove, TPR_add).
    """
    remove, add = (curve_from_pmfs((p,)) for p in pmfs_from_pld(pld))
    grid = np.unique(np.concatenate((remove.alpha, add.alpha)))
    diff = remove.tpr_at(grid) - add.tpr_at(grid)
    cross = np.flatnonzero(np.sign(diff[1:]) * np.sign(diff[:-1]) < 0)
    w = diff[cross] / (diff[cross] - diff[cross + 1])
    alpha = np.unique(np.concatenate((grid, grid[cross] + w * (grid[cross + 1] - grid[cross]))))
    tpr = np.minimum(remove.tpr_at(alpha), add.tpr_at(alpha))
    return lambda eps: float(max(0.0, np.max(tpr - math.exp(eps) * alpha)))


def test_max_of_directions_would_violate_duality() -> None:
    path = ROOT / "examples" / "cifar10-dpsgd-eps8.privspec.yaml"
    _, pld, curve, _ = evaluated(path)
    assert len(pmfs_from_pld(pld)) == 2  # asymmetric: Poisson subsampling
    wrong = duality_violations(max_of_directions_delta(pld), path)
    right = duality_violations(lambda e: delta_from_curve(curve, e), path, curve)
    assert right == []
    assert len(wrong) >= 5, wrong
    assert all("below accountant" in w for w in wrong)


# -- An independent accountant: prv_accountant (Gopi, Lee & Wutschitz 2021) ---------------------

PRV_CASES = [(1.0, 0.01, 1000), (9.4, 16384 / 50000, 2000), (0.8, 0.001, 10000)]


@pytest.mark.parametrize(("sigma", "q", "steps"), PRV_CASES)
def test_prv_accountant_brackets_our_delta(sigma: float, q: float, steps: int) -> None:
    from prv_accountant import PRVAccountant
    from prv_accountant.privacy_random_variables import PoissonSubsampledGaussianMechanism

    spec = Spec.model_validate({
        "privspec": 1, "title": "prv", "unit": "one example", "neighbouring": "add-or-remove",
        "mechanism": {"dpsgd": {"noise_multiplier": sigma, "sampling_rate": q,
                                "steps": steps}},
    })
    pld = accountant_pld(spec)
    curve = curve_from_pmfs(pmfs_from_spec(spec))
    mu = mu_from_curve(curve, spec.accounting.floor)
    prv = PRVAccountant(
        prvs=[PoissonSubsampledGaussianMechanism(sampling_probability=q, noise_multiplier=sigma)],
        max_self_compositions=[steps], eps_error=0.01, delta_error=1e-10)
    # compute_delta recomposes on every call; compose once and apply its own bracket.
    composed = prv.compute_composition([steps])

    def bracket(eps: float) -> tuple[float, float]:
        lower = float(composed.compute_delta_estimate(eps + prv.eps_error)) - prv.delta_error
        upper = float(composed.compute_delta_estimate(eps - prv.eps_error)) + prv.delta_error
        return lower, upper

    reference = prv.compute_delta(1.0, [steps])
    assert bracket(1.0) == pytest.approx((reference[0], reference[2]), rel=1e-12)
    checked = 0
    for eps in (0.25, 0.5, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0):
        lower, upper = bracket(eps)
        ours = delta_from_curve(curve, eps)
        accountant = float(pld.get_delta_for_epsilon(eps))
        # Ours is pessimistic: never below the independent lower bound ...
        assert ours >= lower and accountant >= lower, (eps, lower, ours)
        # ... and not far above its upper bound.
        assert ours <= upper * (1 + 1e-3) + 1e-15, (eps, upper, ours)
        # The reported μ covers the independent lower bound too (the optimistic-μ bug of
        # docs/math.md §2 would fail here for small sampling rates).
        assert gaussian_delta(eps, mu) + spec.accounting.floor >= lower, (eps, lower, mu)
        checked += lower > 0
    assert checked >= 3
