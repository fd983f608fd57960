"""The GitHub Action's work (``privspec action``, run by ``action.yml``).

For a pull request, it finds the ``*.privspec.yaml`` / ``*.privspec.yml`` files that
changed between the merge base of the base and head revisions (``git diff
--name-status``), compares each with its version at the base (as ``privspec diff``
does), checks the head versions against their budgets and the given limits and runs
their ``audit:`` blocks (as ``privspec check`` does, by the same code), and builds one
Markdown comment.  Specs, and the files they name (strategies, audits' scores), are read
from git at both revisions, so the working tree does not matter.  Writing the comment, the job
summary and the step outputs is the command's part (``privspec.cli.action``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from privspec.errors import PrivspecError

if TYPE_CHECKING:
    from privspec.spec.models import Spec
    from privspec.workflows.budget import Limit, Outcome
    from privspec.workflows.diffing import SpecDiff

#: The first line of every comment, so a workflow can find and update its own comment.
COMMENT_MARKER = "<!-- privspec-action -->"
#: The longest comment GitHub accepts (characters); a longer one is shortened.
COMMENT_LIMIT = 65_536
SPEC_PATTERNS = ("*.privspec.yaml", "*.privspec.yml")
EXIT_OK, EXIT_CHECK_FAILED, EXIT_CANNOT_RUN = 0, 1, 2


class ActionError(PrivspecError):
    """The action cannot run; a one-line message."""


@dataclass
class Section:
    """What the comment says about one changed spec (worded by the template
    ``markdown/pull-request.md.j2``).

    ``status``: "modified", "added", "removed" or "invalid" (``problem`` says which:
    "invalid spec", "invalid audit scores", "invalid base spec" or "cannot evaluate");
    ``details``: the diagnostics, the refusal, or the comparison's Markdown; ``budget``:
    the budget's Markdown preface; ``summary``: the one-line summary of a spec without a
    base version; ``audit``: None when the spec names no scores, else the contradiction
    its audit found ("" for none)."""

    path: str
    status: str
    old_path: str | None = None
    problem: str = ""
    details: str = ""
    budget: str = ""
    summary: str = ""
    diff: SpecDiff | None = None
    outcomes: list[Outcome] = field(default_factory=list)
    audit: str | None = None

    @property
    def failures(self) -> list[str]:
        """Each violated limit's message, then the audit's contradiction."""
        return [o.message for o in self.outcomes if not o.ok] + (
            [self.audit] if self.audit else [])

    @property
    def checked(self) -> bool:
        """Whether there was anything to check: a limit or an audit."""
        return bool(self.outcomes) or self.audit is not None

    @property
    def over_budget(self) -> bool:
        return bool(self.failures)


def changed_specs(root: str, base: str, head: str) -> list[tuple[str | None, str | None]]:
    """(path at base, path at head) of each changed spec file, None where it does not
    exist, renames followed; between the merge base of ``base`` and ``head`` and ``head``."""
    from privspec.workflows.git import run_git

    done = run_git(root, "diff", "--name-status", "-z", "-M", "--no-color", f"{base}...{head}",
                   "--", *SPEC_PATTERNS)
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise ActionError(f"git diff {base}...{head} failed: "
                          f"{message[0] if message else 'unknown error'} (in CI, use "
                          "actions/checkout with fetch-depth: 0)")
    words = done.stdout.decode("utf-8", "replace").split("\0")
    changes: list[tuple[str | None, str | None]] = []
    position = 0
    while position < len(words) and words[position]:
        status = words[position][0]
        if status == "R":  # -M reports renames (and never copies) with both paths
            changes.append((words[position + 1], words[position + 2]))
            position += 3
            continue
        path = words[position + 1]
        position += 2
        changes.append((None if status == "A" else path, None if status == "D" else path))
    return changes


def _merge_base(root: str, base: str, head: str) -> str:
    from privspec.workflows.git import run_git

    done = run_git(root, "merge-base", base, head)
    if done.returncode != 0:
        raise ActionError(f"{base} and {head} have no common history here (in CI, use "
                          "actions/checkout with fetch-depth: 0)")
    return done.stdout.decode("ascii").strip()


def _short(root: str, revision: str) -> str:
    from privspec.workflows.git import run_git

    done = run_git(root, "rev-parse", "--short", revision)
    return done.stdout.decode("ascii").strip() if done.returncode == 0 else revision


def _load(root: str, revision: tuple[str, str], path: str, which: str) -> Spec | Section:
    """The spec ``path`` as committed at ``revision`` (revision, label), the files it
    names read there too; else the Section that says why it cannot be (``which``:
    "spec", or "base spec" for the version the pull request changes)."""
    from privspec.spec.diagnostics import SpecError, format_diagnostics
    from privspec.workflows.git import DiffError, spec_at_revision

    try:
        return spec_at_revision(root, revision[0], path, revision[1])[0]
    except SpecError as error:
        return Section(path, "invalid", problem=f"invalid {which}",
                       details=format_diagnostics(error.diagnostics, "gcc"))
    except DiffError as error:
        return Section(path, "invalid", problem=f"invalid {which}",
                       details=f"{revision[1]}:{path}: error: {error}")


def _audit(root: str, head: tuple[str, str], path: str, spec: Spec, args: Request
           ) -> str | Section | None:
    """The audit ``privspec check`` runs for the spec ``path`` at ``head`` (revision,
    label), its score file read as committed there, within ``args``' budgets
    (``spec_audit``'s result); else the Section that says why it cannot be run."""
    from privspec.spec.diagnostics import SpecError, format_diagnostics
    from privspec.workflows.audit import spec_audit
    from privspec.workflows.git import revision_folder

    try:
        return spec_audit(spec, f"{head[1]}:{path}",
                          folder=revision_folder(root, head[0], path, head[1]),
                          memory_budget=args.memory_budget, time_budget=args.time_budget)
    except SpecError as error:
        return Section(path, "invalid", problem="invalid audit scores",
                       details=format_diagnostics(error.diagnostics, "gcc"))
    except PrivspecError as error:  # the evaluator's refusal
        return Section(path, "invalid", problem="cannot evaluate", details=str(error))


def _section(root: str, old_path: str | None, new_path: str | None, base: tuple[str, str],
             head: tuple[str, str], limits: list[Limit], args: Request) -> Section:
    """Compare one changed spec and check it (within ``args``' budgets). ``base`` and
    ``head`` are (revision, label); a spec that exists at the base is compared with it,
    or the section says why it cannot be (never "added")."""
    from functools import partial

    from privspec.report import cache
    from privspec.report.escaping import markdown_code
    from privspec.workflows.budget import check_report, limits_for, stating
    from privspec.workflows.diffing import aligned, diff_reports, markdown_from_diff, report_summary

    if new_path is None:
        assert old_path is not None
        return Section(old_path, "removed")
    after = _load(root, head, new_path, "spec")
    if isinstance(after, Section):
        return after
    audit = _audit(root, head, new_path, after, args)
    if isinstance(audit, Section):
        return audit
    before = None if old_path is None else _load(root, base, old_path, "base spec")
    if isinstance(before, Section):
        return replace(before, path=new_path, old_path=old_path)
    spec_limits = limits_for(after, limits)
    evaluate = partial(cache.evaluate, memory_budget=args.memory_budget,
                       time_budget=args.time_budget)
    try:
        if before is not None:
            old, new = aligned(before, after, spec_limits)
            before_report, after_report = evaluate(old), evaluate(new, spec_path=new_path)
        else:
            after_report = evaluate(stating(after, spec_limits), spec_path=new_path)
    except PrivspecError as error:  # the evaluator's refusal
        return Section(new_path, "invalid", problem="cannot evaluate", details=str(error))
    checked = Section(new_path, "added", outcomes=check_report(after_report, spec_limits),
                      audit=audit)
    from privspec.report.render import render_markdown

    budget_text = render_markdown("markdown/budget.md.j2", path=new_path,
                                  checked=checked.checked, failed=checked.failures)
    if before is None:
        return replace(checked, budget=budget_text, summary=report_summary(after_report))
    diff = diff_reports(before, after, before_report, after_report,
                        before_label=f"{base[1]}:{old_path}", after_label=f"{head[1]}:{new_path}")
    moved = (f" (renamed from {markdown_code(old_path)})"
             if old_path is not None and old_path != new_path else "")
    return replace(checked, status="modified", old_path=old_path,
                   details=markdown_from_diff(diff, heading_note=moved, preface=budget_text),
                   diff=diff)


def comment_length(text: str) -> int:
    """The length GitHub checks against :data:`COMMENT_LIMIT`, counted pessimistically:
    in UTF-16 code units, so a character beyond U+FFFF (an emoji) counts twice."""
    return len(text.encode("utf-16-le")) // 2


def comment_from_sections(sections: list[Section], base: str, head: str, *,
                          limit: int | None = None, listed: int | None = None) -> str:
    """The whole comment: an overview line per spec, then one section each; with
    ``limit``, the overview of the first ``listed`` specs and a note that the sections
    are in the job summary."""
    from privspec.report.render import render_markdown

    return render_markdown(
        "markdown/pull-request.md.j2", marker=COMMENT_MARKER, base=base, head=head,
        sections=sections, over=sum(s.over_budget for s in sections),
        invalid=sum(s.status == "invalid" for s in sections),
        checked=any(s.checked for s in sections), limit=limit,
        listed=len(sections) if listed is None else listed)


def fitted_comment(sections: list[Section], base: str, head: str, whole: str,
                   limit: int = COMMENT_LIMIT) -> str:
    """The comment as GitHub will post it: ``whole`` (the whole comment) when it is at
    most ``limit`` characters long, else the overview of as many specs as fit (every
    spec, unless their names are very long) and a note that the sections are in the job
    summary."""
    if comment_length(whole) <= limit:
        return whole
    fits, too_many = 0, len(sections) + 1  # the overview of `fits` specs fits
    while too_many - fits > 1:
        middle = (fits + too_many) // 2
        text = comment_from_sections(sections, base, head, limit=limit, listed=middle)
        fits, too_many = (middle, too_many) if comment_length(text) <= limit else (fits, middle)
    return comment_from_sections(sections, base, head, limit=limit, listed=fits)


@dataclass(frozen=True)
class Request:
    """What the action compares and checks: revisions, repository, limits."""

    base: str
    head: str = "HEAD"
    repo: str = "."
    max_mu: float | None = None
    max_epsilon: float | None = None
    delta: float | None = None
    max_advantage: float | None = None
    require_tier1: bool = False
    fail_on_weaker: bool = False
    memory_budget: float | None = None  # GiB, overriding each spec's own (None: theirs)
    time_budget: float | None = None  # seconds, the same


@dataclass(frozen=True)
class ActionResult:
    """What the action found: the exit code, the comment to post (within
    :data:`COMMENT_LIMIT`), the whole comment (for the job summary and the log) and
    the sections."""

    code: int
    comment: str
    whole: str
    sections: list[Section]


def run(args: Request) -> ActionResult:
    """Do the work: compare and check every changed spec."""
    from privspec.workflows.budget import limits_from_options
    from privspec.workflows.git import DiffError, repository_root, verify_revision

    try:
        limits = limits_from_options(max_mu=args.max_mu, max_epsilon=args.max_epsilon,
                                     delta=args.delta, max_advantage=args.max_advantage,
                                     require_tier1=args.require_tier1)
    except ValueError as error:
        raise ActionError(str(error)) from None
    if not args.base.strip():
        raise ActionError("no base revision: the action takes the pull request's base; on "
                          "other events set the 'base' input (e.g. github.event.before)")
    try:
        root = repository_root(args.repo)
        verify_revision(root, args.base)
        verify_revision(root, args.head)
    except DiffError as error:
        raise ActionError(str(error)) from None
    merge_base = _merge_base(root, args.base, args.head)
    base = (merge_base, _short(root, merge_base))
    head = (args.head, _short(root, args.head))
    sections = [_section(root, old, new, base, head, limits, args)
                for old, new in changed_specs(root, merge_base, args.head)]
    whole = comment_from_sections(sections, base[1], head[1])
    comment = fitted_comment(sections, base[1], head[1], whole)
    code = EXIT_OK
    if any(s.status == "invalid" for s in sections):
        code = EXIT_CANNOT_RUN
    elif any(s.over_budget for s in sections) or (args.fail_on_weaker and any(
            s.diff is not None and (s.diff.verdict == "weaker" or not s.diff.comparable)
            for s in sections)):
        code = EXIT_CHECK_FAILED
    return ActionResult(code, comment, whole, sections)
