"""From pydantic's validation errors to diagnostics about what the user wrote: the
path as written, what is wrong, what is allowed, and a suggestion for a typo."""

from __future__ import annotations

import math
import re
import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from pydantic_core import ErrorDetails

from privspec.errors import Code
from privspec.spec.base import MAX_REPETITIONS, REPETITIONS_REASON
from privspec.spec.diagnostics import Diagnostic
from privspec.spec.diagnostics import path_to_str as path_to_str  # (loader's)
from privspec.spec.models import (
    MECHANISM_KINDS,
    NODE_TYPES,
    Spec,
    _Node,
)
from privspec.spec.scope import WEB_ADDRESS
from privspec.spec.yaml_reader import Path, Where, short

# ---------------------------------------------------------------------------
# From pydantic's errors to what the user wrote.
# ---------------------------------------------------------------------------


def _user_path(loc: tuple[str | int, ...]) -> Path:
    """Drop the union tag pydantic repeats after every ``mechanism`` key:
    ``(mechanism, gaussian, gaussian, sigma)`` → ``(mechanism, gaussian, sigma)``."""
    out: list[str | int] = []
    i = 0
    while i < len(loc):
        out.append(loc[i])
        if (loc[i] == "mechanism" and i + 2 < len(loc) and loc[i + 1] == loc[i + 2]
                and loc[i + 1] in NODE_TYPES):
            i += 2
        else:
            i += 1
    return tuple(out)


def _unwrap(tp: Any) -> Any:
    while True:
        origin = typing.get_origin(tp)
        if origin is typing.Annotated:
            tp = typing.get_args(tp)[0]
        elif origin in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(tp) if a is not type(None)]
            if len(args) != 1:
                return tp
            tp = args[0]
        else:
            return tp


def _type_at(path: Path) -> Any:
    """The declared type at a user path, or None when the path leaves the models."""
    tp: Any = Spec
    for part in path:
        tp = _unwrap(tp)
        if tp is _Node:  # a mechanism: the path names its kind
            node = NODE_TYPES.get(part) if isinstance(part, str) else None
            if node is None:
                return None
            tp = node.model_fields[str(part)].annotation
        elif typing.get_origin(tp) is list and isinstance(part, int):
            tp = typing.get_args(tp)[0]
        elif isinstance(tp, type) and issubclass(tp, BaseModel) and isinstance(part, str):
            field = tp.model_fields.get(part)
            if field is None:
                return None
            tp = field.annotation
        else:
            return None
    return _unwrap(tp)


def _model_at(path: Path) -> type[BaseModel] | None:
    tp = _type_at(path)
    return tp if isinstance(tp, type) and issubclass(tp, BaseModel) else None


def _keys_of(model: type[BaseModel]) -> list[str]:
    return list(model.model_fields)


def _normal(name: str) -> str:
    return re.sub(r"[\s_-]+", "", name.lower())


def _suggest(word: str, choices: Iterable[str]) -> str | None:
    choices = list(choices)
    for choice in choices:
        if _normal(choice) == _normal(word):
            return choice
    import difflib  # (only for a misspelling: heapq and difflib cost validate ~2 ms)

    close = difflib.get_close_matches(word.lower(), choices, n=1, cutoff=0.75)
    return close[0] if close else None


def _number(value: Any) -> str:
    """A bound for a message: integers with thousands separators (10,000,000)."""
    if isinstance(value, int | float) and not isinstance(value, bool) and \
            float(value).is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    return str(value)


def _show(value: Any, raw: str | None) -> str:
    """A value as the user would recognise it in their file."""
    if value is None:
        return raw or "nothing"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        if raw is not None:
            return short(raw)
        if isinstance(value, float) and not math.isfinite(value):
            return ".nan" if math.isnan(value) else (".inf" if value > 0 else "-.inf")
        return short(repr(value))
    if isinstance(value, str):
        return "'" + short(value) + "'"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return short(repr(value))


def _kind_message(value: Any) -> tuple[str, str | None]:
    """Message for an unknown or malformed mechanism, and the kind key if there is one."""
    kinds = ", ".join(MECHANISM_KINDS)
    if isinstance(value, dict) and len(value) == 1:
        kind = next(iter(value))
        if "shuffl" in kind.lower():
            return (f"'{short(kind)}' is not a kind privspec can account: shuffling is not "
                    "Poisson sampling, and no tight accountant for shuffled batches is "
                    "available; describe how batches are really drawn (poisson_sampled, "
                    "fixed_size_sampled, dpsgd) or give the published guarantee as "
                    "approximate_dp", kind)
        hint = _suggest(kind, MECHANISM_KINDS)
        mean = f"did you mean '{hint}'? " if hint else ""
        return f"unknown mechanism kind '{short(kind)}'; {mean}kinds: {kinds}", kind
    if isinstance(value, dict):
        got = ("an empty mapping" if not value else
               f"{len(value)} keys: " + ", ".join(f"'{short(str(k))}'" for k in list(value)[:5])
               + (", …" if len(value) > 5 else ""))
        return (f"a mechanism is a mapping with exactly one key, its kind (got {got}); "
                f"kinds: {kinds}", None)
    return (f"a mechanism is a mapping with one key naming its kind, such as "
            f"'gaussian: {{sigma: 1.0}}' (got {_show(value, None)}); kinds: {kinds}", None)


@dataclass(frozen=True)
class _Problem:
    """One pydantic error, with what the user wrote where it points."""

    kind: str
    value: Any
    got: str  # the value as the user wrote it, shortened
    unquote: str  # "; remove the quotes" when a number was written in quotes
    ctx: Mapping[str, Any]
    path: Path


_BOUNDS = {
    "greater_than": ("greater than", "gt"),
    "greater_than_equal": ("at least", "ge"),
    "less_than": ("less than", "lt"),
    "less_than_equal": ("at most", "le"),
}


def _key_message(problem: _Problem) -> tuple[Code, str] | None:
    """An unknown or missing key, with a suggestion or what is allowed."""
    key, path = str(problem.path[-1]) if problem.path else "", problem.path
    if problem.kind == "extra_forbidden":
        model = _model_at(path[:-1])
        allowed = _keys_of(model) if model else []
        hint = _suggest(key, allowed)
        if hint:
            return Code.SPEC_UNKNOWN_KEY, f"unknown key '{short(key)}'; did you mean '{hint}'?"
        if key in NODE_TYPES and "mechanism" in allowed:
            return (Code.SPEC_UNKNOWN_KEY, f"unknown key '{short(key)}'; a mechanism kind goes "
                    "under 'mechanism:'")
        return (Code.SPEC_UNKNOWN_KEY, f"unknown key '{short(key)}'; allowed keys: "
                + ", ".join(allowed))
    if problem.kind == "missing":
        model = _model_at(path[:-1])
        field = model.model_fields.get(key) if model else None
        about = ""
        if field is not None and field.description:
            about = " (" + field.description.rstrip(".") + ")"
        return Code.SPEC_MISSING_KEY, f"missing required key '{key}'{about}"
    if problem.kind in ("model_type", "model_attributes_type", "dict_type"):
        model = _model_at(path)
        keys = f" with keys {', '.join(_keys_of(model))}" if model else ""
        return Code.SPEC_INVALID_TYPE, f"must be a mapping{keys} (got {problem.got})"
    return None


def _number_message(problem: _Problem) -> tuple[Code, str] | None:
    """A number out of range, or something that is not the number asked for."""
    kind, value, got = problem.kind, problem.value, problem.got
    if kind in _BOUNDS:
        words, key = _BOUNDS[kind]
        bound = problem.ctx.get(key)
        why = (f", the most {REPETITIONS_REASON}"
               if kind == "less_than_equal" and bound == MAX_REPETITIONS else "")
        return (Code.SPEC_INVALID_VALUE,
                f"must be {words} {_number(bound)} (got {got}){why}")
    if kind == "finite_number":
        return Code.SPEC_INVALID_VALUE, f"must be a finite number (got {got})"
    if kind in ("int_type", "int_parsing", "int_from_float"):
        if isinstance(value, str):
            return (Code.SPEC_INVALID_TYPE,
                    f"must be a whole number, not text (got {got}){problem.unquote}")
        if isinstance(value, float) and value.is_integer():
            return (Code.SPEC_INVALID_TYPE,
                    f"must be a whole number, written without a decimal point (got {got})")
        return Code.SPEC_INVALID_TYPE, f"must be a whole number (got {got})"
    if kind in ("float_type", "float_parsing"):
        if isinstance(value, str):
            return (Code.SPEC_INVALID_TYPE,
                    f"must be a number, not text (got {got}){problem.unquote}")
        return Code.SPEC_INVALID_TYPE, f"must be a number (got {got})"
    return None


def _text_or_list_message(problem: _Problem) -> tuple[Code, str] | None:
    """Text, a choice among words, or a list, that is not what is allowed."""
    kind, value, got, ctx = problem.kind, problem.value, problem.got, problem.ctx
    if kind == "string_type":
        return Code.SPEC_INVALID_TYPE, f"must be text (got {got}); put it in quotes"
    if kind == "string_too_short":
        return Code.SPEC_INVALID_VALUE, "must not be empty"
    if kind == "string_too_long":
        length = len(value) if isinstance(value, str) else "more"
        return (Code.SPEC_INVALID_VALUE,
                f"must be at most {ctx.get('max_length')} characters (got {length})")
    if kind == "literal_error":
        expected = str(ctx.get("expected", ""))
        choices = re.findall(r"'([^']*)'", expected)
        hint = _suggest(value, choices) if isinstance(value, str) and choices else None
        mean = f"; did you mean '{hint}'?" if hint else ""
        return Code.SPEC_INVALID_VALUE, f"must be {expected} (got {got}){mean}"
    if kind == "string_pattern_mismatch" and ctx.get("pattern") == WEB_ADDRESS:
        return (Code.SPEC_INVALID_VALUE,
                f"must be a web address starting http:// or https:// (got {got})")
    if kind == "list_type":
        return Code.SPEC_INVALID_TYPE, f"must be a list (got {got})"
    if kind == "too_short":
        return (Code.SPEC_INVALID_VALUE, f"must have at least {ctx.get('min_length')} "
                f"item{'s' if ctx.get('min_length') != 1 else ''} "
                f"(got {ctx.get('actual_length')})")
    if kind == "too_long":
        return (Code.SPEC_INVALID_VALUE, f"must have at most {ctx.get('max_length')} items "
                f"(got {ctx.get('actual_length')})")
    return None


def _message(error: ErrorDetails, path: Path, where: Where | None) -> tuple[Code, str]:
    """(code, message) for one pydantic error at a user path."""
    raw = where.raw if where is not None else None
    problem = _Problem(kind=error["type"], value=error.get("input"),
                       got=_show(error.get("input"), raw),
                       unquote="; remove the quotes" if where is not None and where.quoted
                       else "", ctx=error.get("ctx") or {}, path=path)
    if problem.kind == "unknown_kind":
        return Code.SPEC_UNKNOWN_KIND, _kind_message(problem.value)[0]
    if problem.kind == "spec_conflict":
        return Code.SPEC_CONFLICT, error["msg"]
    for explain in (_key_message, _number_message, _text_or_list_message):
        found = explain(problem)
        if found is not None:
            return found
    message = re.sub(r"^Input should be", "must be", str(error["msg"]))
    return Code.SPEC_INVALID_VALUE, f"{message} (got {problem.got})"


def _under(path: Path, prefixes: set[Path]) -> bool:
    """Whether ``path`` or a path it lies under is one of ``prefixes`` (a look-up for each
    of its few prefixes, not a scan of the many)."""
    return any(path[:length] in prefixes for length in range(len(path) + 1))


#: The most problems listed for one spec, the first in the file; one more line says how
#: many more there may be (a file of 75,000 unknown keys is refused in 101 lines, at
#: once, not in 75,000 lines after a minute of looking for their misspellings).
LISTED_PROBLEMS = 100


def listed(diagnostics: list[Diagnostic], more: int = 0) -> list[Diagnostic]:
    """The first ``LISTED_PROBLEMS`` of ``diagnostics`` in the file's order, and, when
    there are others (or ``more`` not made into diagnostics), a last line saying how many
    there may be."""
    shown = sorted(set(diagnostics))
    more += max(0, len(shown) - LISTED_PROBLEMS)
    shown = shown[:LISTED_PROBLEMS]
    if more and shown:
        last = shown[-1]
        shown.append(Diagnostic(
            last.file, last.line, last.column, "",
            f"… and up to {more:,} more problems after these {LISTED_PROBLEMS} (the first "
            "in the file are listed): fix these and validate again", last.code))
    return shown


def _located(error: ErrorDetails, path: Path, positions: Mapping[Path, Where]
             ) -> tuple[int, int, Path, Where | None]:
    """Where a diagnostic about ``error`` (at the user path ``path``) points: its 0-based
    line and column, the path shown and its position."""
    kind = error["type"]
    if kind == "missing":
        shown = path[:-1]
    elif kind == "unknown_kind":
        _, key = _kind_message(error.get("input"))
        shown = (*path, key) if key is not None and (*path, key) in positions else path
    else:
        shown = path
    while shown and shown not in positions:
        shown = shown[:-1]
    where = positions.get(shown)
    if where is None:
        line, column = 0, 0
    elif kind in ("missing", "extra_forbidden", "unknown_kind") or shown != path:
        line, column = where.key or where.value
    elif (where.block or where.raw == "") and where.key is not None:
        line, column = where.key
    else:
        line, column = where.value
    return line, column, shown, where


def diagnostics_from_errors(errors: list[ErrorDetails], positions: Mapping[Path, Where],
                             filename: str, skip: set[Path]) -> tuple[list[Diagnostic], int]:
    """Diagnostics for the first ``LISTED_PROBLEMS`` errors in the file's order (none
    under a path of ``skip``), and how many others there are at most."""
    located = []
    unknown: dict[Path, list[str]] = {}  # by mapping, its first unknown keys
    for index, error in enumerate(errors):
        path = _user_path(tuple(error["loc"]))
        if _under(path, skip):
            continue
        if error["type"] == "extra_forbidden" and path:
            keys = unknown.setdefault(path[:-1], [])
            if len(keys) < LISTED_PROBLEMS:
                keys.append(str(path[-1]))
        located.append((*_located(error, path, positions), index, path))
    located.sort(key=lambda found: (found[0], found[1], found[4]))
    # A misspelt key is reported once, as unknown with a suggestion, not also as missing.
    suggested: dict[Path, set[str]] = {}
    out: list[Diagnostic] = []
    for taken, (line, column, shown, where, index, path) in enumerate(located):
        if len(out) == LISTED_PROBLEMS:
            return out, len(located) - taken
        error = errors[index]
        if error["type"] == "missing":
            if path[:-1] not in suggested:
                model = _model_at(path[:-1])
                suggested[path[:-1]] = {hint for key in unknown.get(path[:-1], ())
                                        if (hint := _suggest(key, _keys_of(model)) if model
                                            else None)}
            if path[-1] in suggested[path[:-1]]:
                continue
        code, message = _message(error, path, where if shown == path else None)
        out.append(Diagnostic(filename, line + 1, column + 1, path_to_str(shown), message, code))
    return out, 0
