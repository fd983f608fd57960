"""Every number a report prints is formatted here, and rounded in the conservative direction.

A report must never look stronger than its computation, so each quantity has a
direction (conservative rounding):

* **up**: μ, ε, δ (computed ones, such as the mass at infinity), the best
  attack's advantage, regret, and an attack's TPR = 1 − β;
* **down**: an attacker's lowest FNR β (the mechanism's curve and G_μ);
* **nearest**: values that label rather than bound, such as the α's of the
  table, the δ's chosen in the spec and the discretization.

Rounding keeps :data:`SIGNIFICANT_DIGITS` significant digits, so a small
positive number never prints as ``0.00000``.  Numbers outside ``[10⁻³, 10⁵)``
are written in scientific notation: ``7.3 × 10⁻⁴`` and ``10⁻¹⁰`` in Unicode
(readable in Markdown on GitHub and Hugging Face without any math renderer),
``\\ensuremath{7.3 \\times 10^{-4}}`` in LaTeX.  Infinity prints as ``∞`` /
``\\ensuremath{\\infty}``.

A probability within 10⁻³ of 1 is written ``1 − x`` (``1 − 8.15 × 10⁻⁷``)
with ``x`` rounded in the direction that keeps the whole conservative, so that
it never collapses to a flat ``1.00``.

Floats are read as the shortest decimal that round-trips (``repr``), so a
spec's ``0.1`` prints as ``0.1``, not ``0.101``; the guarantee is that the
printed number, read back as a float, is never on the flattering side of the
computed float.  ``1 − β`` is the exception: it is computed from β's exact
binary value, because a subtraction from 1 magnifies the difference.

Everything here is pure and free of numpy, so templates and tests can use it
anywhere.
"""

from __future__ import annotations

import math
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_EVEN, Context, Decimal
from typing import Literal, Protocol

#: Significant digits of every rounded number in a report.
SIGNIFICANT_DIGITS = 3
#: Numbers in ``[POSITIONAL_MIN, POSITIONAL_MAX)`` are written positionally.
POSITIONAL_MIN = Decimal("1e-3")
POSITIONAL_MAX = Decimal("1e5")

Direction = Literal["up", "down", "nearest"]
Style = Literal["unicode", "latex", "plain"]

_ROUNDING: dict[str, str] = {"up": ROUND_CEILING, "down": ROUND_FLOOR, "nearest": ROUND_HALF_EVEN}
_SUPERSCRIPTS = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
# Enough precision for exact arithmetic on any float's binary expansion.
_EXACT = Context(prec=1200)


def decimal_from_float(value: float) -> Decimal:
    """The shortest decimal that reads back as ``value`` (Python's ``repr``)."""
    if math.isnan(value):
        raise ValueError("cannot format NaN: a report number must be a number")
    return Decimal(repr(float(value)))


def round_significant(
    value: Decimal, direction: Direction, digits: int = SIGNIFICANT_DIGITS
) -> Decimal:
    """``value`` rounded to ``digits`` significant digits in ``direction``.

    ``up`` and ``down`` are towards +∞ and −∞, so the result is never below
    (``up``) or above (``down``) the input.  Zero and infinities are returned
    unchanged.
    """
    if digits < 1:
        raise ValueError("digits must be at least 1")
    if value.is_nan():
        raise ValueError("cannot round NaN")
    if value.is_infinite() or value.is_zero():
        return value
    rounding = _ROUNDING[direction]
    quantum = Decimal(1).scaleb(value.adjusted() - digits + 1)
    rounded = value.quantize(quantum, rounding=rounding, context=_EXACT)
    if rounded.adjusted() != value.adjusted():  # 9.996 -> 10.00: keep `digits` digits
        quantum = Decimal(1).scaleb(rounded.adjusted() - digits + 1)
        rounded = rounded.quantize(quantum, rounding=rounding, context=_EXACT)
    return rounded


def round_float(value: float, direction: Direction) -> float:
    """``value`` rounded as reports print it (``SIGNIFICANT_DIGITS``, in ``direction``),
    back as a float: a figure used beyond the report, never tighter than printed."""
    return float(round_significant(decimal_from_float(value), direction))


def _digits_text(value: Decimal) -> str:
    """Positional text of a finite decimal, never in exponent notation."""
    return format(value, "f")


def format_decimal(value: Decimal, style: Style = "unicode", *, exact: bool = False) -> str:
    """Text of an already rounded decimal.

    ``exact`` says the decimal equals the number it stands for, so trailing
    zeros carry no information and are dropped (``1.00`` -> ``1``); a rounded
    number keeps them, which shows its precision.
    """
    if value.is_nan():
        raise ValueError("cannot format NaN")
    if value.is_infinite():
        sign = "-" if value < 0 else ""
        if style == "latex":
            return rf"\ensuremath{{{sign}\infty}}"
        if style == "plain":
            return f"{sign}inf"
        return f"{'−' if sign else ''}∞"
    if exact:
        value = value.normalize(context=_EXACT)  # 1.500 -> 1.5
    negative = value < 0
    magnitude = -value if negative else value
    if magnitude.is_zero() or POSITIONAL_MIN <= magnitude < POSITIONAL_MAX:
        body = _digits_text(magnitude)
        if magnitude.is_zero():
            body = "0"
        if style == "latex":
            return rf"\ensuremath{{-{body}}}" if negative else body
        return ("−" if style == "unicode" else "-") + body if negative else body
    exponent = magnitude.adjusted()
    mantissa = magnitude.scaleb(-exponent)
    mantissa_text = _digits_text(mantissa)
    one = mantissa_text == "1"
    minus = "-" if negative else ""
    if style == "latex":
        power = f"10^{{{exponent}}}"
        body = power if one else rf"{mantissa_text} \times {power}"
        return rf"\ensuremath{{{minus}{body}}}"
    if style == "plain":
        return f"{minus}{mantissa_text}e{exponent}"
    power = "10" + str(exponent).translate(_SUPERSCRIPTS)
    body = power if one else f"{mantissa_text} × {power}"
    return ("−" if negative else "") + body


def format_number(
    value: float,
    direction: Direction,
    style: Style = "unicode",
    digits: int = SIGNIFICANT_DIGITS,
) -> str:
    """``value`` rounded in ``direction`` to ``digits`` significant digits, as text."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"expected a number, got {type(value).__name__}")
    if math.isinf(value):
        return format_decimal(Decimal("-Infinity" if value < 0 else "Infinity"), style)
    exact = decimal_from_float(value)
    rounded = round_significant(exact, direction, digits)
    return format_decimal(rounded, style, exact=rounded == exact)


def against_limit(actual: float, limit: float, ok: bool, upper: bool = True) -> str:
    """``actual`` rounded towards the attacker (up against an upper limit, down against
    a lower one), with enough digits that the text agrees with ``ok``: never
    ``μ = 1.00`` beside ``≤ 0.9995``."""
    if math.isinf(actual):
        return "∞"
    direction: Direction = "up" if upper else "down"
    limit_decimal = decimal_from_float(limit)
    for digits in range(SIGNIFICANT_DIGITS, 18):
        text = format_number(actual, direction, "unicode", digits)
        rounded = round_significant(decimal_from_float(actual), direction, digits)
        agrees = rounded <= limit_decimal if upper else rounded >= limit_decimal
        if not ok or agrees or rounded == decimal_from_float(actual):
            return text
    return text  # pragma: no cover - 17 digits always reproduce the float


def tpr_decimal(beta: float, digits: int = SIGNIFICANT_DIGITS) -> tuple[Decimal, bool]:
    """``1 − β`` from β's exact binary value, rounded up; and whether that was exact."""
    if math.isnan(beta) or not 0.0 <= beta <= 1.0:
        raise ValueError(f"β must be a probability, got {beta!r}")
    exact = _EXACT.subtract(Decimal(1), Decimal(beta))
    rounded = round_significant(exact, "up", digits)
    return rounded, rounded == exact


# --- named quantities ---------------------------------------------------------


def fmt_mu(value: float | None, style: Style = "unicode") -> str:
    """μ, rounded up; ``None`` (no finite μ) prints as infinity."""
    return format_number(math.inf if value is None else value, "up", style)


def fmt_epsilon(value: float | None, style: Style = "unicode") -> str:
    """ε, rounded up; ``None`` (unbounded) prints as infinity."""
    return format_number(math.inf if value is None else value, "up", style)


def fmt_delta(value: float, style: Style = "unicode") -> str:
    """A computed δ (e.g. the mass at infinity), rounded up."""
    return format_number(_required(value, "δ"), "up", style)


def fmt_advantage(value: float, style: Style = "unicode") -> str:
    """The best attack's advantage TPR − FPR, rounded up (``1 − x`` close to 1)."""
    return _probability_up(_required(value, "advantage"), style)


def _probability_up(value: float, style: Style) -> str:
    """A probability rounded up; within 10⁻³ of 1 it is written ``1 − x`` with the exact
    complement ``x`` rounded down, so that it never prints as a flat ``1.00``."""
    if math.isnan(value) or not 0.0 <= value <= 1.0:
        raise ValueError(f"expected a probability, got {value!r}")
    if 1 - POSITIONAL_MIN <= Decimal(value) < 1:
        complement = _EXACT.subtract(Decimal(1), Decimal(value))
        rounded = round_significant(complement, "down")
        return _one_minus(format_decimal(rounded, style, exact=rounded == complement), style)
    return format_number(value, "up", style)


#: The finest distance from certainty a bound above 1/2 prints (as a probability): the
#: accounting's own errors (its floor, its discretization) are far coarser than the
#: digits a float holds, so 0.99999999999999579 prints as 100 %, not 99.999999999999579 %.
CHANCE_RESOLUTION = Decimal("1e-6")


def fmt_chance(value: float, style: Style = "unicode", direction: Direction = "up") -> str:
    """A probability as a percentage: a bound rounded up, a baseline to nearest.  Above
    1/2 a bound keeps three significant digits of how far it is from certainty (its
    complement, rounded down), and none below ``CHANCE_RESOLUTION``: 0.99000004 prints
    as 99.001 %, not 99.1 %, and 0.9999997 as 100 %, not 99.99997 %."""
    value = _required(value, "probability")
    if math.isnan(value) or not 0.0 <= value <= 1.0:
        raise ValueError(f"expected a probability, got {value!r}")
    exact = Decimal(value)
    if direction == "up" and 0.5 < value < 1:
        distance = round_significant(_EXACT.subtract(Decimal(1), exact), "down")
        distance = distance.quantize(CHANCE_RESOLUTION, rounding=ROUND_FLOOR, context=_EXACT)
        rounded = 1 - distance.normalize(context=_EXACT) if distance else Decimal(1)
    else:
        rounded = round_significant(exact, direction)
    percent = rounded.scaleb(2)  # the same digits, as a percentage
    text = format_decimal(percent, style, exact=rounded == exact or direction == "nearest")
    return text + (r"\,\%" if style == "latex" else " %")


def power_of_ten_above(value: float) -> float:
    """The power of ten at or above ``value`` > 0: for bounds whose digits are not the
    point and would move with the last bits of a computation (0 stays 0)."""
    return 10.0 ** math.ceil(math.log10(value)) if value > 0 else 0.0


def fmt_error_bound(value: float, style: Style = "unicode") -> str:
    """An error bound as the power of ten at or above it (``10⁻⁷``)."""
    if value <= 0:
        return "0"
    return format_number(power_of_ten_above(value), "up", style)


#: Regrets below this are not resolved by the computation; they print as "< 10⁻⁹".
REGRET_RESOLUTION = 1e-9


def fmt_regret(value: float, style: Style = "unicode",
               resolution: float = REGRET_RESOLUTION) -> str:
    """Regret of the μ-GDP summary, rounded up; below ``resolution`` (at least
    ``REGRET_RESOLUTION``; the report's ``gdp.regret_resolution``) a bound."""
    value = _required(value, "regret")
    resolution = max(resolution, REGRET_RESOLUTION)
    if value < resolution:
        bound = format_number(resolution, "up", style)
        return f"$<$ {bound}" if style == "latex" else f"< {bound}"
    return format_number(value, "up", style)


class _Regret(Protocol):
    @property
    def regret(self) -> float | None: ...
    @property
    def regret_resolution(self) -> float: ...


def fmt_regret_of(gdp: _Regret, style: Style = "unicode") -> str:
    """A report's regret (``report.gdp``) as ``fmt_regret`` writes it at the report's
    resolution; "—" when there is none (no finite μ)."""
    return "—" if gdp.regret is None else fmt_regret(gdp.regret, style, gdp.regret_resolution)


def fmt_beta(value: float, style: Style = "unicode", tpr: float | None = None) -> str:
    """An attacker's lowest FNR β, rounded down.

    Given the report's ``tpr`` (``1 − β`` computed without cancellation), a β
    so close to 1 that its digits would all be 9s is written ``1 − TPR``
    with the TPR rounded up (``1 − 8.15 × 10⁻⁷``), which is β rounded down.
    """
    value = _required(value, "β")
    if tpr is not None and 0 < tpr < POSITIONAL_MIN:
        return _one_minus(format_number(tpr, "up", style), style)
    return format_number(value, "down", style)


def fmt_tpr(tpr: float | None, beta: float | None = None, style: Style = "unicode") -> str:
    """An attacker's highest TPR, rounded up.

    ``tpr`` is the report's own value of ``1 − β`` (computed without
    cancellation); without it, pass ``None`` and β, and ``1 − β`` is computed
    exactly from β.  When the TPR would round up to 1 although the attack is not
    perfect (0 < β < 10⁻³), it is written as ``1 − β`` with β rounded down
    (``1 − 4.12 × 10⁻⁵``): the report neither claims a perfect attack nor hides
    how close the attack comes.
    """
    if beta is not None and 0 < beta < POSITIONAL_MIN:
        return _one_minus(fmt_beta(beta, style), style)
    if tpr is None:
        rounded, exact = tpr_decimal(_required(beta, "β"))
        return format_decimal(rounded, style, exact=exact)
    return _probability_up(tpr, style)


def _one_minus(text: str, style: Style) -> str:
    if style == "latex":
        return rf"\ensuremath{{1 - {text}}}"
    return f"1 − {text}" if style == "unicode" else f"1 - {text}"


def fmt_given(value: float, style: Style = "unicode") -> str:
    """A value that labels rather than bounds (α, a chosen δ, h, τ), to nearest."""
    return format_number(_required(value, "value"), "nearest", style)


def fmt_lower(value: float, style: Style = "unicode") -> str:
    """A lower bound an audit proves (μ, ε, a TPR), rounded down: never stronger than
    what was shown."""
    return format_number(_required(value, "lower bound"), "down", style)


def fmt_upper(value: float, style: Style = "unicode") -> str:
    """An upper bound (an FPR an audit allows, a TPR a report allows), rounded up."""
    return format_number(_required(value, "upper bound"), "up", style)


def fmt_threshold(value: float, style: Style = "unicode") -> str:
    """An attack's score threshold: it names the attack, to 6 significant digits."""
    return format_number(_required(value, "threshold"), "nearest", style, digits=6)


def fmt_count(value: int, style: Style = "unicode") -> str:
    """An integer count with thousands separators."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"expected an integer count, got {type(value).__name__}")
    return f"{value:,}"


def _required(value: float | None, what: str) -> float:
    if value is None:
        raise ValueError(f"{what} is missing (None) where the report needs a number")
    return value


# --- escaping of user-supplied strings -----------------------------------------
