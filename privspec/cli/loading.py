"""Spec files loaded and evaluated for a command: every problem in one line, exit 2;
a progress line on a terminal while an evaluation runs."""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING

import typer

from privspec.cli.options import OPTIONS
from privspec.cli.output import EXIT_CANNOT_RUN, refused
from privspec.errors import PrivspecError

if TYPE_CHECKING:
    from privspec.report.model import Report
    from privspec.spec.models import Spec
    from privspec.workflows.audit import AuditSettings, Scores


class ProgressLine:
    """One line on stderr, rewritten in place, once a computation has run for 2 s: what
    is being done and how much of the run is (``progress.Overall``: never less than
    before)."""

    DELAY, INTERVAL = 2.0, 0.2

    def __init__(self) -> None:
        self.start = self.last = time.monotonic()
        self.width = 0

    def __call__(self, what: str, fraction: float) -> None:
        now = time.monotonic()
        if now - self.start < self.DELAY or now - self.last < self.INTERVAL:
            return
        self.last = now
        line = f"privspec: {what} (run about {fraction:.0%} done, {now - self.start:.0f} s)"
        sys.stderr.write("\r" + line.ljust(self.width))
        sys.stderr.flush()
        self.width = len(line)

    def close(self) -> None:
        if self.width:
            sys.stderr.write("\r" + " " * self.width + "\r")
            sys.stderr.flush()


def evaluate_or_exit(command: str, spec: Spec, label: str,
                     spec_path: str | None = None) -> Report:
    """Evaluate ``spec``; the evaluator's refusal exits 2 with one line, no traceback
    (unless ``--debug``): ``FILE:LINE:COL: error: PATH: …`` when it names where in the
    spec file the cause is written."""
    from privspec.numerics import progress
    from privspec.report.cache import evaluate as evaluate_spec

    line = ProgressLine() if sys.stderr.isatty() and not OPTIONS.quiet else None
    try:
        with progress.reporting(None if line is None else progress.Overall(line)):
            return evaluate_spec(spec, spec_path=spec_path, memory_budget=OPTIONS.memory_budget,
                                 time_budget=OPTIONS.time_budget)
    except PrivspecError as error:
        raise refused(command, error, label, spec_path) from None
    finally:
        if line is not None:
            line.close()


def scores_or_exit(settings: AuditSettings, spec_path: str) -> Scores:
    """The attack's scores ``settings`` name; every problem of the file (or of its
    SHA-256), one line each, exit 2."""
    from privspec.spec.diagnostics import SpecError, format_diagnostics
    from privspec.workflows.audit import scores_for

    try:
        return scores_for(settings, spec_path)
    except SpecError as error:
        typer.echo(format_diagnostics(error.diagnostics, "gcc"), err=True)
        raise typer.Exit(EXIT_CANNOT_RUN) from None


def audited_or_exit(spec: Spec, spec_path: str, report: Report) -> Report:
    """``report`` with the section of the audit the spec's ``audit:`` block names (as it
    is without one); the scores' problems exit 2."""
    from privspec.workflows.audit import settings_for, with_audit

    settings = settings_for(spec, spec_path)
    if settings is None:
        return report
    return with_audit(report, scores_or_exit(settings, spec_path), settings)


def load_all_or_exit(paths: list[str]) -> list[tuple[str, Spec]]:
    """Load every spec; if any is invalid, print all their diagnostics and exit 2."""
    from privspec.spec.diagnostics import Diagnostic, SpecError, format_diagnostics
    from privspec.spec.loader import load_spec

    loaded: list[tuple[str, Spec]] = []
    problems: list[Diagnostic] = []
    for path in paths:
        try:
            loaded.append((path, load_spec(path)))
        except SpecError as error:
            problems.extend(error.diagnostics)
    if problems:
        typer.echo(format_diagnostics(problems, "gcc"), err=True)
        raise typer.Exit(EXIT_CANNOT_RUN)
    return loaded


def spec_at_revision_or_exit(command: str, path: str, revision: str) -> tuple[Spec, str]:
    """The spec file ``path`` as committed at git ``revision``, the files it names read
    there too (``workflows/git.spec_at``), and its label ``REV:path``; a file that
    cannot be read exits 2 in one line, a spec's problems one line each."""
    from privspec.cli.output import fail
    from privspec.spec.diagnostics import SpecError, format_diagnostics
    from privspec.workflows.git import DiffError, spec_at

    try:
        return spec_at(path, revision)
    except DiffError as error:
        raise fail(command, str(error)) from None
    except SpecError as error:
        typer.echo(format_diagnostics(error.diagnostics, "gcc"), err=True)
        raise typer.Exit(EXIT_CANNOT_RUN) from None
