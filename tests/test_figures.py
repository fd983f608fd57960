"""privspec.report.figures and the commands that draw: ``privspec plot``, figures beside written
Markdown, ``privspec diff --plot``; deterministic bytes; a clear error without matplotlib;
``import privspec`` never imports matplotlib."""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import pytest
from report_fixtures import FIXTURES

from privspec.cli import main
from privspec.report import figures

ROOT = Path(__file__).resolve().parent.parent
CIFAR = ROOT / "examples" / "cifar10-dpsgd-eps8.privspec.yaml"
LAPLACE = ROOT / "examples" / "laplace-counts.privspec.yaml"


def _fresh(report_name: str, form: str) -> bytes:
    figures._figure_bytes_cached.cache_clear()
    return figures.figure_bytes(FIXTURES[report_name](), form)


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return int(width), int(height)


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_png_is_a_real_picture(name: str, tmp_path: Path) -> None:
    from matplotlib.image import imread

    data = _fresh(name, "png")
    width, height = _png_size(data)
    inches = figures.FIGURE_SIZE
    assert (width, height) == (round(inches[0] * figures.PNG_DPI),
                               round(inches[1] * figures.PNG_DPI))
    (tmp_path / "f.png").write_bytes(data)
    pixels = imread(tmp_path / "f.png")
    assert pixels.std() > 0.05, "the picture is (nearly) blank"
    # Some pixels are the curve's blue: the exact curve was drawn.
    red, green, blue = pixels[..., 0], pixels[..., 1], pixels[..., 2]
    assert ((blue > 0.45) & (red < 0.25) & (green < 0.4)).sum() > 500


@pytest.mark.parametrize("form", figures.FIGURE_FORMATS)
def test_figures_are_deterministic_and_carry_no_date_or_version(form: str) -> None:
    first, second = _fresh("laplace-tier2", form), _fresh("laplace-tier2", form)
    assert first == second
    assert b"Matplotlib" not in first and b"matplotlib.org" not in first
    assert b"CreationDate" not in first and b"<dc:date>" not in first


def test_svg_legend_gives_mu_and_regret() -> None:
    svg = _fresh("dpsgd-tier1", "svg").decode("utf-8")
    assert "μ = 1.57" in svg and "regret 0.00" in svg
    assert "this training run (exact curve)" in svg
    no_mu = _fresh("approximate-dp-no-mu", "svg").decode("utf-8")
    assert "no finite μ" in no_mu
    assert figures.svg_for_html(FIXTURES["dpsgd-tier1"]()).startswith("<svg")


def test_pgfplots_coordinates() -> None:
    report = FIXTURES["dpsgd-tier1"]()
    data = figures.pgfplots_coordinates(report)
    assert data.linear_curve.count("(") == len(report.curve)
    assert data.linear_gdp is not None and data.log_gdp is not None
    assert data.linear_table.count("(") == len(report.tradeoff)
    no_mu = figures.pgfplots_coordinates(FIXTURES["approximate-dp-no-mu"]())
    assert no_mu.linear_gdp is None and no_mu.log_gdp is None


def test_unknown_figure_format() -> None:
    with pytest.raises(ValueError, match="svg, png, pdf"):
        figures.figure_bytes(FIXTURES["dpsgd-tier1"](), "gif")


# --- commands ------------------------------------------------------------------------------


@pytest.mark.parametrize("form", figures.FIGURE_FORMATS)
def test_plot_command_writes_each_format(form: str, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "out" / f"curve.{form}"
    assert main(["plot", str(LAPLACE), "-o", str(target)]) == 0
    data = target.read_bytes()
    assert data[:4] in (b"<?xm", b"\x89PNG", b"%PDF")
    assert f"wrote {target}" in capsys.readouterr().err


def test_plot_command_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                             monkeypatch: pytest.MonkeyPatch) -> None:
    assert main(["plot", str(LAPLACE), "-o", str(tmp_path / "curve.gif")]) == 2
    assert "ends in .svg, .png or .pdf" in capsys.readouterr().err
    monkeypatch.setattr(figures, "available", lambda: False)
    assert main(["plot", str(LAPLACE), "-o", str(tmp_path / "curve.svg")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'matplotlib>=3.8'" in err
    assert not (tmp_path / "curve.svg").exists()


def test_written_markdown_links_its_figures(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "docs"
    assert main(["render", str(LAPLACE), "-f", "markdown,markdown:model-card",
                 "--output-dir", str(out)]) == 0
    names = sorted(path.name for path in out.iterdir())
    assert names == ["laplace-counts-model-card.md", "laplace-counts-risk.png",
                     "laplace-counts-risk.svg", "laplace-counts-tradeoff.png",
                     "laplace-counts-tradeoff.svg", "laplace-counts.md"]
    for document in ("laplace-counts.md", "laplace-counts-model-card.md"):
        text = (out / document).read_text(encoding="utf-8")
        assert "](laplace-counts-tradeoff.svg)" in text
        assert "[PNG](laplace-counts-tradeoff.png)" in text
        # the risk figure that HTML and LaTeX draw, as in those formats
        assert "](laplace-counts-risk.svg)" in text
        assert "[PNG](laplace-counts-risk.png)" in text
    assert b"<svg" in (out / "laplace-counts-risk.svg").read_bytes()
    assert _png_size((out / "laplace-counts-tradeoff.png").read_bytes())[0] > 500
    capsys.readouterr()
    # --check compares the figures too.
    assert main(["render", str(LAPLACE), "-f", "markdown", "--output-dir", str(out),
                 "--check"]) == 0
    (out / "laplace-counts-tradeoff.png").write_bytes(b"stale")
    assert main(["render", str(LAPLACE), "-f", "markdown", "--output-dir", str(out),
                 "--check"]) == 1
    assert "laplace-counts-tradeoff.png: stale (figure)" in capsys.readouterr().err


def test_markdown_with_o_puts_figures_beside_the_file(tmp_path: Path) -> None:
    target = tmp_path / "privacy" / "card.md"
    assert main(["render", str(LAPLACE), "-f", "markdown", "-o", str(target)]) == 0
    assert (tmp_path / "privacy" / "card-tradeoff.svg").exists()
    assert "](card-tradeoff.svg)" in target.read_text(encoding="utf-8")


def test_markdown_on_stdout_has_no_figure(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render", str(LAPLACE), "-f", "markdown"]) == 0
    captured = capsys.readouterr()
    assert "tradeoff.svg" not in captured.out and "![" not in captured.out
    assert captured.err == ""


def test_render_without_matplotlib_still_works(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(figures, "available", lambda: False)
    out = tmp_path / "docs"
    assert main(["render", str(LAPLACE), "-f", "markdown,html,latex", "--output-dir",
                 str(out)]) == 0
    err = capsys.readouterr().err
    assert err.count("no figure, matplotlib is not installed (pip install 'matplotlib>=3.8')") == 1
    assert not list(out.glob("*-tradeoff.*"))
    assert "tradeoff.svg" not in (out / "laplace-counts.md").read_text(encoding="utf-8")
    page = (out / "laplace-counts.html").read_text(encoding="utf-8")
    assert "<svg" not in page and "pip install &#x27;matplotlib&gt;=3.8&#x27;" in page
    # LaTeX needs no matplotlib: pgfplots draws the figure.
    assert r"\begin{tikzpicture}" in (out / "laplace-counts.tex").read_text(encoding="utf-8")


def test_diff_plot_draws_both_curves(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    head = tmp_path / "head.privspec.yaml"
    head.write_text(CIFAR.read_text(encoding="utf-8").replace(
        "noise_multiplier: 9.4", "noise_multiplier: 7.0"), encoding="utf-8")
    assert "noise_multiplier: 7.0" in head.read_text(encoding="utf-8")
    target = tmp_path / "diff.svg"
    assert main(["diff", str(CIFAR), str(head), "--plot", str(target)]) == 0
    svg = target.read_text(encoding="utf-8")
    assert "before: exact curve" in svg and "after: exact curve" in svg
    assert "μ = 1.57" in svg
    capsys.readouterr()
    assert main(["diff", str(CIFAR), str(head), "--plot", str(tmp_path / "d.txt")]) == 2


def test_import_privspec_does_not_import_matplotlib() -> None:
    code = ("import sys, privspec, privspec.report.render, privspec.report.figures, privspec.cli; "
            "assert 'matplotlib' not in sys.modules, 'matplotlib imported'")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
