"""Calibration: the least private value of one field that still meets every target.

``calibrate(spec, vary=PATH, targets=["mu=1", …])`` searches one field privacy depends
on (``privspec.spec.knobs``) for the value at the edge of the targets, as the report
would state it.  It is sound by construction:

* every value tried is on the grid the result is written with (4 significant digits,
  or whole numbers), and the one returned was evaluated by the same pessimistic
  pipeline as ``render`` and met every target; the next grid value towards less privacy
  was evaluated too and missed one, so the answer is tight to the grid;
* nothing is interpolated into the answer: interpolation only chooses what to try next.

The search is in log scale, seeded by how the figures scale with the field (μ ∝ 1/σ,
∝ √steps, ∝ q) and then by secants between the values tried (Kulynych et al.,
"Attack-aware noise calibration for differential privacy", NeurIPS 2024, calibrate to
the risk a report states rather than to ε).
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from typing import TYPE_CHECKING, Any

from privspec.errors import PrivspecError
from privspec.spec.knobs import Knob, resolve, with_value
from privspec.workflows.targets import Target, TargetError, with_target_figures

if TYPE_CHECKING:
    from privspec.report.model import Report
    from privspec.spec.models import Spec

#: Significant digits of a calibrated value that is not a whole number.
SIGNIFICANT_DIGITS = 4
#: The search looks at most this factor away from the spec's value, either way.
SPAN = 1e6
#: Evaluations before the search gives up (it needs about 5 to 10).
MAX_EVALUATIONS = 40
#: The coarse search stops once its bracket is within this (log) width, about 2 %.
ROUGH_TOLERANCE = 0.02
#: How much coarser the first search's grid is than the spec's.
ROUGH_FACTOR = 10.0


def _grid_step(model: Spec) -> float:
    """The discretization ``render`` uses for ``model`` (its own, or the one privspec
    would choose; before any coarsening for a budget)."""
    from privspec.numerics.accounting import chosen_discretization

    accounting = model.accounting
    return (accounting.discretization if "discretization" in accounting.model_fields_set
            else min(accounting.discretization, chosen_discretization(model)))


def _coarser(model: Spec, factor: float = ROUGH_FACTOR) -> Spec:
    """``model`` with a discretization ``factor`` times ``_grid_step``, at most the
    coarsest allowed."""
    coarse = min(0.1, factor * _grid_step(model))
    return model.model_copy(update={"accounting": model.accounting.model_copy(
        update={"discretization": coarse})})


def _extrapolated(search: _Search, near: _Point, coarser: _Point, fine: float) -> float | int:
    """Where the spec's own grid will likely put the answer, from the rough answer
    ``near`` and the same value on a grid twice as coarse: connect-the-dots' excess over
    the exact curve is second order in h (docs/math.md §2), so with e(h) ≈ e₀ + a·h² the
    two give e at the fine h, and the slope learned gives the value where it reaches the
    targets.  Only where to look first: the answer is still evaluated, and its neighbour."""
    assert near.report is not None and coarser.report is not None
    h1 = near.report.accounting.discretization
    h2 = coarser.report.accounting.discretization
    e1, e2 = near.excess, coarser.excess
    if not (0 < e1 <= e2 < math.inf and h2 > h1 > fine and search.slope):
        return near.value
    at_fine = e1 - (e2 - e1) * (h1 * h1 - fine * fine) / (h2 * h2 - h1 * h1)
    if at_fine <= 0:
        return near.value
    guess = search.grid(float(near.value) * math.exp(-math.log(at_fine) / search.slope))
    # A finer grid only loosens less: never look on the more private side of ``near``,
    # nor past what the field allows.
    end = search.end(towards_privacy=False)
    if search.more_private(end, guess):
        return end
    return near.value if search.more_private(guess, near.value) else guess

class CalibrationError(PrivspecError):
    """A calibration that cannot be done: a bad path, or no value meets the targets (the
    message says what the most private value tried achieves)."""


@dataclass(frozen=True)
class _Point:
    """One value tried: its report (None when the spec is invalid there or refused) and
    the largest ``excess`` over the targets."""

    value: float | int
    report: Report | None
    excess: float
    refusal: str = ""  # why there is no report: the spec's or the evaluator's words

    @property
    def meets(self) -> bool:
        return self.report is not None and self.excess <= 1


@dataclass(frozen=True)
class Calibration:
    """The calibrated value, what it achieves, and how it was found."""

    knob: Knob
    value: float | int
    report: Report
    spec: Spec
    data: dict[str, Any]
    targets: tuple[Target, ...]
    binding: Target  # the target closest to its limit at ``value``
    evaluations: int  # by the spec's own pipeline
    neighbour: float | int | None  # the next value towards less privacy (misses a target)
    limited_by_domain: bool = False  # the least private value allowed meets every target
    figures: dict[str, float] = field(default_factory=dict)  # each target's figure
    rough_evaluations: int = 0  # on a coarser grid, to start near the answer


def _on_grid(value: float, knob: Knob, up: bool) -> float | int:
    """``value`` rounded up or down to a whole number or to ``SIGNIFICANT_DIGITS``."""
    if knob.integer:
        return max(1, math.ceil(value - 1e-9) if up else math.floor(value + 1e-9))
    exact = Decimal(repr(float(value)))
    exponent = exact.adjusted() - (SIGNIFICANT_DIGITS - 1)
    digits = exact.scaleb(-exponent).to_integral_value(ROUND_CEILING if up else ROUND_FLOOR)
    return float(digits.scaleb(exponent))


def _step(value: float | int, knob: Knob, up: bool) -> float | int:
    """The next grid value above or below ``value`` (a grid value)."""
    if knob.integer:
        return max(1, int(value) + (1 if up else -1))
    exact = Decimal(repr(float(value)))
    exponent = exact.adjusted() - (SIGNIFICANT_DIGITS - 1)
    unit = Decimal(1).scaleb(exponent)
    if not up and exact.scaleb(-exponent) == Decimal(10) ** (SIGNIFICANT_DIGITS - 1):
        unit = unit / 10  # 1.000 → 0.9999
    return float(exact + unit if up else exact - unit)


#: d log(figure) / d log(value), roughly, by field: the first guess of the search.
def _slope_guess(knob: Knob) -> float:
    if knob.direction == 1:
        return -1.0  # μ ∝ Δ/σ
    if knob.field in ("steps", "count", "repeat", "epochs"):
        return 0.5  # μ ∝ √runs
    return 1.0  # μ ∝ q, ε, Δ


class _Search:
    """The points tried, towards the least private grid value that meets the targets.

    Values are compared by privacy: for a field that protects (noise) larger is more
    private, for one that exposes (runs, ε) smaller is."""

    def __init__(self, knob: Knob, start: float | int,
                 evaluate_at: Callable[[float | int], _Point],
                 targets: Sequence[Target] = ()) -> None:
        self.knob = knob
        self.targets = targets
        self.evaluate_at = evaluate_at
        self.points: dict[float | int, _Point] = {}
        self.recent: list[_Point] = []  # valid points with finite figures, latest last
        self.start = start
        self.slope = _slope_guess(knob)  # d log(excess) / d log(value), as learned

    def at(self, value: float | int) -> _Point:
        if value not in self.points:
            if len(self.points) >= MAX_EVALUATIONS:
                raise CalibrationError(
                    f"no value of {self.knob} settled within {MAX_EVALUATIONS} evaluations "
                    "(the figures do not change monotonically with it); please report this "
                    "spec as a bug")
            point = self.points[value] = self.evaluate_at(value)
            if point.report is not None and 0 < point.excess < math.inf:
                self.learn(point)
                self.recent.append(point)
        return self.points[value]

    # -- the order of values by privacy --------------------------------------

    def more_private(self, a: float | int, b: float | int) -> bool:
        return (a > b) if self.knob.direction == 1 else (a < b)

    def step(self, value: float | int, towards_privacy: bool) -> float | int:
        return _step(value, self.knob, up=(self.knob.direction == 1) == towards_privacy)

    def grid(self, value: float) -> float | int:
        """``value`` rounded to the grid on its more private side."""
        return _on_grid(value, self.knob, up=self.knob.direction == 1)

    def end(self, towards_privacy: bool) -> float | int:
        """The end of the search span that way: ``SPAN`` from the start, or the field's
        own limit when nearer (the grid value next to it when the limit is excluded)."""
        knob = self.knob
        up = (knob.direction == 1) == towards_privacy
        far = float(self.start) * (SPAN if up else 1 / SPAN)
        limit, allowed = ((knob.highest, knob.highest_allowed) if up
                          else (knob.lowest, knob.lowest_allowed))
        if limit is None or (far < limit if up else far > limit):
            return _on_grid(far, knob, up=not up)
        edge = _on_grid(limit, knob, up=not up)
        return edge if allowed or edge != limit else _step(edge, knob, up=not up)

    def extreme(self, points: list[_Point], most_private: bool) -> _Point | None:
        chosen = None
        for point in points:
            if chosen is None or self.more_private(point.value, chosen.value) == most_private:
                chosen = point
        return chosen

    # -- where to look next ---------------------------------------------------

    def learn(self, point: _Point) -> None:
        """Update the slope d log(excess) / d log(value) from ``point`` and the point
        tried nearest to the targets before it (kept when the sign is unexpected)."""
        others = [p for p in self.recent if p.value != point.value
                  and p.excess != point.excess]
        if not others:
            return
        other = min(others, key=lambda p: abs(math.log(p.excess)))
        measured = ((math.log(point.excess) - math.log(other.excess))
                    / (math.log(point.value) - math.log(other.value)))
        if measured * self.slope > 0:
            self.slope = measured

    def aim(self, toward: _Point | None = None) -> float:
        """Where the figures meet the targets (log excess 0), from ``toward`` (by default
        the point tried nearest to them) and the slope learned so far (at first the
        field's usual one); ten times further when its figures equal the point's tried
        just before (flat: saturated, like an advantage of 1)."""
        if toward is None:
            toward = min(reversed(self.recent), key=lambda p: abs(math.log(p.excess)))
        log_factor = -math.log(toward.excess) / self.slope
        flat = [p for p in self.recent if p.value != toward.value and p.excess == toward.excess]
        if flat:
            log_factor = math.copysign(math.log(10.0), log_factor)
        return float(toward.value) * math.exp(min(math.log(1000.0), max(-math.log(1000.0),
                                                                         log_factor)))

    def illinois(self, best: _Point, miss: _Point) -> float:
        """Inside a bracket: where the line through its ends in log-log scale crosses
        the targets, the end kept twice in a row weighted down each time (the Illinois
        rule, so that neither end sticks); the middle when an end has no figure."""
        if best.excess == 1:  # exactly at the targets: its neighbour decides
            return float(best.value)
        if miss.report is None or not math.isfinite(miss.excess) or best.excess <= 0:
            return math.sqrt(float(best.value) * float(miss.value))
        sides = [p.meets for p in self.recent]
        stuck = 0  # how many times in a row the same side was replaced, before the last
        for side in reversed(sides[:-1]):
            if side != sides[-1]:
                break
            stuck += 1
        # log excess, capped at ±1: a figure far off (β near 0) would pin the line
        low, high = (max(-1.0, min(1.0, math.log(p.excess))) for p in (best, miss))
        if sides and sides[-1]:  # the meeting end was replaced: the missing one stuck
            high *= 0.5**stuck
        else:
            low *= 0.5**stuck
        u, v = math.log(float(best.value)), math.log(float(miss.value))
        if not high > 0 > low:
            return math.exp((u + v) / 2)
        return math.exp(u + (v - u) * (-low) / (high - low))

    def between(self, aim: float, inner: float | int, outer: float | int) -> float | int | None:
        """A grid value strictly between ``inner`` (a point tried) and ``outer`` near
        ``aim``: ``inner``'s neighbour when the aim is at or behind ``inner``, the middle
        (log scale) when it is at or beyond ``outer``; None when they are neighbours."""
        towards_outer = self.more_private(outer, inner)

        def inside(value: float | int) -> bool:
            return (value not in (inner, outer)
                    and self.more_private(value, inner) == towards_outer
                    and self.more_private(outer, value) == towards_outer)

        candidate = self.grid(aim)
        if not inside(candidate):
            past_outer = candidate == outer or self.more_private(candidate, outer) == towards_outer
            candidate = (self.grid(math.sqrt(float(inner) * float(outer))) if past_outer
                         else self.step(inner, towards_outer))
            if not inside(candidate):
                candidate = self.step(inner, towards_outer)
        return candidate if inside(candidate) else None


def _run(search: _Search, tolerance: float = 0.0) -> tuple[_Point, _Point | None]:
    """The least private point that meets the targets and its less private neighbour,
    which misses one (or the spec does not allow it; None at the end of the span).
    With a ``tolerance``, stop once the two are within that factor (log scale)."""
    knob = search.knob
    search.at(search.start)
    while True:
        meets = [p for p in search.points.values() if p.meets]
        best = search.extreme(meets, most_private=False)
        if best is not None:
            beyond = [p for p in search.points.values()
                      if not p.meets and search.more_private(best.value, p.value)]
            miss = search.extreme(beyond, most_private=True)
            if miss is None:  # all tried meet the targets: less privacy
                end = search.end(towards_privacy=False)
                if best.value == end:
                    return best, None
                aim = search.grid(search.aim(best))
                inside = (None if not search.more_private(aim, end)  # at or past the end
                          else search.between(aim, best.value, end))
                candidate = end if inside is None else inside
            else:
                log_width = abs(math.log(float(miss.value)) - math.log(float(best.value)))
                if (miss.value == search.step(best.value, towards_privacy=False)
                        or log_width < tolerance):
                    return best, miss
                inside = search.between(search.illinois(best, miss), best.value, miss.value)
                if inside is None:
                    return best, miss
                candidate = inside
        else:  # nothing meets them yet: more privacy, up to what the spec allows
            valid = [p for p in search.points.values() if p.report is not None]
            known = search.extreme(valid, most_private=True)
            if known is None:
                raise _unreachable(search, None)
            walls = [p for p in search.points.values() if p.report is None
                     and search.more_private(p.value, known.value)]
            wall = search.extreme(walls, most_private=False)
            outer = wall.value if wall is not None else search.end(towards_privacy=True)
            # without a figure to aim from (β = 0: excess ∞), ten times more privacy
            aim = (search.aim(known) if 0 < known.excess < math.inf
                   else float(known.value) * (10.0 if knob.direction == 1 else 0.1))
            if known.value == outer:
                raise _unreachable(search, known, spanned=wall is None)
            past_end = wall is None and not search.more_private(outer, search.grid(aim))
            inside = None if past_end else search.between(aim, known.value, outer)
            if inside is None and wall is not None:  # the next value is refused
                raise _unreachable(search, known, wall=wall)
            candidate = outer if inside is None else inside
        if candidate in search.points:  # nothing new to try: the search would go round
            raise CalibrationError(
                f"the search for {knob} returned to {candidate:g} without settling; "
                "please report this spec as a bug")
        search.at(candidate)


def _unreachable(search: _Search, most_private: _Point | None,
                 spanned: bool = False, wall: _Point | None = None) -> CalibrationError:
    """No value meets the targets: say so, with what the most private value achieves
    (``spanned``: it is the end of the search span, or of what the field allows;
    ``wall``: the next more private value, which cannot be evaluated)."""
    knob = search.knob
    if most_private is None or most_private.report is None:
        return CalibrationError(f"no value of {knob} could be evaluated near "
                                f"{search.start:g}")
    from privspec.report import formatting as fmt

    report = most_private.report
    missed = "; ".join(
        f"{t.name} = {fmt.format_number(t.measure(report), 'up' if t.upper else 'down')} "
        f"(target {'≤' if t.upper else '≥'} {t.value:g})"
        for t in search.targets if t.excess(report) > 1)
    # Saturated: the figures barely move any more as the value grows more private.
    others = [p for p in search.recent if p.value != most_private.value]
    nearest = search.extreme(others, most_private=True)
    saturated = nearest is not None and 0 < most_private.excess < math.inf and abs(
        math.log(most_private.excess / nearest.excess)) < 0.01 * abs(
        math.log(float(most_private.value) / float(nearest.value)))
    limit = knob.highest if knob.direction == 1 else knob.lowest
    beyond = _step(most_private.value, knob, up=knob.direction == 1)
    at_limit = not spanned or (limit is not None and (
        most_private.value == limit or (beyond > limit if knob.direction == 1 else beyond < limit)))
    if wall is not None:
        why = (f"the next more private value, {wall.value:g}, cannot be evaluated "
               f"({wall.refusal.rstrip('.')}): relax the target, or change another field")
    elif saturated:
        why = ("the figures no longer improve as it grows more private: the rest of the "
               "mechanism, the floor τ (accounting.floor) or the grid "
               "(accounting.discretization) bounds them; relax the target, lower the floor "
               "or the discretization, or calibrate a field of the part that dominates")
    elif at_limit:
        why = ("that is the most private value the spec allows: relax the target, or "
               "change another field")
    else:
        why = (f"privspec searches within a factor of {SPAN:.0e} of the spec's value; if "
               "more is meant, write a value nearer the answer in the spec and calibrate again")
    return CalibrationError(f"no value of {knob} meets the targets: at {most_private.value:g}, "
                            f"the most private value tried, {missed}; {why}")


def calibrate(spec: Spec | str | os.PathLike[str] | dict[str, Any], vary: str,
              targets: Sequence[str | Target], memory_budget: float | None = None,
              time_budget: float | None = None) -> Calibration:
    """The least private value of the field ``vary`` names that meets every target.

    ``spec`` is a ``Spec``, a spec file's path or its data (as YAML holds it); ``targets`` are
    ``Target``s or their text (``mu=1``, ``epsilon@1e-5=8``, …).  Raises
    CalibrationError (a bad path or target, or no value meets them) or the spec's
    own SpecError / EvaluationError.  ``memory_budget`` and ``time_budget`` hold each
    evaluation, as in ``evaluate``."""
    from privspec.spec.knobs import KnobError
    from privspec.spec.loader import spec_from_data

    data = _spec_data(spec)
    try:
        parsed = tuple(t if isinstance(t, Target) else Target.parse(t) for t in targets)
    except TargetError as error:
        raise CalibrationError(str(error)) from None
    if not parsed:
        raise CalibrationError("give at least one target, such as mu=1")
    try:
        knob = resolve(data, vary)
    except KnobError as error:
        raise CalibrationError(str(error)) from None
    evaluator = functools.partial(_evaluator, data, knob, parsed, (memory_budget, time_budget))
    rough, search, extrapolations = _searches(data, knob, parsed, evaluator)
    best, neighbour = _run(search)
    at_end = neighbour is None or neighbour.report is None
    assert best.report is not None
    final = with_value(data, knob.path, best.value)
    binding = max(parsed, key=lambda t: t.excess(best.report))  # type: ignore[arg-type]
    return Calibration(
        knob=knob, value=best.value, report=best.report, spec=spec_from_data(final),
        data=final, targets=parsed, binding=binding, evaluations=len(search.points),
        neighbour=None if neighbour is None else neighbour.value, limited_by_domain=at_end,
        rough_evaluations=len(rough.points) + extrapolations,
        figures={str(t): t.measure(best.report) for t in parsed})


def _spec_data(spec: Spec | str | os.PathLike[str] | dict[str, Any]) -> dict[str, Any]:
    """The spec's data as written (every problem of it raised first, located), without
    an earlier calibration's note: it names the value this one changes, and is replaced."""
    from privspec.spec.diagnostics import SpecError
    from privspec.spec.loader import load_spec, load_yaml_text, spec_from_data
    from privspec.spec.models import Spec

    if isinstance(spec, Spec):
        data = spec.model_dump(mode="json", exclude_unset=True)
    elif isinstance(spec, dict):
        spec_from_data(spec)  # every problem of the data, before anything else
        data = spec
    else:
        try:  # every problem of the file, located, before anything else
            load_spec(spec)
        except SpecError as error:  # but a stale note of an earlier calibration is replaced
            if any(not d.path.startswith("calibrated") for d in error.diagnostics):
                raise
        with open(spec, encoding="utf-8") as handle:
            data = load_yaml_text(handle.read(), str(spec))
    return {key: value for key, value in data.items() if key != "calibrated"}


def _evaluator(data: dict[str, Any], knob: Knob, parsed: tuple[Target, ...],
               budgets: tuple[float | None, float | None], coarse: float = 1.0
               ) -> Callable[[float | int], _Point]:
    """Evaluations of the spec with the knob at a value, at ``coarse`` times the spec's
    own discretization (``budgets``: the evaluations' memory and time budgets)."""
    from privspec.errors import EvaluationError, InternalError
    from privspec.report.cache import evaluate
    from privspec.spec.diagnostics import SpecError
    from privspec.spec.loader import spec_from_data

    def evaluate_at(value: float | int) -> _Point:
        try:
            model = with_target_figures(spec_from_data(with_value(data, knob.path, value)),
                                        parsed)
        except SpecError as error:  # the spec does not allow it
            return _Point(value, None, math.inf, error.diagnostics[0].message)
        if coarse > 1:
            model = _coarser(model, coarse)
        try:
            report = evaluate(model, memory_budget=budgets[0], time_budget=budgets[1],
                              groups=False)
        except InternalError:
            raise  # privspec's own failure: a bug to report, not a value to avoid
        except EvaluationError as error:  # refused there: no figure, so no claim
            return _Point(value, None, math.inf, str(error))
        return _Point(value, report, max(t.excess(report) for t in parsed))
    return evaluate_at


def _searches(data: dict[str, Any], knob: Knob, parsed: tuple[Target, ...],
              evaluator: Callable[..., Callable[[float | int], _Point]]
              ) -> tuple[_Search, _Search, int]:
    """The rough search (on a coarser grid, pessimistic, several times cheaper) run to
    about 2 %, and the search on the spec's own grid started from there (only the spec's
    own pipeline gives the answer); and how many evaluations on a grid twice as coarse
    as the rough one extrapolated the start."""
    from privspec.spec.diagnostics import SpecError
    from privspec.spec.loader import spec_from_data

    # On the grid from the start (towards privacy), so that every value tried is one the
    # answer may be and neighbours are one grid step apart.
    start = _on_grid(knob.value, knob, up=knob.direction == 1)
    try:
        spec_from_data(with_value(data, knob.path, start))
    except SpecError:  # rounded past what the spec allows: the other way
        start = _on_grid(knob.value, knob, up=knob.direction != 1)
    rough = _Search(knob, start, evaluator(ROUGH_FACTOR), parsed)
    search = _Search(knob, start, evaluator(), parsed)
    extrapolations = 0
    try:
        first = rough.at(start)
        if first.report is not None and first.report.accounting.tail_mass_truncation > 0:
            near, _ = _run(rough, tolerance=ROUGH_TOLERANCE)
            coarser = evaluator(2 * ROUGH_FACTOR)(near.value)
            extrapolations = 1
            guess = near.value
            if coarser.report is not None:
                fine = _grid_step(spec_from_data(with_value(data, knob.path, near.value)))
                guess = _extrapolated(rough, near, coarser, fine)
            search = _Search(knob, guess, evaluator(), parsed)
            if guess != near.value and search.at(guess).report is None:
                search = _Search(knob, near.value, evaluator(), parsed)  # not allowed there
            search.slope = rough.slope
    except CalibrationError:
        pass  # the coarse grid may miss what the spec's own meets
    return rough, search, extrapolations
