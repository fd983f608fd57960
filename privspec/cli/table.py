"""``privspec table``: one before/after table for a family of specs."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from privspec.cli.loading import evaluate_or_exit, load_all_or_exit
from privspec.cli.output import emit, fail


class TableFormat(StrEnum):
    """Formats of ``privspec table``."""

    markdown = "markdown"
    latex = "latex"
    json = "json"


def table(
    specs: Annotated[list[str], typer.Argument(
        metavar="SPEC", help="Spec files, one row each (e.g. examples/de-et-al-2022/*.yaml).",
        show_default=False)],
    output_format: Annotated[TableFormat, typer.Option(
        "--format", "-f", help="markdown (GFM table), latex (booktabs tabular) or json.",
        case_sensitive=False)] = TableFormat.markdown,
    output: Annotated[str | None, typer.Option(
        "--output", "-o", metavar="FILE", help="Write the table to FILE (atomically).",
        show_default=False)] = None,
    template_dir: Annotated[str | None, typer.Option(
        "--template-dir", metavar="DIR", help="Override markdown/table.md.j2 or "
        "latex/table.tex.j2.", show_default=False)] = None,
) -> None:
    """One before/after table for a family of specs: each spec's published claim, privspec's
    ε at the same δ, μ, regret and verdict (one row per spec, in the order given)."""
    from privspec.report.render import RenderError, render_table

    reports = [evaluate_or_exit("table", spec, path, spec_path=path)
               for path, spec in load_all_or_exit(specs)]
    try:
        text = render_table(reports, output_format.value, template_dir=template_dir)
    except RenderError as error:
        raise fail("table", str(error)) from None
    emit("table", text, output, quiet=True, inputs=specs)
