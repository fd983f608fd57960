"""``privspec check``: specs against a privacy budget (theirs and the command line's)."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer

from privspec.cli.loading import load_all_or_exit
from privspec.cli.options import OPTIONS, SpecsToCheck
from privspec.cli.output import (
    EXIT_CANNOT_RUN,
    EXIT_CHECK_FAILED,
    EXIT_OK,
    fail,
    refusal_position,
    refused,
)
from privspec.errors import Code, PrivspecError
from privspec.spec.diagnostics import printable

if TYPE_CHECKING:
    from privspec.spec.models import Spec
    from privspec.workflows.budget import Limit, Outcome


class CheckFormat(StrEnum):
    """How ``check`` prints violated limits."""

    text = "text"
    github = "github"


MaxMu = Annotated[float | None, typer.Option(
    "--max-mu", metavar="X", help="Largest acceptable μ (a spec without a finite μ "
    "exceeds it).", show_default=False)]
MaxEpsilon = Annotated[float | None, typer.Option(
    "--max-epsilon", metavar="X", help="Largest acceptable ε at --delta.",
    show_default=False)]
Delta = Annotated[float | None, typer.Option(
    "--delta", metavar="D", help="The δ of --max-epsilon.", show_default=False)]
MaxAdvantage = Annotated[float | None, typer.Option(
    "--max-advantage", metavar="A", help="Largest acceptable advantage TPR − FPR of the "
    "best attack, a probability (0.1 = 10 percentage points).", show_default=False)]
RequireTier1 = Annotated[bool, typer.Option(
    "--require-tier1", help="Require Tier I: μ alone tells the story.")]
MaxRisk = Annotated[list[str] | None, typer.Option(
    "--max-risk", metavar="RISK@PARAM=P", help="Largest acceptable success of an attack "
    "(repeatable): reidentification@N=P (among N candidates), attribute@K=P (K equally "
    "likely values), reconstruction@KAPPA=P (a guess succeeds with KAPPA), "
    "accuracy@PI=P (membership at base rate PI). E.g. reidentification@10000=0.001.",
    show_default=False)]
Format = Annotated[CheckFormat, typer.Option(
    "--format", "-f", help="text: one line per violated limit on stdout; github: "
    "workflow error annotations.", case_sensitive=False)]
Quiet = Annotated[bool, typer.Option(
    "--quiet", "-q", help="No line for specs within budget, no summary.")]
AuditScores = Annotated[str | None, typer.Option(
    "--audit", metavar="FILE", help="An attack's scores (as privspec audit reads them) held "
    "against every spec's certified curve: a contradiction fails the check. A spec's own "
    "audit: block is checked without it.", show_default=False)]


def check(
    specs: SpecsToCheck, max_mu: MaxMu = None, max_epsilon: MaxEpsilon = None,
    delta: Delta = None, max_advantage: MaxAdvantage = None, require_tier1: RequireTier1 = False,
    max_risk: MaxRisk = None, output_format: Format = CheckFormat.text, quiet: Quiet = False,
    audit: AuditScores = None,
) -> None:
    """Check specs against a privacy budget: exit 0 within budget, 1 over it, 2 on bad input.

    The limits are the spec's own 'budget:' section plus the ones given here
    (both apply). One line per violated limit: 'FILE: WHAT = ACTUAL exceeds the
    limit LIMIT (SOURCE)'. Values are compared unrounded and printed rounded
    conservatively. A spec with no limits at all passes, with a note. With --audit
    (or a spec's audit: block), an attack whose scores beat the certified curve at the
    audit's confidence fails the check too (privspec audit says more).
    """
    from privspec.workflows.budget import limits_for, limits_from_options

    try:
        extra = limits_from_options(max_mu=max_mu, max_epsilon=max_epsilon, delta=delta,
                                    max_advantage=max_advantage, require_tier1=require_tier1,
                                    max_risk=max_risk)
    except ValueError as error:
        raise fail("check", str(error)) from None
    over = refused_specs = 0
    for path, spec in load_all_or_exit(specs):
        audited = _audit_failed(path, spec, audit, output_format)
        if audited is None:
            refused_specs += 1
        if not limits_for(spec, extra):
            over += bool(audited)
            if not quiet and not (audit or spec.audit):
                typer.echo(f"{printable(path)}: no budget to check (no 'budget:' section and "
                           "no --max-* option)", err=True)
            continue
        outcomes = _outcomes(path, spec, extra, output_format)
        if outcomes is None:
            refused_specs += 1
        else:
            over += _print_outcomes(path, outcomes, output_format, quiet) or bool(audited)
    if refused_specs:  # not all could be checked: no verdict on the budget (each line said why)
        raise typer.Exit(EXIT_CANNOT_RUN)
    if not quiet:
        noun = "spec" if len(specs) == 1 else "specs"
        typer.echo(f"{over} of {len(specs)} {noun} over budget" if over
                   else f"{len(specs)} {noun} within budget", err=True)
    raise typer.Exit(EXIT_CHECK_FAILED if over else EXIT_OK)


def _outcomes(path: str, spec: Spec, extra: list[Limit], output_format: CheckFormat
              ) -> list[Outcome] | None:
    """Each limit's outcome for one spec; None when the evaluator refuses the spec (said
    in one line: the others are still checked)."""
    from privspec.workflows.budget import check_spec

    try:
        return check_spec(spec, extra, spec_path=path, memory_budget=OPTIONS.memory_budget,
                          time_budget=OPTIONS.time_budget)
    except PrivspecError as error:  # the evaluator's refusal, as every command's
        refused("check", error, path, path, github=output_format is CheckFormat.github)
        return None


def _audit_failed(path: str, spec: Spec, scores: str | None, output_format: CheckFormat
                  ) -> bool | None:
    """Whether the spec's audit (``scores``, else its audit: block) finds a contradiction,
    said in one line; False without an audit; None when the scores or the spec cannot be
    read or evaluated (said in one line per problem)."""
    from privspec.spec.diagnostics import Diagnostic, SpecError, format_diagnostics
    from privspec.workflows.audit import spec_audit

    try:
        message = spec_audit(spec, path, scores=scores, memory_budget=OPTIONS.memory_budget,
                             time_budget=OPTIONS.time_budget)
    except SpecError as error:
        typer.echo(format_diagnostics(error.diagnostics, output_format.value if
                                      output_format is CheckFormat.github else "gcc"),
                   err=output_format is not CheckFormat.github)
        return None
    except PrivspecError as error:
        refused("check", error, path, path, github=output_format is CheckFormat.github)
        return None
    if not message:
        return False
    if output_format is CheckFormat.github:
        typer.echo(format_diagnostics([Diagnostic(
            path, *_limit_position(path, "audit" if spec.audit else ""), "audit", message,
            Code.BUDGET_EXCEEDED)], "github"))
    else:
        typer.echo(printable(f"{path}: {message}"))
    return True


def _print_outcomes(path: str, outcomes: list[Outcome], output_format: CheckFormat,
                    quiet: bool) -> bool:
    """One line per violated limit (or, unless ``quiet``, the figures within budget);
    whether any limit was violated."""
    from privspec.spec.diagnostics import Diagnostic, format_diagnostics

    failed = [o for o in outcomes if not o.ok]
    for outcome in failed:
        if output_format is CheckFormat.github:
            typer.echo(format_diagnostics([Diagnostic(
                path, *_limit_position(path, outcome.limit.source),
                outcome.limit.source, outcome.message, Code.BUDGET_EXCEEDED)], "github"))
        else:
            typer.echo(printable(f"{path}: {outcome.message}"))
    if not failed and not quiet:
        typer.echo(printable(f"{path}: within budget: " + "; ".join(
            o.message.replace(" within the limit ", " ≤ ") for o in outcomes)), err=True)
    return bool(failed)


def _limit_position(spec_path: str, source: str) -> tuple[int, int]:
    """(line, column) of a violated limit: its key in the spec (``budget.max_mu``), or,
    for a limit given on the command line (``--require-tier1``), the mechanism whose
    figure exceeds it; the first line when the file does not say where."""
    import re

    written: tuple[str | int, ...] = ("mechanism",)
    if source == "audit":
        written = ("audit",)
    elif source.startswith("budget."):
        written = tuple(int(part) if part.isdigit() else part
                        for part in re.findall(r"[^.\[\]]+", source))
    return refusal_position(spec_path, written) or (1, 1)
