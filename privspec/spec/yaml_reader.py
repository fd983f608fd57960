"""Reading YAML text into plain data with positions, safely and strictly.

* no object construction from tags: this module turns the parser's events (libyaml's
  where it gives the same as PyYAML's own, else PyYAML's) straight into plain
  ``dict``/``list``/``str``/``int``/``float``/``bool``/``None``; any other tag is
  refused;
* scalars resolve as in YAML 1.2's core schema, so ``1e-5`` and ``1E6`` are
  floats, ``yes``/``no``/``on``/``off`` are strings, ``010`` is ten, and
  ``2024-01-01`` stays a string;
* duplicate keys are errors; aliases (``*name``) are refused, so no
  "billion laughs"; file size, values and nesting depth are capped; one document per
  file.

Every value's position is kept (``Builder.positions``), so that later problems can be
reported at the line and column the user wrote.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml
from yaml.composer import ComposerError
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.scanner import Scanner

from privspec.errors import Code
from privspec.spec.diagnostics import Diagnostic, SpecError, excerpt
from privspec.spec.models import (
    Spec,
)

#: Largest spec file accepted, in bytes (and characters).
MAX_FILE_BYTES = 1_000_000
#: Deepest nesting of mappings and lists accepted.
MAX_DEPTH = 64
#: Most YAML nodes (keys, values, lists and mappings) a spec may hold: 50 times the
#: largest example's (the Census's 80 queries, 968), 3,000 stages of an imported DP-SGD
#: history, or about 5,000 of a `compose` list.  The reader stops at the next one,
#: before it has parsed the rest, so that no spec makes `validate` take more than ten
#: times as long as a short one, nor 100 MB (``benchmarks/validate_worst.py``).
MAX_NODES = 50_000
TOO_MANY_NODES = (f"more than {MAX_NODES:,} YAML values (keys, numbers, strings, lists and "
                  "mappings); the reader stops here. A spec is a short file: equal stages "
                  "are written once with `repeat`")
#: Why: the reader's stack, not the accounting (which merges equal stages at any depth).
TOO_DEEP = (f"nested more than {MAX_DEPTH} YAML levels deep (each nested mechanism takes "
            "two, a `compose` stage three: about 20 nested stages): the reader stops there "
            "to keep its stack bounded. Write the nesting flatter: a `repeat` count "
            "multiplies, and the stages of nested `compose` lists can be listed in one")

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
#: Characters a text value may not hold once its escapes are read ("\u0000" in quotes):
#: controls other than tab and newline, and the bidirectional embeddings, overrides and
#: isolates that make a report's text display other than it reads (Boucher & Anderson
#: 2023, "Trojan Source").
_HIDDEN_IN_TEXT = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")

Path = tuple[str | int, ...]
#: A parser's event or mark: PyYAML's classes, or libyaml's (typed alike as Any).
Event = Any
Mark = Any


class _ParseError(Exception):
    """A problem that stops parsing, at a 0-based line and column."""

    def __init__(self, code: Code, message: str, line: int, column: int) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.line = line
        self.column = column


# ---------------------------------------------------------------------------
# The YAML side: a safe, strict parser's events, read with their positions.
# ---------------------------------------------------------------------------


class _PythonParser(Reader, Scanner, Parser):
    """PyYAML's pure-Python parser: YAML text to events (no composer, no constructor)."""

    def __init__(self, stream: str) -> None:
        Reader.__init__(self, stream)
        Scanner.__init__(self)
        Parser.__init__(self)


#: libyaml's parser, when PyYAML was built with it (its wheels are): 15 times faster than
#: PyYAML's own, and used where the two give the same events (``_libyaml_reads``).
LIBYAML: Callable[[str], Any] | None = None
try:
    from yaml._yaml import CParser

    LIBYAML = CParser
except ImportError:  # pragma: no cover - PyYAML without libyaml
    pass


class _UnsureError(Exception):
    """libyaml's events may differ from PyYAML's here: read the text with PyYAML's."""


#: What libyaml reads otherwise than PyYAML in places (tabs, byte-order marks, `?` within
#: a plain value in brackets, a comment right after a block scalar's `|` or `>`), opens
#: rarely used syntax (tags, directives), or breaks lines other than with ``\n``: a text
#: with one is read by PyYAML's parser alone.
_NOT_FOR_LIBYAML = re.compile("[\t\r\x85\u2028\u2029\ufeff?!%]|[|>][-+0-9]*#")


def _libyaml_reads(text: str) -> bool:
    """Whether libyaml's parser gives PyYAML's events for the text, as far as can be told
    before parsing (``_NOT_FOR_LIBYAML``; it also places the end of a text without a
    final line break on the line after)."""
    return text.endswith("\n") and _NOT_FOR_LIBYAML.search(text) is None


def _libyaml_events(parser: Any) -> Callable[[], Event]:
    """The parser's ``get_event``, stopping (``_UnsureError``) at an empty plain value, which
    libyaml places elsewhere than PyYAML."""
    get_event = parser.get_event

    def next_event() -> Event:
        event = get_event()
        if type(event) is yaml.ScalarEvent and not event.value and event.implicit[0]:
            raise _UnsureError
        return event

    return next_event


# YAML 1.2 core schema (https://yaml.org/spec/1.2.2/#1032-tag-resolution): the tags a
# plain scalar may resolve to, by its first character, tried in order (PyYAML's
# BaseResolver.resolve does the same with these four).
_IMPLICIT: dict[str, list[tuple[str, re.Pattern[str]]]] = {}
for _tag, _pattern, _first in (
        (_NULL_TAG, r"(?:~|null|Null|NULL|)\Z", ["~", "n", "N", ""]),
        (_BOOL_TAG, r"(?:true|True|TRUE|false|False|FALSE)\Z", list("tTfF")),
        (_INT_TAG, r"(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)\Z", list("-+0123456789")),
        (_FLOAT_TAG, r"(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
                     r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))\Z", list("-+.0123456789"))):
    for _character in _first:
        _IMPLICIT.setdefault(_character, []).append((_tag, re.compile(_pattern)))


def _scalar_tag(event: Event) -> str:
    """The scalar's tag: its own, else the one its plain text resolves to."""
    tag: str | None = event.tag
    if tag is not None and tag != "!":
        return tag
    if event.implicit[0]:
        text = event.value
        for resolved, pattern in _IMPLICIT.get(text[:1], ()):
            if pattern.match(text):
                return resolved
    return _STR_TAG


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


@dataclass(frozen=True, slots=True)
class Where:
    """Where a value sits: its key's and its value's 0-based (line, column), and where
    the value ends."""

    key: tuple[int, int] | None
    value: tuple[int, int]
    block: bool
    raw: str | None
    quoted: bool = False
    end: tuple[int, int] | None = None


def _mark(event: Event) -> tuple[int, int]:
    mark = event.start_mark
    return mark.line, mark.column


class Builder:
    """Plain Python data from a parser's events, with every value's position; stops at
    an alias and at the caps, and collects the problems that do not stop loading
    (duplicate keys, odd tags, hidden characters)."""

    def __init__(self, next_event: Callable[[], Event]) -> None:
        self.positions: dict[Path, Where] = {}
        self.problems: list[tuple[Code, str, tuple[int, int], Path]] = []
        self._next = next_event
        self._nodes = 0
        self._anchors: dict[str, Mark] = {}
        self._ended: Mark | None = None  # the end of the last list or mapping read

    def node(self, depth: int) -> Event | None:
        """The next node's first event, checked against the caps; None at the end of a
        list or mapping."""
        event = self._next()
        kind = type(event)
        if kind is yaml.SequenceEndEvent or kind is yaml.MappingEndEvent:
            self._ended = event.end_mark
            return None
        if kind is yaml.AliasEvent:
            raise _ParseError(
                Code.YAML_ALIAS,
                f"aliases (*{short(str(event.anchor))}) are not supported in a spec: write the "
                "value out",
                *_mark(event))
        self._nodes += 1
        if self._nodes > MAX_NODES:
            raise _ParseError(Code.IO_TOO_LARGE, TOO_MANY_NODES, *_mark(event))
        if depth > MAX_DEPTH:
            raise _ParseError(Code.YAML_TOO_DEEP, TOO_DEEP, *_mark(event))
        anchor = event.anchor
        if anchor is not None:
            if anchor in self._anchors:
                raise ComposerError(f"found duplicate anchor '{short(anchor)}'; first occurrence",
                                    self._anchors[anchor], "second occurrence",
                                    event.start_mark)
            self._anchors[anchor] = event.start_mark
        return event

    def build(self, event: Event, path: Path, depth: int,
              key: tuple[int, int] | None) -> Any:
        """The value that starts with ``event`` (at ``depth``), its position kept at
        ``path``."""
        mark: Mark = event.start_mark
        if type(event) is yaml.ScalarEvent:
            end: Mark = event.end_mark
            self.positions[path] = Where(key, (mark.line, mark.column), False, event.value,
                                         event.style == "'" or event.style == '"',
                                         (end.line, end.column))
            return self._scalar(event, path)
        mapping = type(event) is yaml.MappingStartEvent
        if event.tag not in (None, "!", _MAP_TAG if mapping else _SEQ_TAG):
            self._bad_tag(event.tag, (mark.line, mark.column), path)
        value = self._mapping(path, depth) if mapping else self._sequence(path, depth)
        assert self._ended is not None
        self.positions[path] = Where(key, (mark.line, mark.column), not event.flow_style,
                                     None, False, (self._ended.line, self._ended.column))
        return value

    def _discard(self, event: Event, depth: int) -> None:
        """Read the value that starts with ``event``, keeping nothing of it."""
        kept = self.positions, self.problems
        self.positions, self.problems = {}, []
        try:
            self.build(event, (), depth, None)
        finally:
            self.positions, self.problems = kept

    def _sequence(self, path: Path, depth: int) -> list[Any]:
        items: list[Any] = []
        while (event := self.node(depth + 1)) is not None:
            items.append(self.build(event, (*path, len(items)), depth + 1, None))
        return items

    def _bad_tag(self, tag: str, mark: tuple[int, int], path: Path) -> None:
        shown = "!!" + tag.removeprefix("tag:yaml.org,2002:") if tag.startswith("tag:") else tag
        self.problems.append((Code.YAML_UNSUPPORTED_TAG,
                              f"the tag {short(shown)} is not supported in a spec; remove it",
                              mark, path))

    def _scalar(self, event: Event, path: Path) -> Any:
        text = event.value
        tag = _scalar_tag(event)
        try:
            if tag == _STR_TAG:
                self._refuse_hidden(event, path)
                return text
            if tag == _NULL_TAG:
                return None
            if tag == _BOOL_TAG:
                return text.lower() == "true"
            if tag == _INT_TAG:
                return _int_from(text)
            if tag == _FLOAT_TAG:
                return _float_from(text)
        except ValueError:
            kind = "a whole number" if tag == _INT_TAG else "a number"
            self.problems.append((Code.YAML_INVALID_SCALAR,
                                  f"cannot read {short(text)} as {kind}", _mark(event), path))
            return text
        self._bad_tag(tag, _mark(event), path)
        return text

    def _refuse_hidden(self, event: Event, path: Path) -> bool:
        """A problem, and True, when the text (a value, or a key: diagnostics echo keys)
        holds a character of ``_HIDDEN_IN_TEXT``."""
        hidden = _HIDDEN_IN_TEXT.search(event.value)
        if hidden:
            self.problems.append((
                Code.YAML_INVALID_CHARACTER,
                f"the text holds U+{ord(hidden.group()):04X}, a control or "
                "bidirectional-override character that reports would carry unseen; "
                "remove it", _mark(event), path))
        return hidden is not None

    def _mapping(self, path: Path, depth: int) -> dict[str, Any]:
        result: dict[str, Any] = {}
        first_line: dict[str, int] = {}
        while (key_event := self.node(depth + 1)) is not None:
            if type(key_event) is not yaml.ScalarEvent:
                self._discard(key_event, depth + 1)
                self.problems.append((Code.YAML_COMPLEX_KEY,
                                      "a key must be a plain name, not a mapping or a list",
                                      _mark(key_event), path))
            value_event = self.node(depth + 1)
            assert value_event is not None  # (the parser gives every key a value)
            key = getattr(key_event, "value", None)  # a name: always its text
            if key is None or self._refuse_hidden(key_event, path):
                self._discard(value_event, depth + 1)
            elif key in result:
                self.problems.append((
                    Code.YAML_DUPLICATE_KEY,
                    f"duplicate key '{short(key)}' (first given on line {first_line[key]}); "
                    "a key may appear once per mapping",
                    _mark(key_event), (*path, key)))
                self._discard(value_event, depth + 1)
            else:
                first_line[key] = key_event.start_mark.line + 1
                result[key] = self.build(value_event, (*path, key), depth + 1,
                                         _mark(key_event))
        return result


def short(text: str, limit: int = 40) -> str:
    """``text`` on one line, cut to ``limit`` characters (for a message)."""
    return excerpt(text[:limit + 1].replace("\n", "\\n"), limit)


def diagnostic_at(filename: str, text: str, index: int, code: Code, message: str) -> Diagnostic:
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


def _read(parser: Any, next_event: Callable[[], Event]) -> tuple[Event | None, Any, Builder]:
    """The single document's first event (None when there is none), its plain data and
    positions; raises _ParseError or YAMLError for what stops reading."""
    builder = Builder(next_event)
    parser.get_event()  # the StreamStartEvent
    if parser.check_event(yaml.StreamEndEvent):
        return None, None, builder
    parser.get_event()  # the DocumentStartEvent
    root = builder.node(1)
    assert root is not None
    data = builder.build(root, (), 1, None)
    parser.get_event()  # the DocumentEndEvent
    if not parser.check_event(yaml.StreamEndEvent):
        raise _ParseError(
            Code.YAML_MULTIPLE_DOCUMENTS,
            "a spec file holds one YAML document; remove this second '---' document",
            *_mark(parser.peek_event()))
    return root, data, builder


def _parse(text: str, filename: str) -> tuple[Event | None, Any, Builder]:
    """``_read`` with libyaml's parser where it gives PyYAML's events, else (and for a
    syntax error, which PyYAML's words as it always has) with PyYAML's own.  Raises
    SpecError for what stops reading."""
    parser = LIBYAML(text) if LIBYAML is not None and _libyaml_reads(text) else None
    try:
        if parser is not None:
            try:
                return _read(parser, _libyaml_events(parser))
            except (_UnsureError, yaml.YAMLError):
                pass
            finally:
                parser.dispose()
        parser = _PythonParser(text)
        try:
            return _read(parser, parser.get_event)
        except yaml.YAMLError as error:
            raise SpecError([_yaml_problem(error, text, filename)]) from None
        finally:
            parser.dispose()
    except _ParseError as problem:
        raise SpecError([Diagnostic(filename, problem.line + 1, problem.column + 1, "",
                                    problem.message, problem.code)]) from None
    except RecursionError:  # pragma: no cover - depth is capped before this
        raise SpecError([Diagnostic(filename, 1, 1, "", TOO_DEEP, Code.YAML_TOO_DEEP)]
                        ) from None


def read_text(text: str, filename: str) -> tuple[Any, Builder]:
    """Plain data and positions from YAML text; raises SpecError for what stops reading."""
    if len(text) > MAX_FILE_BYTES:
        raise SpecError([Diagnostic(filename, 1, 1, "",
                                    f"larger than {MAX_FILE_BYTES:,} characters; a spec is "
                                    "a short file", Code.IO_TOO_LARGE)])
    text = text.removeprefix("\ufeff")
    bad = _NOT_PRINTABLE.search(text)
    if bad:
        raise SpecError([diagnostic_at(filename, text, bad.start(), Code.YAML_INVALID_CHARACTER,
                             f"character U+{ord(bad.group()):04X} is not allowed in YAML "
                             "text (is this a binary file?)")])
    root, data, builder = _parse(text, filename)
    if root is None or data is None:
        raise SpecError([Diagnostic(filename, 1, 1, "",
                                    "the file is empty; a spec is a mapping that starts with "
                                    "'privspec: 1'", Code.SPEC_EMPTY)])
    if not isinstance(data, dict):
        # Nothing of the text is quoted: it may be any file, linked or named by mistake.
        what = "a list" if isinstance(data, list) else "a single value"
        line, column = _mark(root)
        raise SpecError([Diagnostic(
            filename, line + 1, column + 1, "",
            f"a spec is a mapping of keys ({', '.join(Spec.model_fields)}), not {what}",
            Code.SPEC_NOT_A_MAPPING)])
    builder.positions[()] = Where(None, _mark(root), True, None)
    return data, builder
