"""The options given before the command (``privspec --debug render …``), kept for the
command that runs, and the options several commands share."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import typer


@dataclass
class GlobalOptions:
    """The options given before the command."""

    traceback: bool = False
    quiet: bool = False
    memory_budget: float | None = None
    time_budget: float | None = None


OPTIONS = GlobalOptions()

SpecsToCheck = Annotated[list[str], typer.Argument(
    metavar="SPEC", help="Spec files (*.privspec.yaml) to check.", show_default=False)]


def _print_version(given: bool) -> None:
    """``privspec --version``: privspec, and the versions a report's numbers depend on."""
    if not given:
        return
    from importlib import metadata

    from privspec.version import __version__

    parts = [f"privspec {__version__}"]
    for package in ("dp-accounting", "numpy", "scipy"):
        try:
            parts.append(f"{package} {metadata.version(package)}")
        except metadata.PackageNotFoundError:  # pragma: no cover - broken installs
            parts.append(f"{package} (not installed)")
    typer.echo(", ".join(parts))
    raise typer.Exit(0)


def global_options(
    context: typer.Context,
    debug: Annotated[bool, typer.Option(
        "--debug", envvar="PRIVSPEC_DEBUG",
        help="When privspec fails on a valid spec, also print the traceback (for a bug "
             "report).")] = False,
    quiet: Annotated[bool, typer.Option(
        "--quiet", envvar="PRIVSPEC_QUIET",
        help="No progress line on stderr (shown on a terminal once a computation has "
             "run for 2 seconds).")] = False,
    memory_budget: Annotated[float | None, typer.Option(
        "--memory-budget", envvar="PRIVSPEC_MEMORY_BUDGET", min=0.05, max=1024,
        help="Memory one computation may take, in GiB, for every spec (overrides their "
             "accounting.memory_budget; default 1).", show_default=False)] = None,
    time_budget: Annotated[float | None, typer.Option(
        "--time-budget", envvar="PRIVSPEC_TIME_BUDGET", min=1, max=86_400,
        help="Time one evaluation may take, in seconds on a 2-core laptop as estimated "
             "before it starts, for every spec (overrides their accounting.time_budget; "
             "default 60).", show_default=False)] = None,
    no_cache: Annotated[bool, typer.Option(
        "--no-cache", envvar="PRIVSPEC_NO_CACHE",
        help="Evaluate every spec, neither reading nor keeping reports in the report "
             "cache (privspec cache info).")] = False,
    version: Annotated[bool, typer.Option(
        "--version", is_eager=True, callback=lambda given: _print_version(given),
        help="Print privspec's version and those of the numerical stack its numbers "
             "depend on, then exit.")] = False,
) -> None:
    """Turn a *.privspec.yaml mechanism description into an honest privacy report."""
    OPTIONS.traceback, OPTIONS.quiet = debug, quiet
    OPTIONS.memory_budget, OPTIONS.time_budget = memory_budget, time_budget
    if no_cache:  # for this command only
        from privspec.report.store import bypassed

        context.with_resource(bypassed())
