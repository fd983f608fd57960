"""What a computation may cost before it starts: the memory budget and its refusal.

Estimates are made before any large array is allocated (``portable_pld.check_grid`` for a
single release's grid, ``composition.estimated_memory`` for a composition); above the
budget they raise :class:`CostError`, which the evaluator answers with a coarser,
still pessimistic discretization (``factor`` says how much coarser fits) or a refusal.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from privspec.errors import EvaluationError

#: Peak memory of one computation by default, in bytes (``accounting.memory_budget``).
MEMORY_BUDGET = 2.0**30
_BUDGET: ContextVar[float] = ContextVar("memory_budget", default=MEMORY_BUDGET)


def memory_budget() -> float:
    """The budget in force (bytes): ``MEMORY_BUDGET`` unless :func:`budget` set one."""
    return _BUDGET.get()


#: Bytes of the releases held for composition so far, within one ``budget`` block.
_HELD: ContextVar[list[float] | None] = ContextVar("held", default=None)


@contextmanager
def budget(size: float) -> Iterator[None]:
    """Hold computations to ``size`` bytes within the block."""
    token, held = _BUDGET.set(size), _HELD.set([0.0])
    try:
        yield
    finally:
        _HELD.reset(held)
        _BUDGET.reset(token)


def held() -> float:
    """Bytes of the releases already held in this ``budget`` block."""
    tally = _HELD.get()
    return tally[0] if tally else 0.0


def require(estimate: float, what: str) -> None:
    """``CostError`` when ``what`` needs about ``estimate`` bytes, above the budget."""
    if estimate > memory_budget():
        raise CostError(f"{what} needs about {gib(estimate)}", estimate,
                        estimate / memory_budget())


def hold(size: float, count: int, expected: int) -> None:
    """Count ``size`` more bytes held until composition (``count`` of about ``expected``
    distinct releases so far); ``CostError`` as soon as all of them, projected from the
    first few, or those built, exceed the budget: before most are built."""
    tally = _HELD.get()
    if tally is None:
        return
    tally[0] += size
    projected = tally[0] * max(1.0, expected / count) if count >= 3 else tally[0]
    if projected > memory_budget():
        raise CostError(f"its {max(count, expected):,} distinct releases take about "
                        f"{gib(projected)} to hold and compose", projected,
                        projected / memory_budget())


def reset_held() -> None:
    """Start a new attempt's tally (its releases are built anew)."""
    tally = _HELD.get()
    if tally is not None:
        tally[0] = 0.0


#: Bytes a lowered release takes per PMF point, held until it is composed and then
#: while composing (``composition.ENTRY_BYTES``: the lattice's copies, the cumulant sums).
HELD_BYTES_PER_POINT = 80
#: Bytes a privacy-loss grid point takes while a release is built (measured: the
#: connect-the-dots profile, its differences and dp-accounting's copies).
BYTES_PER_GRID_POINT = 200.0


class CostError(EvaluationError):
    """A computation estimated to need ``estimate`` bytes, above the budget; a
    discretization ``factor`` times coarser fits."""

    def __init__(self, message: str, estimate: float, factor: float,
                 path: tuple[str | int, ...] | None = None) -> None:
        super().__init__(message, path)
        self.estimate, self.factor = estimate, factor


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
