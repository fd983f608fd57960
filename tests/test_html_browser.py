"""The HTML report opens in a real browser (Debian's chromium, headless and offline): the
page has the headline, the trade-off table and the figure (an <svg> element), logs no
console errors, and draws a non-blank screenshot. The page is self-contained: no
scripts, no stylesheets or images from elsewhere.

Without chromium these tests skip, unless ``PRIVSPEC_REQUIRE_BROWSER`` is set (CI sets
it to 1): then a missing browser is a failure.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from test_render import example_report

from privspec.report.formatting import fmt_mu
from privspec.report.model import Report
from privspec.report.render import render_documents

OFFLINE_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-default-apps", "--disable-extensions", "--mute-audio",
]
#: How chromium logs a page's console messages with --enable-logging=stderr.
CONSOLE = re.compile(r":CONSOLE[:(]|Uncaught|Failed to load resource")


@pytest.fixture(scope="module")
def chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    if os.environ.get("PRIVSPEC_REQUIRE_BROWSER"):
        pytest.fail("PRIVSPEC_REQUIRE_BROWSER is set but chromium is not on PATH")
    pytest.skip("chromium not installed (set PRIVSPEC_REQUIRE_BROWSER=1 to make this a failure)")


def _run(chromium: str, profile: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [chromium, *OFFLINE_FLAGS, f"--user-data-dir={profile}", *arguments],
        capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "HOME": str(profile)})


def _dump(chromium: str, tmp_path: Path, page: Path) -> tuple[str, list[str]]:
    """The page's DOM after loading, and the console lines chromium logged."""
    result = _run(chromium, tmp_path / "profile", "--enable-logging=stderr", "--v=0",
                  "--dump-dom", page.as_uri())
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout, [line for line in result.stderr.splitlines() if CONSOLE.search(line)]


class _Page(HTMLParser):
    """The bits of a page the tests look at."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.h1 = ""
        self.headline = ""
        self.table_rows = 0
        self._where: list[str] = []
        self._in_tradeoff = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        attributes = dict(attrs)
        if tag == "table":
            self._in_tradeoff = attributes.get("id") == "tradeoff"
        if tag == "tr" and self._in_tradeoff:
            self.table_rows += 1
        if tag in ("h1", "p"):
            self._where.append(attributes.get("id") or tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("h1", "p") and self._where:
            self._where.pop()
        if tag == "table":
            self._in_tradeoff = False

    def handle_data(self, data: str) -> None:
        if self._where and self._where[-1] == "h1":
            self.h1 += data
        elif "headline" in self._where:
            self.headline += data


def _page(tmp_path: Path, report: Report) -> Path:
    (document,) = render_documents(report, "html")
    path = tmp_path / "report.html"
    path.write_text(document.text, encoding="utf-8")
    return path


@pytest.mark.parametrize("stem", ["cifar10-dpsgd-eps8", "laplace-counts",
                                  "approximate-dp-black-box"])
def test_html_report_in_a_browser(chromium: str, tmp_path: Path, stem: str) -> None:
    report = example_report(stem)
    dom, console = _dump(chromium, tmp_path, _page(tmp_path, report))
    assert not console, f"console messages: {console}"
    page = _Page()
    page.feed(dom)
    assert " ".join(page.h1.split()) == f"Privacy report: {report.title}"
    headline = " ".join(page.headline.split())
    if report.gdp.mu is None:
        assert headline.startswith("No Gaussian privacy guarantee (μ-GDP) holds")
    elif report.gdp.tier == 1:
        assert headline.startswith(f"This {report.mechanism.noun} is {fmt_mu(report.gdp.mu)}-GDP.")
    else:
        assert headline.startswith("μ-GDP does not describe this")
    assert page.table_rows == len(report.tradeoff) + 1  # and the header row
    assert "svg" in page.tags and "figure" in page.tags
    assert dom.count("<svg") == 2  # the trade-off figure and the risk figure


def test_html_report_is_self_contained(tmp_path: Path) -> None:
    text = _page(tmp_path, example_report("laplace-counts")).read_text(encoding="utf-8")
    assert "<script" not in text and "<link" not in text and "<iframe" not in text
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text)
    assert not re.search(r"url\(\s*['\"]?(https?:)?//", text)
    assert "@import" not in text


def test_screenshot_is_a_page(chromium: str, tmp_path: Path) -> None:
    page = _page(tmp_path, example_report("laplace-counts"))
    shot = tmp_path / "shot.png"
    result = _run(chromium, tmp_path / "profile", f"--screenshot={shot}",
                  "--window-size=1200,2000", page.as_uri())
    assert result.returncode == 0, result.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", data[16:24]) == (1200, 2000)
    from matplotlib.image import imread

    pixels = imread(shot)
    assert pixels.std() > 0.05, "the screenshot is blank"


def test_console_errors_are_caught(chromium: str, tmp_path: Path) -> None:
    """The console check itself works: a page that logs an error is caught."""
    page = tmp_path / "bad.html"
    page.write_text("<!DOCTYPE html><title>x</title><script>console.error('privspec-boom')"
                    "</script>", encoding="utf-8")
    _, console = _dump(chromium, tmp_path, page)
    assert any("privspec-boom" in line for line in console)
