"""``privspec action``: the GitHub Action's command (``action.yml`` runs it).

Writes the comment built by ``privspec.workflows.pull_request`` to ``--comment-file``
(for a step that posts it; shortened to GitHub's limit when too long), appends the whole
comment to ``--summary-file`` (default ``$GITHUB_STEP_SUMMARY``) and prints it between
``::stop-commands::TOKEN`` and ``::TOKEN::`` (a random token), so that no text of the
pull request in the log is run as a workflow command, and writes the outputs
``comment-file``, ``changed``, ``weaker`` and ``over-budget`` to ``--github-output``
(default ``$GITHUB_OUTPUT``).
Exit 0 when every changed spec is within budget, 1 when one is over budget or its
``audit:`` block's scores contradict it (or privacy got weaker, with ``--fail-on-weaker
true``), 2 when it cannot run or a changed spec cannot be read or evaluated.  Options take empty
strings as "not given", so the action passes its inputs through unchanged.
"""

from __future__ import annotations

import os
import secrets
import sys
import uuid
from typing import TYPE_CHECKING, Annotated

import typer

from privspec.cli.options import OPTIONS
from privspec.cli.output import EXIT_CANNOT_RUN
from privspec.spec.diagnostics import printable

if TYPE_CHECKING:
    from privspec.workflows.pull_request import ActionResult


def _optional_float(text: str) -> float | None:
    if not text.strip():
        return None
    try:
        return float(text)
    except ValueError:
        raise typer.BadParameter(f"not a number: {text!r}") from None


def _flag(text: str, name: str) -> bool:
    value = text.strip().lower()
    if value in ("", "false", "0", "no", "off"):
        return False
    if value in ("true", "1", "yes", "on"):
        return True
    raise typer.BadParameter(f"expected true or false, got {text!r}", param_hint=name)


def _append(path: str, text: str) -> None:
    with open(path, "a", encoding="utf-8") as stream:
        stream.write(text)


def _write_outputs(path: str, outputs: dict[str, str]) -> None:
    lines = []
    for name, value in outputs.items():
        if "\n" in value:
            marker = f"privspec_{uuid.uuid4().hex}"
            lines.append(f"{name}<<{marker}\n{value}\n{marker}")
        else:
            lines.append(f"{name}={value}")
    _append(path, "\n".join(lines) + "\n")


def _log(comment: str, problems: list[str]) -> None:
    """The whole comment on stdout and ``problems`` on stderr (one :func:`printable` line
    each), with workflow commands stopped meanwhile (GitHub's ``stop-commands``)."""
    token = secrets.token_hex(16)
    typer.echo(f"::stop-commands::{token}")
    typer.echo(comment)
    sys.stdout.flush()
    for problem in problems:
        typer.echo(printable(problem), err=True)
    sys.stderr.flush()
    typer.echo(f"::{token}::")


def _write_results(result: ActionResult, comment_file: str, summary_file: str | None,
                   github_output: str | None) -> None:
    """The comment to its file, the whole comment to the job summary and the step outputs
    (defaults from the runner's environment); one line and exit 2 when one cannot be
    written."""
    comment_path = comment_file or os.path.join(
        os.environ.get("RUNNER_TEMP") or os.getcwd(), "privspec-comment.md")
    summary = os.environ.get("GITHUB_STEP_SUMMARY", "") if summary_file is None else summary_file
    outputs = os.environ.get("GITHUB_OUTPUT", "") if github_output is None else github_output
    try:
        with open(comment_path, "w", encoding="utf-8") as stream:
            stream.write(result.comment)
        if summary:
            _append(summary, result.whole + "\n")
        if outputs:
            _write_outputs(outputs, {
                "comment-file": os.path.abspath(comment_path),
                "changed": str(len(result.sections)),
                "weaker": str(any(s.diff is not None and s.diff.verdict == "weaker"
                                  for s in result.sections)).lower(),
                "over-budget": str(any(s.over_budget for s in result.sections)).lower(),
            })
    except OSError as error:
        typer.echo(printable(f"privspec action: error: cannot write {error.filename}: "
                             f"{error.strerror or error}"), err=True)
        raise typer.Exit(EXIT_CANNOT_RUN) from None


def action(
    base: Annotated[str, typer.Option(help="Base revision (the pull request's base SHA).")],
    head: Annotated[str, typer.Option(help="Head revision.")] = "HEAD",
    repo: Annotated[str, typer.Option(help="A directory in the git repository.")] = ".",
    max_mu: Annotated[float | None, typer.Option(
        parser=_optional_float, metavar="NUMBER",
        help="Largest acceptable μ, beside each spec's own budget ('' for none).")] = None,
    max_epsilon: Annotated[float | None, typer.Option(
        parser=_optional_float, metavar="NUMBER",
        help="Largest acceptable ε at --delta ('' for none).")] = None,
    delta: Annotated[float | None, typer.Option(
        parser=_optional_float, metavar="NUMBER",
        help="The δ of --max-epsilon, e.g. 1e-5 ('' for none).")] = None,
    max_advantage: Annotated[float | None, typer.Option(
        parser=_optional_float, metavar="NUMBER",
        help="Largest acceptable advantage TPR − FPR of the best membership attack "
        "('' for none).")] = None,
    require_tier1: Annotated[str, typer.Option(
        metavar="true|false", show_default=False,
        help="Require Tier I (μ alone tells the story).")] = "false",
    fail_on_weaker: Annotated[str, typer.Option(
        metavar="true|false", show_default=False,
        help="Fail when privacy got weaker (or is not comparable).")] = "false",
    comment_file: Annotated[str, typer.Option(
        help="Where to write the comment (default $RUNNER_TEMP or the current directory, "
        "privspec-comment.md).")] = "",
    summary_file: Annotated[str | None, typer.Option(
        help="File the comment is appended to (default $GITHUB_STEP_SUMMARY; '' for none).")
    ] = None,
    github_output: Annotated[str | None, typer.Option(
        help="Step outputs file (default $GITHUB_OUTPUT; '' for none).")] = None,
) -> None:
    """Compare the specs a pull request changes and check them as privspec check does
    (budgets, audit: blocks on the scores committed at --head): a Markdown comment, the
    job summary and step outputs (the GitHub Action's work)."""
    from privspec.workflows.pull_request import ActionError, Request, run

    request = Request(base=base, head=head, repo=repo, max_mu=max_mu, max_epsilon=max_epsilon,
                      delta=delta, max_advantage=max_advantage,
                      require_tier1=_flag(require_tier1, "--require-tier1"),
                      fail_on_weaker=_flag(fail_on_weaker, "--fail-on-weaker"),
                      memory_budget=OPTIONS.memory_budget, time_budget=OPTIONS.time_budget)
    try:
        result = run(request)
    except ActionError as error:
        typer.echo(printable(f"privspec action: error: {error}"), err=True)
        raise typer.Exit(EXIT_CANNOT_RUN) from None
    _write_results(result, comment_file, summary_file, github_output)
    _log(result.whole, [f"{section.path}: {failure}" for section in result.sections
                        for failure in section.failures])
    raise typer.Exit(result.code)
