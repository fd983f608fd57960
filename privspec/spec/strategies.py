"""The sensitivity of a matrix-factorization mechanism (DP-FTRL, banded MF) from its
strategy matrix C and how a unit participates.

The learner sees A·x + B·z = B·(C·x + z), with z ~ N(0, σ²) per coordinate in units of
the clipping norm: the privacy is that of the Gaussian mechanism on C·x.  A unit that
participates in the steps π adds to x one vector v_i of norm at most 1 at each of
them, moving C·x by ‖Σ_{i∈π} c_i ⊗ v_i‖, whose square is Σ_{i,j∈π} G_ij ⟨v_i, v_j⟩
with G = CᵀC.  The sensitivity is its largest value over the allowed patterns π:

* one participation: the largest column norm of C (exact);
* participations at least b steps apart whose columns touch disjoint rows (a strategy
  with at most b bands): Σ_{i∈π} ‖c_i‖², maximised over π (exact: Choquette-Choo et al.
  2023, "(Amplified) Banded Matrix Factorization", arXiv:2306.08153);
* otherwise, when G has no negative entry, the worst case puts one vector at every
  participation, so sens² = max_π Σ_{i,j∈π} G_ij (Choquette-Choo et al. 2023,
  "Multi-epoch matrix factorization mechanisms for private machine learning",
  arXiv:2211.06530), exact when every pattern is enumerated; a stated upper bound
  (|G_ij|, or the triangle inequality Σ_{i∈π} ‖c_i‖) when it is not.

Every sensitivity is rounded up, never below the true one (``privspec.spec.upward``:
each product, sum and square root).  A strategy given by its values (a file's entries,
banded Toeplitz coefficients, at most ``MAX_ENTRY`` in magnitude) is divided by a power
of 2 that brings its largest entry into [1, 2) (``scale_of``): no square, Gram entry or
sum of them leaves double range, however large or small the entries.

Pure Python (``privspec validate`` imports this layer): closed forms, and sums whose
size is capped (``MAX_TREE_WORK``, ``MAX_PATTERNS``).
"""

from __future__ import annotations

import functools
import itertools
import math
import operator
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from fractions import Fraction

from privspec.spec import upward

#: Most work the binary tree's maximisation may take (participations² × tree levels;
#: the exact search's own estimate, ``_tree_search``, beyond which it is not tried).
MAX_TREE_WORK = 2_000_000
#: What trying one set of blocks costs in the tree's exact search, beyond its steps and
#: nodes (in the units of ``MAX_TREE_WORK``).
SET_COST = 16
#: Most participation patterns enumerated for a banded strategy with more bands than
#: the separation (beyond them, the triangle inequality's bound is stated instead).
MAX_PATTERNS = 20_000
#: Most Gram entries' terms (steps × bands) such an enumeration may sum.
MAX_GRAM_WORK = 2_000_000
#: Largest magnitude of a strategy's entry or coefficient: its sensitivity (at most
#: 10⁷ participations' column norms of 10⁴ entries each) stays far within double range.
MAX_ENTRY = 1e200


def scale_of(largest: float) -> float:
    """2^e with ``largest`` / 2^e in [1, 2) (1 for 0): dividing a strategy by it is exact
    (but for entries that fall below double range, each by less than 2⁻¹⁰⁷⁴)."""
    return math.ldexp(1.0, math.frexp(largest)[1] - 1) if largest > 0 else 1.0


def lossy(values: Iterable[float], scale: float) -> bool:
    """Whether a strategy divided by ``scale`` (its largest entry then in [1, 2)) has an
    entry so small (below ``upward.TINY``, not 0) that it, or its products, may lose what
    falls below double range: less, all together, than the last digit of a sensitivity
    of at least 1.  (``upward.TINY`` × ``scale`` is exact, or 0 where no entry can be
    that small.)"""
    return any(0 < abs(value) < upward.TINY * scale for value in values)


def _rounded_up(found: Sensitivity, scale: float, lost: bool) -> Sensitivity:
    """``found``, the sensitivity (rounded up) of a strategy divided by ``scale`` (a
    power of 2, its largest entry then in [1, 2), so ``found`` is at least 1), for the
    strategy itself, rounded up: by one more double when products were ``lost``
    (``lossy``), and where the product falls below double range."""
    value = math.nextafter(found.value, math.inf) if lost else found.value
    scaled = value * scale
    if scaled / scale < value:  # (exact, unless below double range)
        scaled = math.nextafter(scaled, math.inf)
    return replace(found, value=scaled)


@dataclass(frozen=True)
class Sensitivity:
    """The L2 sensitivity of C·x in clipping norms, whether it is exact, and how it was
    found (a phrase for the report)."""

    value: float
    exact: bool
    how: str


def participations(steps: int, times: int, separation: int) -> int:
    """The most participations ``times`` allows in ``steps`` steps at least
    ``separation`` apart: min(k, ⌈n / b⌉)."""
    return min(times, -(-steps // separation))


def tree_depth(steps: int) -> int:
    """⌈log₂ n⌉: the height of the binary tree over n leaves (padded to a power of 2)."""
    return (steps - 1).bit_length()


def tree_work(steps: int, times: int, separation: int) -> int:
    """The work of ``tree_sensitivity``'s maximisation (for the cap ``MAX_TREE_WORK``)."""
    return participations(steps, times, separation) ** 2 * (tree_depth(steps) + 1)


@functools.lru_cache(maxsize=32)
def tree_sensitivity(steps: int, times: int = 1, separation: int = 1,
                     online: bool = False) -> Sensitivity:
    """Binary-tree aggregation (Honaker 2015; Kairouz et al. 2021, arXiv:2103.00039):
    every node of the binary tree over the n steps, padded to 2^⌈log₂ n⌉ leaves, is
    released, or, ``online``, only the nodes whose subtree is complete by step n (DP-FTRL
    without restarts: the forest of Kairouz et al. 2021, App. D).  A leaf is in
    ⌈log₂ n⌉ + 1 nodes of the padded tree and in at most ⌊log₂ n⌋ + 1 complete ones, the
    sensitivity of one participation (exact).  With k participations, a node holding m
    of them moves by m (CᵀC ≥ 0: all in one direction is the worst case), so sens² is the
    largest Σ over the released nodes of m²: found exactly by ``_tree_search`` where it
    fits in ``MAX_TREE_WORK``, else maximised level by level with the separation enforced
    within each subtree but not across subtree boundaries: an upper bound, exact when
    b = 1 or the steps 0, b, 2b, … attain it (the report says which)."""
    depth = tree_depth(steps)
    levels = steps.bit_length() if online else depth + 1
    count = participations(steps, times, separation)
    if count == 1:
        formula = "⌊log₂ n⌋ + 1" if online else "⌈log₂ n⌉ + 1"
        return Sensitivity(upward.sqrt_up(levels), True,
                           f"√({formula}) = √{levels}, a leaf being in {levels} released "
                           "nodes (exact)")

    @functools.cache
    def best(height: int, leaves: int) -> tuple[int, ...]:
        """The largest Σ m² over the released nodes of a subtree of ``height`` whose
        first ``leaves`` leaves are steps, for each number of participations in it."""
        most = participations(leaves, count, separation) if leaves else 0
        if height == 0:
            return tuple(range(most + 1))  # m = 0 or 1: m² = m
        half = 1 << (height - 1)
        left, right = best(height - 1, min(leaves, half)), best(height - 1, max(0, leaves - half))
        released = not online or leaves == 2 * half
        return tuple((m * m if released else 0)
                     + max(left[a] + right[m - a]
                           for a in range(max(0, m - len(right) + 1), min(m, len(left) - 1) + 1))
                     for m in range(most + 1))

    # (b = 1: the level-by-level maximisation relaxes nothing, and is far quicker)
    searched = _tree_search(steps, count, separation, online) if separation > 1 else None
    if searched is not None:
        return Sensitivity(upward.sqrt_up(searched), True,
                           f"the most that {count} participations at least {separation} "
                           f"steps apart add up over the released nodes, Σ m² = {searched} "
                           "(exact: every placement searched)")
    bound = best(depth, steps)[-1]
    spread = [i * separation for i in range(count)]
    attained = sum(_shared_nodes(i, j, depth, steps if online else 1 << depth)
                   for i in spread for j in spread)
    exact = attained == bound or separation == 1  # (b = 1: nothing was relaxed)
    return Sensitivity(upward.sqrt_up(bound), exact,
                       f"the most that {count} participations at least {separation} steps "
                       f"apart add up over the released nodes, Σ m² = {bound} ("
                       + ("exact)" if exact
                          else "an upper bound: the separation is enforced within each "
                          "subtree, not across their boundaries)"))


def _tree_search(steps: int, count: int, separation: int, online: bool) -> int | None:
    """The exact largest Σ m² over the released nodes for at most ``count`` participations
    at least ``separation`` = b apart, or None when the search would take more than
    ``MAX_TREE_WORK`` steps.

    With 2^H ≤ b < 2^(H+1), a node of height ≤ H spans at most 2^H ≤ b steps, any two of
    them less than b apart, so it holds at most one participation: those nodes add, for
    each participation t, the number w(t) of released ones holding t.  The higher nodes
    are unions of the blocks of 2^H steps, each holding at most one participation, so
    they add Σ (occupied blocks under the node)², which depends only on the set of
    occupied blocks.  Every set of at most
    ``count`` blocks is tried; within one, the best steps come from a pass over its
    blocks in order (the best total ending at each step of a block, from the best of the
    previous block at least b steps before)."""
    height = separation.bit_length() - 1
    block = 1 << height
    blocks = -(-steps // block)
    depth = tree_depth(steps)
    work = steps * (height + 1)
    for m in range(1, count + 1):
        # each set: a pass over its m blocks, its m blocks' ancestors, and its own cost
        work += math.comb(blocks, m) * (m * (block + depth - height) + SET_COST)
        if work > MAX_TREE_WORK:
            return None

    def released(level: int, index: int) -> bool:
        return not online or (index + 1) << level <= steps

    weight = [sum(1 for level in range(height + 1) if released(level, t >> level))
              for t in range(steps)]

    def upper(chosen: tuple[int, ...]) -> int:
        total = 0
        for level in range(height + 1, depth + 1):
            under: dict[int, int] = {}
            for index in chosen:
                node = index >> (level - height)
                under[node] = under.get(node, 0) + 1
            total += sum(m * m for node, m in under.items() if released(level, node))
        return total

    def lower(chosen: tuple[int, ...]) -> int | None:
        """The largest Σ w(t) over steps in the ``chosen`` blocks, b apart (None: none)."""
        best: list[int | None] | None = None  # by step of the previous block: the best
        start = 0                             # total ending there or before
        for index in chosen:
            ending: list[int | None] = []
            for t in range(index * block, min((index + 1) * block, steps)):
                last = t - separation - start  # the previous block's latest allowed step
                before = 0 if best is None else None if last < 0 else best[min(last, len(best) - 1)]
                ending.append(None if before is None else before + weight[t])
            best = list(itertools.accumulate(ending, _larger))
            start = index * block
        return None if best is None else best[-1]

    found = 0
    for m in range(1, count + 1):
        for chosen in itertools.combinations(range(blocks), m):
            low = lower(chosen)
            if low is not None:
                found = max(found, low + upper(chosen))
    return found


def _larger(first: int | None, second: int | None) -> int | None:
    """The larger of two totals, None standing for no total at all."""
    return first if second is None or (first is not None and first >= second) else second


def _shared_nodes(i: int, j: int, depth: int, complete_by: int) -> int:
    """How many nodes hold both leaves i and j, among those whose subtree ends by leaf
    ``complete_by`` (the released ones)."""
    return sum(1 for height in range((i ^ j).bit_length(), depth + 1)
               if ((i >> height) + 1) << height <= complete_by)


@functools.lru_cache(maxsize=32)
def toeplitz_sensitivity(coefficients: tuple[float, ...], steps: int, times: int = 1,
                         separation: int = 1) -> Sensitivity:
    """A lower-triangular banded Toeplitz strategy, C_ij = coefficients[i − j] for
    0 ≤ i − j < bands (``_toeplitz``), rounded up: computed for the coefficients scaled
    into [1, 2) (``scale_of``), so that their squares stay within double range."""
    scale = scale_of(max(map(abs, coefficients)))
    scaled = tuple(c / scale for c in coefficients)
    return _rounded_up(_toeplitz(scaled, steps, times, separation), scale,
                       lossy(coefficients, scale))


def _toeplitz(coefficients: tuple[float, ...], steps: int, times: int,
              separation: int) -> Sensitivity:
    """A lower-triangular banded Toeplitz strategy, C_ij = coefficients[i − j] for
    0 ≤ i − j < bands.  Its column norms do not grow with j (later columns are cut by
    the last row), so the first column is the largest and, when the separation b is at
    least the bands (participations touch disjoint rows), the pattern 0, b, 2b, … is
    the worst: sens² = Σ_m ‖c_{mb}‖² (exact, arXiv:2306.08153).  With fewer steps
    between participations than bands, the patterns are enumerated
    (``_enumerated``), or the triangle inequality bounds it."""
    bands = min(len(coefficients), steps)
    count = participations(steps, times, separation)
    numbers, shift = upward.as_integers(coefficients[:bands])
    squares = [0, *itertools.accumulate(n * n for n in numbers)]  # (exact, times 4^shift)

    def norm(square: int) -> float:
        return upward.root_up(Fraction(square, 1 << 2 * shift))

    if count == 1:
        return Sensitivity(norm(squares[-1]), True, "the largest column norm (exact)")
    # the columns 0, b, 2b, …: whole ones (as many rows below as bands), then cut ones
    whole = min(count, (steps - bands) // separation + 1)
    cut = [squares[steps - m * separation] for m in range(whole, count)]
    if separation >= bands:
        total = Fraction(whole * squares[-1] + sum(cut), 1 << 2 * shift)
        return Sensitivity(upward.root_up(total), True,
                           f"participations {separation} steps apart touch disjoint rows of "
                           f"a strategy with {bands} bands: √(Σ of {count} column norms²) "
                           "(exact)")
    gram = functools.partial(_toeplitz_gram, *upward.as_integers(coefficients), steps)
    return _separated(gram, steps, count, separation, steps * bands,
                      lambda: upward.sum_up([upward.product_up(whole, norm(squares[-1])),
                                             *map(norm, cut)]))


@dataclass(frozen=True)
class Columns:
    """What the sensitivity of a strategy C given entry by entry (a file) needs of it,
    for C / ``scale`` (a power of 2 that brings its largest entry into [1, 2):
    ``scale_of``): each column's squared norm (rounded up), the first and the last row
    it touches (n and −1 when none), its Gram entries (CᵀC)_ij for i ≤ j (each rounded
    away from 0), whether a product may have fallen below double range (``lossy``), and
    a column's squared norm exactly (``square``)."""

    squares: tuple[float, ...]
    first: tuple[int, ...]
    last: tuple[int, ...]
    gram: Callable[[int, int], float]
    scale: float
    lossy: bool
    square: Callable[[int], Fraction]


def columns_of(rows: tuple[tuple[float, ...], ...]) -> Columns:
    """``Columns`` of the matrix with these rows."""
    steps = len(rows)
    scale = scale_of(max((abs(value) for row in rows for value in row), default=0.0))
    scaled = [value / scale for row in rows for value in row]
    numbers, shift = upward.as_integers(scaled)  # (sums of products: exact integers)
    exact = [numbers[i * steps:(i + 1) * steps] for i in range(steps)]
    return Columns(
        tuple(upward.ratio_up(sum(row[j] * row[j] for row in exact), 2 * shift)
              for j in range(steps)),
        tuple(next((i for i in range(steps) if rows[i][j]), steps) for j in range(steps)),
        tuple(next((i for i in reversed(range(steps)) if rows[i][j]), -1)
              for j in range(steps)),
        lambda i, j: upward.ratio_away(sum(row[i] * row[j] for row in exact[j:]), 2 * shift),
        scale, lossy((value for row in rows for value in row), scale),
        lambda j: Fraction(sum(row[j] * row[j] for row in exact), 1 << 2 * shift))


def matrix_sensitivity(matrix: tuple[tuple[float, ...], ...] | Columns, times: int = 1,
                       separation: int = 1) -> Sensitivity:
    """An n × n strategy given entry by entry (a file: its rows, or its ``Columns``): the
    largest column norm for one participation; with several, Σ_{i∈π} ‖c_i‖² maximised
    over π when columns ``separation`` apart touch disjoint rows (exact), else the
    patterns enumerated or the triangle inequality (``_separated``); rounded up
    (``_rounded_up``)."""
    columns = matrix if isinstance(matrix, Columns) else columns_of(matrix)
    return _rounded_up(_scaled_sensitivity(columns, times, separation), columns.scale,
                       columns.lossy)


def _scaled_sensitivity(columns: Columns, times: int, separation: int) -> Sensitivity:
    """``matrix_sensitivity`` of the scaled strategy ``columns`` describes."""
    squares = list(columns.squares)
    steps = len(squares)
    count = participations(steps, times, separation)
    if count == 1:  # (the largest exact square is among those rounded up to the largest)
        largest = max(squares)
        square = max(columns.square(j) for j, q in enumerate(squares) if q == largest)
        return Sensitivity(upward.root_up(square), True, "the largest column norm (exact)")
    if disjoint_columns(columns, separation):
        return Sensitivity(upward.sqrt_up(_best_separated(squares, count, separation)), True,
                           f"columns {separation} apart touch disjoint rows: the largest "
                           f"√(Σ of {count} column norms²) at least {separation} apart (exact)")
    norms = [upward.sqrt_up(q) for q in squares]
    return _separated(columns.gram, steps, count, separation, steps * steps,
                      lambda: _best_separated(norms, count, separation))


def disjoint_columns(columns: Columns, separation: int) -> bool:
    """Whether any two columns at least ``separation`` apart touch disjoint rows (so
    that participations that far apart add orthogonal vectors)."""
    first, last = columns.first, columns.last
    steps = len(first)
    later = [steps] * (steps + separation + 1)  # the first row any column ≥ j touches
    for j in reversed(range(steps)):
        later[j] = min(first[j], later[j + 1])
    return all(last[j] < later[j + separation] for j in range(steps))


def _separated(gram: Callable[[int, int], float], steps: int, count: int, separation: int,
               work: int, triangle: Callable[[], float]) -> Sensitivity:
    """Several participations whose columns may overlap: every pattern enumerated
    (Σ_{i,j∈π} |G_ij|, exact when the worst pattern's entries are not negative, then
    one direction at every participation attains it: arXiv:2211.06530), or, with too
    many patterns, the triangle inequality Σ_{i∈π} ‖c_i‖ over the worst pattern
    (``triangle``)."""
    enumerated = _enumerated(gram, steps, count, separation, work)
    if enumerated is not None:
        total, exact = enumerated
        return Sensitivity(upward.sqrt_up(total), exact,
                           "the largest Σ_{i,j∈π} |(CᵀC)_ij| over every pattern of "
                           f"{count} participations at least {separation} steps apart "
                           + ("(exact: the worst pattern's entries of CᵀC are not negative, "
                              "arXiv:2211.06530)" if exact else
                              "(an upper bound: the worst pattern has negative entries of "
                              "CᵀC)"))
    return Sensitivity(triangle(), False,
                       f"the triangle inequality, the largest Σ of {count} column norms "
                       "at least the separation apart (an upper bound: too many patterns "
                       "to enumerate)")


def _best_separated(values: list[float], count: int, separation: int) -> float:
    """The largest sum of at most ``count`` of the non-negative ``values`` at indices at
    least ``separation`` apart (dynamic programming over the indices, in integers:
    exact), rounded up."""
    steps = len(values)
    numbers, shift = upward.as_integers(values)
    previous = [0] * (steps + separation)
    for _ in range(count):
        current = [0] * (steps + separation)
        for i in reversed(range(steps)):
            current[i] = max(current[i + 1], numbers[i] + previous[i + separation])
        previous = current
    return upward.ratio_up(previous[0], shift)


def _toeplitz_gram(numbers: list[int], shift: int, steps: int, i: int, j: int) -> float:
    """(CᵀC)_ij of the banded Toeplitz strategy, i ≤ j, rounded away from 0: Σ_r
    c[r − i]·c[r − j] over the rows r ≥ j that both columns reach, its coefficients
    given as integers over 2^``shift`` (``upward.as_integers``)."""
    end = min(steps, i + len(numbers))
    return upward.ratio_away(sum(map(operator.mul, numbers[j - i:end - i], numbers[:end - j])),
                             2 * shift)


def _enumerated(gram: Callable[[int, int], float], steps: int, count: int, separation: int,
                work: int) -> tuple[float, bool] | None:
    """max over patterns π of at most ``count`` steps at least ``separation`` apart of
    Σ_{i,j∈π} |G_ij| (``gram(i, j)``, i ≤ j), and whether that pattern's entries are all
    non-negative; None when more than ``MAX_PATTERNS`` patterns or ``MAX_GRAM_WORK``
    terms would be needed."""
    # (the search recurses once a participation; with count ≥ 3 steps on the grid 0, b,
    # 2b, …, its C(count, 3) patterns of three alone are more than it may enumerate)
    if work > MAX_GRAM_WORK or math.comb(count, 3) > MAX_PATTERNS:
        return None
    cache: dict[tuple[int, int], float] = {}

    def entry(i: int, j: int) -> float:
        if (i, j) not in cache:
            cache[(i, j)] = gram(i, j)
        return cache[(i, j)]

    seen = 0
    best, exact = 0.0, True

    def extend(chosen: list[int], total: float, signs: bool) -> bool:
        nonlocal seen, best, exact
        seen += 1
        if seen > MAX_PATTERNS:
            return False
        if total > best:  # (``signs``: no entry of the pattern is negative)
            best, exact = total, signs
        if len(chosen) == count:
            return True
        start = chosen[-1] + separation if chosen else 0
        for step in range(start, steps):
            added = [entry(step, step), *(2 * entry(i, step) for i in chosen)]
            if not extend([*chosen, step], upward.sum_up([total, *map(abs, added)]),
                          signs and min(added) >= 0):
                return False
        return True

    return (best, exact) if extend([], 0.0, True) else None
