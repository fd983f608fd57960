"""Stage 3: from a privacy-loss distribution to its tight, symmetric trade-off curve.

Implements MATH.md §2.  For each direction's pessimistic PMF p over losses y (plus a
mass p∞ at +∞) and each threshold t ≥ 0 the breakpoints are

    α(t) = Σ_{y > t} e^{−y} p(y),     1 − β(t) = Σ_{y > t} p(y) + p∞,

accumulated from the largest loss down (tail sums stay tail sums; β is a head sum,
so each is accurate where it is small).  The add-or-remove curve is the lower convex
envelope of both directions' points on the slopes ≤ −1 (the curve dual to
δ(ε) = max(δ_remove, δ_add), ε ≥ 0), mirrored about the diagonal (Dong, Roth & Su,
Appendix F: the envelope of min(f, f⁻¹), never the max).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from dp_accounting.pld import privacy_loss_distribution as pld_module

FloatArray = np.ndarray
_UNIT_ROUNDOFF = 2.0**-53


@dataclass(frozen=True)
class LossPMF:
    """One direction of a PLD: losses (ascending), their probabilities, and p∞."""

    losses: FloatArray
    probs: FloatArray
    infinity_mass: float


@dataclass(frozen=True)
class DirectionalPoints:
    """Breakpoints of one direction's curve for thresholds t ≥ 0, α ascending.

    ``tpr`` = 1 − β from tail sums, ``beta`` from head sums.
    """

    alpha: FloatArray
    beta: FloatArray
    tpr: FloatArray
    losses: FloatArray  # descending; segment j → j+1 adds loss losses[j], slope −e^{losses[j]}
    excess_mass: float  # how much more than 1 the pessimistic PMF holds
    slopes: FloatArray  # −e^{losses[j]}, ascending
    scaled_alpha: FloatArray  # α_j · e^{losses[j]}, j < len(losses)


@dataclass(frozen=True)
class TradeoffCurve:
    """A symmetric, convex, piecewise-linear trade-off curve given by its vertices.

    ``alpha`` ascending from 0 to 1; ``beta`` = f(alpha); ``tpr`` = 1 − beta and
    ``tnr`` = 1 − alpha are kept separately so that each probability is stored
    from the side where it is small, with full relative precision.
    ``points`` are the raw left-region breakpoints of both directions and ``support``
    their lower hull up to the vertex minimising α + β: the accountant's own profile
    δ(ε) = max(δ_remove, δ_add), ε ≥ 0, which μ must cover (MATH.md §2–3).
    """

    alpha: FloatArray
    beta: FloatArray
    tpr: FloatArray
    tnr: FloatArray
    alpha_star: float
    infinity_mass: float
    points: tuple[DirectionalPoints, ...]
    support: tuple[FloatArray, FloatArray, FloatArray]  # (α, β, TPR) of the hull up to min α + β

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
    ``_infinity_mass``); ``tests/test_curve.py`` pins their meaning against
    ``get_delta_for_epsilon``.
    """
    pmfs = [pld._pmf_remove]
    if not pld._symmetric:
        pmfs.append(pld._pmf_add)
    result = []
    for pmf in pmfs:
        dense = pmf.to_dense_pmf()
        probs = np.asarray(dense._probs, dtype=np.float64)
        losses = (np.arange(probs.size) + dense._lower_loss) * dense._discretization
        result.append(LossPMF(losses, probs, float(dense._infinity_mass)))
    return tuple(result)


def points_from_pmf(pmf: LossPMF) -> DirectionalPoints:
    """Breakpoints (α, β) for thresholds t ≥ 0 of one direction (MATH.md §2).

    The first point is t = +∞: (0, 1 − p∞).  Then one point per loss y ≥ 0, from the
    largest down, each including the mass at y.  Zero-probability losses are skipped.
    """
    start = int(np.searchsorted(pmf.losses, 0.0, side="left"))  # losses ascend
    losses, probs = pmf.losses[start:][::-1], pmf.probs[start:][::-1]
    if not np.all(probs > 0):
        keep = probs > 0
        losses, probs = losses[keep], probs[keep]
    shrink = np.exp(-losses)  # e^{−y}: the change of measure dQ = e^{−y} dP
    alpha = np.empty(losses.size + 1)
    alpha[0] = 0.0
    np.cumsum(shrink * probs, out=alpha[1:])
    tpr = np.empty(losses.size + 1)
    tpr[0] = 0.0
    np.cumsum(probs, out=tpr[1:])
    tpr += pmf.infinity_mass
    # β(t) = 1 − TPR(t) by definition (MATH.md §2: tail sums only).  A pessimistic
    # PMF may hold a little more than mass 1 (connect-the-dots adds some), so
    # 1 − TPR = head(t) − excess, with head(t) the mass at losses ≤ t: written that way
    # it keeps β's digits where β is tiny and 1 − TPR would round to 0.
    below = float(pmf.probs[(pmf.probs > 0) & (pmf.losses < 0)].sum())
    rest = np.cumsum(probs[::-1])[::-1]
    head = below + np.concatenate((rest, [0.0]))
    excess = float(head[0]) + pmf.infinity_mass - 1.0  # the same sums as head
    beta = np.clip(head - excess, 0.0, 1.0)
    # Rounding of the running sums: a sum of j non-negative doubles is within j·u of its
    # exact value, relatively (Higham, Accuracy and Stability, §4.2).  Widen both tail
    # sums towards the attacker, TPR up and α down, by twice that: μ and ε(δ) rest on them.
    steps = np.arange(losses.size + 1, dtype=np.float64) * (2 * _UNIT_ROUNDOFF)
    tpr *= 1.0 + steps
    alpha *= 1.0 - steps
    with np.errstate(divide="ignore", invalid="ignore"):  # e^{−y} underflows past y ≈ 745
        slopes, scaled = -1.0 / shrink, alpha[:-1] / shrink
    return DirectionalPoints(alpha=alpha, beta=beta, tpr=np.minimum(tpr, 1.0), losses=losses,
                             excess_mass=max(0.0, excess), slopes=slopes, scaled_alpha=scaled)


def hull_of_chains(chains: tuple[DirectionalPoints, ...]) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Lower convex hull (α, β, TPR) of the union of one or two convex chains,
    α ascending, one vertex per α (the one with the highest TPR).

    A vertex is on the hull of the union iff it minimises β − s·α over all points for
    some slope s (the support function of the union is the maximum of the chains').
    Between consecutive segment slopes of the merged set each chain has one active
    vertex, so with two chains evaluating both ends of every interval finds every
    winner: O(n log n) and fully vectorised.
    """
    if len(chains) == 1:
        only = chains[0]
        last = np.concatenate((only.alpha[1:] != only.alpha[:-1], [True]))  # highest TPR
        return only.alpha[last], only.beta[last], only.tpr[last]
    if len(chains) != 2:
        raise ValueError("a privacy-loss distribution has one or two directions")
    # Probe the support function at every segment slope of either chain (all are −e^y
    # ≤ −1), at −∞ and at −1.  On the span where a vertex v of one chain is active, its
    # line minus the other chain's (convex) support function is concave and piecewise
    # linear with kinks at the other chain's slopes, so if v is on the hull it wins at one
    # of the probes.  At a chain's own slope its two vertices tie: mark both.
    wins = [np.zeros(c.alpha.size, dtype=bool) for c in chains]
    slopes = [c.slopes for c in chains]
    for own, other in ((0, 1), (1, 0)):
        chain, rival, s = chains[own], chains[other], slopes[own]
        if not s.size:
            continue
        k = np.searchsorted(slopes[other], s, side="left")  # rival's active vertex
        mine = chain.tpr[:-1] + s * chain.alpha[:-1]  # = with vertex i + 1 (a tie)
        theirs = rival.tpr[k] + s * rival.alpha[k]
        won = mine >= theirs
        wins[own][:-1] |= won
        wins[own][1:] |= won
        wins[other][k[mine <= theirs]] = True
    # s → −∞: the α = 0 vertices; s = −1: the last vertices (the t = 0 points).
    top = max(c.tpr[0] for c in chains)
    for c, w in zip(chains, wins, strict=True):
        w[0] |= c.tpr[0] >= top
    end = [c.tpr[-1] - c.alpha[-1] for c in chains]
    for w, value in zip(wins, end, strict=True):
        w[-1] |= value >= max(end)
    alpha = np.concatenate([c.alpha[w] for c, w in zip(chains, wins, strict=True)])
    beta = np.concatenate([c.beta[w] for c, w in zip(chains, wins, strict=True)])
    tpr = np.concatenate([c.tpr[w] for c, w in zip(chains, wins, strict=True)])
    order = np.argsort(alpha, kind="stable")  # two sorted runs: a linear merge
    alpha, beta, tpr = alpha[order], beta[order], tpr[order]
    tied = alpha[1:] == alpha[:-1]
    if not tied.any():
        return alpha, beta, tpr
    if tied[0] and not tied[1:].any():  # the usual case: both chains start at α = 0
        drop = 0 if tpr[0] <= tpr[1] else 1
        return np.delete(alpha, drop), np.delete(beta, drop), np.delete(tpr, drop)
    if tied.any():  # equal α from both chains: keep the highest TPR
        order = np.lexsort((tpr, alpha))
        alpha, beta, tpr = alpha[order], beta[order], tpr[order]
        last = np.concatenate((alpha[1:] != alpha[:-1], [True]))
        alpha, beta, tpr = alpha[last], beta[last], tpr[last]
    return alpha, beta, tpr


def curve_from_pmfs(pmfs: tuple[LossPMF, ...]) -> TradeoffCurve:
    """The tight symmetric trade-off curve of a PLD's directions (MATH.md §2).

    Left of the diagonal it is the hull of both directions' breakpoints on slopes ≤ −1
    (every segment of a chain has slope −e^y with y ≥ 0), extended with slope −1 (the
    supporting lines of δ(ε), ε ≥ 0); it stops where it meets β = α, at α*; the rest
    is its mirror image.  Slopes are never recomputed from differences: where a tiny
    mass vanishes in a TPR sum, the difference would read 0 instead of −e^y.
    """
    directions = tuple(points_from_pmf(p) for p in pmfs)
    a, b, t = hull_of_chains(directions)  # α ascending, one vertex per α
    support = (a, b, t)
    # Stop at the diagonal β = α: on a hull segment, or on the slope −1 extension.
    past = b <= a
    k = int(np.argmax(past))
    if past[k]:  # k ≥ 1: the first vertex has α = 0 < β
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
        infinity_mass=float(max(p.infinity_mass for p in pmfs)),
        points=directions,
        support=support,
    )


def curve_from_pld(pld: pld_module.PrivacyLossDistribution) -> TradeoffCurve:
    """Convenience: ``curve_from_pmfs(pmfs_from_pld(pld))``."""
    return curve_from_pmfs(pmfs_from_pld(pld))


def delta_from_curve(curve: TradeoffCurve, epsilon: float) -> float:
    """δ(ε) implied by the curve: max over vertices of 1 − e^ε α − f(α) (MATH.md §2)."""
    return float(max(0.0, np.max(curve.tpr - np.exp(epsilon) * curve.alpha)))


def epsilon_for_delta(points: tuple[DirectionalPoints, ...], delta: float) -> float:
    """Smallest ε ≥ 0 with δ(ε) ≤ ``delta``, max over directions.

    The same rule as dp-accounting's ``get_epsilon_for_delta`` (walk the losses from
    the top, stop at the first y_j whose tail masses U_j, L_j already put the answer
    ln((U_j − δ)/L_j) at or above y_j), vectorised over the breakpoints' tail sums:
    the accountant's loop is pure Python and would cost more than the composition.
    The tail sums skip the tiny negative probabilities that FFT convolution leaves in
    a composed PMF, so at δ ≲ 1e-9 the result can be slightly larger (never smaller)
    than the accountant's.
    """
    worst = 0.0
    for chain in points:
        upper, lower, losses = chain.tpr, chain.alpha, chain.losses
        if upper[0] > delta:  # the mass at +∞ alone exceeds δ
            return math.inf
        n = losses.size
        # ln((U_j − δ)/L_j) ≥ y_j  ⟺  U_j − δ ≥ L_j e^{y_j}  (U_j > δ, L_j > 0).
        stop = (upper[:n] > delta) & (lower[:n] > 0) & (upper[:n] - delta >= chain.scaled_alpha)
        underflow = (upper[1:] >= delta) & (lower[1:] == 0)  # e^{−y} vanished
        first_stop = int(np.argmax(stop)) if stop.any() else n
        first_underflow = int(np.argmax(underflow)) if underflow.any() else n
        if first_underflow < first_stop:
            worst = max(worst, float(losses[first_underflow]))
            continue
        j = first_stop
        if upper[j] <= lower[j] + delta:
            continue
        worst = max(worst, math.log((float(upper[j]) - delta) / float(lower[j])))
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
