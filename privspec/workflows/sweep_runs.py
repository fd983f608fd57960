"""Running a sweep's points: on a local process pool or an existing Dask cluster (they
do the scheduling), each finished row appended to a journal so that a stopped sweep
resumes with only what is missing.

The journal is JSON lines: a header naming the sweep, then one row per finished point,
each flushed and synced to disk before the next, each with the sweep's key and a
checksum.  A torn last line (a run killed while writing it) is ignored; a row that is
not of this sweep, does not match its checksum or is not a sound row of a point of the
grid is computed again (``Journal`` says what this protects against).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import multiprocessing
import os
import stat
from collections.abc import Generator, Iterator, Sequence
from typing import IO, Any

from privspec.workflows.sweep import Point, evaluate_point, is_row_of, row_json

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


class JournalError(ValueError):
    """A file to resume from that is not a sweep journal (nor empty), or not a regular
    file: it is left as it is."""


class Journal:
    """The rows finished so far, by point index, appended to ``path`` as they finish.

    Each line after the header is a row with the sweep's key (``sweep_key``) and a
    SHA-256 of the rest (``_sealed``).  Resuming reads at most one line per point (and
    a header and a torn line), each at most ``MAX_LINE`` bytes, from a regular file only
    (never blocking on a FIFO or a device), and keeps a row only when it carries this
    sweep's key, its checksum matches, it is a row ``row`` could have made for a point
    of the grid (``is_row_of``: fields, types, ranges, the point's key and values) and
    its figures agree with each other (the advantage no more than μ and each (ε, δ)
    allow).  The others are counted in ``unused`` and their points computed again.

    What this protects against: a torn, truncated or corrupted file, a journal of
    another sweep (spec, varied values, budgets, privspec or numerical stack changed),
    rows from an older privspec, and an edit of one figure alone (a μ lowered below
    what the row's advantage or ε(δ) shows).  It does not protect against someone who
    may write the journal and recomputes the checksum over figures changed together:
    such a person may as well write the report cache or privspec itself.
    """

    HEADER = "privspec sweep journal"
    FORMAT = 2
    #: The longest line read (a row is well under it: a few hundred bytes, a refusal's
    #: text a few thousand; a longer line is not used).
    MAX_LINE = 1 << 16

    def __init__(self, path: str, sweep: str, resume: Sequence[Point] | None = None) -> None:
        self.path, self.sweep = path, sweep
        self.rows: dict[int, dict[str, Any]] = {}
        self.unused = 0
        if resume is not None:
            self._read(resume)
        # Started again beside it and renamed over it: a run killed now loses no row.
        # (Whatever was at FILE.new is replaced, never written through: a symbolic link
        # there is not followed.)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path + ".new")
        created = os.open(path + ".new", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        self.handle: IO[str] = os.fdopen(created, "w", encoding="utf-8")
        self._append({self.HEADER: self.FORMAT, "sweep": sweep},
                     *(self._sealed(finished) for finished in self.rows.values()))
        os.replace(path + ".new", path)

    def _read(self, grid: Sequence[Point]) -> None:
        """Keep the rows of an earlier run of this sweep (none if the file is missing);
        JournalError for a file that is not a journal."""
        by_key = {point.key: point for point in grid}
        lines = _lines(self.path, len(grid) + 2, self.MAX_LINE)
        header = next(lines, None)
        if header is None:
            return  # missing or empty
        entry = _parsed(header)
        if not (isinstance(entry, dict) and self.HEADER in entry):
            lines.close()
            raise JournalError(f"{self.path}:1: not a privspec sweep journal (its first line "
                               "is not a journal's header); give another --journal, or "
                               "remove the file")
        ours = entry == {self.HEADER: self.FORMAT, "sweep": self.sweep}
        for line in lines:
            finished = self._unsealed(line) if ours else None
            point = None if finished is None else by_key.get(str(finished.get("key")))
            if (finished is not None and point is not None and point.index not in self.rows
                    and is_row_of(finished, point)):
                self.rows[point.index] = finished
            elif line.endswith(b"\n"):  # (not the torn last line of a killed run)
                self.unused += 1

    def _sealed(self, finished: dict[str, Any]) -> dict[str, Any]:
        """``finished`` with the sweep's key and the checksum of both."""
        bound = {**finished, "sweep": self.sweep}
        return {**bound, "checksum": _checksum(bound)}

    def _unsealed(self, line: bytes) -> dict[str, Any] | None:
        """The row of a journal line that carries this sweep's key and a matching
        checksum, else None."""
        entry = _parsed(line)
        if not isinstance(entry, dict) or entry.get("sweep") != self.sweep:
            return None
        checksum = entry.pop("checksum", None)
        if checksum is None or checksum != _checksum(entry):
            return None
        del entry["sweep"]
        return entry

    def _append(self, *entries: dict[str, Any]) -> None:
        """Write ``entries``, one line each, and sync them to disk."""
        self.handle.write("".join(row_json(entry) + "\n" for entry in entries))
        self.handle.flush()
        os.fsync(self.handle.fileno())

    def add(self, finished: dict[str, Any]) -> None:
        """Keep a finished row (on disk before this returns)."""
        self.rows[finished["point"]] = finished
        self._append(self._sealed(finished))

    def close(self) -> None:
        self.handle.close()


def _lines(path: str, most: int, longest: int) -> Generator[bytes, None, None]:
    """The first ``most`` lines of the regular file at ``path`` (none if it is missing),
    up to a line longer than ``longest`` bytes (given as an empty line, and nothing read
    beyond it); JournalError when it is not a regular file.  Opened without blocking, so
    that a FIFO or a device is refused, not waited on."""
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
                             | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        return
    except OSError as error:
        raise JournalError(f"{path}: cannot read the journal: {error.strerror}") from None
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise JournalError(f"{path}: not a regular file; a journal is one")
        for _ in range(most):
            line = handle.readline(longest + 1)
            if len(line) > longest:
                yield b"\n"  # not used, and the journal not read beyond it
                return
            if not line:
                return
            yield line


def _parsed(line: bytes) -> Any:
    """The JSON value of ``line``, or None when it is not JSON (or too deeply nested)."""
    try:
        return json.loads(line.decode("utf-8"))
    except (ValueError, RecursionError):
        return None


def _checksum(entry: dict[str, Any]) -> str | None:
    """SHA-256 of ``entry``'s canonical JSON as UTF-8 (None when it holds what JSON or
    UTF-8 cannot write: a NaN, a lone surrogate)."""
    try:
        text = json.dumps(entry, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                          allow_nan=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()
    except ValueError:  # (UnicodeEncodeError is one)
        return None


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
