"""Changing one number in a spec file's text, keeping everything else as written:
comments, key order, quoting, flow or block style and line breaks.

The value is replaced where the YAML reader found it; a field the file does not write
is added as the first key of its mapping.  The edited text is read back and must hold
exactly the data intended, or nothing is returned.
"""

from __future__ import annotations

from typing import Any

from privspec.spec.knobs import Path, with_value
from privspec.spec.yaml_reader import read_text


def written_number(value: float | int) -> str:
    """How a number is written into a spec: whole numbers as integers, others in the
    shortest form that reads back as the same double (YAML 1.2: ``1.5e-05``)."""
    if isinstance(value, int):
        return str(value)
    text = repr(float(value))
    return text if "e" not in text or "." in text.split("e")[0] else text.replace("e", ".0e")


def _offset(text: str, line: int, column: int) -> int:
    """The index in ``text`` of a 0-based (line, column)."""
    start = 0
    for _ in range(line):
        start = text.index("\n", start) + 1
    return start + column


def with_number(text: str, path: Path, value: float | int) -> str:
    """``text`` with the number at ``path`` set to ``value`` (added if not written).

    Raises ValueError when the text cannot be edited in place to hold exactly that."""
    data, builder = read_text(text, "<spec>")
    written = written_number(value)
    where = builder.positions.get(path)
    if where is not None:
        if where.raw is None or where.end is None or where.end[0] != where.value[0]:
            raise ValueError(f"the value at {path} is not a number on one line")
        start = _offset(text, *where.value)
        edited = text[:start] + written + text[start + where.end[1] - where.value[1]:]
    else:
        parent = builder.positions.get(path[:-1])
        siblings = [w.key for key, w in builder.positions.items()
                    if len(key) == len(path) and key[:-1] == path[:-1] and w.key is not None]
        if parent is None or not siblings:
            raise ValueError(f"no mapping at {path[:-1]} to add {path[-1]} to")
        line, column = min(siblings)
        start = _offset(text, line, column)
        addition = (f"{path[-1]}: {written}\n{' ' * column}" if parent.block
                    else f"{path[-1]}: {written}, ")
        edited = text[:start] + addition + text[start:]
    expected: Any = with_value(data, path, value)
    if read_text(edited, "<spec>")[0] != expected:
        raise ValueError(f"editing {path} in place would change more than that value")
    return edited


def with_top_level(text: str, key: str, value: dict[str, Any]) -> str:
    """``text`` with the top-level ``key`` set to ``value``, written on one line in flow
    style: replacing a one-line value where the file has one, else appended at the end.

    Raises ValueError when the key's value spans several lines (edit it by hand)."""
    import yaml

    data, builder = read_text(text, "<spec>")
    flow = yaml.safe_dump(value, default_flow_style=True, width=10**6, sort_keys=False,
                          allow_unicode=True).strip()
    where = builder.positions.get((key,))
    if where is None:
        edited = text + ("" if text.endswith("\n") or not text else "\n") + f"{key}: {flow}\n"
    elif where.end is not None and where.end[0] == where.value[0]:
        start = _offset(text, *where.value)
        edited = text[:start] + flow + text[start + where.end[1] - where.value[1]:]
    else:
        raise ValueError(f"'{key}' spans several lines")
    if read_text(edited, "<spec>")[0] != {**data, key: value}:
        raise ValueError(f"writing '{key}' in place would change more than that")
    return edited
