"""JSON from strangers (audit scores, training runs' records): a key given twice in one
object is refused, as the YAML reader refuses it, where Python's ``json`` would keep
the last value silently.

:class:`DuplicateKeyError` is a :class:`json.JSONDecodeError`, so whoever reports
invalid JSON at its line and column reports this one too.
"""

from __future__ import annotations

import json
import re
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

from privspec.spec.diagnostics import quoted

#: JSON's whitespace.
WHITESPACE = re.compile(r"[ \t\n\r]*")


def string_at(text: str, position: int) -> tuple[str, int]:
    """The JSON string whose opening quote is at ``position``, and where it ends."""
    key, end = scanstring(text, position + 1)
    return str(key), int(end)


class DuplicateKeyError(json.JSONDecodeError):
    """A key given twice in one JSON object, at the second one."""

    def __init__(self, key: str, text: str, position: int) -> None:
        super().__init__(f"the key {quoted(key)} is given twice in one object (JSON "
                         "readers keep the last one silently): give each key once",
                         text, position)
        self.key = key


class _TwiceError(Exception):
    """A duplicate key seen by the decoder, before it is located."""


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        raise _TwiceError
    return result


def decoder(**options: Any) -> json.JSONDecoder:
    """A decoder (``json.JSONDecoder``'s ``options``) whose ``decode`` and
    ``raw_decode`` raise :class:`DuplicateKeyError` at a key given twice."""
    return _Decoder(**options)


class _Decoder(json.JSONDecoder):
    def __init__(self, **options: Any) -> None:
        super().__init__(object_pairs_hook=_unique, **options)

    def raw_decode(self, s: str, idx: int = 0) -> tuple[Any, int]:
        try:
            return super().raw_decode(s, idx)
        except _TwiceError:
            raise _located(self, s, idx) from None


def loads(text: str, **options: Any) -> Any:
    """``json.loads(text, **options)``, refusing a key given twice."""
    return decoder(**options).decode(text)


def _located(plain: json.JSONDecoder, text: str, start: int) -> DuplicateKeyError:
    """The first key given twice in the value at ``start`` (which has one): the path down
    to it is walked, every value beside it decoded whole (by ``plain``)."""
    position = start
    try:
        while True:
            found = _in_container(plain, text, position)
            if isinstance(found, DuplicateKeyError):
                return found
            position = found
    except (json.JSONDecodeError, RecursionError, IndexError):  # (not expected)
        return DuplicateKeyError("?", text, start)


def _in_container(plain: json.JSONDecoder, text: str, position: int
                  ) -> DuplicateKeyError | int:
    """The duplicate key among the keys of the object at ``position``, or where the
    member of that list or object starts that holds one."""
    position = WHITESPACE.match(text, position).end()  # type: ignore[union-attr]
    closing = {"{": "}", "[": "]"}[text[position]]
    seen: set[str] = set()
    position = WHITESPACE.match(text, position + 1).end()  # type: ignore[union-attr]
    while text[position] != closing:
        if closing == "}":
            key, after = string_at(text, position)
            if key in seen:
                return DuplicateKeyError(key, text, position)
            seen.add(key)
            after = WHITESPACE.match(text, after).end() + 1  # type: ignore[union-attr]
            position = WHITESPACE.match(text, after).end()  # type: ignore[union-attr]
        try:
            _, end = json.JSONDecoder.raw_decode(plain, text, position)
        except _TwiceError:
            return position
        position = WHITESPACE.match(text, end).end()  # type: ignore[union-attr]
        if text[position] == ",":
            position = WHITESPACE.match(text, position + 1).end()  # type: ignore[union-attr]
    raise IndexError("no key given twice")


__all__ = ["WHITESPACE", "DuplicateKeyError", "decoder", "loads", "string_at"]
