"""``privspec sweep --plot``: μ and regret over the varied fields, as heat maps over two
(the maps of Gomez et al. 2025, Fig. 3) or lines over one, with the Tier I/II boundary
(regret = the spec's threshold) drawn.  Drawn as ``report/figures.py`` draws (pyplot-free
matplotlib, the same bytes for the same rows).  Cells print μ and regret rounded up, as
the reports print them; a refused point is a blank cell or a gap in a line.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from privspec.report import formatting as fmt
from privspec.report.figures import _check_format, _matplotlib, _save

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

Field = tuple[str, Sequence[float | int]]
#: Regrets below this are drawn at it (a log colour scale has no 0).
REGRET_FLOOR = 1e-9
#: Cells are labelled with their figures up to this many per side.
MOST_LABELLED = 12


def _short(name: str) -> str:
    """A field's axis label: its last part (``noise_multiplier``)."""
    return name.rsplit(".", 1)[-1]


def _tick(value: float | int) -> str:
    return str(value) if isinstance(value, int) else f"{value:.4g}"


def _new_figure(size: tuple[float, float]) -> tuple[Figure, Axes, Axes]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=size, layout="constrained")
    FigureCanvasAgg(figure)
    left, right = figure.subplots(1, 2)
    return figure, left, right


def _heat_map(figure: Figure, axes: Axes, fields: Sequence[Field], grid: Any, title: str,
              norm: Any, labels: list[list[str]]) -> None:
    (y_name, y_values), (x_name, x_values) = fields
    image = axes.imshow(grid, origin="lower", aspect="auto", cmap="viridis", norm=norm,
                        interpolation="nearest")
    axes.grid(False)
    axes.set_xticks(range(len(x_values)), [_tick(v) for v in x_values], rotation=45)
    axes.set_yticks(range(len(y_values)), [_tick(v) for v in y_values])
    axes.set(xlabel=_short(x_name), ylabel=_short(y_name), title=title)
    figure.colorbar(image, ax=axes, shrink=0.9)
    size = 6 if len(x_values) <= 5 else 4.5
    if len(x_values) <= MOST_LABELLED and len(y_values) <= MOST_LABELLED:
        for i, line in enumerate(labels):
            for j, text in enumerate(line):
                red, green, blue, _ = image.cmap(image.norm(grid[i][j]))
                light = 0.299 * red + 0.587 * green + 0.114 * blue > 0.5
                axes.text(j, i, text, ha="center", va="center", fontsize=size,
                          color="black" if light else "white")


def _heat_maps(fields: Sequence[Field], mu: Sequence[float | None],
               regret: Sequence[float | None], threshold: float) -> Figure:
    import numpy as np
    from matplotlib.colors import LogNorm

    rows, columns = len(fields[0][1]), len(fields[1][1])
    mus = np.array([math.nan if m is None else m for m in mu], dtype=float).reshape(rows, columns)
    regrets = np.array([math.nan if r is None else max(r, REGRET_FLOOR) for r in regret],
                       dtype=float).reshape(rows, columns)
    mu_labels = [["" if math.isnan(m) else fmt.fmt_mu(m) for m in line] for line in mus]
    regret_labels = [["" if r is None else fmt.fmt_regret(r)
                      for r in regret[i * columns:(i + 1) * columns]] for i in range(rows)]
    figure, left, right = _new_figure((9.0, 4.0))
    _heat_map(figure, left, fields, mus, "μ (μ-GDP)", None, mu_labels)
    finite = regrets[np.isfinite(regrets)]
    low = float(min(finite.min(), threshold / 10)) if finite.size else REGRET_FLOOR
    high = float(max(finite.max(), threshold * 10)) if finite.size else 1.0
    _heat_map(figure, right, fields, regrets, "regret",
              LogNorm(low, high), regret_labels)
    if rows > 1 and columns > 1 and np.nanmin(regrets) <= threshold <= np.nanmax(regrets):
        for axes in (left, right):
            axes.contour(np.log10(regrets), levels=[math.log10(threshold)], colors="white",
                         linewidths=1.4, linestyles="solid")
    figure.suptitle(f"white line: the Tier I/II boundary (regret = {threshold:g}); "
                    "blank: a refused point", fontsize=7.5)
    return figure


def _lines(field: Field, mu: Sequence[float | None], regret: Sequence[float | None],
           threshold: float) -> Figure:
    name, values = field
    figure, left, right = _new_figure((8.0, 3.4))
    xs = [float(v) for v in values]
    log_x = min(xs) > 0 and max(xs) >= 20 * min(xs)
    left.plot(xs, [math.nan if m is None else m for m in mu], marker="o", ms=3)
    left.set(xlabel=_short(name), ylabel="μ", title="μ (μ-GDP)")
    right.plot(xs, [math.nan if r is None else max(r, REGRET_FLOOR) for r in regret],
               marker="o", ms=3)
    right.axhline(threshold, color="#c0392b", ls="--", lw=1.0,
                  label=f"Tier I/II boundary (regret = {threshold:g})")
    right.set(xlabel=_short(name), ylabel="regret", yscale="log", title="regret")
    right.legend(loc="best", frameon=False)
    for axes in (left, right):
        if log_x:
            axes.set_xscale("log")
    return figure


def sweep_figure_bytes(fields: Sequence[Field], mu: Sequence[float | None],
                       regret: Sequence[float | None], form: str,
                       threshold: float = 0.01) -> bytes:
    """μ and regret (in grid order, the first field slowest) drawn over one field (lines)
    or two (heat maps), as SVG, PNG or PDF bytes."""
    chosen = _check_format(form)
    if len(fields) not in (1, 2):
        raise ValueError("a sweep's figure shows one or two varied fields")
    with _matplotlib():
        figure = (_lines(fields[0], mu, regret, threshold) if len(fields) == 1
                  else _heat_maps(fields, mu, regret, threshold))
        return _save(figure, chosen)
