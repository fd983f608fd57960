"""Running a sweep's points: on a local process pool or an existing Dask cluster (they
do the scheduling), each finished row appended to a journal so that a stopped sweep
resumes with only what is missing.

The journal is JSON lines: a header naming the sweep, then one row per finished point,
each flushed and synced to disk before the next.  A torn last line (a run killed while
writing it) is ignored; a row whose point key no longer matches the grid (the spec,
the budgets or privspec changed) is computed again.
"""

from __future__ import annotations

import contextlib
import functools
import json
import multiprocessing
import os
from collections.abc import Iterator, Sequence
from typing import IO, Any, ClassVar

from privspec.workflows.sweep import Point, evaluate_point, row_json

#: Set in each pool worker before it imports numpy: one BLAS and OpenMP thread per
#: worker, so that the workers do not fight over the cores (the pool is the parallelism).
ONE_THREAD = {name: "1" for name in (
    "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS", "BLIS_NUM_THREADS")}

Budgets = tuple[float | None, float | None]


class ClusterUnreachableError(RuntimeError):
    """No Dask scheduler answers at the address (or the scheduler file) given."""


class WorkerLostError(RuntimeError):
    """A worker died (killed, out of memory) or Dask gave a point up; the journal keeps
    every row finished before."""


def default_workers() -> int:
    """The cores this process may use."""
    counted = getattr(os, "process_cpu_count", None)
    if counted is not None:  # Python 3.13
        return int(counted() or 1)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return os.cpu_count() or 1


class Journal:
    """The rows finished so far, appended to ``path`` as they finish."""

    HEADER: ClassVar[dict[str, int]] = {"privspec sweep journal": 1}

    def __init__(self, path: str, resume: bool) -> None:
        self.path = path
        self.rows: dict[str, dict[str, Any]] = {}
        if resume:
            self.rows = self._read()
        # Started again beside it and renamed over it: a run killed now loses no row.
        self.handle: IO[str] = open(path + ".new", "w", encoding="utf-8")  # noqa: SIM115
        self._append(self.HEADER, *self.rows.values())
        os.replace(path + ".new", path)

    def _read(self) -> dict[str, dict[str, Any]]:
        """The rows of an earlier run (none if the file is missing or is not a journal)."""
        try:
            with open(self.path, encoding="utf-8") as handle:
                lines = handle.read().split("\n")
        except (OSError, UnicodeDecodeError):
            return {}
        rows: dict[str, dict[str, Any]] = {}
        for number, line in enumerate(lines):
            try:
                entry = json.loads(line)
            except ValueError:
                continue  # the torn last line of a killed run
            if number == 0 and entry != self.HEADER:
                return {}
            if number > 0 and isinstance(entry, dict) and isinstance(entry.get("key"), str):
                rows[entry["key"]] = entry
        return rows

    def _append(self, *entries: dict[str, Any]) -> None:
        """Write ``entries``, one line each, and sync them to disk."""
        self.handle.write("".join(row_json(entry) + "\n" for entry in entries))
        self.handle.flush()
        os.fsync(self.handle.fileno())

    def add(self, finished: dict[str, Any]) -> None:
        """Keep a finished row (on disk before this returns)."""
        self.rows[finished["key"]] = finished
        self._append(finished)

    def close(self) -> None:
        self.handle.close()


def kept_rows(journal: Journal, grid: Sequence[Point]) -> dict[int, dict[str, Any]]:
    """The journal's rows that answer points of ``grid`` (the same key and values: the
    same data, budgets and privspec), by point index."""
    kept = {}
    for point in grid:
        finished = journal.rows.get(point.key)
        if finished is not None and finished.get("values") == list(point.values):
            kept[point.index] = {**finished, "point": point.index}
    return kept


def _worker_started() -> None:
    """A pool worker's start: one thread for BLAS and OpenMP (before numpy is imported),
    and Ctrl-C left to the parent, which stops the pool."""
    import signal

    os.environ.update(ONE_THREAD)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextlib.contextmanager
def _one_thread() -> Iterator[None]:
    """``ONE_THREAD`` in this process's environment while worker processes start (they
    copy it before they import numpy)."""
    before = {name: os.environ.get(name) for name in ONE_THREAD}
    os.environ.update(ONE_THREAD)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                del os.environ[name]
            else:
                os.environ[name] = value


def _context() -> multiprocessing.context.BaseContext:
    """``forkserver`` preloading the evaluation's modules (once for every worker), else
    ``spawn``."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")  # pragma: no cover - Windows
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["privspec.workflows.sweep", "privspec.report.evaluation"])
    return context


def start_pool_server() -> None:
    """Start the pool's server now (where there is one), so that it imports the numerical
    stack while this process reads the spec and builds the grid."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        from multiprocessing import forkserver

        _context()
        with _one_thread():
            forkserver.ensure_running()


def on_pool(todo: Sequence[Point], budgets: Budgets, cache: bool,
            workers: int) -> Iterator[dict[str, Any]]:
    """The rows of ``todo`` as they finish on ``workers`` local processes (forked from a
    fresh server process that imported the numerical stack once, or ``spawn``ed where
    there is none: both safe with threads); WorkerLostError when a worker dies.  Closing
    the iterator (Ctrl-C) cancels the points not started."""
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    executor = ProcessPoolExecutor(max_workers=max(1, min(workers, len(todo))),
                                   mp_context=_context(), initializer=_worker_started)
    try:
        evaluate = functools.partial(evaluate_point, budgets=budgets, cache=cache)
        with _one_thread():  # the workers (and their server) start on the first submit
            futures = [executor.submit(evaluate, point) for point in todo]
        for future in as_completed(futures):
            try:
                yield future.result()
            except BrokenProcessPool:
                raise WorkerLostError("a worker process died (killed, or out of memory)") from None
    finally:
        executor.shutdown(wait=False, cancel_futures=True)


def on_dask(todo: Sequence[Point], budgets: Budgets, cache: bool, address: str | None,
            scheduler_file: str | None) -> Iterator[dict[str, Any]]:
    """The rows of ``todo`` as they finish on the Dask cluster at ``address`` (or named
    by ``scheduler_file``); Dask reruns the points of a lost worker, and WorkerLostError when
    it gives one up.  Dask's nannies start workers with one BLAS and OpenMP thread."""
    from distributed import Client, as_completed
    from distributed.scheduler import KilledWorker

    if scheduler_file is not None and not os.path.isfile(scheduler_file):
        raise ClusterUnreachableError(f"cannot reach the Dask scheduler {scheduler_file}: "
                                      "no such file")  # (Dask would wait for it forever)
    try:
        client = Client(address, scheduler_file=scheduler_file)  # type: ignore[no-untyped-call]
    except (OSError, ValueError) as error:  # no scheduler there, or a bad file
        raise ClusterUnreachableError(f"cannot reach the Dask scheduler "
                                 f"{address or scheduler_file}: {error}") from None
    with client:
        evaluate = functools.partial(evaluate_point, budgets=budgets, cache=cache)
        futures = client.map(evaluate, list(todo), key=[f"privspec-sweep-{p.key}" for p in todo])
        try:
            for future in as_completed(futures):  # type: ignore[no-untyped-call]
                try:
                    yield future.result()
                except KilledWorker as error:
                    raise WorkerLostError(f"Dask gave a point up: {error}") from None
        finally:
            client.cancel(futures)  # type: ignore[no-untyped-call]
