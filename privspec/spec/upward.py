"""Double arithmetic rounded up (or away from 0), for figures that must never be printed
below the true value (a strategy's sensitivity): each result is the least double at or
above the exact one (the exact one itself when it is a double).

Products are split exactly (Dekker 1971: p + e = a·b, with a and b at most 2⁹⁹⁶ and
a·b 0 or at least 2⁻⁹⁶⁰; smaller products may lose what falls below double range),
sums are ``math.fsum``'s, exactly rounded, whose remainder's sign says which way it
rounded; or the doubles are taken as integers over one power of 2 (``as_integers``),
whose sums of products are exact.  Pure Python: ``privspec validate`` imports this layer.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from fractions import Fraction
from typing import Any

#: 2²⁷ + 1: Veltkamp's constant, splitting a double into two of 26 bits.
_SPLIT = 134_217_729.0
#: Below this, a value's products with others of at most 2 may fall below the range in
#: which ``two_product`` is exact (2⁻⁹⁶⁰).
TINY = 2.0 ** -480


def _halves(a: Any) -> tuple[Any, Any]:
    """a = high + low exactly, each of at most 26 significant bits."""
    scaled = _SPLIT * a
    high = scaled - (scaled - a)
    return high, a - high


def two_product(a: Any, b: Any) -> tuple[Any, Any]:
    """p = a·b rounded and e, its rounding error: a·b = p + e exactly (for doubles, or
    numpy arrays of them, element by element)."""
    product = a * b
    a_high, a_low = _halves(a)
    b_high, b_low = _halves(b)
    return product, (((a_high * b_high - product) + a_high * b_low + a_low * b_high)
                     + a_low * b_low)


def sum_up(terms: Iterable[float]) -> float:
    """The exact sum of ``terms``, rounded up."""
    values = list(terms)
    total = math.fsum(values)
    values.append(-total)
    return math.nextafter(total, math.inf) if math.fsum(values) > 0 else total


def sum_away(terms: Iterable[float]) -> float:
    """The exact sum of ``terms``, rounded away from 0 (its magnitude rounded up)."""
    values = list(terms)
    if math.fsum(values) >= 0:
        return sum_up(values)
    return -sum_up(-value for value in values)


def product_up(a: float, b: float) -> float:
    """a·b rounded up (a·b at least 2⁻⁹⁶⁰, or 0)."""
    product, error = two_product(a, b)
    return math.nextafter(product, math.inf) if error > 0 else product


def sqrt_up(x: float) -> float:
    """√x rounded up (x ≥ 0, 0 or at least 2⁻⁹⁶⁰)."""
    root = math.sqrt(x)
    square, error = two_product(root, root)
    return math.nextafter(root, math.inf) if math.fsum([square, error, -x]) < 0 else root


def root_up(square: Fraction) -> float:
    """√``square`` (exact, ≥ 0), rounded up: the least double whose square is at least it
    (a finite double's square, or a sum of them; the first guess is scaled by an even
    power of 2, so that a square beyond double range is not stepped to one ulp at a time)."""
    if square <= 0:
        return 0.0
    exponent = square.numerator.bit_length() - square.denominator.bit_length()
    shift = exponent - exponent % 2  # square / 2^shift is near 1: its float is exact enough
    root = math.ldexp(math.sqrt(float(square / Fraction(2) ** shift)), shift // 2)
    while Fraction(root) ** 2 < square:
        root = math.nextafter(root, math.inf)
    while root > 0 and Fraction(math.nextafter(root, 0.0)) ** 2 >= square:
        root = math.nextafter(root, 0.0)
    return root


def times_up(count: int, value: float) -> float:
    """``count`` · ``value`` (value ≥ 0) rounded up."""
    product = count * value
    return (math.nextafter(product, math.inf)
            if math.isfinite(product) and Fraction(product) < count * Fraction(value)
            else product)


def as_integers(values: Iterable[float]) -> tuple[list[int], int]:
    """The (finite) ``values`` as integers n and one shift s: each value is n / 2^s,
    exactly, so that sums of their products are exact integers (``ratio_up``)."""
    ratios = [value.as_integer_ratio() for value in values]
    shift = max((denominator.bit_length() - 1 for _, denominator in ratios), default=0)
    return [numerator << (shift - denominator.bit_length() + 1)
            for numerator, denominator in ratios], shift


def ratio_up(number: int, shift: int) -> float:
    """number / 2^shift, exactly, rounded up (Python divides integers exactly rounded)."""
    value = number / (1 << shift)
    numerator, denominator = value.as_integer_ratio()
    return math.nextafter(value, math.inf) if numerator << shift < number * denominator else value


def ratio_away(number: int, shift: int) -> float:
    """number / 2^shift, exactly, rounded away from 0."""
    return ratio_up(number, shift) if number >= 0 else -ratio_up(-number, shift)
