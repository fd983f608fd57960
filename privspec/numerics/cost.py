"""What a computation may cost before it starts: the memory and time budgets.

Estimates are made before any large array is allocated or any long loop runs
(``portable_pld.check_grid`` for a single release's grid, ``composition.estimated_memory``
and ``composition.estimated_seconds`` for a composition); above a budget they raise
:class:`CostError`, which the evaluator answers with a coarser, still pessimistic
discretization (``factor`` says how much coarser fits) or a refusal.

Time is *estimated* from sizes (grid points, releases, FFT lengths), never read from a
clock, so that the same spec gets the same report on a fast machine and a slow one.
The constants are seconds on a 2-core laptop, measured on the development machine.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Literal

from privspec.errors import EvaluationError

#: Peak memory of one computation by default, in bytes (``accounting.memory_budget``).
MEMORY_BUDGET = 2.0**30
_BUDGET: ContextVar[float] = ContextVar("memory_budget", default=MEMORY_BUDGET)


def memory_budget() -> float:
    """The budget in force (bytes): ``MEMORY_BUDGET`` unless :func:`budget` set one."""
    return _BUDGET.get()


#: Seconds one evaluation may take by default, as estimated for a 2-core laptop
#: (``accounting.time_budget``).
TIME_BUDGET = 60.0
_SECONDS: ContextVar[float] = ContextVar("time_budget", default=TIME_BUDGET)


def time_budget() -> float:
    """The time budget in force (estimated seconds)."""
    return _SECONDS.get()


@dataclass
class _Tally:
    """Within one ``budget`` block: bytes of the releases (and a running composition's
    copies of them) held in this attempt; seconds of the work started in all attempts
    (an abandoned attempt's building was done, its refused composition was not), and
    before this attempt; of this attempt's seconds, those no discretization reduces
    (``fixed``); and the largest memory estimate of any attempt in the block (``peak``)."""

    held: float = 0.0
    spent: float = 0.0
    before: float = 0.0
    fixed: float = 0.0
    peak: float = 0.0
    #: All the releases over those built so far (``hold``'s projection of their bytes).
    scale: float = 1.0
    resident: float = 0.0  # the mechanism's own objects, beside every computation
    #: The FFT lengths whose plans this block's work left cached, least recently used
    #: first (``composition._tilt_memory``): counted per block, never across blocks, so
    #: that what a process computed before cannot change a report.
    fft_plans: OrderedDict[int, None] = field(default_factory=OrderedDict)

    def over_time(self, seconds: float, fixed: bool = False) -> float | None:
        """The factor by which this attempt's work, ``seconds`` more included (no grid
        reduces them when ``fixed``), exceeds the time a next attempt would have left
        (this one's work done counts); None when it fits, ∞ when no grid would."""
        if self.spent + seconds <= time_budget():
            return None
        left = time_budget() - self.spent
        unreduced = self.fixed + (seconds if fixed else 0.0)
        reducible = self.spent - self.before + seconds - unreduced
        if left <= 0.01 * time_budget() or unreduced >= left or reducible <= 0:
            return math.inf  # nothing left for another attempt, or no grid helps
        return reducible / (left - unreduced)


_TALLY: ContextVar[_Tally | None] = ContextVar("tally", default=None)


@contextmanager
def budget(size: float, seconds: float = TIME_BUDGET) -> Iterator[None]:
    """Hold computations to ``size`` bytes and ``seconds`` (estimated) within the block."""
    token, clock, tally = _BUDGET.set(size), _SECONDS.set(seconds), _TALLY.set(_Tally())
    try:
        yield
    finally:
        done = _TALLY.get()
        _LAST_PEAK.set(done.peak if done else 0.0)
        _TALLY.reset(tally)
        _SECONDS.reset(clock)
        _BUDGET.reset(token)


def fft_plans() -> OrderedDict[int, None]:
    """The FFT lengths this ``budget`` block has planned (a fresh, unshared one outside
    a block)."""
    tally = _TALLY.get()
    return tally.fft_plans if tally else OrderedDict()


def held() -> float:
    """Bytes of the releases already held in this attempt."""
    tally = _TALLY.get()
    return tally.held if tally else 0.0


def spend(seconds: float, what: str, *, fixed: bool = False) -> None:
    """Count ``seconds`` (estimated) for ``what``, about to start (work no coarser grid
    reduces when ``fixed``); ``CostError`` (and nothing counted) when the work so far
    and this would exceed the time budget."""
    tally = _TALLY.get()
    if tally is None:
        return
    factor = tally.over_time(seconds, fixed)
    if factor is not None:
        total = tally.spent + seconds
        anyway = " at any discretization" if math.isinf(factor) else ""
        raise CostError(f"{what} would bring the accounting to about {duration(total)}"
                        f"{anyway}", total, factor, resource="time")
    tally.spent += seconds
    if fixed:
        tally.fixed += seconds


def check(estimate: float, what: str) -> None:
    """``CostError`` when ``what`` needs about ``estimate`` bytes beside those held (the
    releases, the mechanism's own objects), above the budget; nothing is noted
    (``require`` once it runs)."""
    estimate += held()
    tally = _TALLY.get()
    estimate += tally.resident if tally else 0.0
    if estimate > memory_budget():
        raise CostError(f"{what} needs about {gib(estimate)}", estimate,
                        estimate / memory_budget())


def require(estimate: float, what: str) -> None:
    """``check``, then note ``estimate`` bytes beside those held as this attempt's peak:
    ``what`` starts now."""
    check(estimate, what)
    record_peak(held() + estimate)


def keep(size: float) -> None:
    """Count ``size`` bytes more (fewer, when negative) held beside every estimate of
    this attempt: a composition's own copies of the releases while it runs."""
    tally = _TALLY.get()
    if tally is not None:
        tally.held += size


def record_peak(estimate: float) -> None:
    """Note that this attempt's computation is about to take ``estimate`` bytes at once
    (beside the mechanism's own objects, ``reside``)."""
    tally = _TALLY.get()
    if tally is not None:
        tally.peak = max(tally.peak, tally.resident + estimate)


def reside(size: float) -> None:
    """Count ``size`` bytes of the mechanism's own objects (its parts, their events)
    beside every estimate of the block."""
    tally = _TALLY.get()
    if tally is not None:
        tally.resident = max(tally.resident, size)
        tally.peak = max(tally.peak, tally.resident)


def last_peak() -> float:
    """The largest memory estimate (bytes, the computation's own: the interpreter and
    libraries aside) of any attempt in the last ``budget`` block that ended: what
    ``benchmarks/`` compares with the measured peak."""
    return _LAST_PEAK.get()


_LAST_PEAK: ContextVar[float] = ContextVar("last_peak", default=0.0)


def hold(size: float, count: int, expected: int) -> None:
    """Count ``size`` more bytes held until composition (``count`` of about ``expected``
    distinct releases so far, built first: this attempt's time so far is theirs);
    ``CostError`` as soon as those built exceed a budget, or all of them, projected from
    the first few, exceed twice a budget: before most are built.  (The margin: releases
    differ in size, and the first may be the largest.)"""
    tally = _TALLY.get()
    if tally is None:
        return
    tally.held += size
    scale = tally.scale = max(1.0, expected / count) if count >= 3 else 1.0
    projected, seconds = tally.held * scale, (tally.spent - tally.before) * scale
    many = f"its {max(count, expected):,} distinct releases"
    where = ("mechanism",)  # all of them, not the one that was built last
    # The factor that fits: from the releases built, or (the projection being up to the
    # margin too high) from the projection over the margin.
    if tally.held > memory_budget() or projected > PROJECTION_MARGIN * memory_budget():
        raise CostError(f"{many} take about {gib(projected)} to hold and compose", projected,
                        max(tally.held, projected / PROJECTION_MARGIN) / memory_budget(),
                        where)
    record_peak(tally.held)
    # Work no grid reduces: each release's overhead (known), and discrete noise's sums
    # (projected from the releases built).
    exact, projected_fixed = max(count, expected) * SECONDS_PER_RELEASE, tally.fixed * scale
    if exact > time_budget() or projected_fixed > PROJECTION_MARGIN * time_budget():
        overhead = max(exact, projected_fixed)
        raise CostError(f"building {many} takes about {duration(overhead)} at any "
                        "discretization; fewer distinct stages (or a larger "
                        "accounting.time_budget) bring it within reach", overhead, math.inf,
                        where, resource="time")
    factor = tally.over_time(max(0.0, seconds / PROJECTION_MARGIN
                                 - (tally.spent - tally.before)))
    if factor is not None:
        raise CostError(f"building {many} takes about {duration(seconds)}", seconds,
                        factor, where, resource="time")


#: How far above the budget a projection from the first releases must be to stop early.
PROJECTION_MARGIN = 2.0


def reset_held() -> None:
    """Start a new attempt: its releases are built anew; the time spent so far stays."""
    tally = _TALLY.get()
    if tally is not None:
        tally.held, tally.before, tally.fixed, tally.scale = 0.0, tally.spent, 0.0, 1.0


def factor_to_fit(total: float) -> float:
    """How much coarser a grid must be for ``total`` bytes, and the releases not built
    yet (projected from those held, as ``hold`` does), to fit the budget."""
    tally = _TALLY.get()
    projected = tally.held * tally.scale if tally else 0.0
    return max(total, projected) / memory_budget()


#: Bytes a lowered release takes per PMF point while it is held until composition (its
#: losses and probabilities, 16 bytes, and the heap they fragment; measured: 19 to 24
#: bytes a point over 400 distinct DP-SGD releases).
HELD_BYTES_PER_POINT = 30
#: Bytes a privacy-loss grid point takes while a release is built (measured: the
#: connect-the-dots profile, its differences and dp-accounting's copies).
BYTES_PER_GRID_POINT = 200.0


class CostError(EvaluationError):
    """A computation estimated to need ``estimate`` bytes (or seconds, when ``resource``
    is "time"), above the budget; a discretization ``factor`` times coarser fits."""

    def __init__(self, message: str, estimate: float, factor: float,
                 path: tuple[str | int, ...] | None = None, *,
                 resource: Literal["memory", "time"] = "memory") -> None:
        super().__init__(message, path)
        self.estimate, self.factor, self.resource = estimate, factor, resource


def release_memory() -> None:
    """Give an abandoned attempt's memory back before the next one: collect cycles, then
    ask glibc to return freed heap pages (arrays below its mmap threshold stay in the
    heap otherwise, and a second attempt would add to the first's peak).  A no-op
    where the C library has no ``malloc_trim``."""
    import ctypes
    import ctypes.util
    import gc

    gc.collect()
    name = ctypes.util.find_library("c")
    try:
        trim = ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):
        trim = None
    if trim is not None:
        trim(0)


def gib(size: float) -> str:
    """Bytes in GiB for a message: ``1.5 GiB``."""
    return f"{size / 2**30:,.1f} GiB"


def duration(seconds: float) -> str:
    """Estimated seconds for a message: ``95 s on a 2-core laptop``, or in minutes."""
    text = f"{seconds:,.0f} s" if seconds < 600 else f"{seconds / 60:,.0f} minutes"
    return f"{text} on a 2-core laptop"


#: Estimated seconds to build one release, beyond its grid points (Python overhead).
SECONDS_PER_RELEASE = 2e-3
#: Estimated seconds per privacy-loss grid point of a release as it is built.
SECONDS_PER_GRID_POINT = 5e-7


#: Resident memory of the interpreter with numpy, scipy and dp-accounting loaded (measured:
#: 123 MiB before any computation), and of the heap that earlier computations of the
#: same run leave fragmented (measured: up to 20 MiB more before the largest one).
INTERPRETER_BYTES = 160 * 2.0**20


def process_estimate(computation: float) -> float:
    """The peak resident memory of a process whose computation takes ``computation``
    bytes at most (``last_peak``): what a measured peak is compared with."""
    return INTERPRETER_BYTES + computation
