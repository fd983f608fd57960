"""Stage 2b: compose privacy-loss PMFs so that small probabilities stay accurate.

dp-accounting composes by raising an FFT to the T-th power; the result's absolute error
is of order T·u relative to its peak (u = 2⁻⁵³), so the δ(ε) values near the floor τ that
decide μ are noise for long runs, and the noise moves with the CPU's vector units and
with how a run is split (docs/math.md §2, "Composition noise").

Here each direction is composed by **exponential tilting** (the idea behind the
saddle-point accountant of Alghamdi, Asoodeh, Calmon, Gomez, Kosut & Sankar, ICML 2023):
for a real θ, p_θ(y) = p(y)e^{θy}/M(θ), and since tilting commutes with convolution,

    p^{*T}(y) = M(θ)^T · e^{−θy} · p_θ^{*T}(y).

With θ chosen so that the tilted composition has its bulk near y, the FFT computes
p_θ^{*T}(y) with a small *relative* error.  A few θ cover every loss from 0 (or the
lower tail) up to the loss whose upper tail is below the truncation budget; each loss
takes the estimate of the θ with the smallest error bound.  The bound per θ is stated
(``_tilted_estimate``: forward and inverse FFT rounding, the power, and the tilted mass
that wraps around the FFT's circle, bounded by Chernoff).  From each probability's
absolute bound follows the largest relative error of the sums the curve is made of
(``_sum_relative_error``), the composed PMF's ``relative_error``, which the curve adds on
the attacker's side (``curve.points_from_pmf``).  Mass above the covered range (at most
the truncation budget, by Chernoff) is moved to +∞; mass below it is left out of the head
sums only, which makes β smaller (pessimistic).  Narrow compositions are convolved
directly, and so are combs of few, widely spaced losses (discrete noise at a fine h)
while their atoms stay few.  A composition that no tilt resolves to a relative error of
``MAX_RELATIVE_ERROR`` goes to dp-accounting's and is marked ``certified=False``.

The input PMFs (dp-accounting's pessimistic connect-the-dots PMFs of single releases)
are taken as exact; equal releases are merged by the caller, so a run written as one
stage, as phases or with ``repeat`` is the same computation.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import reduce
from typing import Any, TypeVar

import numpy as np
import scipy.fft
from dp_accounting.pld import common, pld_pmf
from dp_accounting.pld import privacy_loss_distribution as pld_module

from privspec.numerics import progress
from privspec.numerics.cost import (
    CostError,
    check,
    fft_plans,
    keep,
    require,
    spend,
)
from privspec.numerics.curve import FloatArray, LossPMF, pmfs_from_pld

_U = 2.0**-53
T = TypeVar("T")
#: Rounding per FFT stage, in units of u times the transform's ℓ1 input norm.
_FFT_STAGE_ERROR = 6.0
#: Relative error aimed at for every composed probability.
TARGET_RELATIVE_ERROR = 1e-7
#: Beyond this relative error the tilted composition gives way to dp-accounting's.
MAX_RELATIVE_ERROR = 1e-3
#: Compositions whose (lattice-compressed) support is at most this wide are convolved
#: directly: sums of non-negative products, relatively accurate everywhere.
DIRECT_WIDTH = 4096
#: Products a direct convolution of distinct releases may make (``_direct_cost``).
DIRECT_PRODUCTS = 200_000_000
#: Products of atoms the sparse direct convolution may form in all, before it gives way
#: to the tilted FFT (each product costs some 30 bytes while it is summed).
SPARSE_PRODUCTS = 4_000_000


class CompositionError(ValueError):
    """The tilted composition cannot reach the accuracy privspec reports."""


def _support(pmf: LossPMF) -> tuple[int, int, int]:
    """(first, last, gcd of the gaps) of the grid indices with positive mass."""
    if pmf.grid is None:
        raise ValueError("a composed PMF must lie on a discretization grid")
    lowest = pmf.grid[1]
    where = np.flatnonzero(pmf.probs > 0)
    if not where.size:
        return lowest, lowest, 0
    gaps = np.diff(where)
    step = int(reduce(math.gcd, np.unique(gaps).tolist(), 0)) if gaps.size else 0
    return lowest + int(where[0]), lowest + int(where[-1]), step


def _tilt(exponents: FloatArray, offsets: FloatArray, theta: float) -> tuple[FloatArray, float]:
    """p_θ = p·e^{θm}/M(θ) from log p, normalised, and log M(θ)."""
    z = exponents + theta * offsets
    top = float(z.max())
    w = np.exp(z - top)
    total = float(w.sum())
    w /= total
    return w, top + math.log(total)


@dataclass
class _Part:
    """A factor on the composition's lattice: entry m is grid index g·(a + m) + ρ."""

    a: int
    rho: int
    probs: FloatArray
    count: int
    exponents: FloatArray = field(init=False)  # log p (−∞ where p = 0)
    offsets: FloatArray = field(init=False)    # m, as floats

    def __post_init__(self) -> None:
        with np.errstate(divide="ignore"):
            self.exponents = np.log(self.probs)
        self.offsets = np.arange(self.probs.size, dtype=np.float64)


def _solve(fn: Callable[[float], float], scale: float) -> float:
    """A root of the increasing function ``fn``: a bracket by doubling steps from 0
    (the first of size ``scale`` > 0) towards the sign change, then the Illinois
    variant of regula falsi."""
    a, fa = 0.0, fn(0.0)
    if fa == 0:
        return a
    b = scale if fa < 0 else -scale
    fb = fn(b)
    while (fb < 0) == (fa < 0):
        if abs(b) > 1e6:
            return b
        a, fa = b, fb
        b *= 2
        fb = fn(b)
    for _ in range(200):
        c = b - fb * (b - a) / (fb - fa)
        fc = fn(c)
        if fc == 0 or abs(b - a) <= 1e-10 * max(abs(a), abs(b)) or abs(fc) < 1e-9:
            return c
        if (fc < 0) != (fb < 0):
            a, fa = b, fb
        else:  # ``a`` is kept again: halve its weight (Illinois)
            fa *= 0.5
        b, fb = c, fc
    return b


class _Lattice:
    """The composition on its lattice J = g·K + R, with its cumulant generating function
    K(θ) = Σ cᵢ log Σ pᵢ(y) e^{θy} in the lattice's own units (θ per lattice step)."""

    def __init__(self, parts: Sequence[_Part], g: int, r: int) -> None:
        self.parts, self.g, self.r = list(parts), g, r
        self.base = sum(p.count * p.a for p in parts)  # K of every part's first entry
        self.width = sum(p.count * (p.probs.size - 1) for p in parts)
        self.steps = sum(p.count for p in parts)
        self._cache: dict[float, tuple[float, float, float]] = {}
        # Every part's positive entries in one array, for cgf's segment-wise sums.
        positive = [p.probs > 0 for p in parts]
        self._exponents = np.concatenate([p.exponents[k] for p, k in zip(parts, positive, strict=True)])
        self._offsets = np.concatenate([p.offsets[k] for p, k in zip(parts, positive, strict=True)])
        self._sizes = np.array([int(k.sum()) for k in positive])
        self._starts = np.concatenate(([0], np.cumsum(self._sizes)[:-1]))
        self._counts = np.array([float(p.count) for p in parts])

    def cgf(self, theta: float) -> tuple[float, float, float]:
        """K(θ), K'(θ), K''(θ) of the composed offset M = K − base (θ per lattice step)."""
        if theta in self._cache:
            return self._cache[theta]
        z = self._exponents + theta * self._offsets
        top = np.maximum.reduceat(z, self._starts)
        w = np.exp(z - np.repeat(top, self._sizes))
        total = np.add.reduceat(w, self._starts)
        mean = np.add.reduceat(w * self._offsets, self._starts) / total
        spread = self._offsets - np.repeat(mean, self._sizes)
        var = np.add.reduceat(w * spread * spread, self._starts) / total
        result = (float(self._counts @ (top + np.log(total))), float(self._counts @ mean),
                  float(self._counts @ var))
        self._cache[theta] = result
        return result

    def log_mass_above(self, x: float) -> float:
        """log of a Chernoff bound on Pr[M ≥ x]: K(θ) − θx at K'(θ) = x (0 below the mean)."""
        if x > self.width:
            return -math.inf
        if x <= self.cgf(0.0)[1]:
            return 0.0
        theta = _solve(lambda t: self.cgf(t)[1] - x, 1.0 / math.sqrt(max(self.cgf(0.0)[2], 1.0)))
        k0, k1, _ = self.cgf(theta)
        return min(0.0, k0 - theta * k1)

    def tail_edge(self, log_mass: float, upper: bool, theta: float = 0.0) -> tuple[float, float]:
        """(offset x, log bound): the θ-tilted composition has at most e^{log bound} (the
        solver's nearest to e^{log_mass}) of its mass above x (``upper``) or below it, by
        Chernoff:
        Pr_θ[M ≥ x] ≤ e^{K(θ+λ) − K(θ) − λx} at x = K'(θ + λ), λ > 0 (λ < 0 below).
        x is the support's end, with bound −∞, when even that end keeps more."""
        sign = 1.0 if upper else -1.0
        end = float(self.width) if upper else 0.0
        k_theta = self.cgf(theta)[0]

        def bound(step: float) -> float:
            k0, k1, _ = self.cgf(theta + step)
            return k0 - k_theta - step * k1

        spread = math.sqrt(max(self.cgf(theta)[2], 1.0))
        # bound(λ) falls as |λ| grows; solve bound = log_mass in the variable |λ|.
        step = _solve(lambda t: log_mass - bound(sign * t), 1.0 / spread)
        x = self.cgf(theta + sign * step)[1]
        if abs(x - end) <= 0.5 or bound(sign * step) > log_mass + 1e-6:
            return end, -math.inf
        return x, bound(sign * step)  # within the solver's 1e-9 of log_mass; never capped


def _fft_length(n: int) -> int:
    return int(scipy.fft.next_fast_len(max(n, 16), real=True))


def _wrapped(values: FloatArray, start: int, length: int) -> FloatArray:
    """``values`` placed at positions start, start + 1, … modulo ``length``."""
    out = np.zeros(length)
    shift = start % length
    first = min(values.size, length - shift)
    out[shift:shift + first] += values[:first]
    rest = values[first:]
    for begin in range(0, rest.size, length):
        chunk = rest[begin:begin + length]
        out[:chunk.size] += chunk
    return out


def _tilted_estimate(lattice: _Lattice, theta: float, length: int, wrapped_mass: float,
                     span: tuple[int, int], afford: Callable[[int], None] = lambda kept: None
                     ) -> tuple[FloatArray, FloatArray, float]:
    """One FFT of length L for the tilt θ, read over the offsets ``span`` = [a, b]
    (within the L offsets whose mass does not wrap around: ``wrapped_mass`` is the rest).
    ``afford`` is told how many spectral coefficients are kept once the first release's
    transform shows it, before the arrays of that size are allocated.

    Returns log p^{*}(offset) (−∞ where the value is within its error bound: then 0 is
    the estimate), the log of each value's absolute error bound, and the tilted error
    bound relative to the tilted peak.  The bound adds, per
    spectral coefficient, the forward FFT's rounding (``_FFT_STAGE_ERROR``·u per stage,
    for an input of ℓ1 norm 1) raised through the power cᵢ, the power's own rounding,
    then the inverse FFT's rounding and the tilted mass outside the window, which wraps
    into it (Chernoff: Pr_θ[M ≥ x] ≤ e^{K(θ+λ) − K(θ) − λx}).
    """
    stage_error = _FFT_STAGE_ERROR * _U * (math.log2(length) + 2)
    # One release at a time, so that memory does not grow with their number: the
    # bound log Π (|Ŵᵢ| + eᵢ)^{cᵢ}, log Π Ŵᵢ^{cᵢ} and the product's first-order error,
    # kept only for coefficients whose bound has not underflowed (each factor is ≤ 1,
    # so one that has cannot come back; the first release's power often leaves few).
    keep = np.arange(length // 2 + 1)
    log_bound = np.zeros(keep.size)
    log_product = np.zeros(0, dtype=np.complex128)
    first_order = np.zeros(0)  # relative error of the product, to first order
    origin, log_scale = 0, 0.0
    for index, part in enumerate(lattice.parts):
        w, log_mass = _tilt(part.exponents, part.offsets, theta)
        log_scale += part.count * log_mass
        centre = round(float(w @ part.offsets))
        origin += part.count * centre
        spectrum = scipy.fft.rfft(_wrapped(w, -centre, length))
        if index:
            spectrum = spectrum[keep]
        log_upper = np.abs(spectrum)
        log_upper += stage_error
        np.minimum(log_upper, 1.0, out=log_upper)
        np.log(log_upper, out=log_upper)
        log_bound += part.count * log_upper
        alive = np.flatnonzero(log_bound > -745.0)
        if alive.size < keep.size:
            keep, log_bound, spectrum, log_upper = (
                keep[alive], log_bound[alive], spectrum[alive], log_upper[alive])
            if index:
                log_product, first_order = log_product[alive], first_order[alive]
        del alive
        if not index:
            afford(keep.size)
            log_product, first_order = np.zeros(keep.size, dtype=np.complex128), np.zeros(keep.size)
        magnitude = np.abs(spectrum)
        with np.errstate(divide="ignore", invalid="ignore"):
            logs = np.log(spectrum)  # log|Ŵ| + i·arg Ŵ
        del spectrum  # (each array freed once used: a tilt's peak is its loop's)
        log_product.real += part.count * logs.real
        log_product.imag += np.fmod(part.count * logs.imag, 2 * math.pi)
        first_order += part.count * (stage_error / (magnitude + stage_error)
                                     + 4 * _U * (2 + np.abs(log_upper) + np.abs(logs.imag)))
        del magnitude, logs, log_upper
    product = np.zeros(length // 2 + 1, dtype=np.complex128)
    product[keep] = np.exp(log_product)
    del log_product
    tilted = scipy.fft.irfft(product, length)
    del product
    weights = np.where((keep == 0) | (2 * keep == length), 1.0, 2.0)
    bound = np.exp(log_bound) * weights
    error = (float(bound @ np.minimum(first_order, 2.0)) + stage_error * float(bound.sum())) / length
    error += wrapped_mass  # the tilted mass outside the window wraps into it
    a, b = span
    offsets = np.arange(a, b + 1)
    values = np.roll(tilted, origin - a)[:offsets.size]  # offset m sits at (m − origin) mod L
    tilt = log_scale - theta * offsets  # log p = tilt + log(tilted value)
    resolved = values > error
    # Where the value is within its error bound, all that is known is p ≤ 2·bound.
    log_estimate = np.full(offsets.size, -np.inf)
    log_estimate[resolved] = np.log(values[resolved]) + tilt[resolved]
    log_error = tilt + math.log(error)
    log_error[~resolved] += math.log(2.0)
    return log_estimate, log_error, error / max(float(tilted.max()), 1e-300)


def _power(base: T, count: int, convolve: Callable[[T, T], T | None]) -> T | None:
    """``base`` convolved with itself ``count`` ≥ 1 times, by repeated squaring (None as
    soon as ``convolve`` gives up)."""
    power: T | None = None
    step: T | None = base
    while count:
        assert step is not None
        if count & 1:
            power = step if power is None else convolve(power, step)
            if power is None:
                return None
        count >>= 1
        if count:
            step = convolve(step, step)
            if step is None:
                return None
    return power


def _direct(lattice: _Lattice) -> tuple[FloatArray, float]:
    """The composition by direct convolution (repeated squaring): sums of non-negative
    products, each within (terms)·u of its exact value."""
    result = np.ones(1)
    terms = 1
    for part in lattice.parts:
        power = _power(part.probs, part.count, np.convolve)
        assert power is not None
        result = np.convolve(result, power)
        terms = max(terms, result.size)
    return result, 4 * _U * terms * (lattice.steps + 1)


def _direct_cost(lattice: _Lattice) -> float:
    """Products a direct convolution of distinct releases makes (each run once): a wide
    release beside a few narrow ones is cheaper convolved than tilted.  Infinite when a
    release repeats (its powers are the tilted composition's job)."""
    if any(part.count > 1 for part in lattice.parts):
        return math.inf
    cost, size = 0.0, 1
    for part in lattice.parts:
        cost += float(size) * part.probs.size
        size += part.probs.size - 1
    return cost


def _sparse_convolve(a: tuple[np.ndarray, FloatArray, float], b: tuple[np.ndarray, FloatArray, float]
                     ) -> tuple[np.ndarray, FloatArray, float]:
    """Convolution of two PMFs given by their atoms (offsets, probabilities, relative
    error bound).  Every sum is of non-negative products and is added in one fixed
    order (``np.bincount``), so each result is within (error of a) + (error of b) +
    (terms + 1)·u of its exact value, and the same on every CPU."""
    (ia, pa, ea), (ib, pb, eb) = a, b
    first = int(ia[0] + ib[0])
    sums = ((ia - first)[:, None] + ib[None, :]).ravel()
    dense = np.bincount(sums, weights=np.outer(pa, pb).ravel())
    offsets = np.flatnonzero(dense > 0)
    return offsets + first, dense[offsets], ea + eb + (min(ia.size, ib.size) + 1) * _U


#: Bytes an atom-by-atom convolution takes per product: the index sums, the products
#: and their raveled copy (measured: 36 MB at 1.5 million products).
_SPARSE_BYTES_PER_PRODUCT = 32.0


def _sparse_direct(lattice: _Lattice) -> tuple[FloatArray, float] | None:
    """The composition by direct convolution of atoms, for factors with few positive
    entries spread far apart (discrete noise: its losses are a grid index apart by
    Δ/(σ²h), each split between two neighbouring indices by connect-the-dots), whose
    compositions are combs that an FFT resolves only at great cost.  None when the
    products needed exceed ``SPARSE_PRODUCTS``."""
    budget = SPARSE_PRODUCTS
    result: tuple[np.ndarray, FloatArray, float] = (np.zeros(1, dtype=np.int64), np.ones(1), 0.0)

    def convolve(a: tuple[np.ndarray, FloatArray, float], b: tuple[np.ndarray, FloatArray, float]
                 ) -> tuple[np.ndarray, FloatArray, float] | None:
        nonlocal budget
        budget -= a[0].size * b[0].size
        if budget < 0:
            return None
        require(_SPARSE_BYTES_PER_PRODUCT * a[0].size * b[0].size, "composing the releases")
        return _sparse_convolve(a, b)

    for part in lattice.parts:
        atoms = np.flatnonzero(part.probs > 0)
        power = _power((atoms, part.probs[atoms], 0.0), part.count, convolve)
        composed = None if power is None else convolve(result, power)
        if composed is None:
            return None
        result = composed
    offsets, values, relative = result
    probs = np.zeros(lattice.width + 1)
    probs[offsets] = values
    return probs, relative * 1.01  # 1.01: the second-order terms of the bound


def compose(factors: Sequence[tuple[LossPMF, int]], discretization: float,
            truncation: float, target: float = TARGET_RELATIVE_ERROR,
            upper: bool = False) -> LossPMF:
    """The PMF of the sum of ``count`` independent copies of each PMF (one direction),
    all on the grid of step ``discretization`` (negative FFT leftovers count as 0).

    ``truncation`` bounds the upper-tail mass moved to +∞.  The result's
    ``relative_error`` bounds the relative error of the sums the curve is made of.
    Raises ``CostError`` before a composition estimated to exceed a budget.
    ``upper``: each probability is replaced by an upper bound of it (its estimate plus
    its error bound), and the unresolved lower mass by an upper bound of it, for a PMF
    that is composed again (``relative_error`` 0: a composition takes its input as
    exact).
    """
    (composed,) = compose_directions([factors], discretization, truncation, target, upper)
    return composed


def compose_directions(directions: Sequence[Sequence[tuple[LossPMF, int]]],
                       discretization: float, truncation: float,
                       target: float = TARGET_RELATIVE_ERROR, upper: bool = False
                       ) -> tuple[LossPMF, ...]:
    """``compose`` for each direction's factors, with the time of all the tilted
    compositions estimated before any of them starts (so that a budget refuses the
    second direction before the first is composed, not after)."""
    jobs: list[_Job] = []
    try:
        for factors in directions:  # (each direction's lattice is kept until all are done)
            jobs.append(_Job.of(factors))
            keep(jobs[-1].bytes)
        tilted = [job for job in jobs if job.lattice is not None and job.direct is None]
        memory, seconds = [], []
        for job in tilted:
            assert job.lattice is not None
            extent = _extent(job.lattice, truncation)
            memory.append(estimated_memory(job.lattice, extent))
            check(memory[-1], "composing the releases")
            seconds.append(estimated_seconds(job.lattice, extent))
        if tilted:
            spend(sum(seconds), "composing the releases")
            # (noted only now: a composition refused for its time never runs)
            require(max(memory), "composing the releases")
        return tuple(job.run(discretization, truncation, target, upper) for job in jobs)
    finally:
        keep(-sum(job.bytes for job in jobs))


@dataclass
class _Job:
    """One direction's composition, ready to run: its factors, their lattice (None for a
    single release, returned as it is) and, when direct or sparse convolution does it,
    the result already."""

    factors: list[tuple[LossPMF, int]]
    lattice: _Lattice | None
    direct: tuple[FloatArray, float] | None

    @property
    def bytes(self) -> float:
        """Bytes of the lattice's copies of the releases, kept while the job lives."""
        return 0.0 if self.lattice is None else _LATTICE_BYTES_PER_ENTRY * _entries(self.lattice)

    @staticmethod
    def of(factors: Sequence[tuple[LossPMF, int]]) -> _Job:
        factors = [(f, c) for f, c in factors if c > 0]
        if not factors:
            raise ValueError("nothing to compose")
        if len(factors) == 1 and factors[0][1] == 1:
            return _Job(factors, None, None)
        entries = sum(f.probs.size for f, _ in factors)
        # The lattice's copies (``_LATTICE_BYTES_PER_ENTRY``) and their build's temporaries.
        require(_LATTICE_BUILD_BYTES_PER_ENTRY * entries, "composing the releases")
        supports = [_support(f) for f, _ in factors]
        # The lattice: every positive index of factor i is ≡ firstᵢ (mod gᵢ).
        g = reduce(math.gcd, [s[2] for s in supports], 0) or 1
        parts = []
        for (f, c), (first, last, _) in zip(factors, supports, strict=True):
            a, rho = divmod(first, g)
            skip = first - f.grid[1] if f.grid else 0
            probs = np.maximum(f.probs[skip:skip + last - first + 1:g], 0.0)
            parts.append(_Part(a, rho, np.ascontiguousarray(probs), c))
        lattice = _Lattice(parts, g, sum(p.count * p.rho for p in parts))
        if lattice.width + 1 <= DIRECT_WIDTH or _direct_cost(lattice) <= DIRECT_PRODUCTS:
            return _Job(factors, lattice, _direct(lattice))
        return _Job(factors, lattice, _sparse_direct(lattice))

    def run(self, h: float, truncation: float, target: float, upper: bool = False
            ) -> LossPMF:
        """The composed PMF (the tilted composition's cost already spent)."""
        factors, lattice = self.factors, self.lattice
        if lattice is None:
            return factors[0][0]
        start, moved, below = 0, 0.0, 0.0
        if self.direct is not None:
            probs, relative = self.direct
            if upper:  # (each sum within its relative bound)
                probs, relative = probs * (1 + relative), 0.0
        else:
            try:
                probs, relative, start, moved, below = _tilted(lattice, h, truncation, target,
                                                               upper)
            except CompositionError:
                return _accountant_compose(factors, h, truncation)
        if relative > MAX_RELATIVE_ERROR:
            return _accountant_compose(factors, h, truncation)
        log_finite = sum(c * (math.log1p(-f.infinity_mass) if f.infinity_mass < 1
                              else -math.inf) for f, c in factors)
        infinity_mass = -math.expm1(log_finite)
        g, r = lattice.g, lattice.r
        index0 = g * (lattice.base + start) + r  # grid index of probs[0]
        losses = (index0 + g * np.arange(probs.size)) * h
        grid = (g * h, index0 // g) if index0 % g == 0 else None
        return LossPMF(losses, probs, min(1.0, infinity_mass + moved), grid,
                       relative_error=relative, lower_mass=below)


def accountant_compose(factors: Sequence[tuple[LossPMF, int]], discretization: float,
                       truncation: float) -> Any:
    """dp-accounting's own FFT composition of the same PMFs (its ``DensePLDPmf``):
    ``self_compose`` for each count, then ``compose``."""
    result: Any = None
    for factor, count in factors:
        if factor.grid is None:
            raise ValueError("a composed PMF must lie on a discretization grid")
        pmf = pld_pmf.DensePLDPmf(discretization, factor.grid[1], factor.probs,
                                  factor.infinity_mass, True)
        if count > 1:
            pmf = pmf.self_compose(count, tail_mass_truncation=truncation)
        result = pmf if result is None else result.compose(pmf, tail_mass_truncation=truncation)
    return result


def _accountant_compose(factors: Sequence[tuple[LossPMF, int]], h: float,
                        truncation: float) -> LossPMF:
    """``accountant_compose`` as a LossPMF, for a composition that no tilt resolves to
    ``MAX_RELATIVE_ERROR``.  Its tail values carry no relative error bound:
    ``certified`` is False and the report says so.  Its memory and time are estimated
    from the lengths its own truncation bounds give, before any FFT."""
    # Each self-composition spans what dp-accounting's own Chernoff bounds keep (far
    # less than count × size), and composing them spans their sum.
    reach = sum(count * (abs(f.grid[1]) + f.probs.size) for f, count in factors if f.grid)
    if reach > _LARGEST_INDEX:  # (its grid indices would overflow)
        raise CostError(f"composing the releases spans {reach:.2g} grid steps, beyond "
                        "what a grid can index", math.inf, math.inf)
    points = float(sum(_self_composed_length(f, count, truncation) for f, count in factors))
    require(_ACCOUNTANT_BYTES_PER_POINT * points, "composing the releases")
    spend(_ACCOUNTANT_SECONDS_PER_POINT * points * math.log2(max(2.0, points)),
          "composing the releases")
    pmf = accountant_compose(factors, h, truncation)
    (composed,) = pmfs_from_pld(pld_module.PrivacyLossDistribution(pmf))
    return dataclasses.replace(composed, certified=False)


def _self_composed_length(factor: LossPMF, count: int, truncation: float) -> int:
    """Points of dp-accounting's ``count``-fold self-composition of ``factor`` (its FFT
    length: at least the factor's own), from the library's own truncation bounds."""
    if count == 1:
        return int(factor.probs.size)
    lower, upper = common.compute_self_convolve_bounds(factor.probs, count, truncation)
    return max(int(upper - lower + 1), int(factor.probs.size))


#: Largest grid index dp-accounting's composition can hold (numpy's int64, with room).
_LARGEST_INDEX = 2**62

#: Bytes dp-accounting's FFT composition takes per point of its result: the transform,
#: its power, the inverse (complex), the real part and its rolled copy, and the plan.
_ACCOUNTANT_BYTES_PER_POINT = 100.0


@dataclass(frozen=True)
class _Extent:
    """How far the tilted composition reaches, in lattice steps: the composed loss's
    standard deviation untilted and tilted to the top of the covered range (where one
    release's extreme losses may spread it far wider), and the covered range."""

    spread: float
    spread_at_top: float
    covered: float


def _extent(lattice: _Lattice, truncation: float) -> _Extent:
    spread = math.sqrt(max(lattice.cgf(0.0)[2], 1.0))
    top = min(lattice.width, lattice.tail_edge(math.log(truncation / 2), upper=True)[0])
    zero = -(lattice.g * lattice.base + lattice.r) / lattice.g
    theta = _solve(lambda t: lattice.cgf(t)[1] - top, 1.0 / spread)
    return _Extent(spread, math.sqrt(max(lattice.cgf(theta)[2], 1.0)),
                   max(1.0, top - max(0.0, zero)))


def estimated_memory(lattice: _Lattice, extent: _Extent) -> float:
    """Peak bytes of the tilted composition, estimated before any FFT: its widest tilt
    as ``_tilt_memory`` counts it with no coefficient underflowing, whose window spans
    about 20 standard deviations of the composition tilted to the top of its range
    (measured: 16 to 20 for Gaussian-like losses; heavy-tailed ones reach further),
    with its plan and those this report's earlier compositions cached.  ``_tilt_memory``,
    checked before each tilt with the plans cached by then, has the last word."""
    widest = min(lattice.width + 1, 20 * extent.spread_at_top)
    return _tilt_bytes(lattice, widest, extent.covered, widest + sum(fft_plans()),
                       widest / 2)


#: scipy's FFT keeps the plans of its last 16 lengths (each tilt has its own), about
#: 12 bytes a point each with the heap they fragment (measured: 190 MB after 15 tilts of
#: up to 1.7 million points; a tilt's window reaches about 30 standard deviations of
#: the composition tilted to the top of its range).
_CACHED_PLANS, _PLAN_BYTES_PER_POINT = 16, 12.0


def _tilt_lengths(lattice: _Lattice, extent: _Extent) -> float:
    """The FFT lengths of all the tilts together, estimated (``estimated_seconds``)."""
    heavy = extent.spread_at_top / extent.spread
    window = 30 * (extent.spread + extent.spread_at_top * (0.5 + 2 * heavy))
    return min(6 * (lattice.width + 1), window)


#: Estimated seconds of the tilted composition, per FFT point and tilt (a single
#: release's transforms both ways and their bookkeeping) and per release and point
#: (its forward transform); and per entry of the releases and cumulant evaluation, of
#: which a composition makes about ``_CGF_CALLS``.
_SECONDS_PER_POINT, _SECONDS_PER_RELEASE_POINT = 2e-7, 2e-8
_CGF_CALLS, _SECONDS_PER_CGF_ENTRY = 300.0, 1e-8
#: Estimated seconds of dp-accounting's FFT composition per point and log₂ of the points.
_ACCOUNTANT_SECONDS_PER_POINT = 1e-7


def estimated_seconds(lattice: _Lattice, extent: _Extent) -> float:
    """Seconds the tilted composition takes on a 2-core laptop, estimated before any FFT.
    Measured on long DP-SGD runs, 1,000 distinct DP-SGD stages and 1,000 mixed releases:
    the tilts' FFT lengths add up to one window of 30 standard deviations of the
    composition and, of the composition tilted to the top of its range, about 1.5 windows
    for Gaussian-like losses and up to 6 for heavy-tailed ones (DP-SGD's, whose tilted
    spread is several times the untilted)."""
    lengths = _tilt_lengths(lattice, extent)
    entries = float(sum(part.probs.size for part in lattice.parts))
    return (lengths * (_SECONDS_PER_POINT + _SECONDS_PER_RELEASE_POINT * len(lattice.parts))
            + _CGF_CALLS * _SECONDS_PER_CGF_ENTRY * entries)


def _tilted(lattice: _Lattice, h: float, truncation: float, target: float,
            upper: bool = False) -> tuple[FloatArray, float, int, float, float]:
    """Tilted-FFT composition over the offsets that matter: (probabilities from offset
    ``start`` on, their relative error bound, ``start``, mass moved to +∞, mass below).

    Covered: from loss 0 to the loss above which at most ``truncation`` remains; the
    curve's breakpoints are tail sums over losses y > t ≥ 0, and β = 1 − p∞ − (tail sum),
    so the negative losses matter only through their total, e^{K(0)} minus the rest.
    Tilts are placed from the bottom up, each with its mean ``reach`` standard deviations
    above the first offset not yet within ``target``.
    """
    zero = -(lattice.g * lattice.base + lattice.r) / lattice.g  # the offset of loss 0
    top, log_moved = lattice.tail_edge(math.log(truncation / 2), upper=True)
    hi = min(lattice.width, math.ceil(top))
    lo = max(0, min(math.ceil(zero), hi))
    moved = math.exp(log_moved) if hi < lattice.width else 0.0
    n = hi - lo + 1
    best_error = np.full(n, np.inf)  # log of each probability's absolute error bound
    best_log = np.full(n, -np.inf)
    noise = _FFT_STAGE_ERROR * _U * 20 * (lattice.steps + 2)  # error / peak, refined below
    slack = 1.0  # raised tenfold where tilts aimed ever closer make no progress
    goal = max(target, 100 * noise)
    need, aim = lo, 0.8  # aim: how many reachable standard deviations below a tilt's mean
    used: list[tuple[float, float]] = []  # (mean, variance) of the tilts applied
    for _ in range(60):
        progress.step("composing", need - lo, hi - lo + 1)
        remaining = lattice.log_mass_above(need)
        if need > lo and remaining <= math.log(truncation / 2):
            # What is left fits in the truncation budget: to +∞ with it, rather than
            # tilting into the far tail (where one step's extreme loss dominates and
            # the tilted composition spreads over millions of grid points).
            n = need - lo
            best_error, best_log = best_error[:n], best_log[:n]
            moved = math.exp(remaining)
            break
        reach = aim * math.sqrt(2 * math.log(goal / noise))
        theta = _theta_for_lower_edge(lattice, need, reach)
        _, mean, var = lattice.cgf(theta)
        if any(abs(mean - m) <= 0.25 * math.sqrt(v) for m, v in used):
            open_ = np.zeros(1, dtype=np.intp)  # nearly the same tilt again: no progress
        else:
            used.append((mean, var))
            open_, noise = _apply_tilt(lattice, theta, noise, (lo, hi, need),
                                       best_error, best_log, slack * max(target, 100 * noise))
        goal = slack * max(target, 100 * noise)
        if not open_.size:
            break
        if open_[0] == 0 and _upper_mass(best_log, best_error, need - lo) <= (truncation - moved) / 2:
            # Stuck at the support's far end (one release's largest loss, many times),
            # where what is left, estimate plus error, fits in the truncation budget:
            # it goes to +∞ below, as Chernoff could not show.
            break
        if open_[0] == 0:  # no progress: aim closer to ``need``, then settle for less
            aim *= 0.6
            if aim < 0.2:
                slack, aim = 10 * slack, 0.8
                if slack * max(target, 100 * noise) > MAX_RELATIVE_ERROR:
                    raise CompositionError("the composition's rounding error is too large")
        else:
            aim = 0.8
        need += int(open_[0])
    else:  # pragma: no cover - each pass advances
        raise CompositionError("the composition needs too many tilts")
    if not np.all(np.isfinite(best_error)):
        raise CompositionError("part of the composition is outside every tilt's window")
    with np.errstate(under="ignore"):
        probs, errors, moved = _cut_top(np.exp(best_log), np.exp(best_error), moved, truncation)
    losses = (np.arange(lo, lo + probs.size) - zero) * (lattice.g * h)
    if upper:  # each probability's upper bound; what the lower bounds leave, below
        least = float(np.maximum(probs - errors, 0.0).sum())
        return (probs + errors, 0.0, lo, moved,
                max(0.0, math.exp(lattice.cgf(0.0)[0]) - least))
    below = max(0.0, math.exp(lattice.cgf(0.0)[0]) - float(probs.sum()) - moved)
    return probs, _sum_relative_error(probs, errors, losses), lo, moved, below


def _cut_top(probs: FloatArray, errors: FloatArray, moved: float, truncation: float
             ) -> tuple[FloatArray, FloatArray, float]:
    """The top of the covered range sent to +∞ (pessimistic): above the highest resolved
    probability only error bounds remain, and that mass, at most their sum, goes; so do
    the highest probabilities, barely resolved, while the mass moved stays within the
    truncation budget.  Returns the rest and the mass moved in all."""
    last = int(np.flatnonzero(probs > 0)[-1]) if np.any(probs > 0) else -1
    moved += float(errors[last + 1:].sum())
    upper = np.cumsum((probs[:last + 1] + errors[:last + 1])[::-1])
    spare = int(np.searchsorted(upper, truncation - moved, side="right")) if moved < truncation else 0
    if spare:
        moved += float(upper[spare - 1])
        last -= spare
    return probs[:last + 1], errors[:last + 1], moved


def _upper_mass(best_log: FloatArray, best_error: FloatArray, first: int) -> float:
    """An upper bound on the mass at positions ``first`` on: estimates plus their error
    bounds (∞ where a position is not covered yet)."""
    with np.errstate(under="ignore"):
        return float(np.exp(best_log[first:]).sum() + np.exp(best_error[first:]).sum())


def _apply_tilt(lattice: _Lattice, theta: float, noise: float, span: tuple[int, int, int],
                best_error: FloatArray, best_log: FloatArray, goal: float
                ) -> tuple[np.ndarray, float]:
    """Compose with the tilt θ and keep, offset by offset, whichever estimate has the
    smaller error bound.  Returns the offsets from ``need`` on that are still open (not
    covered, or resolved but not to ``goal``; a comb's gaps are not material) and the
    FFT noise seen so far (error over peak)."""
    lo, hi, need = span
    var = lattice.cgf(theta)[2]
    # The window: all but a wrap-around mass far below the FFT's own error.
    alias = math.log(noise / (100 * math.sqrt(max(var, 1.0))))
    right, above = lattice.tail_edge(alias, upper=True, theta=theta)
    left, below = lattice.tail_edge(alias, upper=False, theta=theta)
    w0 = max(0, math.floor(left))
    length = _fft_length(min(lattice.width, math.ceil(right)) - w0 + 1)
    wrapped = math.exp(above) + math.exp(below)
    a, b = max(w0, lo), min(w0 + length - 1, hi)
    if a > b:  # pragma: no cover - every window reaches the offset it aims at
        raise CompositionError("a tilt's window misses the composition's range")
    def afford(kept: int) -> None:
        require(_tilt_memory(lattice, length, best_error.size, kept), "composing the releases")

    afford(0)  # the transform itself, before the coefficients it keeps are known
    log_estimate, log_error, seen = _tilted_estimate(lattice, theta, length, wrapped, (a, b),
                                                     afford)
    noise = max(noise, seen)
    theirs = slice(a - lo, b - lo + 1)
    better = log_error < best_error[theirs]
    best_error[theirs][better] = log_error[better]
    best_log[theirs][better] = log_estimate[better]
    rest = slice(need - lo, best_error.size)
    with np.errstate(under="ignore"):
        values = np.exp(best_log[rest])
    # Material: at least 10⁻⁶ of the tail sum from it up (a comb's gap is not).
    material = values >= 1e-6 * np.cumsum(values[::-1])[::-1]
    open_ = np.flatnonzero(np.isinf(best_error[rest])
                           | (material & np.isfinite(best_log[rest])
                              & (best_error[rest] > best_log[rest] + math.log(goal))))
    return open_, noise


#: Bytes a tilt takes per point of its FFT, its plan aside, and per spectral
#: coefficient it keeps (at most L/2 + 1: those whose bound has not underflowed).
#: Measured in resident memory: 27 to 32 bytes a point where the spectrum soon
#: underflows, 44 to 52 where it does not (56 to 92 before each array was freed once
#: used): the input, the spectrum, the inverse transform and its rolled copy a point;
#: the running bounds and product and their logarithms a coefficient kept.
_TILT_BYTES_PER_POINT, _TILT_BYTES_PER_KEPT = 34.0, 44.0


def _tilt_memory(lattice: _Lattice, length: int, covered: int, kept: float) -> float:
    """Bytes in use while a tilt of FFT ``length`` runs, its plan cached, with ``kept``
    spectral coefficients: checked before each tilt (its window is known only once its
    θ is; the estimate before the composition, ``estimated_memory``, is a forecast)
    and again once its first transform shows how many coefficients it keeps."""
    plans = fft_plans()  # (scipy's cache is the process's; this counts this report's)
    plans[length] = None
    plans.move_to_end(length)
    while len(plans) > _CACHED_PLANS:
        plans.popitem(last=False)
    return _tilt_bytes(lattice, length, covered, sum(plans), kept)


def _tilt_bytes(lattice: _Lattice, length: float, covered: float, planned: float,
                kept: float) -> float:
    """Bytes of a tilt of FFT ``length`` keeping ``kept`` coefficients over ``covered``
    offsets, beside the releases' entries and cached plans of ``planned`` points in
    all: the tilt's arrays, the covered range's dozen arrays, the cumulant sums."""
    return (_TILT_BYTES_PER_POINT * length + _TILT_BYTES_PER_KEPT * kept + 100.0 * covered
            + _CGF_BYTES_PER_ENTRY * _entries(lattice) + _PLAN_BYTES_PER_POINT * planned)


def _entries(lattice: _Lattice) -> float:
    """Entries of all the lattice's releases together."""
    return float(sum(part.probs.size for part in lattice.parts))


#: Bytes per entry of the releases (traced): the lattice's copies, kept while it is
#: composed beside the releases held (log p, the offsets, the probabilities, the
#: cumulant sums' concatenation: 40); while they are built (49); and the cumulant sums'
#: temporaries (``_Lattice.cgf``: 32), in use beside a tilt's arrays.
_LATTICE_BYTES_PER_ENTRY, _LATTICE_BUILD_BYTES_PER_ENTRY, _CGF_BYTES_PER_ENTRY = 40, 56, 32


def _sum_relative_error(probs: FloatArray, errors: FloatArray, losses: FloatArray) -> float:
    """The largest relative error of the sums the curve is made of, the tail sums
    Σ_{y>t} p and Σ_{y>t} e^{−y}p for t ≥ 0 (TPR, α and β = 1 − p∞ − TPR's sum),
    given each probability's absolute error bound."""
    worst = 0.0
    top = losses >= 0
    p, e, y = probs[top][::-1], errors[top][::-1], losses[top][::-1]
    weight = np.exp(-y)
    for mass, err in ((np.cumsum(p), np.cumsum(e)), (np.cumsum(weight * p), np.cumsum(weight * e))):
        useful = mass > 0
        if useful.any():
            worst = max(worst, float(np.max(err[useful] / mass[useful])))
    return worst


def _theta_for_lower_edge(lattice: _Lattice, offset: int, reach: float) -> float:
    """θ whose tilted composition puts ``offset`` ``reach`` standard deviations below its
    mean (or its mean at ``offset`` when the spread there is tiny)."""
    def edge(theta: float) -> float:
        _, mean, var = lattice.cgf(theta)
        return mean - reach * math.sqrt(var) - offset

    return _solve(edge, 1.0 / math.sqrt(max(lattice.cgf(0.0)[2], 1.0)))
