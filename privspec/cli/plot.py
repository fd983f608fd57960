"""``privspec plot``: the trade-off curve (or the risk figure) as a file."""

from __future__ import annotations

from typing import Annotated

import typer

from privspec.cli.loading import evaluate_or_exit, load_all_or_exit
from privspec.cli.output import EXIT_CANNOT_RUN, figure_format_or_exit
from privspec.spec.diagnostics import printable


def plot(
    spec: Annotated[str, typer.Argument(
        metavar="SPEC", help="The spec file (*.privspec.yaml) to draw.", show_default=False)],
    output: Annotated[str, typer.Option(
        "--output", "-o", metavar="FILE", help="The figure file: .svg, .png or .pdf "
        "(written atomically).", show_default=False)],
    risk: Annotated[bool, typer.Option(
        "--risk", help="Draw the risk figure instead: the bound on an attack's success "
        "against its baseline κ (what a guess achieves), from the exact curve, from μ "
        "alone and from one (ε, δ) alone, with the report's risk scenarios.")] = False,
) -> None:
    """Draw the trade-off curve against G_μ: linear, and TPR against FPR on log–log axes.

    The exact curve (solid), the Gaussian curve G_μ of the reported μ (dashed), the
    Tier II table's rows (circles) and the best attack α* (diamond); the legend gives
    μ and regret. With --risk, the report's risk figure. Output is deterministic (no
    dates or versions), so figures can be committed. Needs matplotlib: pip install
    'privspec[plot]'. Exit 0 when written, 2 when it cannot run.
    """
    form = figure_format_or_exit(output, "plot")
    from privspec.cli.files import write_atomically
    from privspec.report import figures

    ((_, loaded),) = load_all_or_exit([spec])
    report = evaluate_or_exit("plot", loaded, spec, spec_path=spec)
    try:
        draw = figures.risk_figure_bytes if risk else figures.figure_bytes
        write_atomically({output: draw(report, form)}, inputs=[spec])
    except OSError as error:
        typer.echo(printable(f"privspec plot: error: cannot write {output}: "
                             f"{error.strerror or error}"), err=True)
        raise typer.Exit(EXIT_CANNOT_RUN) from None
    typer.echo(f"wrote {printable(output)}", err=True)
