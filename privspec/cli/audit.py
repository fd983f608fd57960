"""``privspec audit``: an attack's scores held against the curve a spec certifies."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer

from privspec.cli.loading import evaluate_or_exit, load_all_or_exit, scores_or_exit
from privspec.cli.output import EXIT_CHECK_FAILED, EXIT_OK, fail
from privspec.spec.diagnostics import printable

if TYPE_CHECKING:
    from privspec.spec.models import Spec
    from privspec.workflows.audit import AuditOutcome, AuditSettings, Scores


class AuditFormat(StrEnum):
    """How ``audit`` prints its findings."""

    text = "text"
    json = "json"


ScoresFile = Annotated[str | None, typer.Option(
    "--scores", metavar="FILE", help="The attack's scores: CSV (a score and a 0/1 "
    "membership column), JSON ({\"in\": [...], \"out\": [...]} or the two columns) or NPZ "
    "(arrays in and out, or the two columns). Default: the spec's audit.scores.",
    show_default=False)]
ScoreColumn = Annotated[str | None, typer.Option(
    "--score-column", metavar="NAME", help="The score column (default: the spec's "
    "audit.score_column, else 'score'); higher or lower may mean 'in': both are tried.",
    show_default=False)]
LabelColumn = Annotated[str | None, typer.Option(
    "--label-column", metavar="NAME", help="The membership column, 1 in and 0 out (default: "
    "the spec's audit.label_column, else 'member').", show_default=False)]
Confidence = Annotated[float | None, typer.Option(
    "--confidence", metavar="P", min=0.5, max=0.999999, help="Probability with which every "
    "statement holds at once (default: the spec's audit.confidence, else 0.95).",
    show_default=False)]
Holdout = Annotated[bool | None, typer.Option(
    "--holdout/--no-holdout", help="Choose one threshold per direction on half the scores "
    "and test it on the other half (default: the spec's audit.holdout, else no: a fixed "
    "set of pooled-score quantiles, Bonferroni-corrected).", show_default=False)]
OneRun = Annotated[bool | None, typer.Option(
    "--one-run/--no-one-run", show_default=False, help="Also the one-run bound on ε "
    "(Steinke, Nasr & Jagielski 2023), for scores of canaries each inserted with "
    "probability 1/2 into one training run: guesses "
    "on the highest and lowest scores, several guess counts, Bonferroni-corrected; a bound "
    "above the report's ε at the same δ is a contradiction (default: the spec's "
    "audit.one_run, else no).")]
Format = Annotated[AuditFormat, typer.Option(
    "--format", "-f", help="text: findings in words on stdout; json: the boxes and bounds.",
    case_sensitive=False)]


def audit(
    spec: Annotated[str, typer.Argument(metavar="SPEC", help="The spec file whose report "
                                        "certifies the curve.", show_default=False)],
    scores: ScoresFile = None, score_column: ScoreColumn = None, label_column: LabelColumn = None,
    confidence: Confidence = None, holdout: Holdout = None, one_run: OneRun = None,
    output_format: Format = AuditFormat.text,
) -> None:
    """Hold an attack's scores against the certified curve: exit 0 when the attack stays
    within it, 1 on a contradiction (the attack beats the certificate at the stated
    confidence: the implementation, the spec or the run is wrong), 2 on bad input.

    Prints the number of scores and their file's SHA-256, the empirical lower bounds on
    μ and on ε at the report's δ's (all at once with the stated confidence, assuming
    each score is an independent trial of the attack), the tightness μ_lb / μ, and each
    contradiction. The statistics are explained in docs/audit.md.
    """
    from privspec.workflows.audit import audited

    ((path, model),) = load_all_or_exit([spec])
    settings = _settings_or_exit(path, model, scores, score_column, label_column, confidence,
                                 holdout, one_run)
    read = scores_or_exit(settings, path)
    report = evaluate_or_exit("audit", model, path, path)
    outcome = audited(report, read, settings)
    if output_format is AuditFormat.json:
        from privspec.workflows.audit import outcome_json

        typer.echo(outcome_json(outcome, read))
    else:
        typer.echo("\n".join(printable(line) for line in findings(outcome, read)))
    raise typer.Exit(EXIT_CHECK_FAILED if outcome.contradicted else EXIT_OK)


def _settings_or_exit(path: str, model: Spec, scores: str | None, score_column: str | None,
                      label_column: str | None, confidence: float | None,
                      holdout: bool | None, one_run: bool | None) -> AuditSettings:
    """What to audit; no score file named anywhere exits 2 in one line."""
    from privspec.workflows.audit import settings_for

    settings = settings_for(model, path, scores=scores, score_column=score_column,
                            label_column=label_column, confidence=confidence, holdout=holdout,
                            one_run=one_run)
    if settings is None:
        raise fail("audit", f"{printable(path)}: no scores to audit: give --scores FILE, or "
                   "name the file in the spec's audit: block")
    return settings


def findings(outcome: AuditOutcome, scores: Scores) -> list[str]:
    """The audit in words, one line each, numbers rounded against the attack's claims:
    lower bounds and TPR_lo down, FPR_hi and the certified figures up."""
    from privspec.report import formatting as fmt
    from privspec.workflows.audit import box_words

    statistics, name = outcome.statistics, scores.path
    how = ("one threshold per direction chosen on half the scores, tested on the other"
           if statistics.holdout else f"{len(statistics.boxes)} thresholds fixed before "
           "looking at the labels")
    lines = [
        f"{name}: {fmt.fmt_count(statistics.members)} scores in, "
        f"{fmt.fmt_count(statistics.non_members)} out, SHA-256 {scores.sha256}",
        f"{name}: with probability at least {fmt.fmt_chance(statistics.confidence, 'plain', 'nearest')} "
        f"all at once (Clopper–Pearson boxes, {how}; each score an independent trial):",
        f"{name}: μ ≥ {fmt.format_number(statistics.mu_lower, 'down')} (certified μ = "
        f"{fmt.fmt_mu(outcome.certified_mu)}"
        + ("" if outcome.tightness is None else
           f"; tightness μ_lb / μ = {fmt.format_number(outcome.tightness, 'down')}") + ")",
    ]
    lines += [f"{name}: ε ≥ {fmt.format_number(lower, 'down')} at δ = "
              f"{fmt.format_number(delta, 'nearest')} (certified ε = {fmt.fmt_epsilon(certified)})"
              for delta, lower, certified in outcome.epsilons]
    lines += [f"{name}: contradiction: {box_words(box, allowed)}: the implementation, "
              "the spec or the run is wrong" for box, allowed in outcome.contradictions[:5]]
    lines += _one_run_lines(outcome, name)
    if outcome.contradicted and not outcome.certified:
        lines.append(f"{name}: note: the report's curve was composed without a stated error "
                     "bound (its caveat accounting/uncertified-composition): the contradiction "
                     "may come from that numerical error")
    if not outcome.contradicted:
        lines.append(f"{name}: no contradiction: no box lies above the certified curve")
    return lines


def _one_run_lines(outcome: AuditOutcome, name: str) -> list[str]:
    """The one-run bounds in words, and their contradictions."""
    from privspec.report import formatting as fmt
    from privspec.workflows.audit import one_run_words

    lines = []
    for bound, certified in outcome.one_run:
        lines.append(
            f"{name}: one run (Steinke, Nasr & Jagielski 2023; canaries each inserted with "
            f"probability 1/2): ε ≥ {fmt.format_number(bound.epsilon_lower, 'down')} at δ = "
            f"{fmt.format_number(bound.delta, 'nearest')}, from {fmt.fmt_count(bound.correct)} "
            f"right of {fmt.fmt_count(bound.guesses)} guesses (certified ε = "
            f"{fmt.fmt_epsilon(certified)})")
    lines += [f"{name}: contradiction: {one_run_words(bound, certified)}: the "
              "implementation, the spec or the run is wrong"
              for bound, certified in outcome.one_run_contradictions]
    return lines
