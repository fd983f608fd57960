"""The numeric fields of a spec that privacy depends on, and which way: what
``privspec calibrate`` may vary, found in the spec's own data and models.

A field *protects* when a larger value is more private (noise, the dataset a batch is
drawn from) and *exposes* when a larger value is less private (ε, δ, ρ, sensitivity,
runs, rates and batch sizes).  The direction is a property of the field's meaning, the
same in every kind that has it, so it is declared once here.
"""

from __future__ import annotations

import re
import types
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel

from privspec.spec.diagnostics import path_to_str
from privspec.spec.kinds import KINDS
from privspec.spec.kinds.compose import Stage

Path = tuple[str | int, ...]

#: +1: a larger value is more private; −1: a larger value is less private.
DIRECTIONS: dict[str, Literal[1, -1]] = {
    "sigma": 1, "noise_multiplier": 1, "scale": 1, "flip_probability": 1,
    "dataset_size": 1, "truncated_batch_size": 1,
    "epsilon": -1, "delta": -1, "rho": -1, "sensitivity": -1, "steps": -1, "epochs": -1,
    "count": -1, "repeat": -1, "sampling_rate": -1, "batch_size": -1,
}


@dataclass(frozen=True)
class Knob:
    """One field privacy depends on: where it is, its value, which way it moves privacy
    (``direction``), whether it takes whole numbers, and whether the spec writes it (or
    leaves it at its default)."""

    path: Path
    value: float
    direction: Literal[1, -1]
    integer: bool
    written: bool
    stage_name: str | None = None  # the named compose stage it is in, if any
    #: The field's own limits (None: unbounded), and whether each is allowed itself.
    lowest: float | None = None
    highest: float | None = None
    lowest_allowed: bool = True
    highest_allowed: bool = True

    @property
    def field(self) -> str:
        return str(self.path[-1])

    def __str__(self) -> str:
        return path_to_str(self.path)


def _is_integer(model: type[BaseModel], name: str) -> bool:
    """The field takes whole numbers (``int``, possibly ``Annotated`` or optional)."""
    annotation = model.model_fields[name].annotation
    options = (get_args(annotation) if get_origin(annotation) in (Union, types.UnionType)
               else (annotation,))
    return any((get_args(option)[0] if get_origin(option) is Annotated else option) is int
               for option in options)


def _constraints(model: type[BaseModel], name: str) -> list[Any]:
    """The annotated-types constraints of a field (Gt, Ge, Lt, Le), however nested."""
    info = model.model_fields[name]
    found = list(info.metadata)
    pending = [info.annotation]
    while pending:
        annotation = pending.pop()
        for argument in get_args(annotation):
            found.extend(getattr(argument, "metadata", []))
            pending.append(argument)
    return found


def _limits(model: type[BaseModel], name: str) -> dict[str, Any]:
    """The Knob fields of a field's limits."""
    limits: dict[str, Any] = {}
    for constraint in _constraints(model, name):
        for attribute, key, allowed in (("ge", "lowest", True), ("gt", "lowest", False),
                                        ("le", "highest", True), ("lt", "highest", False)):
            bound = getattr(constraint, attribute, None)
            if bound is not None:
                limits[key] = float(bound)
                limits[f"{key}_allowed"] = allowed
    return limits


def _knobs_of_block(block: dict[str, Any], model: type[BaseModel], path: Path,
                    stage_name: str | None) -> list[Knob]:
    out = []
    for name, info in model.model_fields.items():
        direction = DIRECTIONS.get(name)
        value = block.get(name, info.default)
        if direction is None or isinstance(value, bool) or not isinstance(value, int | float):
            continue  # not a privacy parameter, or an alternative the spec does not use
        out.append(Knob((*path, name), float(value), direction, _is_integer(model, name),
                        name in block, stage_name, **_limits(model, name)))
    return out


def knobs(data: dict[str, Any]) -> list[Knob]:
    """Every field of the spec data (as read from YAML, valid) that privacy depends on,
    written or at a numeric default, in the order of the file."""
    out: list[Knob] = []

    def visit(mechanism: Any, path: Path, stage_name: str | None) -> None:
        if not isinstance(mechanism, dict) or len(mechanism) != 1:
            return
        ((kind, block),) = mechanism.items()
        here = (*path, kind)
        if KINDS[kind].nesting == "stages":
            for i, stage in enumerate(block):
                name = stage.get("name", stage_name)
                out.extend(_knobs_of_block(stage, Stage, (*here, i), name))
                visit(stage.get("mechanism"), (*here, i, "mechanism"), name)
            return
        model = KINDS[kind].model
        if model is not None and isinstance(block, dict):
            out.extend(_knobs_of_block(block, model, here, stage_name))
            if KINDS[kind].nesting == "mechanism":
                visit(block.get("mechanism"), (*here, "mechanism"), stage_name)

    visit(data.get("mechanism"), ("mechanism",), None)
    return out


_PART = re.compile(r"\[(\d+|\"(?:[^\"\\]|\\.)*\")\]|([^./\[\]]+)")


def parse_path(text: str) -> Path:
    """A spec path as error messages write it (``mechanism.compose[1].mechanism``) or
    with slashes (``mechanism/compose/1/mechanism``); stage names may stand for their
    stage (``training/noise_multiplier``)."""
    parts: list[str | int] = []
    for index, name in _PART.findall(text.strip()):
        token = index or name
        if token.startswith('"'):
            parts.append(token[1:-1])
        elif token.isdigit():
            parts.append(int(token))
        else:
            parts.append(token)
    return tuple(parts)


def _follows(wanted: Path, knob: Knob) -> bool:
    """``wanted`` names ``knob``: its last part is the field, its stage's name may
    stand anywhere, and its other parts appear in order in the knob's path."""
    if not wanted or wanted[-1] != knob.field:
        return False
    rest = [part for part in wanted[:-1] if part != knob.stage_name or part is None]
    words = iter(knob.path[:-1])
    return all(any(part == word for word in words) for part in rest)


class KnobError(ValueError):
    """A ``--vary`` path that names no field privacy depends on, or several."""


def resolve(data: dict[str, Any], text: str) -> Knob:
    """The one knob ``text`` names in the spec data; KnobError saying what is allowed."""
    wanted = parse_path(text)
    candidates = knobs(data)
    exact = [knob for knob in candidates if knob.path == wanted]
    found = exact or [knob for knob in candidates if _follows(wanted, knob)]
    allowed = ", ".join(str(knob) for knob in candidates) or "none in this spec"
    if not found:
        raise KnobError(f"{text!r} names no field that privacy depends on; this spec "
                        f"has: {allowed}")
    if len(found) > 1:
        raise KnobError(f"{text!r} names {len(found)} fields ("
                        + ", ".join(str(knob) for knob in found)
                        + "); give more of the path, or a stage's name")
    return found[0]


def with_value(data: dict[str, Any], path: Path, value: float | int) -> dict[str, Any]:
    """A copy of the spec data with the field at ``path`` set to ``value``."""
    if not path:
        raise KnobError("an empty path")
    head, *rest = path
    copy: Any = list(data) if isinstance(data, list) else dict(data)
    copy[head] = with_value(copy[head], tuple(rest), value) if rest else value
    return copy  # type: ignore[no-any-return]
