"""A report in a Jupyter notebook (a real kernel, through nbclient) shows itself: the
Markdown report, and the HTML report's body with its figures inline."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

import privspec
from privspec.report.render import render

ROOT = Path(__file__).resolve().parent.parent
SPEC = str(ROOT / "examples" / "laplace-counts.privspec.yaml")


def test_a_report_is_shown_by_a_jupyter_kernel_as_markdown_and_html(tmp_path: Path) -> None:
    notebook = nbformat.v4.new_notebook()
    notebook.cells.append(nbformat.v4.new_code_cell(
        f"import sys\nsys.path.insert(0, {str(ROOT)!r})\nimport privspec\n"
        f"privspec.evaluate({SPEC!r})"))
    NotebookClient(notebook, kernel_name="python3", timeout=600,
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    (shown,) = [output for output in notebook.cells[0].outputs
                if output.output_type == "execute_result"]
    report = privspec.evaluate(SPEC)
    assert shown.data["text/markdown"] == render(report, "markdown")
    html = shown.data["text/html"]
    page = render(report, "html")
    assert html.startswith("<main>\n<h1>Privacy report: ") and html.endswith("</main>\n")
    assert html.strip() in page and html.count("<svg") == page.count("<svg") >= 1
    assert not any(tag in html for tag in ("<!DOCTYPE", "<html", "<head", "<body", "<title"))
