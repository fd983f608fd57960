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


@contextmanager
def budget(size: float) -> Iterator[None]:
    """Hold computations to ``size`` bytes within the block."""
    token = _BUDGET.set(size)
    try:
        yield
    finally:
        _BUDGET.reset(token)


#: Bytes a privacy-loss grid point takes while a release is built (measured: the
#: connect-the-dots profile, its differences and dp-accounting's copies).
BYTES_PER_GRID_POINT = 200.0


class CostError(EvaluationError):
    """A computation estimated to need ``estimate`` bytes, above the budget; a
    discretization ``factor`` times coarser fits."""

    def __init__(self, message: str, estimate: float, factor: float) -> None:
        super().__init__(message)
        self.estimate, self.factor = estimate, factor


def gib(size: float) -> str:
    """Bytes in GiB for a message: ``1.5 GiB``."""
    return f"{size / 2**30:,.1f} GiB"
