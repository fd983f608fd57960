"""The Jinja filters of each output style: conservative numbers (``formatting``),
escaping (``escaping``) and small text helpers, under the names templates use."""

from __future__ import annotations

from collections.abc import Callable

from privspec.report.escaping import (
    capfirst,
    escape_latex,
    escape_markdown,
    latex_paragraphs,
    markdown_paragraphs,
    one_line,
)
from privspec.report.formatting import (
    REGRET_RESOLUTION,
    Style,
    fmt_advantage,
    fmt_beta,
    fmt_chance,
    fmt_count,
    fmt_delta,
    fmt_epsilon,
    fmt_error_bound,
    fmt_given,
    fmt_lower,
    fmt_mu,
    fmt_regret,
    fmt_threshold,
    fmt_tpr,
    fmt_upper,
)

#: The filters whose output is notation (numbers), not words: LaTeX caveats keep them
#: out of their escaping (``render.latex_caveat``).
NUMBER_FILTERS = ("mu", "epsilon", "delta", "advantage", "regret", "error_bound", "beta",
                  "tpr", "given", "count", "chance", "lower", "upper", "threshold")


def _markdown_text(text: str) -> str:
    """User text as inline Markdown, on one line without control or format characters
    (a terminal escape, a bidirectional override)."""
    return escape_markdown(one_line(text))


def filters(style: Style) -> dict[str, Callable[..., object]]:
    """The Jinja filters of one output style: numbers, escaping, small helpers."""
    escape: Callable[[str], str] = escape_latex if style == "latex" else _markdown_text
    paragraphs: Callable[[str], list[str]] = (
        latex_paragraphs if style == "latex" else markdown_paragraphs
    )

    def bind(function: Callable[[float, Style], str]) -> Callable[[float], str]:
        def bound(value: float) -> str:
            return function(value, style)

        return bound

    return {
        "mu": bind(fmt_mu),
        "epsilon": bind(fmt_epsilon),
        "delta": bind(fmt_delta),
        "advantage": bind(fmt_advantage),
        "chance": lambda value, direction="up": fmt_chance(value, style, direction),
        "regret": lambda value, resolution=REGRET_RESOLUTION: fmt_regret(value, style, resolution),
        "error_bound": bind(fmt_error_bound),
        "beta": lambda beta, tpr=None: fmt_beta(beta, style, tpr),
        "tpr": lambda tpr, beta=None: fmt_tpr(tpr, beta, style),
        "given": bind(fmt_given),
        "lower": bind(fmt_lower),
        "upper": bind(fmt_upper),
        "threshold": bind(fmt_threshold),
        "count": lambda value: fmt_count(value, style),
        "esc": escape,
        "paragraphs": paragraphs,
        "capfirst": capfirst,
    }
