"""Stage 3: from a privacy-loss distribution to its tight, symmetric trade-off curve.

Implements docs/math.md §2.  For each direction's pessimistic PMF p over losses y (plus a
mass p∞ at +∞) and each threshold t ≥ 0 the breakpoints are

    α(t) = Σ_{y > t} e^{−y} p(y),     1 − β(t) = Σ_{y > t} p(y) + p∞,

accumulated from the largest loss down (tail sums stay tail sums; β is a head sum,
so each is accurate where it is small).  The add-or-remove curve is the lower convex
envelope of both directions' points on the slopes ≤ −1 (the curve dual to
δ(ε) = max(δ_remove, δ_add), ε ≥ 0), mirrored about the diagonal (Dong, Roth & Su,
Appendix F: the envelope of min(f, f⁻¹), never the max).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # only named: a report read from the cache draws its figure without it
    from dp_accounting.pld import privacy_loss_distribution as pld_module

FloatArray = np.ndarray
_UNIT_ROUNDOFF = 2.0**-53


@dataclass(frozen=True)
class LossPMF:
    """One direction of a PLD: losses (ascending), their probabilities, and p∞.

    ``grid`` = (h, i₀) when ``losses[i]`` = (i₀ + i)·h, as for every PMF dp-accounting
    makes: two directions on the same grid let the hull skip a merge of their slopes.
    ``relative_error`` r is set by ``composition.compose``: each probability may be off
    by a factor within 1 ± r, and the breakpoints are widened by it towards the attacker.
    """

    losses: FloatArray
    probs: FloatArray
    infinity_mass: float
    grid: tuple[float, int] | None = None
    relative_error: float = 0.0  # the sums of probabilities are within this factor of the truth
    certified: bool = True  # False: composed by dp-accounting's FFTs, tails not bounded
    lower_mass: float = 0.0  # mass at losses below ``losses[0]``, not resolved one by one


@dataclass(frozen=True)
class DirectionalPoints:
    """Breakpoints of one direction's curve for thresholds t ≥ 0, α ascending.

    ``tpr`` = 1 − β from tail sums, ``beta`` from head sums.  Segment j → j + 1 adds
    the mass at ``losses[j]`` and has slope −e^{losses[j]}; a loss without mass gives
    a segment of length 0.  ``grid`` = (h, k, ρ) when ``losses[j]`` = (k − j)·h + ρ.
    """

    alpha: FloatArray
    beta: FloatArray
    tpr: FloatArray
    losses: FloatArray  # descending
    excess_mass: float  # how much more than 1 the pessimistic PMF holds
    grid: tuple[float, int, float] | None

    @property
    def slopes(self) -> FloatArray:
        """−e^{losses[j]}, ascending (−∞ where e^y overflows: a vertical segment)."""
        with np.errstate(over="ignore"):
            return np.asarray(-np.exp(self.losses))


@dataclass(frozen=True)
class TradeoffCurve:
    """A symmetric, convex, piecewise-linear trade-off curve given by its vertices.

    ``alpha`` ascending from 0 to 1; ``beta`` = f(alpha); ``tpr`` = 1 − beta and
    ``tnr`` = 1 − alpha are kept separately so that each probability is stored
    from the side where it is small, with full relative precision.
    ``points`` are the raw left-region breakpoints of both directions and ``support``
    their lower hull up to the vertex minimising α + β: the accountant's own profile
    δ(ε) = max(δ_remove, δ_add), ε ≥ 0, which μ must cover (docs/math.md §2–3).
    """

    alpha: FloatArray
    beta: FloatArray
    tpr: FloatArray
    tnr: FloatArray
    alpha_star: float
    infinity_mass: float
    points: tuple[DirectionalPoints, ...]
    support: tuple[FloatArray, FloatArray, FloatArray]  # (α, β, TPR) of the hull up to min α + β
    relative_error: float = 0.0  # the composition's bound, already widened into the curve
    certified: bool = True  # False when part of it was composed without a stated bound

    @property
    def tail_mass_at_zero(self) -> float:
        """The TPR the curve reaches at FPR α = 0: mass at +∞ and losses so large that
        e^{−y} underflows, which only a floor τ at least this large covers."""
        alpha, _, tpr = self.support
        return float(tpr[0]) if alpha.size and alpha[0] <= 0 else 0.0

    def beta_at(self, alpha: FloatArray | float) -> FloatArray:
        """f(α) by linear interpolation between vertices (exact for this curve)."""
        return np.asarray(np.interp(alpha, self.alpha, self.beta))

    def tpr_at(self, alpha: FloatArray | float) -> FloatArray:
        """1 − f(α), interpolated on the TPR column to keep tiny values exact."""
        return np.asarray(np.interp(alpha, self.alpha, self.tpr))


def pmfs_from_pld(pld: pld_module.PrivacyLossDistribution) -> tuple[LossPMF, ...]:
    """The PMFs of a dp-accounting PLD: one if symmetric, else (remove, add).

    dp-accounting has no public accessor for its PMFs, so this is the one function
    that reads private attributes (``_pmf_remove``, ``_pmf_add``, ``_symmetric``,
    and a dense PMF's ``_lower_loss``, ``_probs``, ``_discretization``,
    ``_infinity_mass``); ``tests/test_private_api.py`` pins their meaning against
    ``get_delta_for_epsilon``.
    """
    pmfs = [pld._pmf_remove]
    if not pld._symmetric:
        pmfs.append(pld._pmf_add)
    result = []
    for pmf in pmfs:
        dense = pmf.to_dense_pmf()
        probs = np.asarray(dense._probs, dtype=np.float64)
        infinity_mass = float(dense._infinity_mass)
        if not (np.isfinite(probs).all() and math.isfinite(infinity_mass)):
            # NaN compares false everywhere: μ would silently read 0.  Never go on.
            raise ValueError("the accountant returned a privacy-loss distribution with "
                             "non-finite probabilities")
        step, lowest = float(dense._discretization), int(dense._lower_loss)
        losses = (np.arange(probs.size) + lowest) * step
        result.append(LossPMF(losses, probs, infinity_mass, (step, lowest)))
    return tuple(result)


def points_from_pmf(pmf: LossPMF) -> DirectionalPoints:
    """Breakpoints (α, β) for thresholds t ≥ 0 of one direction (docs/math.md §2).

    The first point is t = +∞: (0, 1 − p∞).  Then one point per loss y ≥ 0, from the
    largest down, each including the mass at y.  FFT convolution leaves tiny negative
    masses; they count as 0 (losses above the largest one with mass are left out).
    """
    start = int(np.searchsorted(pmf.losses, 0.0, side="left"))  # losses ascend
    positive = pmf.probs[start:] > 0
    stop = start + (int(positive.size - np.argmax(positive[::-1])) if positive.any() else 0)
    losses, probs = pmf.losses[start:stop][::-1], pmf.probs[start:stop][::-1]
    clipped = not positive[:stop - start].all()
    if clipped:
        probs = np.maximum(probs, 0.0)
    n = losses.size
    mass = np.negative(losses)
    np.exp(mass, out=mass)  # e^{−y}: the change of measure dQ = e^{−y} dP
    np.multiply(mass, probs, out=mass)
    alpha = np.empty(n + 1)
    alpha[0] = 0.0
    np.cumsum(mass, out=alpha[1:])
    del mass
    tpr = np.empty(n + 1)
    tpr[0] = pmf.infinity_mass
    np.cumsum(probs, out=tpr[1:])
    tpr[1:] += pmf.infinity_mass
    # β(t) = 1 − TPR(t) by definition (docs/math.md §2: tail sums only).  A pessimistic
    # PMF may hold a little more than mass 1 (connect-the-dots adds some), so
    # 1 − TPR = head(t) − excess, with head(t) the mass at losses ≤ t: written that way
    # it keeps β's digits where β is tiny and 1 − TPR would round to 0.
    below = pmf.probs[:start]
    beta = np.empty(n + 1)
    beta[n] = float(below[below > 0].sum()) + pmf.lower_mass
    if n:
        np.cumsum(probs[::-1], out=beta[n - 1::-1])
        beta[:n] += beta[n]
    excess = float(beta[0]) + pmf.infinity_mass - 1.0  # the same sums as head
    beta -= excess
    np.clip(beta, 0.0, 1.0, out=beta)
    # Rounding of the running sums: a sum of j non-negative doubles is within j·u of its
    # exact value, relatively (Higham, Accuracy and Stability, §4.2), and each term e^{−y}·p
    # carries a few u more.  Widen both tail sums towards the attacker, TPR up and α down,
    # by 2ju with j the number of masses summed so far: μ and ε(δ) rest on them.  Where a
    # mass is too small to change α, widening would make α fall: keep the running maximum,
    # still below the exact sum.
    if clipped:
        widen = np.empty(n + 1)
        widen[0] = 0.0
        np.cumsum(positive[:stop - start][::-1], out=widen[1:])
    else:
        widen = np.arange(n + 1, dtype=np.float64)
    widen *= 2 * _UNIT_ROUNDOFF
    # A composed PMF's probabilities are each within 1 ± r of the truth: TPR and the head
    # sums behind β may be r too large or small, α r too small.  Scaling TPR by 1 + r and
    # α by 1 − r keeps the chain convex, with slopes −e^{y + ρ}, ρ = log((1 + r)/(1 − r)):
    # the losses move up by ρ.
    r = pmf.relative_error
    if r:  # β = 1 − p∞ − (tail sum), so its error is that of the tail sum
        beta -= r * (tpr - pmf.infinity_mass)
        np.clip(beta, 0.0, 1.0, out=beta)
        np.minimum.accumulate(beta, out=beta)  # rounding must not make β rise again
    widen += 1.0
    tpr *= widen + r  # 1 + 2ju (+ r)
    np.minimum(tpr, 1.0, out=tpr)
    tpr[0] = pmf.infinity_mass  # t = +∞: the mass at +∞ alone, exactly
    np.subtract(2.0, widen, out=widen)
    alpha *= widen - r  # 1 − 2ju (− r)
    np.maximum(alpha, 0.0, out=alpha)
    np.maximum.accumulate(alpha, out=alpha)
    shift = math.log1p(r) - math.log1p(-r) if r else 0.0
    if shift:
        losses = losses + shift
    grid = None if pmf.grid is None else (pmf.grid[0], pmf.grid[1] + stop - 1, shift)
    return DirectionalPoints(alpha=alpha, beta=beta, tpr=tpr, losses=losses,
                             excess_mass=max(0.0, excess), grid=grid)


def _count_below(keys: FloatArray, sorted_values: FloatArray) -> np.ndarray:
    """For ascending ``keys``, how many of the ascending ``sorted_values`` are < each key.

    ``np.searchsorted(sorted_values, keys, side="left")`` by one merge: a stable sort of
    the two sorted runs (keys first, so a key precedes the values equal to it) places
    key i at i + that count.  Linear where the binary searches are not.
    """
    order = np.argsort(np.concatenate((keys, sorted_values)), kind="stable")
    return np.flatnonzero(order < keys.size) - np.arange(keys.size)


def _mark_support(chain: DirectionalPoints, rival: DirectionalPoints,
                  wins: np.ndarray, rival_wins: np.ndarray) -> None:
    """Probe the support function of both chains at each segment slope s of ``chain``:
    TPR + s·α of the chain's segment against the rival's vertex on the supporting line
    of slope s (its vertex k = the number of rival slopes < s); mark the winners.

    At a chain's own slope its two vertices tie: a winning segment marks both.  On a
    shared grid k is the segment index plus an offset, so the rival's columns are slices.
    """
    s = chain.slopes
    mine = s * chain.alpha[:-1]
    mine += chain.tpr[:-1]  # = with vertex i + 1 (a tie)
    n, last = s.size, rival.losses.size
    if (chain.grid is None or rival.grid is None or chain.grid[0] != rival.grid[0]
            or chain.grid[2] != rival.grid[2]):
        k = _count_below(s, rival.slopes)
        theirs = rival.tpr[k] + s * rival.alpha[k]
        won = mine >= theirs
        rival_wins[k[mine <= theirs]] = True
    else:
        # Rival slopes below −e^{(g − j)h} are those of its losses above (g − j)h, so
        # k = j + shift, clamped to 0 before ``first`` and to ``last`` from ``stop`` on.
        shift = rival.grid[1] - chain.grid[1]
        first, stop = min(max(-shift, 0), n), min(max(last - shift, 0), n)
        theirs = s * np.concatenate((np.full(first, rival.alpha[0]),
                                     rival.alpha[first + shift:stop + shift],
                                     np.full(n - stop, rival.alpha[last])))
        theirs[:first] += rival.tpr[0]
        theirs[first:stop] += rival.tpr[first + shift:stop + shift]
        theirs[stop:] += rival.tpr[last]
        won = mine >= theirs
        lost = mine <= theirs
        rival_wins[first + shift:stop + shift] |= lost[first:stop]
        rival_wins[0] |= bool(lost[:first].any())
        rival_wins[last] |= bool(lost[stop:].any())
    wins[:-1] |= won
    wins[1:] |= won


def _winners(chain: DirectionalPoints, wins: np.ndarray
             ) -> tuple[FloatArray, FloatArray, FloatArray]:
    """The marked vertices of a chain, one per α (the last: within a chain TPR rises)."""
    index = np.flatnonzero(wins)
    alpha = chain.alpha[index]
    last = np.empty(alpha.size, dtype=bool)
    last[:-1] = alpha[1:] != alpha[:-1]
    last[-1:] = True
    if not last.all():
        index, alpha = index[last], alpha[last]
    return alpha, chain.beta[index], chain.tpr[index]


def hull_of_chains(chains: tuple[DirectionalPoints, ...]) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Lower convex hull (α, β, TPR) of the union of one or two convex chains,
    α ascending, one vertex per α (the one with the highest TPR).

    A vertex is on the hull of the union iff it minimises β − s·α over all points for
    some slope s (the support function of the union is the maximum of the chains').
    Between consecutive segment slopes of the merged set each chain has one active
    vertex, so with two chains evaluating both ends of every interval finds every
    winner: linear on a shared grid, O(n log n) otherwise, and fully vectorised.
    """
    if len(chains) == 1:
        return _winners(chains[0], np.ones(chains[0].alpha.size, dtype=bool))
    if len(chains) != 2:
        raise ValueError("a privacy-loss distribution has one or two directions")
    # Probe the support function at every segment slope of either chain (all are −e^y
    # ≤ −1), at −∞ and at −1.  On the span where a vertex v of one chain is active, its
    # line minus the other chain's (convex) support function is concave and piecewise
    # linear with kinks at the other chain's slopes, so if v is on the hull it wins at one
    # of the probes.
    wins = [np.zeros(c.alpha.size, dtype=bool) for c in chains]
    for own, other in ((0, 1), (1, 0)):
        if chains[own].losses.size:
            _mark_support(chains[own], chains[other], wins[own], wins[other])
    # s → −∞: the α = 0 vertices; s = −1: the last vertices (the t = 0 points).
    top = max(c.tpr[0] for c in chains)
    for c, w in zip(chains, wins, strict=True):
        w[0] |= c.tpr[0] >= top
    end = [c.tpr[-1] - c.alpha[-1] for c in chains]
    for w, value in zip(wins, end, strict=True):
        w[-1] |= value >= max(end)
    runs = [_winners(c, w) for c, w in zip(chains, wins, strict=True)]
    alpha, beta, tpr = (np.concatenate(column) for column in zip(*runs, strict=True))
    order = np.argsort(alpha, kind="stable")  # two sorted runs: a linear merge
    alpha, beta, tpr = alpha[order], beta[order], tpr[order]
    tied = np.flatnonzero(alpha[1:] == alpha[:-1])  # one vertex from each run
    if tied.size:  # keep the higher TPR
        drop = np.where(tpr[tied] <= tpr[tied + 1], tied, tied + 1)
        alpha, beta, tpr = np.delete(alpha, drop), np.delete(beta, drop), np.delete(tpr, drop)
    return alpha, beta, tpr


def curve_from_pmfs(pmfs: tuple[LossPMF, ...]) -> TradeoffCurve:
    """The tight symmetric trade-off curve of a PLD's directions (docs/math.md §2).

    Left of the diagonal it is the hull of both directions' breakpoints on slopes ≤ −1
    (every segment of a chain has slope −e^y with y ≥ 0), extended with slope −1 (the
    supporting lines of δ(ε), ε ≥ 0); it stops where it meets β = α, at α*; the rest
    is its mirror image.  Slopes are never recomputed from differences: where a tiny
    mass vanishes in a TPR sum, the difference would read 0 instead of −e^y.
    """
    # One widening for both directions keeps their losses on one grid (``_mark_support``).
    widest = max(p.relative_error for p in pmfs)
    directions = tuple(points_from_pmf(dataclasses.replace(p, relative_error=widest))
                       for p in pmfs)
    a, b, t = hull_of_chains(directions)  # α ascending, one vertex per α
    # β of vertices from two chains, each widened by its own tail sums, may disagree by
    # an ulp where it is near 1: keep β non-increasing (lowering it, pessimistically).
    b = np.minimum.accumulate(b)
    return symmetric_curve((a, b, t), directions,
                           infinity_mass=float(max(p.infinity_mass for p in pmfs)),
                           relative_error=widest, certified=all(p.certified for p in pmfs))


def symmetric_curve(support: tuple[FloatArray, FloatArray, FloatArray],
                    directions: tuple[DirectionalPoints, ...], *, infinity_mass: float,
                    relative_error: float, certified: bool) -> TradeoffCurve:
    """The symmetric curve whose left part is the convex chain ``support`` = (α, β, TPR),
    α ascending from 0: cut where it meets β = α, at α*, and mirrored beyond."""
    a, b, t = support
    # Stop at the diagonal β = α: on a hull segment, or on the slope −1 extension.
    past = b <= a
    k = int(np.argmax(past))
    if past[0]:  # β(0) = 0: the record is revealed outright (as far as doubles tell)
        star = 0.0
        a, b, t = a[:1], b[:1], t[:1]
    elif past[k]:  # k ≥ 1: the first vertex has α = 0 < β
        g0, g1 = b[k - 1] - a[k - 1], b[k] - a[k]
        star = a[k - 1] + g0 / (g0 - g1) * (a[k] - a[k - 1]) if g0 > g1 else a[k - 1]
        a, b, t = a[:k], b[:k], t[:k]
    else:
        star = 0.5 * (a[-1] + b[-1])
    # The mirror image (α, β) → (β, α) of the vertices left of α*: a mirrored vertex's
    # TPR is 1 − α of the original and its TNR is the original's TPR.  Where β rounds to
    # the same value (near 1) the mirror would repeat an α: keep the lowest β there.
    ma, mb, mt = a, b, t
    if np.any(b[1:] == b[:-1]):
        first = np.concatenate(([True], b[1:] != b[:-1]))
        ma, mb, mt = a[first], b[first], t[first]
    n, m = a.size, ma.size
    closed = mb[0] < 1.0  # else the mirror of (0, 1) is already (1, 0)
    size = n + 1 + m + int(closed)
    alpha = np.empty(size)
    beta, tpr, tnr = np.empty_like(alpha), np.empty_like(alpha), np.empty_like(alpha)
    alpha[:n], beta[:n], tpr[:n], tnr[:n] = a, b, t, 1.0 - a
    alpha[n] = beta[n] = star
    tpr[n] = tnr[n] = 1.0 - star
    right = slice(n + 1, n + 1 + m)
    alpha[right], beta[right] = mb[::-1], ma[::-1]
    tpr[right], tnr[right] = 1.0 - ma[::-1], mt[::-1]
    if closed:
        alpha[-1], beta[-1], tpr[-1], tnr[-1] = 1.0, 0.0, 1.0, 0.0
    if np.any(alpha[1:] == alpha[:-1]):  # rare: e.g. α* on a vertex
        last = np.concatenate((alpha[1:] != alpha[:-1], [True]))
        alpha, beta, tpr, tnr = alpha[last], beta[last], tpr[last], tnr[last]
    return TradeoffCurve(
        alpha=alpha,
        beta=beta,
        tpr=tpr,
        tnr=tnr,
        alpha_star=float(star),
        infinity_mass=infinity_mass,
        points=directions,
        support=support,
        relative_error=relative_error,
        certified=certified,
    )


def curve_from_pld(pld: pld_module.PrivacyLossDistribution) -> TradeoffCurve:
    """Convenience: ``curve_from_pmfs(pmfs_from_pld(pld))``."""
    return curve_from_pmfs(pmfs_from_pld(pld))


def delta_from_curve(curve: TradeoffCurve, epsilon: float) -> float:
    """δ(ε) implied by the curve: max over vertices of 1 − e^ε α − f(α) (docs/math.md §2)."""
    return float(max(0.0, np.max(curve.tpr - np.exp(epsilon) * curve.alpha)))


def epsilons_from_curve(curve: TradeoffCurve, deltas: list[float]) -> list[float]:
    """For each δ, the smallest ε ≥ 0 with δ(ε) ≤ δ on the curve itself (the inverse of
    ``delta_from_curve``, for curves with no directional points behind them, such as a
    unit's iterated curve): δ(ε) = max over vertices of 1 − f(α) − e^ε α (the f-DP ⇔
    (ε, δ(ε)) duality, Dong, Roth & Su 2022, Prop. 2.12), so ε = max over vertices with
    TPR > δ of ln((TPR − δ)/α), ∞ when such a vertex has α = 0; rounded up."""
    tpr, alpha = curve.tpr, curve.alpha
    result = []
    for delta in deltas:
        above = tpr > delta
        if not above.any():
            result.append(0.0)
            continue
        if np.any(alpha[above] <= 0):
            result.append(math.inf)
            continue
        with np.errstate(over="ignore"):
            ratio = (tpr[above] - delta) / alpha[above]
        worst = float(np.max(np.log(ratio)))
        result.append(max(0.0, worst * (1 + 1e-12) + 1e-15))
    return result


def epsilon_for_delta(points: tuple[DirectionalPoints, ...], delta: float) -> float:
    """Smallest ε ≥ 0 with δ(ε) ≤ ``delta``, max over directions (``epsilons_for_deltas``)."""
    return epsilons_for_deltas(points, [delta])[0]


def epsilons_for_deltas(points: tuple[DirectionalPoints, ...], deltas: list[float]) -> list[float]:
    """For each δ, the smallest ε ≥ 0 with δ(ε) ≤ δ, max over directions.

    The same rule as dp-accounting's ``get_epsilon_for_delta`` (walk the losses from
    the top, stop at the first y_j whose tail masses U_j, L_j already put the answer
    ln((U_j − δ)/L_j) at or above y_j), vectorised over the breakpoints' tail sums:
    the accountant's loop is pure Python and would cost more than the composition.
    The tail sums skip the tiny negative probabilities that FFT convolution leaves in
    a composed PMF, so at δ ≲ 1e-9 the result can be slightly larger (never smaller)
    than the accountant's.
    """
    worst = [0.0] * len(deltas)
    for chain in points:
        upper, lower, losses = chain.tpr, chain.alpha, chain.losses
        n = losses.size
        with np.errstate(over="ignore", invalid="ignore"):
            scaled = lower[:n] * np.exp(losses)  # L_j e^{y_j}
        for i, delta in enumerate(deltas):
            if upper[0] > delta:  # the mass at +∞ alone exceeds δ
                worst[i] = math.inf
                continue
            # ln((U_j − δ)/L_j) ≥ y_j  ⟺  U_j − δ ≥ L_j e^{y_j}  (U_j > δ, L_j > 0).
            stop = (upper[:n] > delta) & (lower[:n] > 0) & (upper[:n] - delta >= scaled)
            underflow = (upper[1:] >= delta) & (lower[1:] == 0)  # e^{−y} vanished
            first_stop = int(np.argmax(stop)) if stop.any() else n
            first_underflow = int(np.argmax(underflow)) if underflow.any() else n
            if first_underflow < first_stop:
                worst[i] = max(worst[i], float(losses[first_underflow]))
                continue
            j = first_stop
            if upper[j] <= lower[j] + delta:
                continue
            worst[i] = max(worst[i], math.log((float(upper[j]) - delta) / float(lower[j])))
    return worst


def delta_for_epsilons(points: tuple[DirectionalPoints, ...], epsilons: FloatArray) -> FloatArray:
    """δ(ε) = max over directions of Σ_{y>ε} (1 − e^{ε−y}) p(y) + p∞, for ε ≥ 0 (ascending).

    The accountant's hockey-stick divergence from the same tail sums, vectorised: on
    ε ∈ [y_j, y_{j−1}) the losses above ε are the top j, so δ(ε) = TPR_j − e^ε α_j.
    """
    worst = np.zeros(epsilons.size)
    for chain in points:
        above = np.searchsorted(-chain.losses, -epsilons, side="left")  # losses > ε
        delta = chain.tpr[above] - np.exp(epsilons) * chain.alpha[above]
        worst = np.maximum(worst, delta)
    return np.asarray(worst)
