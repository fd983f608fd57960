"""``privspec evaluate``: each spec's numbers, without rendering a document."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer

from privspec.cli.loading import evaluate_or_exit, load_all_or_exit
from privspec.cli.output import EXIT_CANNOT_RUN
from privspec.spec.diagnostics import printable

if TYPE_CHECKING:
    from privspec.report.model import Report


class EvaluateFormat(StrEnum):
    """How ``evaluate`` prints its numbers."""

    text = "text"
    json = "json"


def evaluate(
    specs: Annotated[list[str], typer.Argument(
        metavar="SPEC", help="Spec files (*.privspec.yaml) to evaluate.", show_default=False)],
    output_format: Annotated[EvaluateFormat, typer.Option(
        "--format", "-f", help="text: a one-line summary per spec; json: the report model.",
        case_sensitive=False)] = EvaluateFormat.text,
) -> None:
    """Compute μ, regret, the verdict and ε(δ) for each spec (no document rendering).

    Rounding in the text summary is conservative: μ, ε, regret and advantage up.
    The JSON is the full, unrounded report model that every renderer uses. A spec
    privspec will not evaluate is said in one line and the others still are (exit 2).
    """
    refused = 0
    for path, spec in load_all_or_exit(specs):
        try:
            report = evaluate_or_exit("evaluate", spec, path, spec_path=path)
        except typer.Exit:  # (said on stderr): the next specs are still evaluated
            refused += 1
            continue
        if output_format is EvaluateFormat.json:
            typer.echo(report.model_dump_json(indent=2))
        else:
            typer.echo(_summary(path, report))
    if refused:
        raise typer.Exit(EXIT_CANNOT_RUN)


def _summary(path: str, report: Report) -> str:
    """One spec's figures in one line, rounded conservatively."""
    from privspec.report import formatting as fmt

    gdp = report.gdp
    if gdp.mu is None:
        head = "no finite μ"
    elif gdp.bound:
        head = f"μ = {fmt.fmt_mu(gdp.mu)} (a closed-form bound: see the report's caveats)"
    else:
        head = f"μ = {fmt.fmt_mu(gdp.mu)}, regret {fmt.fmt_regret_of(gdp)}"
    epsilons = ", ".join(f"ε = {fmt.fmt_epsilon(e.epsilon)} at δ = {fmt.fmt_given(e.delta)}"
                         for e in report.epsilons)
    # Caveats that change what the figures mean are named (the report words them);
    # the floor's, in nearly every report, is not.
    named = [w.code for w in report.warnings if w.code != "accounting/floor"]
    said = f"; caveats (see the report): {', '.join(named)}" if named else ""
    return (f"{printable(path)}: {head}, Tier {'I' if gdp.tier == 1 else 'II'}, "
            f"advantage {fmt.fmt_advantage(gdp.advantage)}; {epsilons}{said}")
