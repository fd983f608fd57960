"""Pictures of a report: the trade-off curve against G_μ, linear and log–log.

A figure is a pure function of a :class:`~privspec.report.model.Report`: the exact curve
values the evaluator sampled (``report.curve``), the Gaussian curve G_μ of the
reported μ on the same α's, and the Tier II rows marked.  Two panels:

* **linear**: FNR β against FPR α, the trade-off function itself, with the line
  β = 1 − α of an attack that guesses at random;
* **log–log**: TPR 1 − β against FPR α.  Low false-positive rates are where
  membership-inference attacks matter (Carlini et al. 2022), and there the gap
  between a curve and G_μ is a *ratio* of TPRs (Laplace: 2.7 × 10⁻⁶ against
  10⁻⁴ at α = 10⁻⁶), which a log TPR axis shows and FNR, pressed against 1 on
  a log axis, hides.

:func:`series_from_report` does the arithmetic once for every back end (matplotlib
here, pgfplots through the LaTeX templates, see :func:`pgfplots_coordinates`).
matplotlib is an optional dependency (privspec's ``plot`` extra) imported only inside
:func:`figure_bytes` and :func:`comparison_bytes`, with the Agg back end and fixed
metadata (no dates, no versions, a fixed SVG hash salt) so that the same report gives
the same bytes and figures can be committed next to reports.
"""

from __future__ import annotations

import functools
import importlib.util
import io
import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from privspec.errors import PrivspecError
from privspec.report import formatting as fmt
from privspec.report import store

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from privspec.report.model import Report

FigureFormat = Literal["svg", "png", "pdf"]
FIGURE_FORMATS: tuple[FigureFormat, ...] = ("svg", "png", "pdf")
INSTALL_HINT = "pip install 'matplotlib>=3.8'"
#: Width and height in inches: two panels that stay readable at a text width of ~6.5 in.
FIGURE_SIZE = (7.0, 3.9)
PNG_DPI = 150
#: The smallest FPR on the log–log panel (the Tier II table starts at 10⁻¹⁰).
LOG_ALPHA_MIN = 1e-12

_CURVE_COLOR = "#1f4e99"
_GDP_COLOR = "#d9730d"
_AFTER_COLOR = "#b3261e"
_GUESS_COLOR = "#9a9a9a"


class PlotUnavailableError(PrivspecError):
    """matplotlib is not installed; the message says how to install it (one line)."""


def available() -> bool:
    """True when matplotlib can be imported (without importing it)."""
    return importlib.util.find_spec("matplotlib") is not None


@dataclass(frozen=True)
class Series:
    """The numbers of one report's figure: every value exact, nothing rounded yet."""

    alpha: tuple[float, ...]
    beta: tuple[float, ...]
    tpr: tuple[float, ...]
    beta_gdp: tuple[float, ...] | None
    tpr_gdp: tuple[float, ...] | None
    table_alpha: tuple[float, ...]
    table_beta: tuple[float, ...]
    table_tpr: tuple[float, ...]
    star_alpha: float
    star_beta: float
    star_tpr: float
    curve_label: str
    gdp_label: str


def series_from_report(report: Report, *, name: str | None = None) -> Series:
    """The curve, G_μ on the same α's, the Tier II points and the legend's words.

    ``name`` prefixes the labels (``before``, ``after``) in comparisons.
    """
    points = sorted({(p.alpha, p.beta, p.tpr) for p in report.curve if 0.0 <= p.alpha <= 1.0})
    alpha = tuple(a for a, _, _ in points)
    beta = tuple(b for _, b, _ in points)
    tpr = tuple(t for _, _, t in points)
    mu = report.gdp.mu
    beta_gdp = tpr_gdp = None
    if mu is not None:
        import numpy as np

        from privspec.numerics.gdp import gaussian_tpr, gaussian_tradeoff

        grid = np.asarray(alpha, dtype=float)
        shown = fmt.round_float(mu, "up")  # the μ the legend names, as in the table
        beta_gdp = tuple(float(v) for v in gaussian_tradeoff(grid, shown))
        tpr_gdp = tuple(float(v) for v in gaussian_tpr(grid, shown))
    rows = report.tradeoff
    star = next((row for row in rows if row.is_alpha_star), None)
    star_alpha = star.alpha if star else report.gdp.alpha_star
    star_beta = star.beta if star else math.nan
    star_tpr = star.tpr if star else math.nan
    noun = report.mechanism.noun
    prefix = f"{name}: " if name else ""
    if mu is None:
        gdp_label = f"{prefix}no finite μ (no Gaussian curve)"
    else:
        regret = fmt.fmt_regret_of(report.gdp)
        gdp_label = f"{prefix}$G_\\mu$, μ = {fmt.fmt_mu(mu)} (regret {regret})"
    return Series(
        alpha=alpha, beta=beta, tpr=tpr, beta_gdp=beta_gdp, tpr_gdp=tpr_gdp,
        table_alpha=tuple(row.alpha for row in rows),
        table_beta=tuple(row.beta for row in rows),
        table_tpr=tuple(row.tpr for row in rows),
        star_alpha=star_alpha, star_beta=star_beta, star_tpr=star_tpr,
        curve_label=f"{name}: exact curve" if name else f"this {noun} (exact curve)",
        gdp_label=gdp_label,
    )


# --- pgfplots ------------------------------------------------------------------------------


def _tex_number(value: float) -> str:
    """A coordinate for pgfplots: 4 significant digits (a figure needs no more, and
    digits that the composition's rounding could move would make a report differ
    between machines), plain scientific notation."""
    if value == 0:
        return "0"
    return f"{value:.4g}"


def _coordinates(pairs: Sequence[tuple[float, float]], per_line: int = 4) -> str:
    cells = [f"({_tex_number(x)},{_tex_number(y)})" for x, y in pairs]
    return "\n".join(" ".join(cells[i:i + per_line]) for i in range(0, len(cells), per_line))


@dataclass(frozen=True)
class PgfplotsData:
    """Coordinate lists for the LaTeX figures (``coordinates {...}`` bodies)."""

    linear_curve: str
    linear_gdp: str | None
    linear_table: str
    log_curve: str
    log_gdp: str | None
    log_table: str
    log_alpha_min: str
    log_tpr_min: str
    risk_epsilon_delta: str  # the risk figure: the (ε, δ) curve's bound on success
    risk_points: str  # each risk row at (baseline, bound)
    audit_linear_boxes: str = ""  # the audit's boxes as \draw commands, (α, β) axes
    audit_log_boxes: str = ""  # the same on (α, TPR) log–log axes (boxes above TPR 0)


def _epsilon_delta_tpr(report: Report, alphas: Sequence[float]) -> list[float]:
    """1 − f_{ε,δ}(α) of the (ε, δ) pair the risk section compares against."""
    from privspec.numerics.risk import EpsilonDeltaCurve

    pair = report.risk
    curve = EpsilonDeltaCurve(math.inf if pair.epsilon is None else pair.epsilon, pair.delta)
    return [curve.success(a) if a > 0 else pair.delta for a in alphas]


def _risk_points(report: Report) -> list[tuple[float, float]]:
    """The risk rows that bound a success against a baseline, at (baseline, bound)."""
    return [(row.baseline, row.bound) for row in report.risk.rows
            if row.scenario not in ("membership-accuracy", "membership-precision")]


def _log_pairs(xs: Sequence[float], ys: Sequence[float]) -> list[tuple[float, float]]:
    return [(x, y) for x, y in zip(xs, ys, strict=True) if x >= LOG_ALPHA_MIN and y > 0]


def _log_floor(values: Sequence[float]) -> float:
    """A decade at least 0.3 decades below the smallest positive value (the log panel's
    lower edge), so that a curve never runs along the frame."""
    positive = [v for v in values if v > 0]
    if not positive:
        return LOG_ALPHA_MIN
    return float(10.0 ** math.floor(math.log10(min(positive)) - 0.3))


def pgfplots_coordinates(report: Report) -> PgfplotsData:
    """The figure's data as pgfplots coordinates (what the LaTeX templates need)."""
    s = series_from_report(report)
    log_curve = _log_pairs(s.alpha, s.tpr)
    log_gdp = _log_pairs(s.alpha, s.tpr_gdp) if s.tpr_gdp is not None else None
    lowest = [y for _, y in log_curve] + [y for _, y in (log_gdp or [])]
    return PgfplotsData(
        linear_curve=_coordinates(list(zip(s.alpha, s.beta, strict=True))),
        linear_gdp=(_coordinates(list(zip(s.alpha, s.beta_gdp, strict=True)))
                    if s.beta_gdp is not None else None),
        linear_table=_coordinates(list(zip(s.table_alpha, s.table_beta, strict=True))),
        log_curve=_coordinates(log_curve),
        log_gdp=_coordinates(log_gdp) if log_gdp is not None else None,
        log_table=_coordinates(_log_pairs(s.table_alpha, s.table_tpr)),
        log_alpha_min=_tex_number(LOG_ALPHA_MIN),
        log_tpr_min=_tex_number(max(_log_floor(lowest), 1e-16)),
        risk_epsilon_delta=_coordinates(_log_pairs(s.alpha, _epsilon_delta_tpr(report, s.alpha))),
        risk_points=_coordinates(_log_pairs(*zip(*_risk_points(report), strict=True))
                                 if report.risk.rows else []),
        **_audit_boxes(report),
    )


def _audit_boxes(report: Report) -> dict[str, str]:
    r"""The audit's boxes as pgfplots ``\draw … rectangle …`` lines, contradictions in
    their own style (none without an audit)."""
    if report.audit is None:
        return {}
    linear: list[str] = []
    log: list[str] = []
    for box in report.audit.boxes:
        style = "privspec contradiction" if box.contradicts else "privspec box"

        def rectangle(x1: float, y1: float, x2: float, y2: float, style: str = style) -> str:
            return (f"      \\draw[{style}] (axis cs:{_tex_number(x1)},{_tex_number(y1)}) "
                    f"rectangle (axis cs:{_tex_number(x2)},{_tex_number(y2)});")

        linear.append(rectangle(box.fpr_low, 1 - box.tpr_high, box.fpr_high, 1 - box.tpr_low))
        if box.tpr_low > 0:
            log.append(rectangle(max(box.fpr_low, LOG_ALPHA_MIN), box.tpr_low, box.fpr_high,
                                 box.tpr_high))
    return {"audit_linear_boxes": "\n".join(linear), "audit_log_boxes": "\n".join(log)}


# --- matplotlib ------------------------------------------------------------------------------


@contextmanager
def _matplotlib() -> Iterator[Any]:
    """pyplot-free matplotlib with deterministic, readable settings."""
    try:
        import matplotlib
    except ImportError:
        raise PlotUnavailableError(f"figures need matplotlib: {INSTALL_HINT}") from None
    settings: dict[Any, Any] = {
        "svg.hashsalt": "privspec",
        "svg.fonttype": "none",
        "pdf.fonttype": 42,
        "font.family": "DejaVu Sans",
        "font.size": 8.5,
        "axes.titlesize": 9,
        "axes.labelsize": 8.5,
        "legend.fontsize": 8,
        "xtick.labelsize": 7.5,
        "ytick.labelsize": 7.5,
        "axes.linewidth": 0.7,
        "lines.linewidth": 1.5,
        "axes.grid": True,
        "grid.color": "#e4e4e4",
        "grid.linewidth": 0.6,
        "axes.axisbelow": True,
        "mathtext.default": "regular",
    }
    with matplotlib.rc_context(settings):
        yield matplotlib


def _new_figure() -> tuple[Figure, Axes, Axes]:
    # Figure() without pyplot: no global state, no GUI back end; the Agg canvas draws it.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=FIGURE_SIZE, layout="constrained")
    FigureCanvasAgg(figure)
    linear, log = figure.subplots(1, 2)
    linear.set(xlim=(0, 1), ylim=(0, 1), xlabel="attack FPR α",
               ylabel="attack FNR β", title="Trade-off curve (linear)")
    linear.set_aspect("equal")
    guess = [0.0, 1.0]
    linear.plot(guess, guess[::-1], color=_GUESS_COLOR, lw=0.9, ls=":",
                label="random guessing (β = 1 − α)")
    log.set(xscale="log", yscale="log", xlabel="attack FPR α (log)",
            ylabel="attack TPR 1 − β (log)", title="Low-FPR attacks (log–log)")
    log.plot([LOG_ALPHA_MIN, 1.0], [LOG_ALPHA_MIN, 1.0], color=_GUESS_COLOR, lw=0.9, ls=":")
    return figure, linear, log


def _draw(linear: Axes, log: Axes, s: Series, color: str, *, gdp_color: str,
          table: bool) -> list[float]:
    """Draw one report's curves; return the positive TPRs shown on the log panel."""
    # The exact curve wide and below, G_μ dashed on top: where the two coincide (Tier I)
    # both stay visible.
    linear.plot(s.alpha, s.beta, color=color, lw=2.2, label=s.curve_label, zorder=3)
    log_curve = _log_pairs(s.alpha, s.tpr)
    log.plot(*zip(*log_curve, strict=True), color=color, lw=2.2, zorder=3)
    shown = [y for _, y in log_curve]
    if s.beta_gdp is not None and s.tpr_gdp is not None:
        linear.plot(s.alpha, s.beta_gdp, color=gdp_color, ls=(0, (4, 2.5)), lw=1.2,
                    label=s.gdp_label, zorder=4)
        log_gdp = _log_pairs(s.alpha, s.tpr_gdp)
        log.plot(*zip(*log_gdp, strict=True), color=gdp_color, ls=(0, (4, 2.5)), lw=1.2,
                 zorder=4)
        shown += [y for _, y in log_gdp]
    else:
        linear.plot([], [], ls="none", label=s.gdp_label)
    if table:
        linear.plot(s.table_alpha, s.table_beta, ls="none", marker="o", ms=3.5, mfc="white",
                    mec=color, mew=1.0, label="table rows", zorder=5)
        points = _log_pairs(s.table_alpha, s.table_tpr)
        if points:
            log.plot(*zip(*points, strict=True), ls="none", marker="o", ms=3.5, mfc="white",
                     mec=color, mew=1.0, zorder=5)
        if math.isfinite(s.star_beta):
            linear.plot([s.star_alpha], [s.star_beta], ls="none", marker="D", ms=4.5,
                        color=color, label="best attack α* (max. advantage)", zorder=6)
            if s.star_tpr > 0:
                log.plot([s.star_alpha], [s.star_tpr], ls="none", marker="D", ms=4.5,
                         color=color, zorder=6)
    return shown


def _finish(figure: Figure, linear: Axes, log: Axes, shown: list[float]) -> None:
    bottom = max(_log_floor(shown), 1e-16)
    log.set(xlim=(LOG_ALPHA_MIN, 1.0), ylim=(bottom, 1.5))
    log.set_aspect("auto")
    # One legend below both panels: inside, it would hide part of a curve.
    figure.legend(*linear.get_legend_handles_labels(), loc="outside lower center", ncols=2,
                  frameon=False, handlelength=2.6, columnspacing=1.6)


def _save(figure: Figure, form: FigureFormat) -> bytes:
    buffer = io.BytesIO()
    if form == "svg":
        figure.savefig(buffer, format="svg", metadata={"Date": None, "Creator": "privspec"})
    elif form == "pdf":
        figure.savefig(buffer, format="pdf", metadata={
            "Creator": "privspec", "Producer": None, "CreationDate": None})
    else:
        figure.savefig(buffer, format="png", dpi=PNG_DPI, metadata={"Software": "privspec"})
    return buffer.getvalue()


def _check_format(form: str) -> FigureFormat:
    if form not in FIGURE_FORMATS:
        raise ValueError(f"unknown figure format {form!r}; choose one of "
                         f"{', '.join(FIGURE_FORMATS)}")
    return form


def figure_bytes(report: Report, form: str) -> bytes:
    """The report's figure as SVG, PNG or PDF bytes (the same bytes for the same report).

    Raises :class:`PlotUnavailableError` without matplotlib, ``ValueError`` for an
    unknown format.
    """
    chosen = _check_format(form)
    return store.drawn("tradeoff", report, chosen,
                       lambda: _figure_bytes_cached(series_from_report(report), chosen))


@functools.lru_cache(maxsize=32)
def _figure_bytes_cached(s: Series, chosen: FigureFormat) -> bytes:
    # Drawing takes about half a second; a figure is a function of its series, so the
    # report and its model card (or the HTML page) share one drawing.
    with _matplotlib():
        figure, linear, log = _new_figure()
        shown = _draw(linear, log, s, _CURVE_COLOR, gdp_color=_GDP_COLOR, table=True)
        _finish(figure, linear, log, shown)
        return _save(figure, chosen)


def comparison_bytes(before: Report, after: Report, form: str,
                     labels: tuple[str, str] = ("before", "after")) -> bytes:
    """Two reports' curves (and their G_μ) on one figure, e.g. for ``privspec diff``."""
    chosen = _check_format(form)
    first = series_from_report(before, name=labels[0])
    second = series_from_report(after, name=labels[1])
    with _matplotlib():
        figure, linear, log = _new_figure()
        shown = _draw(linear, log, first, _CURVE_COLOR, gdp_color="#7fa1d6", table=False)
        shown += _draw(linear, log, second, _AFTER_COLOR, gdp_color="#e8a09a", table=False)
        _finish(figure, linear, log, shown)
        return _save(figure, chosen)


def risk_figure_bytes(report: Report, form: str) -> bytes:
    """The risk figure: the bound on an attack's success against its baseline κ (what a
    guess achieves), on log axes: from the exact curve (1 − f(κ)), from μ alone and from
    the risk section's (ε, δ) alone, with the report's scenarios marked."""
    chosen = _check_format(form)
    return store.drawn("risk", report, chosen, lambda: _risk_figure(report, chosen))


def _risk_figure(report: Report, chosen: FigureFormat) -> bytes:
    s = series_from_report(report)
    pair = report.risk
    with _matplotlib():
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        figure = Figure(figsize=(FIGURE_SIZE[0] * 0.62, FIGURE_SIZE[1]), layout="constrained")
        FigureCanvasAgg(figure)
        axes = figure.subplots()
        axes.set(xscale="log", yscale="log", xlabel="baseline κ: a guess succeeds (log)",
                 ylabel="attack success at most (log)", title="What an attacker can do")
        axes.plot([LOG_ALPHA_MIN, 1.0], [LOG_ALPHA_MIN, 1.0], color=_GUESS_COLOR, lw=0.9,
                  ls=":", label="guessing alone")
        exact = _log_pairs(s.alpha, s.tpr)
        axes.plot(*zip(*exact, strict=True), color=_CURVE_COLOR, lw=2.2, zorder=3,
                  label=f"this {report.mechanism.noun} (exact curve)")
        shown = [y for _, y in exact]
        if s.tpr_gdp is not None:
            gdp = _log_pairs(s.alpha, s.tpr_gdp)
            axes.plot(*zip(*gdp, strict=True), color=_GDP_COLOR, ls=(0, (4, 2.5)), lw=1.2,
                      zorder=4, label=f"μ = {fmt.fmt_mu(report.gdp.mu)} alone")
            shown += [y for _, y in gdp]
        claimed = _log_pairs(s.alpha, _epsilon_delta_tpr(report, s.alpha))
        axes.plot(*zip(*claimed, strict=True), color=_AFTER_COLOR, ls="-.", lw=1.2, zorder=4,
                  label=f"ε = {fmt.fmt_epsilon(pair.epsilon)}, "
                        f"δ = {fmt.fmt_given(pair.delta)} alone")
        points = _log_pairs(*zip(*_risk_points(report), strict=True)) if pair.rows else []
        if points:
            axes.plot(*zip(*points, strict=True), ls="none", marker="o", ms=4, mfc="white",
                      mec=_CURVE_COLOR, mew=1.1, zorder=5, label="the report's scenarios")
        axes.set(xlim=(LOG_ALPHA_MIN, 1.0), ylim=(max(_log_floor(shown), 1e-16), 1.5))
        figure.legend(*axes.get_legend_handles_labels(), loc="outside lower center", ncols=2,
                      frameon=False, handlelength=2.6)
        return _save(figure, chosen)


def audit_figure_bytes(report: Report, form: str) -> bytes:
    """What an attack achieved: its boxes over the certified curve and G_μ (linear and
    log–log, as the trade-off figure), G_μ of the audit's lower bound dotted; boxes
    entirely above the certified curve (contradictions) filled red. ``report.audit`` must
    be set."""
    chosen = _check_format(form)
    return store.drawn("audit", report, chosen, lambda: _audit_figure(report, chosen))


_BOX_COLOR = "#2e7d32"


def _audit_figure(report: Report, chosen: FigureFormat) -> bytes:
    audit = report.audit
    if audit is None:
        raise ValueError("the report has no audit")
    with _matplotlib():
        from matplotlib.patches import Patch, Rectangle

        figure, linear, log = _new_figure()
        linear.set(title="What an attack achieved (linear)")
        log.set(title="What an attack achieved (log–log)")
        shown = _draw(linear, log, series_from_report(report), _CURVE_COLOR,
                      gdp_color=_GDP_COLOR, table=False)
        for box in audit.boxes:
            color = _AFTER_COLOR if box.contradicts else _BOX_COLOR
            style: dict[str, Any] = {
                "facecolor": color, "alpha": 0.45 if box.contradicts else 0.15,
                "edgecolor": color, "linewidth": 0.6, "zorder": 6}
            linear.add_patch(Rectangle((box.fpr_low, 1 - box.tpr_high),
                                       box.fpr_high - box.fpr_low, box.tpr_high - box.tpr_low,
                                       **style))
            if box.tpr_low > 0:  # (a box down to TPR 0 proves nothing on log axes)
                low_fpr = max(box.fpr_low, LOG_ALPHA_MIN)
                log.add_patch(Rectangle((low_fpr, box.tpr_low), box.fpr_high - low_fpr,
                                        box.tpr_high - box.tpr_low, **style))
        for direction in ("higher", "lower"):
            points = sorted((box.fpr, box.tpr) for box in audit.boxes
                            if box.direction == direction)
            linear.plot([f for f, _ in points], [1 - t for _, t in points], color=_BOX_COLOR,
                        lw=0.8, marker=".", ms=2.5, zorder=7)
            pairs = _log_pairs([f for f, _ in points], [t for _, t in points])
            if pairs:
                log.plot(*zip(*pairs, strict=True), color=_BOX_COLOR, lw=0.8, marker=".",
                         ms=2.5, zorder=7)
                shown += [t for _, t in pairs]
        _draw_mu_lower(linear, log, report, audit.mu_lower)
        handles, labels = linear.get_legend_handles_labels()
        handles += [Patch(facecolor=_BOX_COLOR, alpha=0.3, edgecolor=_BOX_COLOR),
                    Patch(facecolor=_AFTER_COLOR, alpha=0.5, edgecolor=_AFTER_COLOR)]
        confidence = fmt.fmt_chance(audit.confidence, "unicode", "nearest")
        labels += [f"the attack's boxes (all hold with {confidence})",
                   "boxes above the certified curve (contradictions)"]
        _finish(figure, linear, log, shown)
        figure.legends.clear()
        figure.legend(handles, labels, loc="outside lower center", ncols=2, frameon=False,
                      handlelength=2.6, columnspacing=1.6)
        return _save(figure, chosen)


def _draw_mu_lower(linear: Axes, log: Axes, report: Report, mu_lower: float) -> None:
    """G_μ of the audit's lower bound on μ (rounded down, as printed), dotted."""
    if mu_lower <= 0:
        return
    import numpy as np

    from privspec.numerics.gdp import gaussian_tpr, gaussian_tradeoff

    shown = fmt.round_float(mu_lower, "down")
    alpha = np.asarray(sorted({p.alpha for p in report.curve if 0.0 <= p.alpha <= 1.0}))
    linear.plot(alpha, gaussian_tradeoff(alpha, shown), color=_BOX_COLOR, ls=":", lw=1.3,
                label=f"$G_\\mu$, μ = {fmt.format_number(mu_lower, 'down')} (the audit's "
                      "lower bound)", zorder=4)
    pairs = _log_pairs(alpha.tolist(), gaussian_tpr(alpha, shown).tolist())
    log.plot(*zip(*pairs, strict=True), color=_BOX_COLOR, ls=":", lw=1.3, zorder=4)


def _inline_svg(data: bytes) -> str:
    """An SVG element to inline in a page (XML prolog and DOCTYPE removed)."""
    text = data.decode("utf-8")
    start = text.find("<svg")
    return text[start:] if start >= 0 else text


def svg_for_html(report: Report) -> str:
    """The trade-off figure as an SVG element to inline in a page."""
    return _inline_svg(figure_bytes(report, "svg"))


def audit_svg_for_html(report: Report) -> str:
    """The audit figure as an SVG element to inline in a page."""
    return _inline_svg(audit_figure_bytes(report, "svg"))


def risk_svg_for_html(report: Report) -> str:
    """The risk figure as an SVG element to inline in a page."""
    return _inline_svg(risk_figure_bytes(report, "svg"))


__all__ = [
    "FIGURE_FORMATS",
    "INSTALL_HINT",
    "PgfplotsData",
    "PlotUnavailableError",
    "Series",
    "audit_figure_bytes",
    "audit_svg_for_html",
    "available",
    "comparison_bytes",
    "figure_bytes",
    "pgfplots_coordinates",
    "risk_figure_bytes",
    "risk_svg_for_html",
    "series_from_report",
    "svg_for_html",
]
