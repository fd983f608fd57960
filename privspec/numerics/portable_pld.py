"""Single releases' privacy-loss distributions as dp-accounting builds them, the same
on every CPU, and for Gaussians faster.

Connect-the-dots masses are second differences of δ(ε) (Doroshenko et al. 2022), so
the last bit of an exponential, which numpy's double-precision loops compute
differently with AVX-512, AVX2 + FMA or neither, moves some masses far more than one
ulp, and composing thousands of steps carries that into a report's digits.  Every
exponential and logarithm behind δ(ε) here is evaluated in long double (``_portable``),
which has one implementation everywhere: Gaussians (subsampled or not), and discrete
Gaussians and Laplace without subsampling (Laplace in closed form).  Other releases are
the library's.

``dp_accounting.pld.privacy_loss_distribution.from_gaussian_mechanism`` (connect-the-
dots, pessimistic) evaluates the mechanism's hockey-stick profile δ(ε) on its ε grid by
inverting the privacy loss one ε at a time in a Python loop: for a DP-SGD step that loop
costs about a third of the whole 2,000-step composition.  Here the same inverse, the
same formulas in the same order, is applied to the whole grid at once.  The Gaussian
PMF is then made by connect-the-dots (Doroshenko et al. 2022, Alg. 1) with each mass
accurate relative to itself (``_connect_the_dots_two_sided``): the library's masses
below the bulk are rounding noise clipped at 0, about 10⁻⁸ of extra mass per release at
h = 10⁻⁴, which a million DP-SGD steps turn into a μ twice too large.
``tests/test_portable_pld.py`` checks that each result's δ(ε) equals the library's.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from dp_accounting.pld import pld_pmf
from dp_accounting.pld import privacy_loss_distribution as plds
from dp_accounting.pld import privacy_loss_mechanism as plm
from scipy.special import ndtr

from privspec.errors import EvaluationError
from privspec.numerics.cost import (
    BYTES_PER_GRID_POINT,
    SECONDS_PER_GRID_POINT,
    CostError,
    factor_to_fit,
    gib,
    held,
    memory_budget,
    record_peak,
    spend,
)
from privspec.spec.group import binomial_weights


def _portable(function: np.ufunc, values: Any) -> Any:
    """``function`` (exp, expm1, log1p) evaluated in long double and rounded to double.

    numpy's double-precision exp and log have vector implementations chosen by the CPU
    (AVX-512, AVX2 + FMA, baseline) that differ in the last bit; composing thousands of
    steps amplifies such differences in a step's PMF into the fourth digit of a report.
    The long-double loops have one implementation everywhere, and are at least as
    accurate as the library's scalar ``math`` calls."""
    return np.asarray(function(np.asarray(values, dtype=np.longdouble)), dtype=np.float64)


class _GridGaussianLoss(plm.GaussianPrivacyLoss):  # type: ignore[misc]
    """dp-accounting's (subsampled) Gaussian privacy loss, with ``get_delta_for_epsilon``
    vectorised for the add and remove adjacencies."""

    def __init__(self, standard_deviation: float, **options: Any) -> None:
        super().__init__(standard_deviation, **options)
        self.variance = standard_deviation**2  # kept here: the library's copy is private

    def get_delta_for_epsilon(self, epsilon: Any) -> Any:
        """δ(ε) = μ_upper(X > x_ε) − e^ε μ_lower(X > x_ε) at x_ε = the inverse privacy loss,
        as the library computes it (``MonotonePrivacyLoss.get_delta_for_epsilon``)."""
        if (self.adjacency_type not in (plm.AdjacencyType.ADD, plm.AdjacencyType.REMOVE)
                or np.ndim(epsilon) == 0):
            return super().get_delta_for_epsilon(epsilon)
        epsilons = np.asarray(epsilon, dtype=float)
        deltas = np.zeros_like(epsilons)
        inverse, x = self._inverse(epsilons)
        if self.sampling_prob < 1.0 and self.adjacency_type == plm.AdjacencyType.REMOVE:
            deltas[~inverse] = -_portable(np.expm1, epsilons[~inverse])  # below the support
        deltas[inverse] = (self.mu_upper_cdf(x)
                           - _portable(np.exp, epsilons[inverse] + self.mu_lower_log_cdf(x)))
        if not np.all(np.isfinite(deltas)):
            # Past what double precision resolves (q within ~1e-12 of 1) the library's
            # scalar loop raises; never let a NaN through: do exactly what it does.
            return super().get_delta_for_epsilon(epsilon)
        return np.clip(deltas, 0, 1)

    def _inverse(self, epsilons: Any) -> tuple[Any, Any]:
        """(which ε have a finite inverse privacy loss, x_ε there), as the library's
        ``inverse_privacy_loss`` computes it for the add and remove pairs."""
        q, add = self.sampling_prob, self.adjacency_type == plm.AdjacencyType.ADD
        if q == 1.0:
            inverse = np.ones(epsilons.shape, dtype=bool)
            base_loss = epsilons  # the privacy loss without subsampling
        else:
            # Subsampling maps a loss ε to log(1 + (e^{±ε} − 1)/q) without it, computed as
            # the library's log_a_times_exp_b_plus_c(1/q, ±ε, 1 − 1/q); at the edge of
            # the support (math.isclose, as there) the inverse is ∓∞.
            # The library splits the grid at ±log1p(−q) and tests math.isclose against
            # ±log(1 − q): both are kept as they are there.
            split = -math.log1p(-q) if add else math.log1p(-q)
            edge = -math.log(1 - q) if add else math.log(1 - q)
            inverse = epsilons < split if add else epsilons > split
            inverted = epsilons[inverse]
            at_edge = np.abs(inverted - edge) <= 1e-9 * np.maximum(np.abs(inverted), abs(edge))
            b = -inverted if add else inverted
            a, c = 1 / q, 1 - 1 / q
            with np.errstate(divide="ignore", invalid="ignore"):
                d = b + math.log(a)
                moved = np.where(b == 0, math.log(a + c),
                                 d + _portable(np.log1p, -_portable(np.exp, math.log(-c) - d)))
            moved[at_edge] = -math.inf  # e^{±ε} = 1 − q: no loss left to subsample
            base_loss = np.empty_like(epsilons)
            base_loss[inverse] = -moved if add else moved
        x = -0.5 * self.sensitivity - base_loss[inverse] * self.variance / self.sensitivity
        return inverse, (self.sensitivity + x if add else x)

    def _survival(self, x: Any, upper: bool) -> Any:
        """Pr[X ≥ x] under μ_upper (``upper``) or μ_lower: for the remove pair μ_upper is
        (1 − q)·N(0, σ²) + q·N(−Δ, σ²) and μ_lower N(0, σ²); for the add pair μ_upper is
        N(0, σ²) and μ_lower (1 − q)·N(0, σ²) + q·N(Δ, σ²) (dp-accounting's)."""
        sigma, q = math.sqrt(self.variance), self.sampling_prob
        add = self.adjacency_type == plm.AdjacencyType.ADD
        centred = ndtr(-x / sigma)
        if upper == add:  # the unmixed side
            return centred
        shift = self.sensitivity if add else -self.sensitivity
        return (1 - q) * centred + q * ndtr(-(x - shift) / sigma)

    def gap(self, epsilon: Any) -> Any:
        """g(ε) = δ(ε) − (1 − e^ε) = e^ε·Q(L ≤ ε) − P(L ≤ ε) (L ≤ ε ⇔ X ≥ x_ε: the loss
        falls as x grows), small where δ is near 1 and computed from the lower tails."""
        epsilons = np.asarray(epsilon, dtype=float)
        gaps = np.zeros_like(epsilons)
        inside, x = self._inverse(epsilons)
        if self.sampling_prob < 1.0 and self.adjacency_type == plm.AdjacencyType.ADD:
            gaps[~inside] = _portable(np.expm1, epsilons[~inside])  # above: δ = 0, g = e^ε − 1
        with np.errstate(invalid="ignore", over="ignore"):  # e^ε beyond 709: inf, then nan
            gaps[inside] = (_portable(np.exp, epsilons[inside]) * self._survival(x, upper=False)
                            - self._survival(x, upper=True))
        # e^ε overflows far above the bulk (ε > 709): the gap is unknown there, not 0.
        return np.where(np.isnan(gaps), np.inf, np.maximum(gaps, 0.0))


#: Largest privacy loss privspec accounts: e^{−y} must stay a normal double for the
#: curve's α sums (it underflows near y = 708). Mass beyond it counts as unbounded
#: (δ∞), which the report then states as such: pessimistic, and at such losses the
#: output singles out the record in any case.
MAX_LOSS = 700.0


def _grid_range(bounds: Any, discretization: float) -> tuple[int, int]:
    """The grid indices [lower, upper] of connect-the-dots, within ±``MAX_LOSS``: δ(ε)
    at the last point goes to +∞, so mass beyond it is pessimistically unbounded, and
    mass below the first point is treated as if at it (a larger loss, never safer)."""
    upper = math.ceil(min(bounds.epsilon_upper, MAX_LOSS) / discretization)
    lower = math.floor(max(bounds.epsilon_lower, -MAX_LOSS) / discretization)
    return lower, max(lower, upper)


class RangeError(EvaluationError):
    """A release whose privacy loss is beyond what the numerical curve can hold; the
    evaluator answers with the closed-form bound where the mechanism has one."""


def refuse_loss_above_range(loss: float) -> None:
    """Refuse a release whose privacy loss exceeds ``MAX_LOSS``, saying why."""
    if loss > MAX_LOSS:
        size = f"of {loss:.4g}" if math.isfinite(loss) else f"above {MAX_LOSS:g}"
        raise RangeError(
            f"a release has a privacy loss {size} (an ε that large): e^(−loss) is below "
            "what double precision holds, so its trade-off curve cannot be drawn; "
            f"privspec accounts losses up to {MAX_LOSS:g}. A release like this reveals the "
            "record outright: more noise (or a smaller ε) brings it within range")


#: Estimated seconds per grid point where dp-accounting builds a release itself.
LIBRARY_SECONDS_PER_GRID_POINT = 2e-6
#: Estimated seconds per grid point of a mixture of Gaussians, whose privacy losses
#: dp-accounting inverts point by point by bisection (measured: 1e-4 s a point on 2 cores
#: shared three ways, at 1 to 300 records a unit; a laptop's third of it, rounded up).
MIXTURE_SECONDS_PER_GRID_POINT = 4e-5


def _check_library_grid(loss: Any, discretization: float, *,
                        seconds_per_point: float = LIBRARY_SECONDS_PER_GRID_POINT) -> None:
    """Before dp-accounting builds the PLD of ``loss`` itself: its grid is not cut at
    ±``MAX_LOSS`` (``RangeError`` beyond), and must fit both budgets."""
    bounds = loss.connect_dots_bounds()
    refuse_loss_above_range(max(bounds.epsilon_upper, -bounds.epsilon_lower))
    check_grid(*_grid_range(bounds, discretization), discretization,
               seconds_per_point=seconds_per_point)


def check_grid(lower: int, upper: int, discretization: float, *,
               seconds_per_point: float = SECONDS_PER_GRID_POINT) -> None:
    """Raise ``CostError`` before building a privacy-loss grid [lower, upper]·h that would
    take more than the memory budget, or bring the time spent beyond its budget."""
    check_grids([(lower, upper)], discretization, seconds_per_point=seconds_per_point)


def check_grids(ranges: list[tuple[int, int]], discretization: float, *,
                seconds_per_point: float = SECONDS_PER_GRID_POINT) -> None:
    """``check_grid`` for the grids of one release's directions together, before any is
    built: an attempt refused half-way would spend the time budget on a grid it drops.
    They are built one after the other: memory is the largest's, time all of theirs."""
    lower, upper = max(ranges, key=lambda bounds: bounds[1] - bounds[0])
    points = upper - lower + 1
    estimate = points * BYTES_PER_GRID_POINT
    if held() + estimate <= memory_budget():  # beside the releases built so far
        record_peak(held() + estimate)
        total = sum(up - low + 1 for low, up in ranges)
        spend(total * seconds_per_point, f"building a release of {total:,} grid points")
        return
    raise CostError(
        f"one release's privacy loss spans [{lower * discretization:.4g}, "
        f"{upper * discretization:.4g}]: {points:,} grid points at discretization "
        f"h = {discretization:g}, about {gib(estimate)} to build", estimate,
        factor_to_fit(held() + estimate))


#: Estimated seconds per noise value a discrete release's privacy losses are computed at,
#: one by one in Python: dp-accounting's connect-the-dots loop without sampling, and
#: (about three times as long) with sampling, per direction, or privspec's discrete
#: Gaussian; and per grid point its δ(ε) is evaluated at (an inversion each).
SECONDS_PER_NOISE_VALUE = 5e-7
SLOW_SECONDS_PER_NOISE_VALUE = 1.5e-6
SECONDS_PER_DISCRETE_POINT = 3e-6


def check_discrete_release(values: int, largest_loss: float, discretization: float, *,
                           directions: int = 1,
                           seconds_per_value: float = SLOW_SECONDS_PER_NOISE_VALUE) -> None:
    """Before a discrete release's PLD is built from its ``values`` noise values (per
    direction), whose losses lie within ±``largest_loss``: the loop over the values
    costs the same at any discretization (``spend`` with ``fixed``), the grid points
    next to each loss (at most two a value) as any grid does (``check_grids``)."""
    spend(directions * values * seconds_per_value, f"summing over {values:,} noise values", fixed=True)
    half = min(values, math.ceil(min(largest_loss, MAX_LOSS) / discretization) + 1)
    check_grids([(-half, half)] * directions, discretization,
                seconds_per_point=SECONDS_PER_DISCRETE_POINT)


def _connect_the_dots(loss: Any, discretization: float) -> Any:
    """The pessimistic connect-the-dots PMF of a continuous monotone privacy loss, as
    ``privacy_loss_distribution._create_pld_pmf_from_monotone_privacy_loss`` makes it."""
    bounds = loss.connect_dots_bounds()
    lower, upper = _grid_range(bounds, discretization)
    check_grid(lower, upper, discretization)
    deltas = loss.get_delta_for_epsilon(np.arange(lower, upper + 1) * discretization)
    return pld_pmf.create_pmf_pessimistic_connect_dots_fixed_gap(discretization, lower, upper,
                                                                 deltas)


def _connect_the_dots_two_sided(loss: _GridGaussianLoss, discretization: float) -> Any:
    """Connect-the-dots (Doroshenko et al. 2022, Alg. 1) with every mass accurate to
    rounding relative to itself, not to the profile's magnitude.

    A mass at εᵢ is a second difference of δ(ε) divided by e^h − 1; where δ is near
    1 − e^ε (below the bulk of the losses) its rounding, u/h per mass, is far larger than the masses, and
    clipping the negative ones to 0 adds mass: about 10⁻⁸ per Gaussian release at
    h = 10⁻⁴ and 10⁻⁶ at 10⁻⁵, which a million compositions turn into a curve several
    times too loose.  Since 1 − e^ε has second differences exactly 0 in this formula,
    the masses are taken from the gap g(ε) = δ(ε) − (1 − e^ε) = e^ε·Q(L ≤ ε) − P(L ≤ ε)
    wherever it is smaller than δ, computed from the lower tails
    (``_GridGaussianLoss.gap``): the same masses in exact arithmetic.  The caller has
    checked the grid against the budgets (``check_grids``).
    """
    lower, upper = _grid_range(loss.connect_dots_bounds(), discretization)
    epsilons = np.arange(lower, upper + 1) * discretization
    deltas = np.minimum.accumulate(loss.get_delta_for_epsilon(epsilons))
    if deltas.size < 3:
        return pld_pmf.create_pmf_pessimistic_connect_dots_fixed_gap(
            discretization, lower, upper, deltas)
    gaps = loss.gap(epsilons)
    grow, step = math.expm1(discretization), math.exp(discretization)
    by_delta = np.diff(deltas)
    with np.errstate(invalid="ignore"):  # inf − inf far above the bulk, where δ is used
        by_gap = np.diff(gaps)
    near_one = gaps < deltas  # where δ's own rounding would swamp the masses
    # (e^ε in the gap overflows for ε above about 709, far above the bulk: δ is used there.)
    from_gap = near_one[1:-1] & np.isfinite(gaps[2:])
    with np.errstate(invalid="ignore", over="ignore"):
        probs = np.where(from_gap, (by_gap[1:] - by_gap[:-1] * step) / grow,
                         (by_delta[1:] - by_delta[:-1] * step) / grow)
    first = (-gaps[0] + by_gap[0] / grow if near_one[0]
             else 1 - deltas[0] + by_delta[0] / grow)
    last = by_delta[-1] / math.expm1(-discretization)
    probs = np.maximum(0.0, np.concatenate(([first], probs, [last])))
    # Rounding can leave the total a few 10⁻¹² short of 1, and a composition of a
    # deficient PMF is optimistic: the shortfall goes to the lowest loss, where it moves
    # no δ(ε) of this release and only raises those of compositions.
    probs[0] += max(0.0, 1.0 - float(deltas[-1]) - math.fsum(probs))
    return pld_pmf.DensePLDPmf(discretization, lower, probs, float(deltas[-1]), True)


#: dp-accounting's default for how much of a Gaussian's tails a PLD may cut (to +∞).
LOG_TAIL_MASS = -50.0


def gaussian_pld(standard_deviation: float, *, sensitivity: float = 1.0,
                 sampling_prob: float = 1.0, discretization: float,
                 replace_one: bool = False, log_tail_mass: float = LOG_TAIL_MASS) -> Any:
    """``from_gaussian_mechanism(standard_deviation, sensitivity=…, sampling_prob=…,
    value_discretization_interval=discretization, use_connect_dots=True,
    log_mass_truncation_bound=log_tail_mass, …)``.

    Under add-or-remove the result is symmetric when nothing is subsampled and has a
    remove and an add direction otherwise; replace-one is left to the library.
    """
    if replace_one:  # built by the library, whose grid is the same: checked first
        _check_library_grid(plm.GaussianPrivacyLoss(
            standard_deviation, sensitivity=sensitivity, sampling_prob=sampling_prob,
            adjacency_type=plm.AdjacencyType.REPLACE,
            log_mass_truncation_bound=log_tail_mass), discretization)
        return plds.from_gaussian_mechanism(
            standard_deviation, sensitivity=sensitivity, sampling_prob=sampling_prob,
            value_discretization_interval=discretization, use_connect_dots=True,
            neighboring_relation=plds.NeighborRel.REPLACE_ONE,
            log_mass_truncation_bound=log_tail_mass)

    adjacencies = ([plm.AdjacencyType.REMOVE] if sampling_prob == 1.0
                   else [plm.AdjacencyType.REMOVE, plm.AdjacencyType.ADD])
    losses = [_GridGaussianLoss(standard_deviation, sensitivity=sensitivity,
                                sampling_prob=sampling_prob, adjacency_type=adjacency,
                                log_mass_truncation_bound=log_tail_mass)
              for adjacency in adjacencies]
    check_grids([_grid_range(loss.connect_dots_bounds(), discretization) for loss in losses],
                discretization)
    return plds.PrivacyLossDistribution(
        *(_connect_the_dots_two_sided(loss, discretization) for loss in losses))


def mixture_gaussian_pld(standard_deviation: float, records: int, rate: float, *,
                         discretization: float, log_tail_mass: float = LOG_TAIL_MASS) -> Any:
    """``from_mixture_gaussian_mechanism(standard_deviation, [0, 1, …, records],
    binomial weights, pessimistic_estimate=True, …)``: a Gaussian release of sensitivity
    1 a record on a Poisson-sampled batch (``rate``) on which one unit has ``records``
    records, its remove and add directions (Ganesh 2024, arXiv:2401.10294, Thm 3.1).
    Built by the library; both grids are checked against the budgets first."""
    sensitivities = [float(j) for j in range(records + 1)]
    weights = binomial_weights(records, rate)
    for adjacency in (plm.AdjacencyType.REMOVE, plm.AdjacencyType.ADD):
        _check_library_grid(plm.MixtureGaussianPrivacyLoss(
            standard_deviation, sensitivities, weights, adjacency_type=adjacency,
            log_mass_truncation_bound=log_tail_mass), discretization,
            seconds_per_point=MIXTURE_SECONDS_PER_GRID_POINT)
    return plds.from_mixture_gaussian_mechanism(
        standard_deviation, sensitivities, weights, pessimistic_estimate=True,
        value_discretization_interval=discretization, log_mass_truncation_bound=log_tail_mass,
        use_connect_dots=True)


def truncated_poisson_pld(noise_multiplier: float, rate: float, dataset_size: int,
                          truncated_batch: int, *, discretization: float,
                          log_tail_mass: float = LOG_TAIL_MASS) -> Any:
    """``from_truncated_subsampled_gaussian_mechanism(...)`` under zero-out neighbours
    (dp-accounting's ``REPLACE_SPECIAL``): a mixture of the Poisson-sampled Gaussian and,
    when the batch is truncated, a sensitivity-2 one (McKenna et al. 2025).  Built by the
    library; both grids are checked against the budgets first."""
    for sigma, adjacencies, prob in (
            (noise_multiplier, (plm.AdjacencyType.REMOVE, plm.AdjacencyType.ADD), rate),
            (noise_multiplier / 2, (plm.AdjacencyType.REPLACE,), 1.0)):
        for adjacency in adjacencies:
            _check_library_grid(plm.GaussianPrivacyLoss(
                sigma, sampling_prob=prob, adjacency_type=adjacency,
                log_mass_truncation_bound=log_tail_mass), discretization)
    return plds.from_truncated_subsampled_gaussian_mechanism(
        dataset_size=dataset_size, sampling_probability=rate,
        truncated_batch_size=truncated_batch, noise_multiplier=noise_multiplier,
        value_discretization_interval=discretization, log_mass_truncation_bound=log_tail_mass,
        neighboring_relation=plds.NeighborRel.REPLACE_SPECIAL)


class _PortableDiscreteGaussianLoss(plm.DiscreteGaussianPrivacyLoss):  # type: ignore[misc]
    """dp-accounting's discrete Gaussian privacy loss (no subsampling), its noise PMF and
    CDF tables and the exponential in δ(ε) computed in long double.

    The library fills its tables with numpy's double-precision logaddexp and exp, whose
    last bits change with the CPU; ``tests/test_portable_pld.py`` checks that these
    tables equal the library's to rounding (and so that their meaning has not changed).
    """

    def __init__(self, sigma: float, sensitivity: int) -> None:
        super().__init__(sigma, sensitivity=sensitivity)
        bound = self._truncation_bound
        values = np.arange(-bound, bound + 1, dtype=np.longdouble)
        log_pmf = np.concatenate(([-np.inf], -0.5 * values**2 / np.longdouble(sigma) ** 2))
        log_cdf = np.logaddexp.accumulate(log_pmf)
        log_pmf -= log_cdf[-1]
        log_cdf -= log_cdf[-1]
        self._log_pmf_array = np.asarray(log_pmf, dtype=np.float64)
        self._log_cdf_array = np.asarray(log_cdf, dtype=np.float64)
        self._pmf_array = np.asarray(np.exp(log_pmf), dtype=np.float64)
        self._cdf_array = np.asarray(np.exp(log_cdf), dtype=np.float64)

    def get_delta_for_epsilon(self, epsilon: Any) -> Any:
        """δ(ε) = μ_upper(X ≤ x_ε) − e^ε μ_lower(X ≤ x_ε) at the inverse privacy loss x_ε
        (the losses fall as x grows)."""
        if np.ndim(epsilon) == 0:
            return float(self.get_delta_for_epsilon(np.array([epsilon]))[0])
        epsilons = np.asarray(epsilon, dtype=float)
        cutoffs = np.array([self.inverse_privacy_loss(e) for e in epsilons])
        deltas = (self.mu_upper_cdf(cutoffs)
                  - _portable(np.exp, epsilons + self.mu_lower_log_cdf(cutoffs)))
        return np.clip(deltas, 0, 1)


class _PortableLaplaceLoss(plm.LaplacePrivacyLoss):  # type: ignore[misc]
    """dp-accounting's Laplace privacy loss (no subsampling) with δ(ε) in closed form, in
    long double: with ε₀ = Δ/b, δ(ε) = 1 − e^{(ε − ε₀)/2} for |ε| < ε₀, 0 from ε₀ on and
    1 − e^ε up to −ε₀ (the hockey-stick divergence of Laplace(0, b) and Laplace(Δ, b))."""

    def get_delta_for_epsilon(self, epsilon: Any) -> Any:
        if np.ndim(epsilon) == 0:
            return float(self.get_delta_for_epsilon(np.array([epsilon]))[0])
        epsilons = np.asarray(epsilon, dtype=np.longdouble)
        top = np.longdouble(self.sensitivity) / np.longdouble(self.parameter)
        deltas = np.where(epsilons >= top, 0.0,
                          np.where(epsilons <= -top, -np.expm1(epsilons),
                                   -np.expm1((epsilons - top) / 2)))
        return np.asarray(deltas, dtype=np.float64)


#: Largest number of noise values a discrete Gaussian release is summed over (about 2 s).
MAX_DISCRETE_SUPPORT = 2_000_000


def check_discrete_support(sigma: float, sensitivity: int) -> None:
    """Raise ``CostError`` (no grid helps) for a discrete Gaussian with more noise values
    than ``MAX_DISCRETE_SUPPORT`` to sum over."""
    support = 24 * sigma  # about dp-accounting's truncation bound, both sides
    if support > MAX_DISCRETE_SUPPORT:
        count = f"{math.ceil(support):,}" if support < 1e12 else f"{support:.1e}"
        raise CostError(
            f"a discrete Gaussian of σ = {sigma:g} has about {count} noise values to sum "
            f"over, more than the {MAX_DISCRETE_SUPPORT:,} privspec sums (time, not memory, "
            f"is the limit); its μ is about Δ/σ = {sensitivity / sigma:.3g}", math.inf,
            math.inf)


def discrete_gaussian_pld(sigma: float, *, sensitivity: int, discretization: float) -> Any:
    """``from_discrete_gaussian_mechanism(sigma, sensitivity=…, value_discretization_interval=
    discretization, use_connect_dots=True)``, without subsampling: a symmetric PLD.

    Connect-the-dots for a discrete loss (Doroshenko et al. 2022): δ(ε) on the grid
    points just below and above each of the mechanism's privacy losses, then the
    library's ``create_pmf_pessimistic_connect_dots``.
    """
    check_discrete_support(sigma, sensitivity)
    loss = _PortableDiscreteGaussianLoss(sigma, sensitivity)
    bounds = loss.connect_dots_bounds()
    check_discrete_release(bounds.upper_x - bounds.lower_x + 1, max(
        abs(loss.privacy_loss(bounds.upper_x)), abs(loss.privacy_loss(bounds.lower_x))),
        discretization)
    grid: set[int] = set()
    for x in range(bounds.lower_x, bounds.upper_x + 1):
        scaled = loss.privacy_loss(x) / discretization
        grid.update((math.floor(scaled), math.ceil(scaled)))
    points = np.array(sorted(grid))
    deltas = loss.get_delta_for_epsilon(points * discretization)
    return plds.PrivacyLossDistribution(
        pld_pmf.create_pmf_pessimistic_connect_dots(discretization, points, deltas))


def sampled_laplace_pld(scale: float, *, sensitivity: float, sampling_prob: float,
                        discretization: float) -> Any:
    """``from_laplace_mechanism(scale, sensitivity=…, sampling_prob=…,
    value_discretization_interval=discretization, use_connect_dots=True)``: built by the
    library, both directions' grids checked against the budgets together first."""
    bounds = [plm.LaplacePrivacyLoss(scale, sensitivity=sensitivity, sampling_prob=sampling_prob,
                                     adjacency_type=adjacency).connect_dots_bounds()
              for adjacency in (plm.AdjacencyType.REMOVE, plm.AdjacencyType.ADD)]
    check_grids([_grid_range(b, discretization) for b in bounds], discretization,
                seconds_per_point=LIBRARY_SECONDS_PER_GRID_POINT)
    return plds.from_laplace_mechanism(
        scale, sensitivity=sensitivity, sampling_prob=sampling_prob,
        value_discretization_interval=discretization, use_connect_dots=True)


def laplace_pld(scale: float, *, sensitivity: float, discretization: float) -> Any:
    """``from_laplace_mechanism(scale, sensitivity=…, value_discretization_interval=
    discretization, use_connect_dots=True)``, without subsampling: a symmetric PLD."""
    loss = _PortableLaplaceLoss(scale, sensitivity=sensitivity)
    return plds.PrivacyLossDistribution(_connect_the_dots(loss, discretization))


def discrete_loss_pld(atoms: list[tuple[float, float]], *, infinity_mass: float = 0.0,
                      discretization: float) -> Any:
    """A symmetric PLD from the privacy-loss atoms (loss y, probability under P) of a
    mechanism with finitely many outputs, plus mass at +∞, by connect-the-dots
    (Doroshenko et al. 2022): δ(x) = p∞ + Σ_{y > x} p_y (1 − e^{x − y}) in long double on
    the grid points next to each atom.

    Unlike rounding each loss up (dp-accounting's ``from_privacy_parameters`` and
    ``from_randomized_response``), this keeps the pair's whole Q mass: rounding a loss of
    10⁻⁶ up to h = 10⁻⁴ leaves Q short by p·(1 − e^{−h}), which the symmetrized curve
    reads as a δ of 5 × 10⁻⁵ and which made ε = 10⁻⁶ read μ = 3.14.
    """
    grid: set[int] = set()
    for loss, _ in atoms:
        check_grid(math.floor(-abs(loss) / discretization),
                   math.ceil(abs(loss) / discretization), discretization)
        grid.update((math.floor(loss / discretization), math.ceil(loss / discretization)))
    points = np.array(sorted(grid))
    x = points.astype(np.longdouble) * np.longdouble(discretization)
    deltas = np.full(points.size, np.longdouble(infinity_mass))
    for loss, probability in atoms:
        # Below the grid point the atom rounds up to (at and above it the atom adds no δ,
        # so a pure-DP release keeps nothing at +∞).
        above = points < math.ceil(loss / discretization)
        deltas[above] += np.longdouble(probability) * -np.expm1(x[above] - np.longdouble(loss))
    deltas = np.clip(np.asarray(deltas, dtype=np.float64), 0.0, 1.0)
    return plds.PrivacyLossDistribution(
        pld_pmf.create_pmf_pessimistic_connect_dots(discretization, points, deltas))
