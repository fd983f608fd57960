"""Double arithmetic rounded up (or away from 0), for figures that must never be printed
below the true value (a strategy's sensitivity): each result is the exact one rounded
to the next double above it, and the exact one itself when it is a double.

Products are split exactly (Dekker 1971: p + e = a·b, with a and b at most 2⁹⁹⁶ and
a·b 0 or at least 2⁻⁹⁶⁰; smaller products may lose what falls below double range),
sums are ``math.fsum``'s, exactly rounded, whose remainder's sign says which way it
rounded.  Pure Python: ``privspec validate`` imports this layer.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
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


def add_up(a: float, b: float) -> float:
    """a + b rounded up (Knuth's two-sum gives the rounding error exactly)."""
    total = a + b
    b_part = total - a
    error = (a - (total - b_part)) + (b - b_part)
    return math.nextafter(total, math.inf) if error > 0 else total


def product_up(a: float, b: float) -> float:
    """a·b rounded up (a·b at least 2⁻⁹⁶⁰, or 0)."""
    product, error = two_product(a, b)
    return math.nextafter(product, math.inf) if error > 0 else product


def sqrt_up(x: float) -> float:
    """√x rounded up (x ≥ 0, 0 or at least 2⁻⁹⁶⁰)."""
    root = math.sqrt(x)
    square, error = two_product(root, root)
    return math.nextafter(root, math.inf) if math.fsum([square, error, -x]) < 0 else root


def squares_up(values: Iterable[float]) -> float:
    """Σ v² over ``values``, exactly, rounded up."""
    return sum_up(part for value in values for part in two_product(value, value))
