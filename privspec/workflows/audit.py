"""``privspec audit``: an attack's scores read from a file and held against a report's
certified curve (the statistics: ``numerics/audit.py``; docs/audit.md).

Score files are untrusted: CSV (a score column and a 0/1 membership column), JSON
(``{"in": [...], "out": [...]}`` or the two columns as arrays) or NPZ (numpy arrays,
read with ``allow_pickle=False``), never pickles. Every problem is one
:class:`Diagnostic` at the file, line and column of the value (the array and index of
an NPZ file), code ``scores/invalid``; a few are listed, then how many more.
"""

from __future__ import annotations

import bisect
import csv
import dataclasses
import hashlib
import io
import json
import math
import os
import re
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from privspec.errors import Code
from privspec.numerics.audit import (
    MIN_SCORES,
    AuditStatistics,
    Box,
    CertifiedCurve,
    OneRunBound,
    audit,
    one_run,
)
from privspec.spec import json_reader
from privspec.spec.audit import NOUN
from privspec.spec.diagnostics import Diagnostic, SpecError, excerpt, quoted
from privspec.spec.named_file import Folder, NamedFileError, read_capped, read_named

if TYPE_CHECKING:
    from privspec.numerics.curve import FloatArray
    from privspec.report.model import Audit as ReportAudit
    from privspec.report.model import Report
    from privspec.spec.audit import AuditBlock
    from privspec.spec.models import Spec

#: The largest score file read, and the most scores in it.
MAX_SCORE_FILE_BYTES = 2_000_000_000
MAX_SCORES = 50_000_000
#: Bytes of an .npy array's header, at most (NumPy's own limit, its max_header_size).
NPY_HEADER_BYTES = 10_000
#: The most columns a CSV score file's header line may name.
MAX_COLUMNS = 10_000
#: Characters of a score file handed to a parser at a time (a StringIO takes four bytes
#: a character, a list of floats 32 bytes a number).
_CHUNK = 1 << 20
#: Problems listed one by one before a count of the rest.
MAX_LISTED = 10
#: Keys of JSON and NPZ score files in the member/non-member form.
MEMBERS_KEY, NON_MEMBERS_KEY = "in", "out"
#: The confidence of an audit unless the command line or the spec says another.
DEFAULT_CONFIDENCE = 0.95


@dataclass(frozen=True)
class Scores:
    """Scores of the examples that were in and out, and the file they came from."""

    members: FloatArray
    non_members: FloatArray
    path: str
    sha256: str


@dataclass(frozen=True)
class Columns:
    """The names of the score and the membership columns (CSV, JSON's column form, NPZ)."""

    score: str = "score"
    label: str = "member"


@dataclass(frozen=True)
class AuditOutcome:
    """An audit of one report: the boxes, what they prove, and the boxes that beat the
    certified curve."""

    statistics: AuditStatistics
    certified_mu: float | None
    certified: bool  # False: the report's curve was composed without a stated error bound
    epsilons: tuple[tuple[float, float, float | None], ...]  # (δ, ε lower bound, ε certified)
    contradictions: tuple[tuple[Box, float], ...]  # each box, the TPR the report allows
    one_run: tuple[tuple[OneRunBound, float | None], ...] = ()  # each bound, ε certified

    @property
    def one_run_contradictions(self) -> tuple[tuple[OneRunBound, float | None], ...]:
        """The one-run bounds above the ε the report certifies at their δ."""
        return tuple((bound, certified) for bound, certified in self.one_run
                     if certified is not None and bound.epsilon_lower > certified)

    @property
    def contradicted(self) -> bool:
        """Whether the boxes or the one-run bound beat the certificate."""
        return bool(self.contradictions or self.one_run_contradictions)

    @property
    def tightness(self) -> float | None:
        """μ_lb / μ: how much of the certified μ the attack reaches (None without μ)."""
        mu = self.certified_mu
        return None if mu is None or mu <= 0 else self.statistics.mu_lower / mu


def _problem(path: str, line: int, column: int, where: str, message: str) -> Diagnostic:
    return Diagnostic(path, line, column, excerpt(where), message, Code.SCORES_INVALID)


def _refuse(problems: list[Diagnostic], more: int = 0) -> SpecError:
    if more:
        last = problems[-1]
        problems = [*problems, _problem(last.file, last.line, last.column, "",
                                        f"… and {more:,} more problems like these")]
    return SpecError(problems)


def _read_bytes(path: str) -> bytes:
    """The file's bytes; a missing, unreadable or absurdly large file is refused."""
    try:
        return read_capped(path, MAX_SCORE_FILE_BYTES, NOUN)
    except MemoryError:
        raise _out_of_memory(path, os.path.getsize(path)) from None
    except NamedFileError as error:
        raise _unreadable(path, error) from None


def _unreadable(path: str, error: NamedFileError) -> SpecError:
    return SpecError([Diagnostic(path, 1, 1, "", str(error), error.code or Code.IO_UNREADABLE)])


def read_scores(path: str, columns: Columns = Columns()) -> Scores:
    """The scores in ``path`` (by its extension: .csv, .json, .npz); a
    :class:`SpecError` lists what is wrong with it."""
    data = _read_bytes(path)
    return parsed_scores(path, data, hashlib.sha256(data).hexdigest(), columns)


def parsed_scores(path: str, data: bytes, digest: str, columns: Columns) -> Scores:
    """The scores in ``data``, the content of the file ``path`` whose SHA-256 is
    ``digest``; a :class:`SpecError` lists what is wrong with them."""
    try:
        members, non_members = _by_format(path, data, columns)
    except MemoryError:
        raise _out_of_memory(path, len(data)) from None
    for name, scores in (("members (in)", members), ("non-members (out)", non_members)):
        if scores.size < MIN_SCORES:
            raise SpecError([_problem(path, 1, 1, "", f"{scores.size} scores of {name}: an "
                                      f"audit needs at least {MIN_SCORES} of each class")])
    if members.size + non_members.size > MAX_SCORES:
        raise SpecError([Diagnostic(path, 1, 1, "", f"more than {MAX_SCORES:,} scores",
                                    Code.IO_TOO_LARGE)])
    return Scores(members, non_members, path, digest)


def _by_format(path: str, data: bytes, columns: Columns) -> tuple[FloatArray, FloatArray]:
    """Members' and non-members' scores, read as the file's extension says."""
    extension = os.path.splitext(path)[1].lower()
    if data[:2] == b"\x80\x04" or data[:1] == b"\x80" or extension in (".pkl", ".pickle"):
        raise SpecError([_problem(path, 1, 1, "", "a Python pickle: privspec never unpickles "
                                  "files; save the scores as CSV, JSON or NPZ")])
    if extension == ".npz" or data[:4] == b"PK\x03\x04":
        return _from_npz(path, data, columns)
    if extension == ".json":
        return _from_json(path, _text(path, data), columns)
    if extension in (".csv", ".txt"):
        return _from_csv(path, _text(path, data), columns)
    raise SpecError([_problem(path, 1, 1, "", "a score file ends in .csv, .json or .npz")])


def _out_of_memory(path: str, size: int | None) -> SpecError:
    what = "the scores" if size is None else f"{size:,} bytes of scores"
    return SpecError([Diagnostic(path, 1, 1, "", f"not enough memory to read {what}: run "
                                 "privspec with more memory, or give fewer scores",
                                 Code.IO_TOO_LARGE)])


def _text(path: str, data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
        raise SpecError([Diagnostic(path, line, column, "", f"not UTF-8 text: byte "
                                    f"0x{data[error.start]:02X} cannot be decoded",
                                    Code.IO_ENCODING)]) from None


def _as_scores(values: np.ndarray) -> tuple[FloatArray, np.ndarray]:
    """``values`` as finite floats, and the indices of the ones that are not."""
    scores = np.asarray(values, dtype=np.float64)
    return scores, np.flatnonzero(~np.isfinite(scores))


# --- CSV ---------------------------------------------------------------------------------

def _lines(text: str, newline: str = "") -> Iterator[str]:
    """The lines of ``text`` as ``io.StringIO(text, newline=newline)`` gives them, from a
    chunk of it at a time (a StringIO of all of it would take four bytes a character)."""
    start = 0
    while start < len(text):
        end = text.find("\n", start + _CHUNK) + 1 or len(text)
        yield from io.StringIO(text[start:end], newline=newline)
        start = end


def _from_csv(path: str, text: str, columns: Columns) -> tuple[FloatArray, FloatArray]:
    """Members' and non-members' scores from a CSV file with a header line: numpy's
    parser when every row is plain, else row by row (locating every problem)."""
    header = _csv_header(path, text, columns)
    at_score, at_label = header.index(columns.score), header.index(columns.label)
    plain = _plain_csv(text, len(header), at_score, at_label)
    if plain is not None:
        return plain
    return _csv_rows(path, text, header, columns)


def _csv_header(path: str, text: str, columns: Columns) -> list[str]:
    """The names of the header line, once it names each of ``columns`` once."""
    if text.count(",", 0, text.find("\n") + 1 or len(text)) >= MAX_COLUMNS:
        raise SpecError([Diagnostic(path, 1, 1, "", f"a header line of more than "
                                    f"{MAX_COLUMNS:,} columns", Code.IO_TOO_LARGE)])
    try:
        header = [cell.strip() for cell in next(csv.reader(_lines(text)), [])]
    except csv.Error as error:
        raise SpecError([_problem(path, 1, 1, "", f"not CSV: {error}")]) from None
    if not header:
        raise SpecError([_problem(path, 1, 1, "", "empty: a CSV score file starts with a "
                                  f"header line naming its columns ({columns.score}, "
                                  f"{columns.label})")])
    missing = [name for name in (columns.score, columns.label) if name not in header]
    if missing:
        names = (f"{len(header):,} columns: " if header[5:] else "") + ", ".join(
            quoted(name) for name in header[:5]) + (", …" if header[5:] else "")
        raise SpecError([_problem(path, 1, 1, "", f"no column named {quoted(name)} in the "
                                  f"header (it has {names}); name the "
                                  "columns with --score-column and --label-column")
                         for name in missing])
    twice = [name for name in dict.fromkeys((columns.score, columns.label))
             if header.count(name) > 1]
    if twice:  # which of them holds the scores would be a guess
        raise SpecError([_problem(path, 1, 1, "", f"the header names {quoted(name)} "
                                  f"{header.count(name)} times: name each column once, or "
                                  "choose others with --score-column and --label-column")
                         for name in twice])
    return header


def _plain_csv(text: str, width: int, at_score: int, at_label: int
               ) -> tuple[FloatArray, FloatArray] | None:
    """The scores by numpy's parser, when the file has no quotes or NULs, every line its
    ``width`` cells, finite scores and labels 0 or 1 (those very characters, as the row
    by row reading takes them); None otherwise (read row by row)."""
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    lines = text.count("\n") + (not text.endswith("\n")) - 1  # after the header
    if ('"' in text or "\r" in text or "\x00" in text or lines < 1  # (numpy warns of none)
            or lines > MAX_SCORES or text.count(",") != (width - 1) * (lines + 1)):
        return None
    try:
        table = np.loadtxt(_lines(text, "\n"), delimiter=",", skiprows=1, comments=None,
                           usecols=(at_score, at_label), ndmin=1,
                           dtype=np.dtype([("score", "f8"), ("label", "U2")]))
    except ValueError:
        return None
    scores, member, out = table["score"], table["label"] == "1", table["label"] == "0"
    if table.size != lines or not np.isfinite(scores).all() or not (member | out).all():
        return None
    return scores[member], scores[out]


class _Taken:
    """The lines a ``csv.reader`` takes from ``lines``; ``record`` holds those of the
    record it read last (to locate its cells)."""

    def __init__(self, lines: Iterator[str]) -> None:
        self.lines, self.record = lines, list[str]()

    def __iter__(self) -> _Taken:
        return self

    def __next__(self) -> str:
        line = next(self.lines)
        self.record.append(line)
        return line


def _csv_rows(path: str, text: str, header: list[str], columns: Columns
              ) -> tuple[FloatArray, FloatArray]:
    """The scores read row by row into arrays as long as the file has lines (never a
    list of rows), every bad row located; more lines than scores allowed are refused
    before any is read."""
    lines = (text.count("\n") + text.count("\r") - text.count("\r\n")
             + (not text.endswith(("\n", "\r"))))
    if lines > MAX_SCORES + 1:
        raise SpecError([Diagnostic(path, MAX_SCORES + 2, 1, "", f"more than {MAX_SCORES:,} "
                                    "scores (lines after the header)", Code.IO_TOO_LARGE)])
    scores, member = np.empty(lines), np.empty(lines, dtype=bool)
    problems: list[Diagnostic] = []
    count = rows = 0
    taken = _Taken(_lines(text))
    reader = csv.reader(taken)
    try:
        for cells in reader:
            line = reader.line_num - len(taken.record) + 1
            raw, taken.record = taken.record[0].rstrip("\r\n"), []
            if not cells or line == 1:
                continue
            read = _row(cells, header, columns)
            if isinstance(read, tuple):
                scores[rows], member[rows] = read
                rows += 1
            for message, where, index in read if isinstance(read, list) else []:
                count += 1
                if len(problems) < MAX_LISTED:
                    problems.append(_problem(path, line, _cell_column(raw, cells, index),
                                             where, message))
    except csv.Error as error:
        raise SpecError([_problem(path, reader.line_num, 1, "", f"not CSV: {error}")]
                        ) from None
    if count:
        raise _refuse(problems, count - len(problems))
    return scores[:rows][member[:rows]], scores[:rows][~member[:rows]]


def _row(cells: list[str], header: list[str], columns: Columns
         ) -> tuple[float, bool] | list[tuple[str, str, int]]:
    """One row's score and membership, or (message, column name, cell index) of each of
    its problems."""
    if len(cells) != len(header):
        return [(f"{len(cells)} cells where the header names {len(header)}", "", 0)]
    at_score, at_label = header.index(columns.score), header.index(columns.label)
    problems = []
    cell, label = cells[at_score].strip(), cells[at_label].strip()
    value = math.nan
    try:
        if "_" in cell:  # (Python's float takes 1_000, numpy's parser does not)
            raise ValueError
        value = float(cell)
    except ValueError:
        problems.append((f"{quoted(cell, 30)} is not a number: a score is a finite number",
                         columns.score, at_score))
    else:
        if not math.isfinite(value):
            problems.append((f"{quoted(cell, 30)}: a score is a finite number (no NaN or "
                             "infinity)", columns.score, at_score))
    if label not in ("0", "1"):
        problems.append((f"{quoted(label, 30)}: membership is 1 (in) or 0 (out)",
                         columns.label, at_label))
    return problems or (value, label == "1")


def _cell_column(raw: str, cells: list[str], index: int) -> int:
    """1-based column of cell ``index`` in ``raw`` (1 when quoting hides it)."""
    if ",".join(cells) != raw:
        return 1
    return len(",".join(cells[:index])) + (2 if index else 1)


# --- JSON --------------------------------------------------------------------------------

#: A character that no number of a plain list of them has (JSON's NaN and ±Infinity
#: are read, to be refused where they stand).
_NOT_A_NUMBER = re.compile(r"[^-+.,0-9eE \t\n\rNaIfinty]")
#: Numbers the way the score lists are read: every one a float, NaN and ±Infinity too.
_NUMBERS = json_reader.decoder(parse_int=float, parse_constant=float)


def _skip(text: str, position: int) -> int:
    """The first position from ``position`` on that is not JSON's whitespace."""
    return json_reader.WHITESPACE.match(text, position).end()  # type: ignore[union-attr]


class _Numbers:
    """A JSON list's items as numbers, NaN for any other item, in a buffer that grows;
    where each run of them starts in the text (to locate an item)."""

    def __init__(self, start: int, room: int) -> None:
        self.start, self.end, self.count = start, start, 0
        self.values: FloatArray = np.empty(min(max(room, 1), MAX_SCORES))
        self.runs: list[tuple[int, int]] = []  # (index of the first item, its offset)

    def add(self, items: list[float], offset: int) -> None:
        if self.count + len(items) > MAX_SCORES:
            raise _TooManyError(self.start)
        if self.count + len(items) > self.values.size:
            grown = np.empty(min(max(2 * self.values.size, self.count + len(items)),
                                 MAX_SCORES))
            grown[:self.count] = self.values[:self.count]
            self.values = grown
        self.values[self.count:self.count + len(items)] = items
        self.runs.append((self.count, offset))
        self.count += len(items)

    @property
    def read(self) -> FloatArray:
        return self.values[:self.count]

    def offset(self, text: str, index: int) -> int:
        """Where item ``index`` starts in ``text``."""
        first, position = self.runs[bisect.bisect_right(self.runs, (index, len(text))) - 1]
        for _ in range(index - first):  # (a run's items have no commas in them)
            position = text.index(",", position) + 1
        return _skip(text, position)


class _TooManyError(Exception):
    """A list of more than MAX_SCORES items (``what``: "list"), or a value other than a
    list of more than ``_CHUNK`` characters ("value"), at its start."""

    def __init__(self, start: int, what: str = "list") -> None:
        self.start, self.what = start, what

    def __str__(self) -> str:
        if self.what == "list":
            return f"more than {MAX_SCORES:,} scores"
        return (f"a value of more than {_CHUNK:,} characters that is not a list of numbers "
                "(a score file holds lists of numbers)")


def _json_list(text: str, start: int) -> _Numbers:
    """The numbers of the list at ``text[start]`` ('['): runs of plain numbers a chunk at
    a time (by ``json`` itself: a chunk's items in a list), other items one by one;
    every item that is not a number is NaN, every problem of syntax located."""
    plain = _NOT_A_NUMBER.search(text, start + 1)  # (the list's end, if it is plain)
    numbers = _Numbers(start, text.count(",", start, len(text) if plain is None
                                         else plain.start()) + 1)
    position = _skip(text, start + 1)
    if text.startswith("]", position):
        numbers.end = position + 1
        return numbers
    while True:
        other = _NOT_A_NUMBER.search(text, position, position + _CHUNK)
        cut = text.rfind(",", position, position + _CHUNK if other is None else other.start())
        if cut > position:
            try:
                numbers.add(json.loads(f"[{text[position:cut]}]", parse_int=float,
                                       parse_constant=float), position)
            except json.JSONDecodeError as error:
                raise json.JSONDecodeError(error.msg, text, position + error.pos - 1) from None
            position = _skip(text, cut + 1)
            continue
        item, end = _value(text, position)
        numbers.add([item if type(item) is float else math.nan], position)
        position = _skip(text, end)
        if text.startswith(",", position):
            position = _skip(text, position + 1)
        elif text.startswith("]", position):
            numbers.end = position + 1
            return numbers
        else:
            raise json.JSONDecodeError("Expecting ',' delimiter", text, position)


def _value(text: str, start: int) -> tuple[Any, int]:
    """The value at ``start`` and where it ends, read from a window of the text that
    grows to at most ``_CHUNK`` characters (a list of numbers is read by
    :func:`_json_list`; anything else is small or refused: ``json`` builds objects of
    up to twenty times the text's size)."""
    size = 256
    while True:
        window = text[start:start + size]
        cut = len(window) < len(text) - start
        try:
            value, end = _NUMBERS.raw_decode(window)
        except json_reader.DuplicateKeyError as error:
            raise json_reader.DuplicateKeyError(error.key, text, start + error.pos) from None
        except json.JSONDecodeError as error:  # (within 9 characters of a cut: -Infinity)
            if not cut or not (error.pos >= len(window) - 9
                               or error.msg.startswith("Unterminated")):
                raise json.JSONDecodeError(error.msg, text, start + error.pos) from None
            end = len(window)
        if not cut or end < len(window):
            return value, start + end
        if size >= _CHUNK:
            raise _TooManyError(start, "value")
        size *= 16


def _json_members(text: str) -> dict[str, _Numbers | int]:
    """The members of the object ``text`` holds: each list's numbers, the offset of any
    other value (read whole, and dropped); invalid JSON or a key given twice is a
    :class:`json.JSONDecodeError` (``json_reader.DuplicateKeyError``) where it stands."""
    position = _skip(text, 0)
    if not text.startswith("{", position):
        if position == len(text):
            raise json.JSONDecodeError("Expecting value", text, position)
        raise _NotAnObjectError
    members: dict[str, _Numbers | int] = {}
    position = _skip(text, position + 1)
    while not (text.startswith("}", position) and not members):
        if not text.startswith('"', position):
            raise json.JSONDecodeError("Expecting property name enclosed in double quotes",
                                       text, position)
        key, after = json_reader.string_at(text, position)
        if key in members:
            raise json_reader.DuplicateKeyError(key, text, position)
        after = _skip(text, after)
        if not text.startswith(":", after):
            raise json.JSONDecodeError("Expecting ':' delimiter", text, after)
        value = _skip(text, after + 1)
        if text.startswith("[", value):
            members[key] = numbers = _json_list(text, value)
            end = numbers.end
        else:
            members[key], (_, end) = value, _value(text, value)
        position = _skip(text, end)
        if not text.startswith(",", position):
            break
        position = _skip(text, position + 1)
    if not text.startswith("}", position):
        raise json.JSONDecodeError("Expecting ',' delimiter", text, position)
    if _skip(text, position + 1) != len(text):
        raise json.JSONDecodeError("Extra data", text, _skip(text, position + 1))
    return members


class _NotAnObjectError(Exception):
    """JSON that is not an object."""


def _from_json(path: str, text: str, columns: Columns) -> tuple[FloatArray, FloatArray]:
    """Members' and non-members' scores from ``{"in": [...], "out": [...]}`` or
    ``{SCORE: [...], LABEL: [...]}``, read into arrays (never a list of floats)."""
    shape = (f"a JSON score file is an object with lists {quoted(MEMBERS_KEY)} and "
             f"{quoted(NON_MEMBERS_KEY)}, or {quoted(columns.score)} and "
             f"{quoted(columns.label)}")
    try:
        members = _json_members(text)
    except json_reader.DuplicateKeyError as error:
        raise SpecError([_problem(path, error.lineno, error.colno, "", error.msg)]) from None
    except json.JSONDecodeError as error:
        raise SpecError([_problem(path, error.lineno, error.colno, "",
                                  f"invalid JSON: {error.msg}")]) from None
    except RecursionError:
        raise SpecError([_problem(path, 1, 1, "", "invalid JSON: lists or objects nested "
                                  "too deeply (a score file's lists hold numbers)")]) from None
    except _TooManyError as error:
        raise SpecError([_json_problem(path, text, error.start, "", str(error),
                                       Code.IO_TOO_LARGE)]) from None
    except _NotAnObjectError:
        raise SpecError([_problem(path, 1, 1, "", shape)]) from None
    if MEMBERS_KEY in members and NON_MEMBERS_KEY in members:
        return (_json_scores(path, text, members, MEMBERS_KEY),
                _json_scores(path, text, members, NON_MEMBERS_KEY))
    if columns.score in members and columns.label in members:
        scores = _json_scores(path, text, members, columns.score)
        labels = _json_numbers(path, text, members, columns.label)
        bad = np.flatnonzero((labels.read != 0) & (labels.read != 1))
        if bad.size or labels.count != scores.size:
            what = ("membership is 1 (in) or 0 (out)" if bad.size else
                    f"{quoted(columns.label)} is a list as long as {quoted(columns.score)}")
            raise _refuse([_json_problem(path, text, labels.offset(text, i),
                                         f"{columns.label}[{i}]", what)
                           for i in bad[:MAX_LISTED].tolist()]
                          or [_json_problem(path, text, labels.start, columns.label, what)],
                          bad.size - min(bad.size, MAX_LISTED))
        return scores[labels.read == 1], scores[labels.read == 0]
    raise SpecError([_problem(path, 1, 1, "", shape)])


def _json_numbers(path: str, text: str, members: dict[str, _Numbers | int], key: str
                  ) -> _Numbers:
    """The list ``key`` names; refused when its value is no list."""
    numbers = members[key]
    if not isinstance(numbers, _Numbers):
        raise SpecError([_json_problem(path, text, numbers, key, "a list of numbers")])
    return numbers


def _json_scores(path: str, text: str, members: dict[str, _Numbers | int], key: str
                 ) -> FloatArray:
    """The scores of the list ``key`` names, every one finite."""
    numbers = _json_numbers(path, text, members, key)
    bad = np.flatnonzero(~np.isfinite(numbers.read))
    if bad.size:
        raise _refuse([_json_problem(path, text, numbers.offset(text, i), f"{key}[{i}]",
                                     "a score is a finite number (no NaN, infinity, string "
                                     "or boolean)") for i in bad[:MAX_LISTED].tolist()],
                      bad.size - min(bad.size, MAX_LISTED))
    return numbers.read


def _json_problem(path: str, text: str, offset: int, where: str, message: str,
                  code: Code = Code.SCORES_INVALID) -> Diagnostic:
    """A problem at ``offset`` of ``text``, located by line and column."""
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return Diagnostic(path, line, column, excerpt(where), message, code)


# --- NPZ ---------------------------------------------------------------------------------

def _from_npz(path: str, data: bytes, columns: Columns) -> tuple[FloatArray, FloatArray]:
    """Members' and non-members' scores from arrays ``in`` and ``out``, or the score
    and membership columns, of an NPZ file (never unpickled)."""
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as archive:
            names = sorted(archive.files)
            # (only the arrays the audit reads are unpacked, each once its size is known)
            wanted = [name for name in (MEMBERS_KEY, NON_MEMBERS_KEY, columns.score,
                                        columns.label) if name in names]
            for name in wanted:
                _refuse_by_header(path, name, archive.zip)
            arrays = {name: archive[name] for name in wanted}
    except (ValueError, OSError, zipfile.BadZipFile, EOFError, KeyError) as error:
        raise SpecError([_problem(path, 1, 1, "", f"not an NPZ file of plain numeric arrays "
                                  f"({excerpt(str(error), 120)})")]) from None
    if MEMBERS_KEY in arrays and NON_MEMBERS_KEY in arrays:
        return (_npz_scores(path, arrays, MEMBERS_KEY), _npz_scores(path, arrays,
                                                                    NON_MEMBERS_KEY))
    if columns.score in arrays and columns.label in arrays:
        scores = _npz_scores(path, arrays, columns.score)
        labels = np.asarray(arrays[columns.label]).ravel()
        if labels.dtype.kind not in "biuf" or labels.size != scores.size:
            raise SpecError([_problem(path, 1, 1, columns.label, "membership: a numeric "
                                      f"array of 0s and 1s as long as {quoted(columns.score)}")])
        bad = np.flatnonzero((labels != 0) & (labels != 1))
        if bad.size:
            raise _refuse([_problem(path, 1, 1, f"{columns.label}[{i}]", "membership is 1 "
                                    "(in) or 0 (out)") for i in bad[:MAX_LISTED].tolist()],
                          bad.size - min(bad.size, MAX_LISTED))
        return scores[labels == 1], scores[labels == 0]
    has = ", ".join(quoted(name) for name in names[:5]) + (", …" if names[5:] else "")
    has = f"{len(names):,} arrays: {has}" if names[5:] else f"[{has}]"
    raise SpecError([_problem(path, 1, 1, "", f"an NPZ score file holds arrays "
                              f"{quoted(MEMBERS_KEY)} and {quoted(NON_MEMBERS_KEY)}, or "
                              f"{quoted(columns.score)} and {quoted(columns.label)}; it has "
                              f"{has}")])


def _refuse_by_header(path: str, name: str, archive: zipfile.ZipFile) -> None:
    """An array refused before it is unpacked: one that unpacks to more than
    ``MAX_SCORES`` doubles (a small file may unpack to gigabytes), whose header is longer
    than NumPy reads (read before the length is checked), or whose header's shape holds
    more than ``MAX_SCORES`` values (NumPy would allocate them all)."""
    info = archive.getinfo(f"{name}.npy")
    if info.file_size > MAX_SCORES * 8 + NPY_HEADER_BYTES:
        raise SpecError([Diagnostic(path, 1, 1, excerpt(name), f"unpacks to {info.file_size:,} bytes, "
                                    f"more than {MAX_SCORES:,} scores", Code.IO_TOO_LARGE)])
    with archive.open(info) as member:
        version = np.lib.format.read_magic(member)
        if version not in ((1, 0), (2, 0)):
            raise ValueError(f".npy format version {version[0]}.{version[1]} (a structured "
                             "array's), not a plain numeric array's")
        width = 2 if version == (1, 0) else 4
        length = member.read(width)
        if int.from_bytes(length, "little") > NPY_HEADER_BYTES:
            raise SpecError([Diagnostic(path, 1, 1, excerpt(name), f"an array header of "
                                        f"{int.from_bytes(length, 'little'):,} bytes, more "
                                        f"than the {NPY_HEADER_BYTES:,} NumPy reads",
                                        Code.IO_TOO_LARGE)])
        header = io.BytesIO(length + member.read(int.from_bytes(length, "little")))
    read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
            else np.lib.format.read_array_header_2_0)
    shape = read(header, max_header_size=NPY_HEADER_BYTES)[0]
    if math.prod(shape) > MAX_SCORES:
        raise SpecError([Diagnostic(path, 1, 1, excerpt(name), f"its header gives the shape "
                                    f"{excerpt(str(shape))}: {math.prod(shape):,} values, "
                                    f"more than {MAX_SCORES:,} scores", Code.IO_TOO_LARGE)])


def _npz_scores(path: str, arrays: dict[str, np.ndarray], key: str) -> FloatArray:
    values = np.asarray(arrays[key])
    if values.dtype.kind not in "iuf":
        raise SpecError([_problem(path, 1, 1, key, f"an array of numbers, not {excerpt(str(values.dtype))}")])
    if sum(length > 1 for length in values.shape) > 1:
        raise SpecError([_problem(path, 1, 1, key, f"a list of scores (a 1-D array), not an "
                                  f"array of shape {values.shape}")])
    scores, bad = _as_scores(values.ravel())
    if bad.size:
        raise _refuse([_problem(path, 1, 1, f"{key}[{i}]", "a score is a finite number (no "
                                "NaN or infinity)") for i in bad[:MAX_LISTED].tolist()],
                      bad.size - min(bad.size, MAX_LISTED))
    return scores


# --- the audit ---------------------------------------------------------------------------

def certified_curve(report: Report) -> CertifiedCurve:
    """What ``report`` certifies: its curve's samples, its μ and floor."""
    return CertifiedCurve(
        alpha=np.array([point.alpha for point in report.curve]),
        tpr=np.array([point.tpr for point in report.curve]),
        mu=report.gdp.mu, floor=report.accounting.floor)


def audit_report(report: Report, scores: Scores, confidence: float = 0.95,
                 *, holdout: bool = False, one_run_bound: bool = False) -> AuditOutcome:
    """The scores' boxes against ``report``'s certified curve, ε at its δ's; with
    ``one_run_bound``, the one-run bound on ε at δ = 0 (against the pure ε, where one
    holds) and at the report's δ's, its own statement at the same confidence."""
    statistics = audit(scores.members, scores.non_members, confidence, holdout=holdout)
    epsilons = tuple((row.delta, statistics.epsilon_lower(row.delta), row.epsilon)
                     for row in report.epsilons)
    uncertified = any(w.code == "accounting/uncertified-composition" for w in report.warnings)
    certified = {0.0: report.pure_epsilon, **{row.delta: row.epsilon for row in report.epsilons}}
    bounds = (one_run(scores.members, scores.non_members, list(certified), confidence)
              if one_run_bound else [])
    return AuditOutcome(statistics, report.gdp.mu, not uncertified, epsilons,
                        statistics.contradictions(certified_curve(report)),
                        tuple((bound, certified[bound.delta]) for bound in bounds))


# --- settings: the command line's options over the spec's audit: block ------------------

@dataclass(frozen=True)
class AuditSettings:
    """Which scores to audit, how to read them, at which confidence; ``sha256`` is the
    digest the spec names for them (None for a file given on the command line), and
    ``folder`` the one they are read from when the spec was not read from disk (a git
    revision's; ``scores`` is then their name in messages)."""

    scores: str
    columns: Columns
    confidence: float
    holdout: bool
    one_run: bool = False
    sha256: str | None = None
    named: str | None = None  # the file's name as the spec's audit: block writes it
    folder: Folder | None = None


def settings_for(spec: Spec, spec_path: str, *, scores: str | None = None,
                 score_column: str | None = None, label_column: str | None = None,
                 confidence: float | None = None, holdout: bool | None = None,
                 one_run: bool | None = None, folder: Folder | None = None
                 ) -> AuditSettings | None:
    """The options given, else the spec's ``audit:`` block's, else the defaults; None
    when neither names a score file. The block's file is relative to the spec's folder
    (``folder``, for a spec not read from disk)."""
    block = spec.audit
    own = block if block is not None and (scores is None or _names(spec_path, block, scores)
                   ) else None  # the block names the file audited
    if scores is None:
        if block is None:
            return None
        scores = (os.path.join(os.path.dirname(spec_path), block.scores) if folder is None
                  else folder.label(block.scores))
    named = Columns() if block is None else Columns(block.score_column, block.label_column)
    return AuditSettings(
        scores=scores,
        columns=Columns(score_column or named.score, label_column or named.label),
        confidence=confidence if confidence is not None else (
            DEFAULT_CONFIDENCE if block is None else block.confidence),
        holdout=holdout if holdout is not None else (block is not None and block.holdout),
        one_run=one_run if one_run is not None else (block is not None and block.one_run),
        sha256=None if own is None else own.sha256, named=None if own is None else own.scores,
        folder=None if own is None else folder)


def _names(spec_path: str, block: AuditBlock, scores: str) -> bool:
    """Whether ``scores`` is the file ``block`` names (whose SHA-256 it states)."""
    named = os.path.join(os.path.dirname(spec_path), block.scores)
    return os.path.abspath(named) == os.path.abspath(scores)


def scores_for(settings: AuditSettings, spec_path: str) -> Scores:
    """The scores ``settings`` name. A file the spec names (from strangers) is read
    beside the spec (in ``settings.folder``, when it has one) as every file a spec names
    is (``read_named``): refused at the spec's ``audit:`` block when it leads out of the
    spec's folder or when its SHA-256 is not the one the spec names, and at the file when
    it cannot be read or is too large, before anything in it is parsed."""
    if settings.sha256 is None or settings.named is None:
        return read_scores(settings.scores, settings.columns)
    beside = spec_path if settings.folder is None else settings.folder
    try:
        data = read_named(settings.named, settings.sha256, beside, MAX_SCORE_FILE_BYTES, NOUN)
    except MemoryError:
        raise _out_of_memory(settings.scores, None if settings.folder else
                             os.path.getsize(settings.scores)) from None
    except NamedFileError as error:
        if error.code is not None:
            raise _unreadable(settings.scores, error) from None
        key = "sha256" if error.about == "sha256" else "scores"
        raise _block_problem(spec_path, key, str(error), settings.folder) from None
    return parsed_scores(settings.scores, data, settings.sha256, settings.columns)


def _block_problem(spec_path: str, key: str, message: str, folder: Folder | None
                   ) -> SpecError:
    """A problem of the spec's ``audit:`` block, at ``key``'s line and column."""
    from privspec.spec.loader import position_of

    where = ("audit", key)
    line, column = (position_of(spec_path, where) if folder is None
                    else folder.position(where)) or (1, 1)
    return SpecError([Diagnostic(spec_path, line, column, f"audit.{key}", message,
                                 Code.SCORES_INVALID)])


def outcome_json(outcome: AuditOutcome, scores: Scores) -> str:
    """The audit as JSON: the scores' file and digest, the bounds, every box."""
    statistics = outcome.statistics
    data = {
        "scores": {"file": scores.path, "sha256": scores.sha256,
                   "members": statistics.members, "non_members": statistics.non_members},
        "confidence": statistics.confidence, "holdout": statistics.holdout,
        "mu_lower": statistics.mu_lower, "mu_certified": outcome.certified_mu,
        "tightness": outcome.tightness, "curve_certified": outcome.certified,
        "epsilons": [{"delta": d, "epsilon_lower": lower, "epsilon_certified": certified}
                     for d, lower, certified in outcome.epsilons],
        "contradiction": outcome.contradicted,
        "one_run": [{**dataclasses.asdict(bound), "epsilon_certified": certified,
                     "contradiction": certified is not None and bound.epsilon_lower > certified}
                    for bound, certified in outcome.one_run],
        "contradicting_boxes": [{**dataclasses.asdict(box), "tpr_certified": allowed}
                                for box, allowed in outcome.contradictions],
        "boxes": [dataclasses.asdict(box) for box in statistics.boxes],
    }
    return json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def run_audit(spec: Spec, spec_path: str, settings: AuditSettings, *,
              memory_budget: float | None = None, time_budget: float | None = None
              ) -> AuditOutcome:
    """Read the scores ``settings`` name, evaluate ``spec`` (through the report cache) and
    audit its report; the scores' problems are a :class:`SpecError`, the evaluator's
    refusals its own errors."""
    from privspec.report.cache import evaluate

    scores = scores_for(settings, spec_path)
    report = evaluate(spec, spec_path=spec_path, memory_budget=memory_budget,
                      time_budget=time_budget)
    return audited(report, scores, settings)


def spec_audit(spec: Spec, spec_path: str, *, scores: str | None = None,
               folder: Folder | None = None, memory_budget: float | None = None,
               time_budget: float | None = None) -> str | None:
    """The audit ``privspec check`` (and the GitHub Action's check of a pull request's
    specs) holds ``spec`` to: ``scores``, else the spec's ``audit:`` block's file (in
    ``folder``, for a spec read from git), run as :func:`run_audit` runs it.  None without
    a score file; else the contradiction in one sentence, or "" when there is none.
    Raises :class:`SpecError` for the scores' problems, and the evaluator's own errors
    for its refusals."""
    settings = settings_for(spec, spec_path, scores=scores, folder=folder)
    if settings is None:
        return None
    outcome = run_audit(spec, spec_path, settings, memory_budget=memory_budget,
                        time_budget=time_budget)
    return contradiction_message(outcome, settings.scores) if outcome.contradicted else ""


def audited(report: Report, scores: Scores, settings: AuditSettings) -> AuditOutcome:
    """The statements an audit makes, the one place that decides them (``privspec
    audit``, ``check`` and a report's section all come here): the boxes (held out or
    not, as ``settings`` say), and the one-run bound when ``settings`` ask for it."""
    return audit_report(report, scores, settings.confidence, holdout=settings.holdout,
                        one_run_bound=settings.one_run)


def box_words(box: Box, allowed: float | None = None) -> str:
    """One box in words, its numbers rounded against the attack's claim (TPR_lo down,
    FPR_hi up, the TPR the report allows up)."""
    from privspec.report import formatting as fmt

    side = "≥" if box.direction == "higher" else "≤"
    words = (f"the attack 'score {side} {fmt.format_number(box.threshold, 'nearest', digits=6)}' "
             f"has TPR ≥ {fmt.format_number(box.tpr_low, 'down')} at FPR ≤ "
             f"{fmt.format_number(box.fpr_high, 'up')}")
    if allowed is not None:
        words += f", where the report allows TPR ≤ {fmt.format_number(allowed, 'up')}"
    return words


def one_run_words(bound: OneRunBound, certified: float | None) -> str:
    """A one-run bound that contradicts the certified ε, in words (rounded against the
    attack's claim: the bound down, the certified ε up)."""
    from privspec.report import formatting as fmt

    return (f"the one-run bound ε ≥ {fmt.format_number(bound.epsilon_lower, 'down')} at "
            f"δ = {fmt.format_number(bound.delta, 'nearest')} exceeds the certified "
            f"ε = {fmt.fmt_epsilon(certified)}")


def contradiction_message(outcome: AuditOutcome, scores: str) -> str:
    """The clearest contradiction of an audit in one sentence: a box's, else the
    one-run bound's."""
    from privspec.report import formatting as fmt

    confidence = fmt.fmt_chance(outcome.statistics.confidence, "unicode", "nearest")
    if outcome.contradictions:
        words = box_words(*outcome.contradictions[0])
    else:
        words = one_run_words(*outcome.one_run_contradictions[0])
    return (f"audit of {scores}: contradiction at {confidence} confidence: "
            f"{words}: the implementation, the spec or the run is wrong")


def audit_section(outcome: AuditOutcome, scores: Scores, certified: CertifiedCurve
                  ) -> ReportAudit:
    """The report's section of an audit (its boxes with the TPR the report allows, its
    one-run bounds with the ε the report certifies)."""
    from privspec.report.model import Audit as ReportAudit
    from privspec.report.model import AuditBox, AuditEpsilon, AuditOneRun

    statistics = outcome.statistics
    allowed = certified.tpr_bound(np.array([box.fpr_high for box in statistics.boxes]))
    boxes = [AuditBox(**dataclasses.asdict(box), tpr_certified=float(bound),
                      contradicts=box.tpr_low > bound)
             for box, bound in zip(statistics.boxes, allowed.tolist(), strict=True)]
    strongest = statistics.strongest()
    return ReportAudit(
        scores_file=os.path.basename(scores.path), sha256=scores.sha256,
        members=statistics.members, non_members=statistics.non_members,
        confidence=statistics.confidence, holdout=statistics.holdout,
        mu_lower=statistics.mu_lower,
        strongest=None if strongest is None else boxes[statistics.boxes.index(strongest)],
        tightness=outcome.tightness,
        epsilons=[AuditEpsilon(delta=delta, epsilon_lower=lower)
                  for delta, lower, _ in outcome.epsilons],
        contradiction=bool(outcome.contradictions),
        clearest_contradiction=None if not outcome.contradictions else
        boxes[statistics.boxes.index(outcome.contradictions[0][0])],
        boxes=boxes,
        one_run=[AuditOneRun(**dataclasses.asdict(bound), epsilon_certified=certified,
                             contradicts=certified is not None
                             and bound.epsilon_lower > certified)
                 for bound, certified in outcome.one_run])


def with_audit(report: Report, scores: Scores, settings: AuditSettings) -> Report:
    """``report`` with the section of its audit by ``scores``."""
    outcome = audited(report, scores, settings)
    section = audit_section(outcome, scores, certified_curve(report))
    return report.model_copy(update={"audit": section})
