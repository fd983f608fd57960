"""privspec.report.formatting: conservative rounding, readable tiny and huge numbers, escaping."""

from __future__ import annotations

import math
import re
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from privspec.report import escaping
from privspec.report import formatting as f
from privspec.report.filters import filters

_SUPERSCRIPT = str.maketrans("⁻⁰¹²³⁴⁵⁶⁷⁸⁹", "-0123456789")


def parse_unicode(text: str) -> Decimal:
    """Read back a number as the Unicode style prints it (``7.3 × 10⁻⁴``, ``1 − x``, ∞)."""
    if text.startswith("1 − "):
        return 1 - parse_unicode(text[len("1 − "):])
    if text == "∞":
        return Decimal("Infinity")
    text = text.replace("−", "-")
    match = re.fullmatch(r"(?:(-?[0-9.]+) × )?(-?)10([⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+)", text)
    if match:
        mantissa = Decimal(match.group(1) or "1")
        exponent = int(match.group(3).translate(_SUPERSCRIPT))
        sign = -1 if match.group(2) else 1
        return sign * mantissa.scaleb(exponent)
    return Decimal(text)


@pytest.mark.parametrize(("value", "expected"), [
    (1.5679, "1.57"),
    (1.57, "1.57"),  # a float that reads as 1.57 is not pushed to 1.58
    (0.1, "0.1"),  # an exact value keeps no spurious zeros
    (1.0, "1"),
    (9.996, "10.0"),
    (0.0011823, "0.00119"),
    (7.3e-4, "7.3 × 10⁻⁴"),
    (7.31234e-4, "7.32 × 10⁻⁴"),
    (1e-10, "10⁻¹⁰"),
    (2.5e-300, "2.5 × 10⁻³⁰⁰"),
    (123456.7, "1.24 × 10⁵"),
    (12345.0, "12400"),
    (99999.0, "1.00 × 10⁵"),
    (math.inf, "∞"),
    (0.0, "0"),
])
def test_round_up_reads_well(value: float, expected: str) -> None:
    assert f.fmt_mu(value) == expected


@pytest.mark.parametrize(("value", "latex"), [
    (1e-10, r"\ensuremath{10^{-10}}"),
    (7.31234e-4, r"\ensuremath{7.32 \times 10^{-4}}"),
    (0.0156, "0.0156"),
    (math.inf, r"\ensuremath{\infty}"),
])
def test_latex_numbers(value: float, latex: str) -> None:
    assert f.fmt_epsilon(value, "latex") == latex


def test_directions() -> None:
    assert f.fmt_beta(0.98437271) == "0.984"
    assert f.fmt_mu(0.98437271) == "0.985"
    assert f.fmt_regret(0.037) == "0.037"
    assert f.fmt_delta(1.6e-15) == "1.6 × 10⁻¹⁵"
    assert f.fmt_given(0.30326712) == "0.303"


def test_none_is_unbounded_for_mu_and_epsilon_only() -> None:
    assert f.fmt_epsilon(None) == "∞"
    assert f.fmt_mu(None, "latex") == r"\ensuremath{\infty}"
    with pytest.raises(ValueError, match="missing"):
        f.fmt_beta(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="NaN"):
        f.fmt_mu(math.nan)


def test_small_positive_is_never_zero() -> None:
    for value in (1e-300, 5e-324, 1e-20, 4.9e-7):
        text = f.fmt_advantage(value)
        assert parse_unicode(text) > 0, text
        assert not re.fullmatch(r"0(\.0*)?", text)


def test_probabilities_close_to_one_keep_their_distance_from_one() -> None:
    assert f.fmt_tpr(0.99999, 1e-5) == "1 − 10⁻⁵"
    assert f.fmt_beta(0.9999991856, tpr=8.1439e-7) == "1 − 8.15 × 10⁻⁷"
    assert f.fmt_advantage(0.99933) == "1 − 6.69 × 10⁻⁴"
    assert f.fmt_tpr(1.0, 0.0) == "1"
    assert f.fmt_beta(0.5, tpr=0.5) == "0.5"
    assert f.fmt_tpr(None, 0.3) == "0.701"  # 1 − 0.3 from β's exact binary value, up
    assert f.fmt_tpr(8.2e-7, 0.99999918, "latex") == r"\ensuremath{8.2 \times 10^{-7}}"
    assert f.fmt_beta(0.9999991856, "latex", 8.1439e-7) == (
        r"\ensuremath{1 - \ensuremath{8.15 \times 10^{-7}}}")


positive = st.floats(min_value=5e-324, max_value=1e300, allow_nan=False, allow_infinity=False)
probability = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


@given(positive)
def test_rounding_up_is_never_flattering(value: float) -> None:
    shown = parse_unicode(f.fmt_mu(value))
    assert shown >= Decimal(repr(value))
    assert float(shown) >= value
    # ... and is tight: within one unit in the last significant digit
    assert shown - Decimal(repr(value)) <= Decimal(1).scaleb(
        Decimal(repr(value)).adjusted() - f.SIGNIFICANT_DIGITS + 2)


@given(positive)
def test_rounding_down_is_never_flattering(value: float) -> None:
    shown = parse_unicode(f.format_number(value, "down"))
    assert shown <= Decimal(repr(value))
    assert float(shown) <= value
    assert shown > 0


@given(probability)
def test_beta_down_and_tpr_up(beta: float) -> None:
    shown_beta = parse_unicode(f.fmt_beta(beta))
    assert shown_beta <= Decimal(repr(beta))
    tpr_text = f.fmt_tpr(None, beta)
    if tpr_text.startswith("1 − "):  # "1 − β" with β itself rounded down, as a float
        assert float(parse_unicode(tpr_text[len("1 − "):])) <= beta
    else:  # 1 − β computed from β's exact binary value, rounded up
        assert parse_unicode(tpr_text) >= 1 - Decimal(beta)
        assert parse_unicode(tpr_text) <= 1


@given(probability)
def test_advantage_up_even_near_one(value: float) -> None:
    assert float(parse_unicode(f.fmt_advantage(value))) >= value


@given(st.integers(min_value=1, max_value=12), positive)
def test_round_significant_keeps_digits(digits: int, value: float) -> None:
    exact = Decimal(repr(value))
    for direction in ("up", "down", "nearest"):
        rounded = f.round_significant(exact, direction, digits)  # type: ignore[arg-type]
        assert len(rounded.as_tuple().digits) <= digits
    assert f.round_significant(exact, "down", digits) <= exact <= f.round_significant(
        exact, "up", digits)


# --- escaping -------------------------------------------------------------------

SPECIALS = "& % $ # _ { } ~ ^ \\"


def test_latex_escapes_every_special_character() -> None:
    assert escaping.escape_latex(SPECIALS) == (
        r"\& \% \$ \# \_ \{ \} \textasciitilde{} \textasciicircum{} \textbackslash{}")
    assert escaping.escape_latex("a--b ''c'' ε ≤ 10⁻⁶") == (
        r"a-{}-b '{}'c'{}' \ensuremath{\varepsilon} \ensuremath{\leq} 10\ensuremath{^{-6}}")
    assert escaping.escape_latex("line\n\nbreak\tand 😀") == "line break and [U+1F600]"


@given(st.text(max_size=60))
def test_latex_escape_leaves_no_active_character(text: str) -> None:
    escaped = escaping.escape_latex(text)
    # Remove the escapes we emit; what is left must hold no TeX-special character.
    escaped = escaped.replace('\\texttt{\\string"}', "")
    # Letters only T1 has, accented letters, superscripts and subscripts (their content
    # escaped in turn).
    escaped = re.sub(r"\\ifcsname T1\\string\\[A-Za-z]+\\endcsname\\UseText(Accent\{T1\}"
                     r"\{\\[A-Za-z]+\}\{[A-Za-z]\}|Symbol\{T1\}\{\\[A-Za-z]+\})"
                     r"\\else\[U\+[0-9A-F]+\]\\fi\{\}", "", escaped)
    escaped = re.sub(r"\\['`^\"~=.uvHrdcb]\{\\?[A-Za-z]\}", "", escaped)
    escaped = re.sub(r"\\text(?:super|sub)script\{((?:[^{}]|\{[^{}]*\})*)\}", r"\1", escaped)
    stripped = re.sub(r"\\ensuremath\{[^{}]*(\{[^{}]*\})?\}|\\[A-Za-z]+(\{\})?|\\[&%$#_{}]",
                      "", escaped)
    stripped = stripped.replace("{}", "")
    assert not set(stripped) & set("&%$#_{}~^\\\n"), (text, escaped)


def test_markdown_escapes() -> None:
    assert escaping.escape_markdown("a|b *c* _d_ <e> $x$ [l](u) `c` #1 ~s~ &amp; & x\\y") == (
        r"a\|b \*c\* \_d\_ \<e\> \$x\$ \[l\](u) \`c\` \#1 \~s\~ \&amp; & x\\y")
    assert escaping.escape_markdown("two\nlines") == "two lines"


def test_filters_are_bound_to_a_style() -> None:
    latex = filters("latex")
    unicode = filters("unicode")
    assert latex["mu"](1e-10) == r"\ensuremath{10^{-10}}"
    assert unicode["mu"](1e-10) == "10⁻¹⁰"
    assert latex["esc"]("50%") == r"50\%"
    assert unicode["esc"]("a|b") == r"a\|b"


def test_regrets_below_the_resolution_print_as_a_bound() -> None:
    """Issue 12: a regret within the composition's error bound is not a figure."""
    assert f.fmt_regret(3e-10) == "< 10⁻⁹"
    assert f.fmt_regret(9.13e-9, resolution=1e-8) == "< 10⁻⁸"
    assert f.fmt_regret(9.13e-9, "latex", resolution=1e-8).startswith("$<$ ")
    assert f.fmt_regret(2.5e-8, resolution=1e-8) == "2.5 × 10⁻⁸"
    assert f.fmt_regret(3e-10, resolution=1e-12) == "< 10⁻⁹"  # never finer than 10⁻⁹


def test_chances_near_certainty_print_what_the_figure_supports() -> None:
    """Issue 28: 99.999999999999579 % claimed fifteen digits the accounting cannot
    support; the distance from certainty keeps three digits and none below 10⁻⁶ (a bound,
    so rounded towards certainty)."""
    assert f.fmt_chance(0.99999999999999579) == "100 %"
    assert f.fmt_chance(0.999999714) == "100 %"
    assert f.fmt_chance(0.999405) == "99.9405 %"
    assert f.fmt_chance(0.9999876) == "99.9988 %"
    assert f.fmt_chance(0.99000004) == "99.001 %"
    assert f.fmt_chance(0.9408) == "94.08 %"
    assert f.fmt_chance(0.999999714, direction="nearest") == "100 %"
