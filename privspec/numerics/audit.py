"""Stage 4b: an attack's scores held against a certified trade-off curve (docs/audit.md).

Given the scores an attack gave to examples that were in (members, inserted canaries)
and out, this module makes statements that hold simultaneously with probability at
least the chosen confidence 1 − a, assuming each score is an independent trial of the
attack (one training run per score, or canaries inserted independently):

* thresholds: a fixed set of pooled-score quantiles, log-spaced in the tail fraction,
  chosen without looking at the labels (or chosen on one half of the scores and held
  against the other half, ``holdout``); two attacks per threshold t, "in when the score
  is ≥ t" (``higher``) and "in when it is ≤ t" (``lower``), each direction its own
  frontier;
* one exact Clopper–Pearson box [FPR_lo, FPR_hi] × [TPR_lo, TPR_hi] per attack, every
  interval at level a / (2·boxes) (Bonferroni over all boxes of both directions), so
  that every box holds at once with probability ≥ 1 − a;
* an empirical lower bound on μ: if every box holds and the mechanism is μ-GDP, then
  TPR_lo ≤ TPR ≤ Φ(Φ⁻¹(FPR) + μ) ≤ Φ(Φ⁻¹(FPR_hi) + μ) for each box, so
  μ ≥ Φ⁻¹(TPR_lo) − Φ⁻¹(FPR_hi); μ_lb is the largest of these (at least 0);
* an empirical lower bound on ε at δ, from the same boxes and the hypothesis-testing
  form of (ε, δ)-DP (Kairouz, Oh & Viswanath 2015): TPR ≤ e^ε·FPR + δ and
  1 − FPR ≤ e^ε·(1 − TPR) + δ;
* a contradiction: a box entirely above the certified ROC, TPR_lo > 1 − f'(FPR_hi),
  where f' is the report's curve. The report's curve is pessimistic, f' ≤ f for the
  mechanism's true curve f, so 1 − f'(FPR_hi) ≥ 1 − f(FPR_hi) ≥ 1 − f(FPR) (f is
  decreasing and FPR ≤ FPR_hi): a box above the pessimistic curve is above the true one,
  and the attack beats what the mechanism can allow. Between the report's samples of f'
  the bound used is 1 − f' at the next sample to the right (f' is decreasing), and it is
  also capped by 1 − G_μ + τ, what the report's μ certifies: both err against a
  contradiction.

Costs a sort of the pooled scores (for the thresholds) and of each class (for the
counts, then one binary search per threshold). No wording here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy.special import ndtri
from scipy.stats import beta as beta_distribution

from privspec.numerics.curve import FloatArray
from privspec.numerics.gdp import gaussian_tpr

Direction = Literal["higher", "lower"]
#: Tail fractions of the pooled scores at which thresholds are put, per decade.
LEVELS_PER_DECADE = 5
#: The fewest scores of each class an audit accepts.
MIN_SCORES = 10


@dataclass(frozen=True)
class Box:
    """One attack's simultaneous Clopper–Pearson box: the attack says "in" when the
    score is ≥ ``threshold`` (``higher``) or ≤ it (``lower``)."""

    direction: Direction
    threshold: float
    fpr: float  # observed
    tpr: float  # observed
    fpr_low: float
    fpr_high: float
    tpr_low: float
    tpr_high: float

    @property
    def mu_lower(self) -> float:
        """The μ every μ-GDP mechanism the box allows must have: Φ⁻¹(TPR_lo) − Φ⁻¹(FPR_hi)
        (−∞ when the box says nothing)."""
        if self.tpr_low <= 0 or self.fpr_high >= 1:
            return -math.inf
        return float(ndtri(self.tpr_low) - ndtri(self.fpr_high))

    def epsilon_lower(self, delta: float) -> float:
        """The ε every (ε, δ)-DP mechanism the box allows must have (−∞ when none)."""
        candidates = [-math.inf]
        if self.tpr_low > delta and self.fpr_high > 0:
            candidates.append(math.log((self.tpr_low - delta) / self.fpr_high))
        if 1 - self.fpr_high > delta and self.tpr_low < 1:
            candidates.append(math.log((1 - self.fpr_high - delta) / (1 - self.tpr_low)))
        return max(candidates)


@dataclass(frozen=True)
class CertifiedCurve:
    """What a report certifies: its trade-off curve f' sampled at ``alpha`` (ascending),
    with ``tpr`` = 1 − f'(alpha), and its μ at floor τ (None without a finite μ)."""

    alpha: FloatArray
    tpr: FloatArray
    mu: float | None
    floor: float

    def tpr_bound(self, fpr: FloatArray) -> FloatArray:
        """The highest TPR the report allows at each FPR, rounded up between samples:
        1 − f' at the next sample to the right, capped by 1 − G_μ + τ."""
        index = np.searchsorted(self.alpha, fpr, side="left")
        padded = np.append(self.tpr, 1.0)
        bound = padded[np.minimum(index, self.tpr.size)]
        if self.mu is not None:
            bound = np.minimum(bound, gaussian_tpr(fpr, self.mu) + self.floor)
        return np.asarray(np.minimum(bound, 1.0))


@dataclass(frozen=True)
class AuditStatistics:
    """The boxes of one audit and what they prove, all at ``confidence`` at once."""

    members: int
    non_members: int
    confidence: float
    holdout: bool
    boxes: tuple[Box, ...]

    @property
    def mu_lower(self) -> float:
        """The largest μ the boxes prove (0 when they prove nothing)."""
        return max([0.0, *(box.mu_lower for box in self.boxes)])

    def epsilon_lower(self, delta: float) -> float:
        """The largest ε at ``delta`` the boxes prove (0 when they prove nothing)."""
        return max([0.0, *(box.epsilon_lower(delta) for box in self.boxes)])

    def strongest(self) -> Box | None:
        """The box that proves ``mu_lower`` (None when none proves a positive μ)."""
        best = max(self.boxes, key=lambda box: box.mu_lower, default=None)
        return best if best is not None and best.mu_lower > 0 else None

    def contradictions(self, certified: CertifiedCurve) -> tuple[tuple[Box, float], ...]:
        """The boxes entirely above the certified ROC, each with the highest TPR the
        report allows at its FPR_hi, the clearest first."""
        if not self.boxes:
            return ()
        fpr_high = np.array([box.fpr_high for box in self.boxes])
        tpr_low = np.array([box.tpr_low for box in self.boxes])
        allowed = certified.tpr_bound(fpr_high)
        excess = tpr_low - allowed
        order = np.argsort(-excess, kind="stable")
        return tuple((self.boxes[i], float(allowed[i])) for i in order if excess[i] > 0)


def tail_fractions(pooled: int) -> FloatArray:
    """Tail fractions of the pooled scores where thresholds go: ``LEVELS_PER_DECADE``
    a decade from one score (1/pooled) up to one half."""
    decades = max(math.log10(pooled / 2), 0.0)
    count = max(math.ceil(decades * LEVELS_PER_DECADE) + 1, 2)
    return np.asarray(np.logspace(-math.log10(pooled), math.log10(0.5), count))


def _merged_order_statistics(first: FloatArray, second: FloatArray, counts: np.ndarray
                             ) -> FloatArray:
    """The ``counts``-th smallest (1-based) of two sorted arrays taken together, by a
    binary search on how many come from ``first`` (no merged copy is made)."""
    low = np.maximum(counts - second.size, 0)
    high = np.minimum(counts, first.size)
    while (low < high).any():
        middle = (low + high) // 2
        from_second = counts - middle  # > 0 wherever low < high
        too_few = (low < high) & (second[np.maximum(from_second - 1, 0)]
                                  > first[np.minimum(middle, first.size - 1)])
        low = np.where(too_few, middle + 1, low)
        high = np.where(too_few | (low >= high), high, middle)
    taken_second = counts - low
    last_first = np.where(low > 0, first[np.maximum(low - 1, 0)], -np.inf)
    last_second = np.where(taken_second > 0, second[np.maximum(taken_second - 1, 0)], -np.inf)
    return np.asarray(np.maximum(last_first, last_second))


def candidate_thresholds(members: FloatArray, non_members: FloatArray
                         ) -> tuple[FloatArray, FloatArray]:
    """The ``higher`` and ``lower`` thresholds (ascending) for scores sorted by class:
    pooled order statistics at ``tail_fractions`` from the top and from the bottom,
    without the labels."""
    n = members.size + non_members.size
    tails = np.unique(np.clip(np.ceil(tail_fractions(n) * n).astype(np.int64), 1, n))
    higher = _merged_order_statistics(members, non_members, n - tails + 1)
    lower = _merged_order_statistics(members, non_members, tails)
    return np.unique(higher), np.unique(lower)


def _counts(scores: FloatArray, higher: FloatArray, lower: FloatArray
            ) -> tuple[np.ndarray, np.ndarray]:
    """How many ``scores`` (sorted ascending) are ≥ each ``higher`` threshold and ≤ each
    ``lower`` one."""
    at_least = scores.size - np.searchsorted(scores, higher, side="left")
    return at_least, np.searchsorted(scores, lower, side="right")


def clopper_pearson(successes: np.ndarray, trials: int, level: float
                    ) -> tuple[FloatArray, FloatArray]:
    """Exact two-sided intervals, each missing the truth with probability ≤ ``level``."""
    k = np.asarray(successes, dtype=np.float64)
    tail = level / 2
    with np.errstate(invalid="ignore", divide="ignore"):
        low = np.where(k > 0, beta_distribution.ppf(tail, k, trials - k + 1), 0.0)
        high = np.where(k < trials, beta_distribution.ppf(1 - tail, k + 1, trials - k), 1.0)
    return np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)


def boxes_at(members: FloatArray, non_members: FloatArray, higher: FloatArray,
             lower: FloatArray, level: float) -> tuple[Box, ...]:
    """One box per threshold and direction, each interval at ``level`` (the scores of
    each class sorted)."""
    boxes: list[Box] = []
    member_ge, member_le = _counts(members, higher, lower)
    other_ge, other_le = _counts(non_members, higher, lower)
    sides: tuple[tuple[Direction, FloatArray, np.ndarray, np.ndarray], ...] = (
        ("higher", higher, member_ge, other_ge), ("lower", lower, member_le, other_le))
    for direction, thresholds, tp, fp in sides:
        tpr_low, tpr_high = clopper_pearson(tp, members.size, level)
        fpr_low, fpr_high = clopper_pearson(fp, non_members.size, level)
        for j, threshold in enumerate(thresholds.tolist()):
            boxes.append(Box(
                direction, threshold, fpr=float(fp[j]) / non_members.size,
                tpr=float(tp[j]) / members.size, fpr_low=float(fpr_low[j]),
                fpr_high=float(fpr_high[j]), tpr_low=float(tpr_low[j]),
                tpr_high=float(tpr_high[j])))
    return tuple(boxes)


def audit(members: FloatArray, non_members: FloatArray, confidence: float = 0.95,
          *, holdout: bool = False) -> AuditStatistics:
    """Simultaneous boxes for the scores of ``members`` and ``non_members``.

    With ``holdout``, each class is split by position (even, odd): the even half picks,
    per direction, the candidate threshold whose box proves the largest μ, and only those
    two are held, with their own Bonferroni, against the odd half."""
    if not 0 < confidence < 1:
        raise ValueError("the confidence is a probability strictly between 0 and 1")
    members = np.asarray(members, dtype=np.float64)
    non_members = np.asarray(non_members, dtype=np.float64)
    if min(members.size, non_members.size) < MIN_SCORES * (2 if holdout else 1):
        raise ValueError(f"an audit needs at least {MIN_SCORES * (2 if holdout else 1)} "
                         "scores of each class")
    error = 1 - confidence
    if holdout:
        higher, lower = _chosen_on_half(np.sort(members[0::2]), np.sort(non_members[0::2]),
                                        error)
        members, non_members = np.sort(members[1::2]), np.sort(non_members[1::2])
    else:
        members, non_members = np.sort(members), np.sort(non_members)
        higher, lower = candidate_thresholds(members, non_members)
    level = error / (2 * (higher.size + lower.size))
    return AuditStatistics(members.size, non_members.size, confidence, holdout,
                           boxes_at(members, non_members, higher, lower, level))


def _chosen_on_half(members: FloatArray, non_members: FloatArray, error: float
                    ) -> tuple[FloatArray, FloatArray]:
    """The ``higher`` and ``lower`` threshold (one each) whose box, at the level of two
    boxes, proves the largest μ on these scores (sorted)."""
    higher, lower = candidate_thresholds(members, non_members)
    boxes = boxes_at(members, non_members, higher, lower, error / 4)
    picked: list[FloatArray] = []
    for direction in ("higher", "lower"):
        mine = [box for box in boxes if box.direction == direction]
        best = max(mine, key=lambda box: box.mu_lower)
        picked.append(np.array([best.threshold]))
    return picked[0], picked[1]


# --- one run (Steinke, Nasr & Jagielski 2023) ----------------------------------------------

#: Guess counts tried per direction by the one-run bound (Bonferroni over all of them).
ONE_RUN_GUESS_COUNTS = 12


@dataclass(frozen=True)
class OneRunBound:
    """The one-run lower bound on ε at ``delta``: of ``canaries`` scores, the attack guessed
    ``guesses`` (the highest and the lowest, abstaining on the rest) and ``correct`` were
    right."""

    delta: float
    epsilon_lower: float  # 0: nothing proven
    canaries: int
    guesses: int
    correct: int


def one_run_p_value(canaries: int, guesses: int, correct: int, epsilon: float,
                    delta: float) -> float:
    """How likely ``correct`` or more right guesses of ``guesses`` are when the mechanism
    is (ε, δ)-DP and each of ``canaries`` canaries was included independently with
    probability 1/2 (Steinke, Nasr & Jagielski 2023, arXiv:2305.08846: the guesses are
    dominated by Binomial(guesses, e^ε/(1 + e^ε)), plus a term in 2·canaries·δ)."""
    from scipy.special import expit
    from scipy.stats import binom

    q = float(expit(epsilon))
    tail = float(binom.sf(correct - 1, guesses, q))
    if delta <= 0 or correct <= 0:
        return min(tail, 1.0)
    below = binom.cdf(np.arange(-1, correct), guesses, q)  # P[B ≤ j], j = −1 … v − 1
    steps = np.arange(1, correct + 1)
    spread = float(np.max((below[-1] - below[correct - steps]) / steps))
    return min(tail + 2 * canaries * delta * spread, 1.0)


def one_run_epsilon(canaries: int, guesses: int, correct: int, delta: float,
                    level: float) -> float:
    """The largest ε (within 10⁻⁶, from below) at which (ε, δ)-DP is rejected at
    ``level``: 0 when even ε = 0 is not."""
    if one_run_p_value(canaries, guesses, correct, 0.0, delta) >= level:
        return 0.0
    low, high = 0.0, 1.0
    while one_run_p_value(canaries, guesses, correct, high, delta) < level and high < 100:
        low, high = high, 2 * high
    while high - low > 1e-6:
        middle = (low + high) / 2
        if one_run_p_value(canaries, guesses, correct, middle, delta) < level:
            low = middle
        else:
            high = middle
    return low


def _one_run_guesses(members: FloatArray, non_members: FloatArray) -> list[tuple[int, int]]:
    """(guesses, correct) of each guess count and direction, for scores sorted by class:
    "in" for the k highest pooled scores and "out" for the k lowest (both directions,
    ties kept together, so that what is guessed never depends on the labels)."""
    n = members.size + non_members.size
    counts = np.unique(np.maximum(1, (n * 0.5 ** np.arange(1, ONE_RUN_GUESS_COUNTS + 1))
                                  .astype(np.int64)))
    top = _merged_order_statistics(members, non_members, n - counts + 1)
    bottom = _merged_order_statistics(members, non_members, counts)
    tests: list[tuple[int, int]] = []
    for high, low in zip(top.tolist(), bottom.tolist(), strict=True):
        if low >= high:
            continue  # ties: the two guesses would overlap
        member_high, member_low = _counts(members, np.array([high]), np.array([low]))
        other_high, other_low = _counts(non_members, np.array([high]), np.array([low]))
        guesses = int(member_high[0] + other_high[0] + member_low[0] + other_low[0])
        tests.append((guesses, int(member_high[0] + other_low[0])))  # higher means in
        tests.append((guesses, int(member_low[0] + other_high[0])))  # lower means in
    return tests


def one_run(members: FloatArray, non_members: FloatArray, deltas: list[float],
            confidence: float = 0.95) -> list[OneRunBound]:
    """The one-run lower bound on ε at each δ: the best over the guess counts tried, each
    tested at (1 − confidence) / their number (Bonferroni), so that all hold at once."""
    members, non_members = np.sort(members), np.sort(non_members)
    tests = _one_run_guesses(members, non_members)
    canaries = members.size + non_members.size
    level = (1 - confidence) / max(len(tests), 1)
    bounds: list[OneRunBound] = []
    for delta in deltas:
        found = [(one_run_epsilon(canaries, r, v, delta, level), r, v) for r, v in tests]
        epsilon, guesses, correct = max(found, default=(0.0, 0, 0))
        bounds.append(OneRunBound(delta, epsilon, canaries, guesses, correct))
    return bounds
