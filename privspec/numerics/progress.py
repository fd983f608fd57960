"""Progress of a long computation, for whoever shows it (the CLI, on a terminal).

The numerics call :func:`step` at their milestones (releases built, tilts composed,
a coarser attempt); the caller installs a hook with :func:`reporting`.  Without a hook
:func:`step` does nothing, so library use stays silent.  :class:`Overall` turns the
milestones' fractions, each of one phase, into one fraction of the run that never goes
back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

#: A hook gets what is being done and the fraction of it done (0 to 1).
Hook = Callable[[str, float], None]
_HOOK: ContextVar[Hook | None] = ContextVar("progress_hook", default=None)


def step(what: str, done: float, total: float) -> None:
    """Say that ``done`` of ``total`` of ``what`` is done."""
    hook = _HOOK.get()
    if hook is not None and total > 0:
        hook(what, min(1.0, done / total))


class Overall:
    """A hook that passes on one fraction of the whole run, never smaller than the last.

    Each phase (a new ``what``, or the same one started again, as a second composition
    or a coarser attempt) takes a share of what remains of the run: a fifth for building
    releases, four fifths for composing them (the slow part).  How many phases a run
    has is not known in advance, so the fraction nears 100 % and stays below it."""

    BUILDING_SHARE, OTHER_SHARE = 0.2, 0.8

    def __init__(self, hook: Hook) -> None:
        self.hook = hook
        self.what: str | None = None
        self.done = 0.0
        self.start = self.width = 0.0

    def __call__(self, what: str, done: float) -> None:
        if what != self.what or done < self.done:  # a new phase starts where we are
            self.start += self.width * self.done
            share = self.BUILDING_SHARE if what.startswith("building") else self.OTHER_SHARE
            self.what, self.width = what, (1.0 - self.start) * share
        self.done = done
        self.hook(what, self.start + self.width * done)


@contextmanager
def reporting(hook: Hook | None) -> Iterator[None]:
    """Send progress to ``hook`` within the block."""
    token = _HOOK.set(hook)
    try:
        yield
    finally:
        _HOOK.reset(token)
