"""Progress of a long computation, for whoever shows it (the CLI, on a terminal).

The numerics call :func:`step` at their milestones (releases built, tilts composed,
a coarser attempt); the caller installs a hook with :func:`reporting`.  Without a hook
:func:`step` does nothing, so library use stays silent.
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


@contextmanager
def reporting(hook: Hook | None) -> Iterator[None]:
    """Send progress to ``hook`` within the block."""
    token = _HOOK.set(hook)
    try:
        yield
    finally:
        _HOOK.reset(token)
