"""``privspec sweep``: μ, regret and the rest of the figures over a grid of values of one
or more fields, on a local process pool or a Dask cluster, kept as points finish."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Annotated, Any

import typer

from privspec.cli.options import OPTIONS
from privspec.cli.output import EXIT_CANNOT_RUN, fail
from privspec.spec.diagnostics import printable

if TYPE_CHECKING:
    from privspec.workflows.sweep import Axis, Point
    from privspec.workflows.sweep_runs import Journal

#: The table formats ``--output`` writes, by file extension.
TABLE_FORMATS = ("csv", "json", "parquet")
EXIT_INTERRUPTED = 130

SpecArgument = Annotated[str, typer.Argument(
    metavar="SPEC", help="The spec file (*.privspec.yaml) whose fields to vary.",
    show_default=False)]
Vary = Annotated[list[str], typer.Option(
    "--vary", metavar="PATH=VALUES", help="A field and its values (repeatable: the grid is "
    "every combination, the first --vary slowest). PATH as `calibrate --vary` takes it "
    "(dpsgd.noise_multiplier, training/steps, or the field alone when only one has that "
    "name); VALUES a list (0.8,1.0,1.2), lin:START:STOP:COUNT or log:START:STOP:COUNT "
    "(whole-number fields are rounded).", show_default=False)]
Output = Annotated[list[str] | None, typer.Option(
    "--output", "-o", metavar="FILE", help="Write the rows here (repeatable): FILE.csv, "
    "FILE.json or FILE.parquet (needs pyarrow). Without it, CSV on stdout.",
    show_default=False)]
Plot = Annotated[list[str] | None, typer.Option(
    "--plot", metavar="FILE", help="Draw μ and regret (.svg, .png or .pdf; repeatable): "
    "heat maps over two varied fields, lines over one, the Tier I/II boundary "
    "(regret = 0.01) marked.", show_default=False)]
Workers = Annotated[int | None, typer.Option(
    "--workers", "-j", min=1, max=1024, help="Local worker processes (default: the cores "
    "this process may use), each with one BLAS/OpenMP thread.", show_default=False)]
Dask = Annotated[str | None, typer.Option(
    "--dask", metavar="ADDRESS", help="Send the points to the Dask scheduler at ADDRESS "
    "(tcp://host:8786) instead of local processes; needs privspec[dask].",
    show_default=False)]
SchedulerFile = Annotated[str | None, typer.Option(
    "--dask-scheduler-file", metavar="FILE", help="The Dask scheduler named in FILE "
    "(dask scheduler --scheduler-file).", show_default=False)]
Resume = Annotated[bool, typer.Option(
    "--resume", help="Keep the rows of a stopped run of this sweep (its journal) and "
    "compute only the missing points (and those whose rows are of another sweep, altered "
    "or malformed).")]
JournalOption = Annotated[str | None, typer.Option(
    "--journal", metavar="FILE", help="Where finished rows are kept as they finish "
    "(default: the first --output with .journal appended; removed once every file is "
    "written).", show_default=False)]


def sweep(spec: SpecArgument, vary: Vary, output: Output = None, plot: Plot = None,
          workers: Workers = None, dask: Dask = None, dask_scheduler_file: SchedulerFile = None,
          resume: Resume = False, journal: JournalOption = None) -> None:
    """Evaluate the spec at every point of a grid of field values, as `render` does.

    One row per point, in grid order whatever the scheduling: the varied values, μ,
    regret, tier, advantage, ε at each δ, the caveat codes and the point's spec SHA-256
    (the report's own unrounded figures, as `evaluate --format json` gives them). A
    point the spec does not allow or the evaluator refuses is a row with its refusal.
    Rows are kept in a journal as they finish: after Ctrl-C (exit 130) or a lost
    worker, the same command with --resume computes only the rest. Every evaluation
    goes through the report cache, so an unchanged point is read, not computed.
    """
    output, plot = output or [], plot or []
    journal_path = journal or (output[0] + ".journal" if output else None)
    if resume and journal_path is None:
        raise fail("sweep", "--resume needs the journal: give --output or --journal")
    _check_outputs(spec, output, plot, (dask, dask_scheduler_file), journal_path)
    if dask is None and dask_scheduler_file is None:
        from privspec.workflows.sweep_runs import start_pool_server

        start_pool_server()
    data, threshold = _spec_data_or_exit(spec)
    axes, grid, key = _grid_or_exit(spec, data, vary, plot)
    rows = _run(grid, (journal_path, key, resume), workers, (dask, dask_scheduler_file))
    _write(spec, axes, [rows[point.index] for point in grid], output, (plot, threshold))
    if journal_path is not None:
        os.remove(journal_path)


def _check_outputs(spec: str, output: Sequence[str], plot: Sequence[str],
                   cluster: tuple[str | None, str | None], journal: str | None) -> None:
    """Every file name has a known extension, figures can be drawn and Dask reached, the
    journal is none of the files written, or one line and exit 2 before anything is
    computed."""
    from privspec.cli.files import refuse_unsafe_output
    from privspec.cli.output import figure_format_or_exit

    for name in [*output, *plot, *([journal] if journal else [])]:
        try:
            refuse_unsafe_output(name, [spec])
        except OSError as error:
            raise fail("sweep", f"cannot write {printable(name)}: {error.strerror}") from None
    if journal and os.path.abspath(journal) in {os.path.abspath(n) for n in [*output, *plot]}:
        raise fail("sweep", f"--journal {printable(journal)} is also a file the sweep "
                   "writes; give another")
    for name in output:
        if os.path.splitext(name)[1].lower().lstrip(".") not in TABLE_FORMATS:
            raise fail("sweep", f"{printable(name)}: an --output file ends in .csv, .json "
                       "or .parquet")
        if name.lower().endswith(".parquet") and not _importable("pyarrow"):
            raise fail("sweep", "Parquet needs pyarrow: pip install 'privspec[parquet]'")
    for name in plot:
        figure_format_or_exit(name, "sweep")
    if cluster[0] is not None and cluster[1] is not None:
        raise fail("sweep", "give either --dask or --dask-scheduler-file, not both")
    if (cluster[0] or cluster[1]) and not _importable("distributed"):
        raise fail("sweep", "Dask needs distributed: pip install 'privspec[dask]'")


def _importable(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def _spec_data_or_exit(spec: str) -> tuple[dict[str, Any], float]:
    """The spec file's data as written (its problems, located, exit 2), without a
    calibration's note (it names the value a sweep changes); its regret threshold."""
    from privspec.cli.loading import load_all_or_exit
    from privspec.spec.loader import load_yaml_text

    ((_, model),) = load_all_or_exit([spec])
    with open(spec, encoding="utf-8") as handle:
        data = load_yaml_text(handle.read(), spec)
    return ({key: value for key, value in data.items() if key != "calibrated"},
            model.report.regret_threshold)


def _grid_or_exit(spec: str, data: dict[str, Any], vary: Sequence[str],
                  plot: Sequence[str]) -> tuple[tuple[Axis, ...], list[Point], str]:
    """The axes, the grid's points and the sweep's key (``sweep_key``)."""
    from privspec.workflows.sweep import SweepError, parse_axes, points, sweep_key

    try:
        axes = parse_axes(data, vary)
    except SweepError as error:
        raise fail("sweep", str(error)) from None
    if plot and len(axes) > 2:
        raise fail("sweep", "--plot draws one or two varied fields; this sweep varies "
                   f"{len(axes)}")
    budgets = (OPTIONS.memory_budget, OPTIONS.time_budget)
    return axes, points(data, axes, budgets, spec), sweep_key(data, axes, budgets)


def _rows_of(todo: Sequence[Point], workers: int | None,
             dask: tuple[str | None, str | None]) -> Iterator[dict[str, Any]]:
    """The rows of ``todo`` as they finish, on Dask or the local pool."""
    from privspec.report.store import enabled
    from privspec.workflows.sweep_runs import default_workers, on_dask, on_pool

    budgets = (OPTIONS.memory_budget, OPTIONS.time_budget)
    if dask[0] is not None or dask[1] is not None:
        return on_dask(todo, budgets, enabled(), *dask)
    return on_pool(todo, budgets, enabled(), workers or default_workers())


def _run(grid: Sequence[Point], journal: tuple[str | None, str, bool],
         workers: int | None, dask: tuple[str | None, str | None]) -> dict[int, dict[str, Any]]:
    """Every point's row, by index: the journal's (its path, the sweep's key, whether to
    resume), then the rest as they finish (each kept in the journal); Ctrl-C exits 130
    and a lost worker 2, saying how to resume."""
    from privspec.cli.loading import ProgressLine
    from privspec.workflows.sweep_runs import ClusterUnreachableError, WorkerLostError

    journal_path = journal[0]
    kept = (None if journal_path is None
            else _journal_or_exit(grid, journal_path, journal[1], journal[2]))
    rows = {} if kept is None else dict(kept.rows)
    todo = [point for point in grid if point.index not in rows]
    line = ProgressLine() if sys.stderr.isatty() and not OPTIONS.quiet else None
    finished = _rows_of(todo, workers, dask) if todo else iter(())
    try:
        for done, answer in enumerate(finished, 1):
            rows[answer["point"]] = answer
            if kept is not None:
                kept.add(answer)
            if line is not None:
                line(f"sweep: {len(rows)} of {len(grid)} points", done / len(todo))
    except (KeyboardInterrupt, WorkerLostError) as stop:
        _stopped(stop, len(rows), len(grid), journal_path)
    except ClusterUnreachableError as error:
        raise fail("sweep", printable(str(error))) from None
    finally:
        if hasattr(finished, "close"):
            finished.close()
        if line is not None:
            line.close()
        if kept is not None:
            kept.close()
    return rows


def _journal_or_exit(grid: Sequence[Point], path: str, key: str, resume: bool) -> Journal:
    """The journal at ``path`` (with the rows it keeps when resuming, said unless
    --quiet, and how many of its rows were not used); one line and exit 2 when it cannot
    be written, or read when resuming."""
    from privspec.workflows.sweep_runs import Journal, JournalError

    try:
        journal = Journal(path, key, grid if resume else None)
    except JournalError as error:
        raise fail("sweep", f"--resume: {printable(str(error))}") from None
    except OSError as error:
        raise fail("sweep", f"cannot write the journal {printable(path)}: "
                   f"{error.strerror or error}") from None
    if resume and not OPTIONS.quiet:
        typer.echo(f"privspec sweep: {len(journal.rows)} of {len(grid)} points kept from "
                   f"{printable(path)}", err=True)
    if journal.unused:
        rows = "row was not used and is" if journal.unused == 1 else "rows were not used and are"
        typer.echo(f"privspec sweep: {journal.unused} journal {rows} recomputed (not of "
                   "this sweep, altered or malformed)", err=True)
    return journal


def _stopped(stop: BaseException, done: int, total: int, journal: str | None) -> None:
    """Say why the sweep stopped and how to resume it; exit 130 (Ctrl-C) or 2."""
    why = "stopped" if isinstance(stop, KeyboardInterrupt) else f"stopped: {stop}"
    kept = (f"{done} of {total} points are kept in {journal}: run the same command "
            "with --resume to compute the rest" if journal is not None
            else "nothing is kept (give --output or --journal to keep finished rows)")
    typer.echo(printable(f"privspec sweep: {why}; {kept}"), err=True)
    raise typer.Exit(EXIT_INTERRUPTED if isinstance(stop, KeyboardInterrupt)
                     else EXIT_CANNOT_RUN)


def _write(spec: str, axes: Sequence[Axis], rows: Sequence[dict[str, Any]],
           output: Sequence[str], plot: tuple[Sequence[str], float]) -> None:
    """Every table and figure written at once (all or none), or CSV on stdout."""
    from privspec.cli.files import write_atomically
    from privspec.workflows import sweep as tables

    files: dict[str, str | bytes] = {}
    for name in output:
        form = os.path.splitext(name)[1].lower()
        files[name] = (tables.csv_text(axes, rows) if form == ".csv"
                       else tables.json_text(spec, axes, rows) if form == ".json"
                       else tables.parquet_bytes(axes, rows))
    for name in plot[0]:
        files[name] = _figure(axes, rows, os.path.splitext(name)[1].lower().lstrip("."),
                              plot[1])
    if not output:
        typer.echo(tables.csv_text(axes, rows), nl=False)
    try:
        write_atomically(files, inputs=[spec])
    except OSError as error:
        raise fail("sweep", f"cannot write {printable(str(error.filename))}: "
                   f"{error.strerror or error}") from None
    if not OPTIONS.quiet:
        for name in files:
            typer.echo(f"wrote {printable(name)}", err=True)


def _figure(axes: Sequence[Axis], rows: Sequence[dict[str, Any]], form: str,
            threshold: float) -> bytes:
    """The heat maps (two fields) or lines (one field) of μ and regret, the Tier I/II
    boundary at the spec's ``threshold``."""
    from privspec.report.sweep_figures import sweep_figure_bytes

    return sweep_figure_bytes([(axis.name, list(axis.values)) for axis in axes],
                              [row["mu"] for row in rows], [row["regret"] for row in rows],
                              form, threshold)
