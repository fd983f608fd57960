"""One epoch of DP-SGD with random allocation ("balls in bins"), amplified.

Each example is in exactly one of the epoch's k steps, chosen uniformly at random; each
step adds Gaussian noise of standard deviation σ (the noise multiplier) to a sum of
gradients clipped to norm 1.  Chua et al. 2025 ("Balls-and-bins sampling for DP-SGD",
AISTATS 2025, arXiv:2412.16802) show that the adaptive epoch is dominated by the pair

    P = (1/k) Σⱼ N(eⱼ, σ²Iₖ)   versus   Q = N(0, σ²Iₖ)

(remove: P with the example, Q without; add: Q against P); Feldman & Shenfeld 2025
(arXiv:2502.08202) account the same pair.  Its likelihood ratio is dP/dQ = S/k,
S = Σⱼ Wⱼ, Wⱼ = exp((2xⱼ − 1)/(2σ²)), the Wⱼ independent lognormals under Q, of mean 1.

Both hockey-stick divergences are Q-expectations of convex functions of S:
δ_remove(ε) = E_Q[(S/k − e^ε)₊] (increasing) and δ_add(ε) = E_Q[(1 − e^ε S/k)₊]
(decreasing).  Each Wⱼ is put on a grid of step Δw by splitting every cell's mass
between its two ends so as to keep its mean (a mean-preserving spread): the sum of
independent spreads is a spread of S (convex order), so both δ's only grow, and by
O(Δw²), not O(Δw).  In the remove direction the terms' mass above the grid's top ŵ
is an infinite loss, P_P(some Wⱼ > ŵ) = 1 − (1 − Φ̄_P(ŵ))(1 − Φ̄_Q(ŵ))^{k−1}
(E_Q[(S/k − e^ε)₊; that event] is at most E_Q[S/k; it]); in the add direction each term
is capped instead (a smaller S only raises δ_add).  Under P the law of S is that of a
size-biased W₁ plus k − 1 terms under Q, so the remove direction composes the spread
masses times w once with k − 1 plain ones, and the add direction k capped ones
(``composition.compose``, each probability replaced by an upper bound of it, its
truncated tail at +∞).  The loss log(S/k) (−log(S/k) for add) is then rounded up
onto the loss grid, which only raises δ(ε) = E[(1 − e^{ε−L})₊] + p∞.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import log_ndtr, ndtri

from privspec.numerics.composition import compose
from privspec.numerics.cost import CostError, spend
from privspec.numerics.curve import FloatArray, LossPMF
from privspec.numerics.portable_pld import refuse_loss_above_range

#: Most grid points of one Wⱼ: the grid step Δw is at least the top over this.
MAX_W_POINTS = 2**16

#: Most grid points of one Wⱼ when an epoch has two steps: the composition is then a
#: direct convolution (the tilted FFT does not resolve the far tail of two heavy terms).
PAIR_W_POINTS = 12_000

#: The finest Δw, as a fraction of the standard deviation of Wⱼ under Q, √(e^{1/σ²} − 1):
#: the spread adds Δw²/4 to each term's variance, under 3 × 10⁻⁶ of it.
W_STEP_FRACTION = 0.003

#: Estimated seconds to build one grid point of one Wⱼ.
SECONDS_PER_W_POINT = 1e-6

#: Lowest privacy loss kept apart: lower losses are raised to it (pessimistic).
LOWEST_LOSS = -50.0


def _most_points(steps: int) -> int:
    """The most grid points of one Wⱼ for an epoch of ``steps`` steps."""
    return PAIR_W_POINTS if steps == 2 else MAX_W_POINTS


def w_top(sigma: float, steps: int, tail: float) -> float:
    """The ŵ above which any of the epoch's k terms lies with probability at most
    ``tail`` under P (a union bound; the term with x ~ N(1, σ²) has the heaviest tail,
    P(W > w) = Φ̄((σ² log w − 1/2)/σ))."""
    z = -float(ndtri(tail / steps))
    log_top = (sigma * z + 0.5) / (sigma * sigma)
    refuse_loss_above_range(log_top)  # (its loss, log(ŵ/k), is about as large)
    return math.exp(log_top)


def _log_tail(w: FloatArray, sigma: float, mean: float, above: bool) -> FloatArray:
    """log P(W > w) (``above``) or log P(W ≤ w), W = exp((2x − 1)/(2σ²)),
    x ~ N(mean, σ²): W ≤ w ⇔ x ≤ σ² log w + 1/2."""
    with np.errstate(divide="ignore"):
        t = (sigma * sigma * np.log(w) + 0.5 - mean) / sigma
    return np.asarray(log_ndtr(-t if above else t), dtype=np.float64)


def _cells(edges: FloatArray, sigma: float, mean: float) -> FloatArray:
    """P(edges[i] < W ≤ edges[i + 1]), each from its own tail's side (no cancellation)."""
    below = np.exp(_log_tail(edges, sigma, mean, above=False))
    above = np.exp(_log_tail(edges, sigma, mean, above=True))
    cells = np.where(below[1:] < 0.5, below[1:] - below[:-1], above[:-1] - above[1:])
    return np.asarray(cells.clip(0.0), dtype=np.float64)


def spread_term(sigma: float, step: float, points: int) -> tuple[FloatArray, float]:
    """The masses of one Wⱼ under Q on the grid i·Δw, i = 0…points, each cell's mass
    split between its ends keeping its mean (E_Q[W; cell] = P_P(cell), since the
    density ratio of P's term to Q's is w); and the mass above the top, P_Q(W > ŵ)."""
    edges = np.arange(points + 1, dtype=np.float64) * step
    mass = _cells(edges, sigma, 0.0)
    first_moment = _cells(edges, sigma, 1.0)  # ∫ w dQ over the cell
    upper = np.clip(first_moment - edges[:-1] * mass, 0.0, None) / step  # to the right end
    upper = np.minimum(upper, mass)
    probs = np.zeros(points + 1)
    probs[:-1] += mass - upper
    probs[1:] += upper
    return probs, float(np.exp(_log_tail(edges[-1:], sigma, 0.0, above=True))[0])


def _onto_loss_grid(sums: LossPMF, steps: int, base: float, h: float, add: bool,
                    dust: float) -> LossPMF:
    """The PMF of L = log(S/k) (of −L when ``add``) rounded up onto the grid of step h;
    ``sums`` is that of y = S − base (of base − S when ``add``), each probability an
    upper bound of its own (``compose(upper=True)``): so every δ(ε) of this epoch, and
    of any composition of it, is at least the true one.  The composition's unresolved
    lower mass (an upper bound of it) goes to the lowest loss, which is below 0 (raising
    a loss only raises δ(ε)); so do the lowest losses holding ``dust`` of mass, and
    those below ``LOWEST_LOSS``."""
    totals = base - sums.losses if add else base + sums.losses
    mass, infinity = sums.probs, sums.infinity_mass
    empty = totals <= 0.0  # S = 0 (every term at 0): −L = +∞
    infinity += float(mass[empty].sum())
    totals, mass = totals[~empty], mass[~empty]
    loss = np.log(totals / steps) * (-1.0 if add else 1.0)  # ascending, as y
    raised = min(int(np.searchsorted(np.cumsum(mass), dust, side="right")), loss.size - 1)
    floor = min(float(loss[raised]) if loss.size else 0.0, -h)
    loss = np.maximum(loss, max(LOWEST_LOSS, floor))
    # ceil, with a margin for the logarithm's rounding (a few ulps): never below
    index = np.ceil(loss / h + 1e-9 * (1.0 + np.abs(loss / h))).astype(np.int64)
    lowest = min(int(index.min()) if index.size else -1, -1)
    probs = np.bincount(index - lowest, weights=mass) if index.size else np.zeros(1)
    probs[0] += sums.lower_mass
    losses = (np.arange(probs.size) + lowest) * h
    return LossPMF(losses, probs, min(1.0, infinity), (h, lowest))


def _offset(sigma: float, steps: int, step: float, dust: float) -> int:
    """How many grid steps each term is shifted by so that the composition resolves the
    sums from S − k·offset·Δw = 0 up: S lies below k(1 − t) with probability at most
    ``dust`` for t with e^{−k t²/(2 E_Q[W²])} = ``dust`` (the lower tail of a sum of
    independent non-negative terms; E_Q[W²] = e^{1/σ²}), kept below S = k/2.  Only
    the cost depends on it: what lies below is put at the lowest loss."""
    t = math.sqrt(2 * math.exp(1.0 / (sigma * sigma)) * math.log(1 / dust) / steps)
    return max(0, math.floor(max(0.0, 1.0 - max(t, 0.5)) / step))


def w_grid(sigma: float, steps: int, tail: float) -> tuple[float, int]:
    """(Δw, points) of the grid of each Wⱼ, up to ``w_top``."""
    top = w_top(sigma, steps, tail)
    spread = math.sqrt(math.expm1(1.0 / (sigma * sigma)))
    step = max(W_STEP_FRACTION * spread, top / _most_points(steps))
    return step, math.ceil(top / step)


def _add_term(sigma: float, steps: int, step: float, tail: float) -> tuple[LossPMF, float]:
    """One term of the add direction, as y = c − Wⱼ less an offset (the composition
    resolves the sums from y = 0 up, S at most about 1.5k), and c: Wⱼ spread on its own
    grid up to c, its mass above c moved down to c (a smaller S only raises δ_add).
    c is k, or less: the level Wⱼ exceeds with probability ``tail``/k (S ≥ c then, and
    −L ≤ log(k/c): δ_add(ε) is unchanged for ε ≥ log(k/c), and below it changes by at
    most ``tail``, towards the attacker).  Its step is at most the one that keeps the
    mass the spread puts at 0, P_Q(W ≤ Δw) per term, below ``tail`` for all k together
    (S = 0 is an infinite loss)."""
    def level(z: float) -> float:  # the w with P_Q(W ≤ w) = Φ(z)
        return math.exp((sigma * z - 0.5) / (sigma * sigma))

    top = min(float(steps), level(-float(ndtri(tail / steps))))
    fine = level(float(ndtri(tail ** (1.0 / steps))))
    add_step = min(step, max(fine, top / _most_points(steps)))
    points = math.ceil(top / add_step)
    probs, above = spread_term(sigma, add_step, points)
    probs[-1] += above
    offset = max(0, points - math.ceil(1.5 / add_step))
    cap = points * add_step
    return LossPMF((np.arange(points + 1) - offset) * add_step, probs[::-1].copy(), 0.0,
                   (add_step, -offset)), steps * (cap - offset * add_step)


def epoch_pmfs(sigma: float, steps: int, h: float, tail: float, truncation: float
               ) -> tuple[LossPMF, LossPMF]:
    """(remove, add) privacy-loss PMFs of one epoch of k = ``steps`` Gaussian steps with
    noise multiplier σ under random allocation, on the loss grid of step h, each giving
    δ(ε) at least the pair's.  ``tail``: the terms' mass above the W grid, moved to +∞;
    ``truncation``: each composition's."""
    step, points = w_grid(sigma, steps, tail)
    spend(points * SECONDS_PER_W_POINT, "building the random-allocation epoch", fixed=True)
    probs, above = spread_term(sigma, step, points)
    values = np.arange(points + 1) * step
    offset = _offset(sigma, steps, step, truncation)
    plain = LossPMF(values - offset * step, probs, above, (step, -offset))
    # P's own term: size-biased (masses times w); its mass above the top is P_P(W > ŵ)
    own_above = float(np.exp(_log_tail(values[-1:], sigma, 1.0, above=True))[0])
    own = LossPMF(plain.losses, probs * values, own_above, plain.grid)
    base = steps * offset * step
    remove = compose([(plain, steps - 1), (own, 1)] if steps > 1 else [(own, 1)],
                     step, truncation, upper=True)
    term, add_base = _add_term(sigma, steps, step, tail)
    add = compose([(term, steps)], term.grid[0] if term.grid else step, truncation,
                  upper=True)
    if not (remove.certified and add.certified):  # (dp-accounting's: no error bounds)
        raise CostError("an epoch of random allocation could not be composed within a "
                        "stated error", math.inf, 2.0)
    return (_onto_loss_grid(remove, steps, base, h, add=False, dust=truncation),
            _onto_loss_grid(add, steps, add_base, h, add=True, dust=truncation))
