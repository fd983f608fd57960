"""Loading a ``*.privspec.yaml`` file into a :class:`privspec.spec.models.Spec`, with positions.

``load_spec(path)`` returns a ``Spec`` or raises :class:`SpecError` carrying
every problem found, each a :class:`Diagnostic` with file, line, column, the
path in the spec as the user wrote it, what is wrong and what is allowed.

The YAML is read safely and strictly:

* no object construction from tags: the parser builds a node tree and this
  module turns it into plain ``dict``/``list``/``str``/``int``/``float``/
  ``bool``/``None``; any other tag is refused;
* scalars resolve as in YAML 1.2's core schema, so ``1e-5`` and ``1E6`` are
  floats, ``yes``/``no``/``on``/``off`` are strings, ``010`` is ten, and
  ``2024-01-01`` stays a string;
* duplicate keys are errors; aliases (``*name``) are refused, so no
  "billion laughs"; nesting depth and file size are capped; one document per file.

Specs built in Python (``Spec.model_validate(dict)``) keep working without
this module; it only adds positions and friendly messages.

This module must not import numpy, scipy or dp-accounting.
"""

from __future__ import annotations

import difflib
import json
import math
import os
import re
import stat
import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, get_args

import yaml
from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails
from yaml.composer import Composer
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import BaseResolver
from yaml.scanner import Scanner

from privspec.errors import Code
from privspec.spec.diagnostics import Diagnostic, SpecError
from privspec.spec.models import (
    MECHANISM_KINDS,
    NODE_TYPES,
    RELATION_CHECKED_BY_CALLER,
    Relation,
    Spec,
    _Node,
    relation_problems,
)

#: Largest spec file accepted, in bytes (and characters).
MAX_FILE_BYTES = 1_000_000
#: Deepest nesting of mappings and lists accepted.
MAX_DEPTH = 64

_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_STR_TAG = "tag:yaml.org,2002:str"
_INT_TAG = "tag:yaml.org,2002:int"
_FLOAT_TAG = "tag:yaml.org,2002:float"
_BOOL_TAG = "tag:yaml.org,2002:bool"
_NULL_TAG = "tag:yaml.org,2002:null"

# Characters YAML allows in a stream (YAML 1.2 §5.1, as PyYAML checks them).
_NOT_PRINTABLE = re.compile(
    "[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
)
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")

Path = tuple[str | int, ...]


class _ParseError(Exception):
    """A problem that stops parsing, at a 0-based line and column."""

    def __init__(self, code: Code, message: str, line: int, column: int) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.line = line
        self.column = column


# ---------------------------------------------------------------------------
# The YAML side: a safe, strict parser that keeps positions.
# ---------------------------------------------------------------------------


def _event_mark(event: yaml.Event) -> tuple[int, int]:
    mark = event.start_mark
    return (mark.line, mark.column) if mark is not None else (0, 0)


class _Loader(Reader, Scanner, Parser, Composer, BaseResolver):
    """Parser and composer only (no constructor): YAML text to a node tree.

    Refuses aliases and caps nesting depth while composing.
    """

    def __init__(self, stream: str) -> None:
        Reader.__init__(self, stream)
        Scanner.__init__(self)
        Parser.__init__(self)
        Composer.__init__(self)
        BaseResolver.__init__(self)
        self.depth = 0

    def next_event(self) -> yaml.Event:
        """The next event, not consumed (typed wrapper of PyYAML's peek_event)."""
        return typing.cast(yaml.Event, self.peek_event())  # type: ignore[no-untyped-call]

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        event = self.next_event()
        line, column = _event_mark(event)
        if isinstance(event, yaml.AliasEvent):
            raise _ParseError(
                Code.YAML_ALIAS,
                f"aliases (*{event.anchor}) are not supported in a spec: write the value out",
                line, column)
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                raise _ParseError(Code.YAML_TOO_DEEP, f"nested more than {MAX_DEPTH} levels deep",
                                  line, column)
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


# YAML 1.2 core schema (https://yaml.org/spec/1.2.2/#1032-tag-resolution).
_Loader.add_implicit_resolver(_NULL_TAG, re.compile(r"(?:~|null|Null|NULL|)\Z"),
                              ["~", "n", "N", ""])
_Loader.add_implicit_resolver(_BOOL_TAG, re.compile(r"(?:true|True|TRUE|false|False|FALSE)\Z"),
                              list("tTfF"))
_Loader.add_implicit_resolver(_INT_TAG, re.compile(r"(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)\Z"),
                              list("-+0123456789"))
_Loader.add_implicit_resolver(
    _FLOAT_TAG,
    re.compile(r"(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
               r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))\Z"),
    list("-+.0123456789"),
)


def _int_from(text: str) -> int:
    body = text.lstrip("+-")
    sign = -1 if text.startswith("-") else 1
    if body.startswith("0o"):
        return sign * int(body[2:], 8)
    if body.startswith("0x"):
        return sign * int(body[2:], 16)
    return sign * int(body, 10)


def _float_from(text: str) -> float:
    lowered = text.lower()
    if lowered in (".inf", "+.inf"):
        return math.inf
    if lowered == "-.inf":
        return -math.inf
    if lowered == ".nan":
        return math.nan
    return float(text)


@dataclass(frozen=True)
class _Where:
    """Where a value sits: its key's and its value's 0-based (line, column)."""

    key: tuple[int, int] | None
    value: tuple[int, int]
    block: bool
    raw: str | None
    quoted: bool = False


def _mark(node: Node) -> tuple[int, int]:
    return node.start_mark.line, node.start_mark.column


class _Builder:
    """Turns a node tree into plain Python data, recording positions and
    collecting problems that do not stop loading (duplicate keys, odd tags)."""

    def __init__(self) -> None:
        self.positions: dict[Path, _Where] = {}
        self.problems: list[tuple[Code, str, tuple[int, int], Path]] = []

    def where(self, node: Node, key: Node | None) -> _Where:
        block = isinstance(node, MappingNode | SequenceNode) and not node.flow_style
        raw = node.value if isinstance(node, ScalarNode) else None
        quoted = isinstance(node, ScalarNode) and node.style in ("'", '"')
        return _Where(_mark(key) if key is not None else None, _mark(node), block, raw, quoted)

    def build(self, node: Node, path: Path) -> Any:
        if isinstance(node, MappingNode):
            return self._mapping(node, path)
        if isinstance(node, SequenceNode):
            if node.tag != _SEQ_TAG:
                self._bad_tag(node, path)
            items = []
            for i, item in enumerate(node.value):
                self.positions[(*path, i)] = self.where(item, None)
                items.append(self.build(item, (*path, i)))
            return items
        assert isinstance(node, ScalarNode)
        return self._scalar(node, path)

    def _bad_tag(self, node: Node, path: Path) -> None:
        tag = node.tag
        shown = "!!" + tag.removeprefix("tag:yaml.org,2002:") if tag.startswith("tag:") else tag
        self.problems.append((Code.YAML_UNSUPPORTED_TAG,
                              f"the tag {shown} is not supported in a spec; remove it",
                              _mark(node), path))

    def _scalar(self, node: ScalarNode, path: Path) -> Any:
        text = node.value
        try:
            if node.tag == _STR_TAG:
                return text
            if node.tag == _NULL_TAG:
                return None
            if node.tag == _BOOL_TAG:
                return text.lower() == "true"
            if node.tag == _INT_TAG:
                return _int_from(text)
            if node.tag == _FLOAT_TAG:
                return _float_from(text)
        except ValueError:
            kind = "a whole number" if node.tag == _INT_TAG else "a number"
            self.problems.append((Code.YAML_INVALID_SCALAR,
                                  f"cannot read {_short(text)} as {kind}", _mark(node), path))
            return text
        self._bad_tag(node, path)
        return text

    def _mapping(self, node: MappingNode, path: Path) -> dict[str, Any]:
        if node.tag != _MAP_TAG:
            self._bad_tag(node, path)
        result: dict[str, Any] = {}
        first_line: dict[str, int] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, ScalarNode):
                self.problems.append((Code.YAML_COMPLEX_KEY,
                                      "a key must be a plain name, not a mapping or a list",
                                      _mark(key_node), path))
                continue
            key = key_node.value  # keys are names: always their text
            if key in result:
                self.problems.append((
                    Code.YAML_DUPLICATE_KEY,
                    f"duplicate key '{_short(key)}' (first given on line {first_line[key]}); "
                    "a key may appear once per mapping",
                    _mark(key_node), (*path, key)))
                continue
            first_line[key] = key_node.start_mark.line + 1
            self.positions[(*path, key)] = self.where(value_node, key_node)
            result[key] = self.build(value_node, (*path, key))
        return result


def _short(text: str, limit: int = 40) -> str:
    text = text.replace("\n", "\\n")
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ---------------------------------------------------------------------------
# From pydantic's errors to what the user wrote.
# ---------------------------------------------------------------------------


def path_to_str(path: Iterable[str | int]) -> str:
    """``('mechanism', 'compose', 1, 'mechanism')`` → ``mechanism.compose[1].mechanism``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _IDENTIFIER.match(part):
            out += f".{part}" if out else part
        else:
            out += f"[{json.dumps(part, ensure_ascii=False)}]"
    return out


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


def _is_mechanism(tp: Any) -> bool:
    if typing.get_origin(tp) not in (typing.Union, types.UnionType):
        return False
    args = [_unwrap(a) for a in typing.get_args(tp)]
    return all(isinstance(a, type) and issubclass(a, _Node) for a in args)


def _type_at(path: Path) -> Any:
    """The declared type at a user path, or None when the path leaves the models."""
    tp: Any = Spec
    for part in path:
        tp = _unwrap(tp)
        if _is_mechanism(tp):
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
    close = difflib.get_close_matches(word.lower(), choices, n=1, cutoff=0.75)
    return close[0] if close else None


def _number(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _show(value: Any, raw: str | None) -> str:
    """A value as the user would recognise it in their file."""
    if value is None:
        return raw or "nothing"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        if raw is not None:
            return _short(raw)
        if isinstance(value, float) and not math.isfinite(value):
            return ".nan" if math.isnan(value) else (".inf" if value > 0 else "-.inf")
        return _short(repr(value))
    if isinstance(value, str):
        return "'" + _short(value) + "'"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return _short(repr(value))


def _kind_message(value: Any) -> tuple[str, str | None]:
    """Message for an unknown or malformed mechanism, and the kind key if there is one."""
    kinds = ", ".join(MECHANISM_KINDS)
    if isinstance(value, dict) and len(value) == 1:
        kind = next(iter(value))
        if "shuffl" in kind.lower():
            return (f"'{_short(kind)}' is not a kind privspec can account: shuffling is not "
                    "Poisson sampling, and no tight accountant for shuffled batches is "
                    "available; describe how batches are really drawn (poisson_sampled, "
                    "fixed_size_sampled, dpsgd) or give the published guarantee as "
                    "approximate_dp", kind)
        hint = _suggest(kind, MECHANISM_KINDS)
        mean = f"did you mean '{hint}'? " if hint else ""
        return f"unknown mechanism kind '{_short(kind)}'; {mean}kinds: {kinds}", kind
    if isinstance(value, dict):
        got = ("an empty mapping" if not value else
               f"{len(value)} keys: " + ", ".join(f"'{_short(str(k))}'" for k in value))
        return (f"a mechanism is a mapping with exactly one key, its kind (got {got}); "
                f"kinds: {kinds}", None)
    return (f"a mechanism is a mapping with one key naming its kind, such as "
            f"'gaussian: {{sigma: 1.0}}' (got {_show(value, None)}); kinds: {kinds}", None)


def _message(error: ErrorDetails, path: Path, where: _Where | None) -> tuple[Code, str]:
    """(code, message) for one pydantic error at a user path."""
    raw = where.raw if where is not None else None
    unquote = "; remove the quotes" if where is not None and where.quoted else ""
    kind = error["type"]
    value = error.get("input")
    ctx: Mapping[str, Any] = error.get("ctx") or {}
    got = _show(value, raw)
    if kind == "extra_forbidden":
        key = str(path[-1])
        model = _model_at(path[:-1])
        allowed = _keys_of(model) if model else []
        hint = _suggest(key, allowed)
        if hint:
            return Code.SPEC_UNKNOWN_KEY, f"unknown key '{_short(key)}'; did you mean '{hint}'?"
        if key in NODE_TYPES and "mechanism" in allowed:
            return (Code.SPEC_UNKNOWN_KEY, f"unknown key '{_short(key)}'; a mechanism kind goes "
                    "under 'mechanism:'")
        return (Code.SPEC_UNKNOWN_KEY, f"unknown key '{_short(key)}'; allowed keys: "
                + ", ".join(allowed))
    if kind == "missing":
        key = str(path[-1])
        model = _model_at(path[:-1])
        field = model.model_fields.get(key) if model else None
        about = ""
        if field is not None and field.description:
            about = " (" + field.description.rstrip(".") + ")"
        return Code.SPEC_MISSING_KEY, f"missing required key '{key}'{about}"
    if kind == "unknown_kind":
        return Code.SPEC_UNKNOWN_KIND, _kind_message(value)[0]
    if kind == "spec_conflict":
        return Code.SPEC_CONFLICT, error["msg"]
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        model = _model_at(path)
        keys = f" with keys {', '.join(_keys_of(model))}" if model else ""
        return Code.SPEC_INVALID_TYPE, f"must be a mapping{keys} (got {got})"
    bounds = {
        "greater_than": ("greater than", "gt"),
        "greater_than_equal": ("at least", "ge"),
        "less_than": ("less than", "lt"),
        "less_than_equal": ("at most", "le"),
    }
    if kind in bounds:
        words, key = bounds[kind]
        return Code.SPEC_INVALID_VALUE, f"must be {words} {_number(ctx.get(key))} (got {got})"
    if kind == "finite_number":
        return Code.SPEC_INVALID_VALUE, f"must be a finite number (got {got})"
    if kind in ("int_type", "int_parsing", "int_from_float"):
        if isinstance(value, str):
            return Code.SPEC_INVALID_TYPE, f"must be a whole number, not text (got {got}){unquote}"
        if isinstance(value, float) and value.is_integer():
            return (Code.SPEC_INVALID_TYPE,
                    f"must be a whole number, written without a decimal point (got {got})")
        return Code.SPEC_INVALID_TYPE, f"must be a whole number (got {got})"
    if kind in ("float_type", "float_parsing"):
        if isinstance(value, str):
            return Code.SPEC_INVALID_TYPE, f"must be a number, not text (got {got}){unquote}"
        return Code.SPEC_INVALID_TYPE, f"must be a number (got {got})"
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
    if kind == "list_type":
        return Code.SPEC_INVALID_TYPE, f"must be a list (got {got})"
    if kind == "too_short":
        return (Code.SPEC_INVALID_VALUE, f"must have at least {ctx.get('min_length')} "
                f"item{'s' if ctx.get('min_length') != 1 else ''} "
                f"(got {ctx.get('actual_length')})")
    if kind == "too_long":
        return (Code.SPEC_INVALID_VALUE, f"must have at most {ctx.get('max_length')} items "
                f"(got {ctx.get('actual_length')})")
    message = re.sub(r"^Input should be", "must be", str(error["msg"]))
    return Code.SPEC_INVALID_VALUE, f"{message} (got {got})"


def _under(path: Path, prefixes: set[Path]) -> bool:
    return any(path[: len(p)] == p for p in prefixes)


def _diagnostics_from_errors(errors: list[ErrorDetails], positions: Mapping[Path, _Where],
                             filename: str, skip: set[Path]) -> list[Diagnostic]:
    # A misspelt key is reported once, as unknown with a suggestion, not also as missing.
    suggested: set[Path] = set()
    for error in errors:
        path = _user_path(tuple(error["loc"]))
        if error["type"] == "extra_forbidden" and path:
            model = _model_at(path[:-1])
            hint = _suggest(str(path[-1]), _keys_of(model)) if model else None
            if hint:
                suggested.add((*path[:-1], hint))
    out: list[Diagnostic] = []
    for error in errors:
        path = _user_path(tuple(error["loc"]))
        kind = error["type"]
        if _under(path, skip) or (kind == "missing" and path in suggested):
            continue
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
        code, message = _message(error, path, where if shown == path else None)
        if where is None:
            line, column = 0, 0
        elif kind in ("missing", "extra_forbidden", "unknown_kind") or shown != path:
            line, column = where.key or where.value
        elif (where.block or where.raw == "") and where.key is not None:
            line, column = where.key
        else:
            line, column = where.value
        out.append(Diagnostic(filename, line + 1, column + 1, path_to_str(shown), message, code))
    return out


# ---------------------------------------------------------------------------
# Public API.
# ---------------------------------------------------------------------------


def _at(filename: str, text: str, index: int, code: Code, message: str) -> Diagnostic:
    line = text.count("\n", 0, index)
    column = index - (text.rfind("\n", 0, index) + 1)
    return Diagnostic(filename, line + 1, column + 1, "", message, code)


def _yaml_problem(error: yaml.YAMLError, text: str, filename: str) -> Diagnostic:
    if isinstance(error, yaml.MarkedYAMLError) and error.problem_mark is not None:
        mark = error.problem_mark
        if 0 <= mark.index < len(text) and text[mark.index] == "\t":
            return Diagnostic(filename, mark.line + 1, mark.column + 1, "",
                              "tab character: YAML indents with spaces, never tabs",
                              Code.YAML_TAB)
        message = f"invalid YAML: {error.problem}"
        context = error.context_mark
        if error.context and context is not None and context.line != mark.line:
            message += f" ({error.context} that starts on line {context.line + 1})"
        return Diagnostic(filename, mark.line + 1, mark.column + 1, "", message, Code.YAML_SYNTAX)
    return Diagnostic(filename, 1, 1, "", f"invalid YAML: {error}", Code.YAML_SYNTAX)


def _parse(text: str, filename: str) -> tuple[Node | None, list[Diagnostic]]:
    """The single document's node tree (None when there is none), or diagnostics."""
    loader = _Loader(text)
    loader.name = filename
    try:
        loader.get_event()  # type: ignore[no-untyped-call]  # the StreamStartEvent
        if loader.check_event(yaml.StreamEndEvent):
            return None, []
        node = loader.compose_document()
        if not loader.check_event(yaml.StreamEndEvent):
            line, column = _event_mark(loader.next_event())
            return None, [Diagnostic(
                filename, line + 1, column + 1, "",
                "a spec file holds one YAML document; remove this second '---' document",
                Code.YAML_MULTIPLE_DOCUMENTS)]
        return node, []
    except _ParseError as problem:
        return None, [Diagnostic(filename, problem.line + 1, problem.column + 1, "",
                                 problem.message, problem.code)]
    except yaml.YAMLError as error:
        return None, [_yaml_problem(error, text, filename)]
    except RecursionError:  # pragma: no cover - depth is capped before this
        return None, [Diagnostic(filename, 1, 1, "", f"nested more than {MAX_DEPTH} levels deep",
                                 Code.YAML_TOO_DEEP)]
    finally:
        loader.dispose()


def _read_text(text: str, filename: str) -> tuple[Any, _Builder]:
    """Plain data and positions from YAML text; raises SpecError for what stops reading."""
    if len(text) > MAX_FILE_BYTES:
        raise SpecError([Diagnostic(filename, 1, 1, "",
                                    f"larger than {MAX_FILE_BYTES:,} characters; a spec is "
                                    "a short file", Code.IO_TOO_LARGE)])
    text = text.removeprefix("\ufeff")
    bad = _NOT_PRINTABLE.search(text)
    if bad:
        raise SpecError([_at(filename, text, bad.start(), Code.YAML_INVALID_CHARACTER,
                             f"character U+{ord(bad.group()):04X} is not allowed in YAML "
                             "text (is this a binary file?)")])
    node, problems = _parse(text, filename)
    if problems:
        raise SpecError(problems)
    if node is None or (isinstance(node, ScalarNode) and node.tag == _NULL_TAG):
        raise SpecError([Diagnostic(filename, 1, 1, "",
                                    "the file is empty; a spec is a mapping that starts with "
                                    "'privspec: 1'", Code.SPEC_EMPTY)])
    if not isinstance(node, MappingNode):
        what = "a list" if isinstance(node, SequenceNode) else f"the value {_short(node.value)!r}"
        line, column = _mark(node)
        raise SpecError([Diagnostic(
            filename, line + 1, column + 1, "",
            f"a spec is a mapping of keys ({', '.join(Spec.model_fields)}), not {what}",
            Code.SPEC_NOT_A_MAPPING)])
    builder = _Builder()
    builder.positions[()] = _Where(None, _mark(node), True, None)
    return builder.build(node, ()), builder


def load_yaml_text(text: str, filename: str = "<string>") -> dict[str, Any]:
    """The plain data of a spec file (a mapping), read as ``load_spec_text`` reads it
    but not validated against the spec models: for JSON Schema checks and tools.

    Raises :class:`SpecError` if the text is not YAML that privspec accepts.
    """
    data, builder = _read_text(text, filename)
    if builder.problems:
        raise SpecError([Diagnostic(filename, pos[0] + 1, pos[1] + 1, path_to_str(path),
                                    message, code)
                         for code, message, pos, path in builder.problems])
    assert isinstance(data, dict)
    return data


def _relation_errors(data: Any) -> list[ErrorDetails]:
    """The relation's conflicts (``spec.relation_problems``) as pydantic errors, so that
    they are reported with the field errors that stop validation before it checks them."""
    relation = data.get("neighbouring") if isinstance(data, dict) else None
    if not isinstance(relation, str) or relation not in get_args(Relation):
        return []
    return [ErrorDetails(type="spec_conflict", loc=("mechanism", *path), msg=message,
                         input=None)
            for path, message in relation_problems(data.get("mechanism"), relation)]


def load_spec_text(text: str, filename: str = "<string>") -> Spec:
    """Parse and validate a spec given as text; ``filename`` names it in diagnostics.

    Raises :class:`SpecError` with every problem found.
    """
    data, builder = _read_text(text, filename)
    diagnostics = [Diagnostic(filename, pos[0] + 1, pos[1] + 1, path_to_str(path), message, code)
                   for code, message, pos, path in builder.problems]
    errors = _relation_errors(data)
    try:
        spec = Spec.model_validate(data, context={RELATION_CHECKED_BY_CALLER: True})
    except ValidationError as error:
        errors = [*error.errors(), *errors]
    if errors:
        skip = {path for _, _, _, path in builder.problems}
        diagnostics += _diagnostics_from_errors(errors, builder.positions, filename, skip)
    if not diagnostics:
        return spec
    raise SpecError(sorted(set(diagnostics)))


def load_spec(path: str | os.PathLike[str]) -> Spec:
    """Read, parse and validate a ``*.privspec.yaml`` file.

    Raises :class:`SpecError` with every problem found (a missing file, a
    directory or an unreadable file included): never a traceback for bad input.
    """
    filename = os.fspath(path)
    try:
        info = os.stat(filename)
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(filename)
        with open(filename, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise SpecError([Diagnostic(filename, 1, 1, "", "no such file", Code.IO_NOT_FOUND)]) from None
    except IsADirectoryError:
        raise SpecError([Diagnostic(filename, 1, 1, "", "is a directory, not a spec file",
                                    Code.IO_IS_A_DIRECTORY)]) from None
    except OSError as error:
        reason = error.strerror or str(error)
        raise SpecError([Diagnostic(filename, 1, 1, "", f"cannot read the file: {reason}",
                                    Code.IO_UNREADABLE)]) from None
    if len(data) > MAX_FILE_BYTES:
        raise SpecError([Diagnostic(filename, 1, 1, "",
                                    f"larger than {MAX_FILE_BYTES:,} bytes; a spec is a short "
                                    "file", Code.IO_TOO_LARGE)])
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        prefix = data[: error.start].decode("utf-8", errors="replace")
        raise SpecError([_at(filename, prefix, len(prefix), Code.IO_ENCODING,
                             f"not UTF-8 text: byte 0x{data[error.start]:02X} cannot be "
                             "decoded (is this a binary file?)")]) from None
    return load_spec_text(text, filename)


__all__ = ["MAX_DEPTH", "MAX_FILE_BYTES", "SpecError", "load_spec", "load_spec_text",
           "load_yaml_text", "path_to_str"]


def spec_from_data(data: dict[str, Any], name: str = "<python>") -> Spec:
    """Validate spec data (as a YAML file would hold it) with the loader's diagnostics."""
    return load_spec_text(dump_spec_data(data), name)


def _plain(value: Any) -> Any:
    """JSON-like data with plain Python numbers (numpy scalars and tuples converted)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    for kind in (int, float):  # numpy scalars: item() gives the Python number
        item = getattr(value, "item", None)
        if item is not None and isinstance(item(), kind):
            return item()
    return value


def dump_spec_data(data: dict[str, Any]) -> str:
    """Spec data as YAML text, in the order given."""
    return yaml.safe_dump(_plain(data), sort_keys=False, allow_unicode=True, width=100)
