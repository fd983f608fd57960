"""``privspec convert``: a legacy (ε, δ) claim to μ-GDP and back, for the Gaussian
mechanism."""

from __future__ import annotations

from typing import Annotated

import typer

from privspec.cli.output import EXIT_CANNOT_RUN
from privspec.spec.diagnostics import printable

#: The largest ε ``convert`` turns into μ (μ ≈ √(2ε), well within its solver's range).
LARGEST_CONVERTED_EPSILON = 1e11
TABLE3_EPSILONS = (0.1, 0.5, 1.0, 2.0, 4.0, 6.0, 8.0, 10.0)
TABLE3_DELTAS = (1e-5, 1e-6, 1e-9)


def convert(
    epsilon: Annotated[list[float] | None, typer.Option(
        "--epsilon", "-e", help="A legacy ε (repeatable).", show_default=False)] = None,
    delta: Annotated[list[float] | None, typer.Option(
        "--delta", "-d", help="A δ (repeatable).", show_default=False)] = None,
    mu: Annotated[list[float] | None, typer.Option(
        "--mu", help="A μ to convert to ε(δ) instead (repeatable).", show_default=False)] = None,
    table: Annotated[bool, typer.Option(
        "--table", help="Print Table 3 of Gomez et al. 2025: μ for ε ∈ {0.1 … 10} × δ ∈ {1e-5, 1e-6, 1e-9}."
    )] = False,
) -> None:
    """Convert between a legacy (ε, δ) claim and μ-GDP for the Gaussian mechanism.

    With --epsilon and --delta: the μ of the Gaussian mechanism that is exactly
    (ε, δ)-DP. With --mu and --delta: ε(δ) of μ-GDP. Numbers are rounded up to
    three significant digits (a larger μ or ε is the safe side).
    """
    from privspec.numerics.gdp import epsilon_from_mu_delta, mu_from_epsilon_delta

    deltas = list(delta or (TABLE3_DELTAS if table else ()))
    epsilons = list(epsilon or (TABLE3_EPSILONS if table else ()))
    _exit_on_problems(epsilons, deltas, mu or [])
    from privspec.report.render import render_markdown

    tabulate = bool(epsilons) and (table or len(epsilons) * len(deltas) > 1)
    typer.echo(render_markdown(
        "markdown/convert.md.j2", deltas=deltas,
        rows=[(e, [mu_from_epsilon_delta(e, d) for d in deltas]) for e in epsilons]
        if tabulate else [],
        single=(epsilons[0], deltas[0], mu_from_epsilon_delta(epsilons[0], deltas[0]))
        if epsilons and not tabulate else None,
        from_mu=[(m, [(epsilon_from_mu_delta(m, d), d) for d in deltas]) for m in mu or []]),
        nl=False)


def _exit_on_problems(epsilons: list[float], deltas: list[float], mus: list[float]) -> None:
    """Every value out of range (and a missing --delta or value), one line each: exit 2."""
    problems = [f"δ must be in (0, 1), got {d:g}" for d in deltas if not 0 < d < 1]
    problems += [f"ε must be ≥ 0, got {e:g}" for e in epsilons if not e >= 0]
    # (μ of ε = 10¹¹ is about 4.5 × 10⁵; far beyond, the equation's terms overflow.)
    problems += [f"ε must be at most {LARGEST_CONVERTED_EPSILON:g}, got {e:g}"
                 for e in epsilons if e > LARGEST_CONVERTED_EPSILON]
    problems += [f"μ must be ≥ 0, got {m:g}" for m in mus if not m >= 0]
    if not deltas or not (epsilons or mus):
        problems.append("give --delta with --epsilon or --mu (or --table)")
    if problems:
        for problem in problems:
            typer.echo(printable(f"privspec convert: error: {problem}"), err=True)
        raise typer.Exit(EXIT_CANNOT_RUN)
