"""``privspec diff``: two versions of a spec compared (files, or git revisions)."""

from __future__ import annotations

import functools
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer

from privspec.cli.loading import evaluate_or_exit, load_all_or_exit, spec_at_revision_or_exit
from privspec.cli.output import EXIT_CHECK_FAILED, EXIT_OK, fail, figure_format_or_exit
from privspec.spec.diagnostics import printable

if TYPE_CHECKING:
    from privspec.report.model import Report
    from privspec.spec.models import Spec
    from privspec.workflows.diffing import SpecDiff


class DiffFormat(StrEnum):
    """How ``diff`` prints a comparison."""

    markdown = "markdown"
    github = "github"
    json = "json"


#: What ``diff`` compares: (file, old spec, its label, new spec, its label).
Pair = tuple[str, "Spec", str, "Spec", str]

Specs = Annotated[list[str], typer.Argument(
    metavar="BASE HEAD | SPEC...", help="Two spec files to compare (old, new); with "
    "--rev, the specs to compare with their committed versions.", show_default=False)]
Rev = Annotated[str | None, typer.Option(
    "--rev", metavar="REV", help="Compare each SPEC with its version at git revision REV "
    "(e.g. origin/main), read with 'git show REV:path', as are the files it names "
    "(strategy files).", show_default=False)]
HeadRev = Annotated[str | None, typer.Option(
    "--head-rev", metavar="REV", help="With --rev: take the new version from revision "
    "REV instead of the working tree.", show_default=False)]
Format = Annotated[DiffFormat, typer.Option(
    "--format", "-f", help="markdown: a pull-request comment or job summary; github: "
    "workflow annotations (a warning when privacy got weaker); json: the comparison "
    "with unrounded values.", case_sensitive=False)]
FailOnWeaker = Annotated[bool, typer.Option(
    "--fail-on-weaker", help="Exit 1 when privacy got weaker in any comparison, or the "
    "numbers are not comparable.")]
PlotFile = Annotated[str | None, typer.Option(
    "--plot", metavar="FILE", help="Also draw both trade-off curves (and their G_μ) on "
    "one figure: .svg, .png or .pdf; one comparison only. Needs matplotlib: pip install "
    "'privspec[plot]'.", show_default=False)]


def diff(specs: Specs, rev: Rev = None, head_rev: HeadRev = None,
         output_format: Format = DiffFormat.markdown, fail_on_weaker: FailOnWeaker = False,
         plot_file: PlotFile = None) -> None:
    """Compare two versions of a spec: μ, regret, verdict, advantage, ε(δ), the Tier II
    table, and the spec fields that changed.

    μ going up means privacy got weaker. Numbers are rounded conservatively and
    changes towards less privacy. A changed unit or neighbouring relation is
    flagged: the numbers then protect different things. Exit 0 when done (1 with
    --fail-on-weaker and a weaker result), 2 when it cannot run.
    """
    pairs = _diff_pairs(specs, rev, head_rev)
    plot_form = None
    if plot_file is not None:
        if len(pairs) != 1:
            raise fail("diff", "--plot draws one comparison; give one spec (or BASE HEAD)")
        plot_form = figure_format_or_exit(plot_file, "diff")
    results: list[tuple[str, SpecDiff]] = []
    for pair in pairs:
        result, reports = _compare(pair)
        results.append((pair[0], result))
        if plot_file is not None and plot_form is not None:
            _plot(plot_file, plot_form, reports, specs)
    _print(results, output_format)
    weaker = any(d.verdict == "weaker" or not d.comparable for _, d in results)
    raise typer.Exit(EXIT_CHECK_FAILED if fail_on_weaker and weaker else EXIT_OK)


def _diff_pairs(specs: list[str], rev: str | None, head_rev: str | None) -> list[Pair]:
    """What ``diff`` compares, one :data:`Pair` per spec file; a version that cannot be
    read, or is not a valid spec, exits 2."""
    failed = functools.partial(fail, "diff")
    if rev is None:
        if head_rev is not None:
            raise failed("--head-rev goes with --rev")
        if len(specs) != 2:
            raise failed(f"give two specs (BASE HEAD), or --rev REV with specs; got "
                         f"{len(specs)} spec{'s' if len(specs) != 1 else ''}")
        (_, before), (_, after) = load_all_or_exit(specs)
        return [(specs[1], before, specs[0], after, specs[1])]
    pairs = []
    for path in specs:
        before, old_label = spec_at_revision_or_exit("diff", path, rev)
        after, new_label = (spec_at_revision_or_exit("diff", path, head_rev)
                            if head_rev is not None else (load_all_or_exit([path])[0][1], path))
        pairs.append((path, before, old_label, after, new_label))
    return pairs


def _compare(pair: Pair) -> tuple[SpecDiff, tuple[Report, Report]]:
    """One comparison, and the two reports it compares."""
    from privspec.workflows.diffing import aligned, diff_reports

    _, before, old_label, after, new_label = pair
    old, new = aligned(before, after)
    reports = evaluate_or_exit("diff", old, old_label), evaluate_or_exit("diff", new, new_label)
    return diff_reports(before, after, *reports, before_label=old_label,
                        after_label=new_label), reports


def _plot(plot_file: str, form: str, reports: tuple[Report, Report], specs: list[str]) -> None:
    """``--plot``: both trade-off curves on one figure, written atomically."""
    from privspec.cli.files import write_atomically
    from privspec.report.figures import comparison_bytes

    try:
        write_atomically({plot_file: comparison_bytes(*reports, form)}, inputs=specs)
    except OSError as error:
        raise fail("diff", f"cannot write {printable(plot_file)}: "
                   f"{error.strerror or error}") from None
    typer.echo(f"wrote {printable(plot_file)}", err=True)


def _print(results: list[tuple[str, SpecDiff]], output_format: DiffFormat) -> None:
    """The comparisons on stdout, in ``output_format``."""
    from privspec.workflows.diffing import github_annotations, json_from_diffs, markdown_from_diff

    diffs = [d for _, d in results]
    if output_format is DiffFormat.json:
        typer.echo(json_from_diffs(diffs), nl=False)
    elif output_format is DiffFormat.github:
        for path, result in results:
            typer.echo(github_annotations(result, path))
    else:
        typer.echo("\n".join(markdown_from_diff(d) for d in diffs), nl=False)
