"""Reading YAML text into plain data with positions, safely and strictly.

* no object construction from tags: the parser builds a node tree and this
  module turns it into plain ``dict``/``list``/``str``/``int``/``float``/
  ``bool``/``None``; any other tag is refused;
* scalars resolve as in YAML 1.2's core schema, so ``1e-5`` and ``1E6`` are
  floats, ``yes``/``no``/``on``/``off`` are strings, ``010`` is ten, and
  ``2024-01-01`` stays a string;
* duplicate keys are errors; aliases (``*name``) are refused, so no
  "billion laughs"; nesting depth and file size are capped; one document per file.

Every value's position is kept (``Builder.positions``), so that later problems can be
reported at the line and column the user wrote.
"""

from __future__ import annotations

import math
import re
import typing
from dataclasses import dataclass
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import BaseResolver
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
#: Most YAML nodes (keys, values, lists and mappings) a spec may hold: about 12,000
#: stages of a `compose` list.  The reader stops at the next one, before it has parsed
#: the rest (a long list, even under a key that is refused, takes seconds and hundreds
#: of megabytes to read: about 20 µs and 1 KB a node).
MAX_NODES = 150_000
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
        self.nodes = 0

    def next_event(self) -> yaml.Event:
        """The next event, not consumed (typed wrapper of PyYAML's peek_event)."""
        return typing.cast(yaml.Event, self.peek_event())  # type: ignore[no-untyped-call]

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        event = self.next_event()
        line, column = _event_mark(event)
        if isinstance(event, yaml.AliasEvent):
            raise _ParseError(
                Code.YAML_ALIAS,
                f"aliases (*{short(str(event.anchor))}) are not supported in a spec: write the value out",
                line, column)
        self.depth += 1
        self.nodes += 1
        try:
            if self.nodes > MAX_NODES:
                raise _ParseError(Code.IO_TOO_LARGE, TOO_MANY_NODES, line, column)
            if self.depth > MAX_DEPTH:
                raise _ParseError(Code.YAML_TOO_DEEP, TOO_DEEP, line, column)
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
class Where:
    """Where a value sits: its key's and its value's 0-based (line, column), and where
    the value ends."""

    key: tuple[int, int] | None
    value: tuple[int, int]
    block: bool
    raw: str | None
    quoted: bool = False
    end: tuple[int, int] | None = None


def _mark(node: Node) -> tuple[int, int]:
    return node.start_mark.line, node.start_mark.column


class Builder:
    """Turns a node tree into plain Python data, recording positions and
    collecting problems that do not stop loading (duplicate keys, odd tags)."""

    def __init__(self) -> None:
        self.positions: dict[Path, Where] = {}
        self.problems: list[tuple[Code, str, tuple[int, int], Path]] = []

    def where(self, node: Node, key: Node | None) -> Where:
        block = isinstance(node, MappingNode | SequenceNode) and not node.flow_style
        raw = node.value if isinstance(node, ScalarNode) else None
        quoted = isinstance(node, ScalarNode) and node.style in ("'", '"')
        end = (node.end_mark.line, node.end_mark.column)
        return Where(_mark(key) if key is not None else None, _mark(node), block, raw, quoted,
                     end)

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
                              f"the tag {short(shown)} is not supported in a spec; remove it",
                              _mark(node), path))

    def _scalar(self, node: ScalarNode, path: Path) -> Any:
        text = node.value
        try:
            if node.tag == _STR_TAG:
                self._refuse_hidden(node, path)
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
                                  f"cannot read {short(text)} as {kind}", _mark(node), path))
            return text
        self._bad_tag(node, path)
        return text

    def _refuse_hidden(self, node: ScalarNode, path: Path) -> bool:
        """A problem, and True, when the text (a value, or a key: diagnostics echo keys)
        holds a character of ``_HIDDEN_IN_TEXT``."""
        hidden = _HIDDEN_IN_TEXT.search(node.value)
        if hidden:
            self.problems.append((
                Code.YAML_INVALID_CHARACTER,
                f"the text holds U+{ord(hidden.group()):04X}, a control or "
                "bidirectional-override character that reports would carry unseen; "
                "remove it", _mark(node), path))
        return hidden is not None

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
            if self._refuse_hidden(key_node, path):
                continue
            if key in result:
                self.problems.append((
                    Code.YAML_DUPLICATE_KEY,
                    f"duplicate key '{short(key)}' (first given on line {first_line[key]}); "
                    "a key may appear once per mapping",
                    _mark(key_node), (*path, key)))
                continue
            first_line[key] = key_node.start_mark.line + 1
            self.positions[(*path, key)] = self.where(value_node, key_node)
            result[key] = self.build(value_node, (*path, key))
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
        return None, [Diagnostic(filename, 1, 1, "", TOO_DEEP, Code.YAML_TOO_DEEP)]
    finally:
        loader.dispose()


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
    node, problems = _parse(text, filename)
    if problems:
        raise SpecError(problems)
    if node is None or (isinstance(node, ScalarNode) and node.tag == _NULL_TAG):
        raise SpecError([Diagnostic(filename, 1, 1, "",
                                    "the file is empty; a spec is a mapping that starts with "
                                    "'privspec: 1'", Code.SPEC_EMPTY)])
    if not isinstance(node, MappingNode):
        # Nothing of the text is quoted: it may be any file, linked or named by mistake.
        what = "a list" if isinstance(node, SequenceNode) else "a single value"
        line, column = _mark(node)
        raise SpecError([Diagnostic(
            filename, line + 1, column + 1, "",
            f"a spec is a mapping of keys ({', '.join(Spec.model_fields)}), not {what}",
            Code.SPEC_NOT_A_MAPPING)])
    builder = Builder()
    builder.positions[()] = Where(None, _mark(node), True, None)
    return builder.build(node, ()), builder
