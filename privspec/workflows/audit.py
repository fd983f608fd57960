"""``privspec audit``: an attack's scores read from a file and held against a report's
certified curve (the statistics: ``numerics/audit.py``; docs/audit.md).

Score files are untrusted: CSV (a score column and a 0/1 membership column), JSON
(``{"in": [...], "out": [...]}`` or the two columns as arrays) or NPZ (numpy arrays,
read with ``allow_pickle=False``), never pickles. Every problem is one
:class:`Diagnostic` at the file, line and column of the value (the array and index of
an NPZ file), code ``scores/invalid``; a few are listed, then how many more.
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import io
import json
import math
import os
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
from privspec.spec.audit import NOUN
from privspec.spec.diagnostics import Diagnostic, SpecError
from privspec.spec.named_file import NamedFileError, check_digest, located, read_capped

if TYPE_CHECKING:
    from privspec.numerics.curve import FloatArray
    from privspec.report.model import Audit as ReportAudit
    from privspec.report.model import Report
    from privspec.spec.audit import AuditBlock
    from privspec.spec.models import Spec

#: The largest score file read, and the most scores in it.
MAX_SCORE_FILE_BYTES = 2_000_000_000
MAX_SCORES = 50_000_000
#: Bytes of an .npy array's header, at most (NumPy pads it to a multiple of 64).
NPY_HEADER_BYTES = 65_536
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
    return Diagnostic(path, line, column, where, message, Code.SCORES_INVALID)


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
    except NamedFileError as error:
        raise SpecError([Diagnostic(path, 1, 1, "", str(error),
                                    error.code or Code.IO_UNREADABLE)]) from None


def read_scores(path: str, columns: Columns = Columns()) -> Scores:
    """The scores in ``path`` (by its extension: .csv, .json, .npz); a
    :class:`SpecError` lists what is wrong with it."""
    data = _read_bytes(path)
    return parsed_scores(path, data, hashlib.sha256(data).hexdigest(), columns)


def parsed_scores(path: str, data: bytes, digest: str, columns: Columns) -> Scores:
    """The scores in ``data``, the content of the file ``path`` whose SHA-256 is
    ``digest``; a :class:`SpecError` lists what is wrong with them."""
    extension = os.path.splitext(path)[1].lower()
    if data[:2] == b"\x80\x04" or data[:1] == b"\x80" or extension in (".pkl", ".pickle"):
        raise SpecError([_problem(path, 1, 1, "", "a Python pickle: privspec never unpickles "
                                  "files; save the scores as CSV, JSON or NPZ")])
    if extension == ".npz" or data[:4] == b"PK\x03\x04":
        members, non_members = _from_npz(path, data, columns)
    elif extension == ".json":
        members, non_members = _from_json(path, _text(path, data), columns)
    elif extension in (".csv", ".txt"):
        members, non_members = _from_csv(path, _text(path, data), columns)
    else:
        raise SpecError([_problem(path, 1, 1, "", "a score file ends in .csv, .json or .npz")])
    for name, scores in (("members (in)", members), ("non-members (out)", non_members)):
        if scores.size < MIN_SCORES:
            raise SpecError([_problem(path, 1, 1, "", f"{scores.size} scores of {name}: an "
                                      f"audit needs at least {MIN_SCORES} of each class")])
    if members.size + non_members.size > MAX_SCORES:
        raise SpecError([Diagnostic(path, 1, 1, "", f"more than {MAX_SCORES:,} scores",
                                    Code.IO_TOO_LARGE)])
    return Scores(members, non_members, path, digest)


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

def _from_csv(path: str, text: str, columns: Columns) -> tuple[FloatArray, FloatArray]:
    """Members' and non-members' scores from a CSV file with a header line: numpy's
    parser when every row is plain, else row by row (locating every problem)."""
    first = text[:text.find("\n") + 1 or len(text)]
    header = [cell.strip() for cell in
              next(csv.reader(io.StringIO(text if '"' in first else first, newline="")), [])]
    if not header:
        raise SpecError([_problem(path, 1, 1, "", "empty: a CSV score file starts with a "
                                  f"header line naming its columns ({columns.score}, "
                                  f"{columns.label})")])
    missing = [name for name in (columns.score, columns.label) if name not in header]
    if missing:
        raise SpecError([_problem(path, 1, 1, "", f"no column named {name!r} in the header "
                                  f"(it has {', '.join(repr(h) for h in header)}); name the "
                                  "columns with --score-column and --label-column")
                         for name in missing])
    twice = [name for name in dict.fromkeys((columns.score, columns.label))
             if header.count(name) > 1]
    if twice:  # which of them holds the scores would be a guess
        raise SpecError([_problem(path, 1, 1, "", f"the header names {name!r} "
                                  f"{header.count(name)} times: name each column once, or "
                                  "choose others with --score-column and --label-column")
                         for name in twice])
    at_score, at_label = header.index(columns.score), header.index(columns.label)
    plain = _plain_csv(text, len(header), at_score, at_label)
    if plain is not None:
        return plain
    rows = [row for row in csv.reader(io.StringIO(text, newline="")) if row][1:]
    try:
        if any(len(row) != len(header) for row in rows):
            raise ValueError
        scores = np.array([row[at_score] for row in rows], dtype=np.float64)
        labels = np.array([row[at_label].strip() for row in rows])
        member, out = labels == "1", labels == "0"
        if not np.isfinite(scores).all() or not (member | out).all():
            raise ValueError
    except ValueError:
        raise _csv_problems(path, text, header, columns) from None
    return scores[member], scores[out]


def _plain_csv(text: str, width: int, at_score: int, at_label: int
               ) -> tuple[FloatArray, FloatArray] | None:
    """The scores by numpy's parser, when the file has no quotes or NULs, every line its
    ``width`` cells, finite scores and labels 0 or 1 (those very characters, as the row
    by row reading takes them); None otherwise (read row by row)."""
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    lines = text.count("\n") + (not text.endswith("\n")) - 1  # after the header
    if ('"' in text or "\r" in text or "\x00" in text or lines < 1  # (numpy warns of none)
            or text.count(",") != (width - 1) * (lines + 1)):
        return None
    try:
        table = np.loadtxt(io.StringIO(text), delimiter=",", skiprows=1, comments=None,
                           usecols=(at_score, at_label), ndmin=1,
                           dtype=np.dtype([("score", "f8"), ("label", "U2")]))
    except ValueError:
        return None
    scores, member, out = table["score"], table["label"] == "1", table["label"] == "0"
    if table.size != lines or not np.isfinite(scores).all() or not (member | out).all():
        return None
    return scores[member], scores[out]


def _csv_problems(path: str, text: str, header: list[str], columns: Columns) -> SpecError:
    """Every bad row of a CSV score file, located (the slow path, for errors only)."""
    problems: list[Diagnostic] = []
    count = 0
    for line, cells, raw in _csv_lines(text):
        for message, where, index in _row_problems(cells, header, columns):
            count += 1
            if len(problems) < MAX_LISTED:
                problems.append(_problem(path, line, _cell_column(raw, cells, index), where,
                                         message))
    return _refuse(problems, count - len(problems))


def _csv_lines(text: str) -> Iterator[tuple[int, list[str], str]]:
    """(line number, cells, raw line) of each record after the header."""
    lines = text.splitlines()
    reader = csv.reader(io.StringIO(text, newline=""))
    next(reader, None)
    start = reader.line_num + 1
    for cells in reader:
        if cells:
            yield start, cells, lines[start - 1] if start <= len(lines) else ""
        start = reader.line_num + 1


def _row_problems(cells: list[str], header: list[str], columns: Columns
                  ) -> Iterator[tuple[str, str, int]]:
    """(message, column name, cell index) of each problem of one row."""
    if len(cells) != len(header):
        yield (f"{len(cells)} cells where the header names {len(header)}", "", 0)
        return
    at_score, at_label = header.index(columns.score), header.index(columns.label)
    cell = cells[at_score].strip()
    try:
        value = float(cell)
    except ValueError:
        yield (f"{_shown(cell)} is not a number: a score is a finite number", columns.score,
               at_score)
    else:
        if not math.isfinite(value):
            yield (f"{_shown(cell)}: a score is a finite number (no NaN or infinity)",
                   columns.score, at_score)
    if cells[at_label].strip() not in ("0", "1"):
        yield (f"{_shown(cells[at_label].strip())}: membership is 1 (in) or 0 (out)",
               columns.label, at_label)


def _shown(cell: str) -> str:
    return repr(cell if len(cell) <= 30 else cell[:29] + "…")


def _cell_column(raw: str, cells: list[str], index: int) -> int:
    """1-based column of cell ``index`` in ``raw`` (1 when quoting hides it)."""
    if ",".join(cells) != raw:
        return 1
    return len(",".join(cells[:index])) + (2 if index else 1)


# --- JSON --------------------------------------------------------------------------------

def _from_json(path: str, text: str, columns: Columns) -> tuple[FloatArray, FloatArray]:
    """Members' and non-members' scores from ``{"in": [...], "out": [...]}`` or
    ``{SCORE: [...], LABEL: [...]}``."""
    try:  # integers as floats: a 5,000-digit one is infinite, not Python's ValueError
        data = json.loads(text, parse_constant=lambda name: name, parse_int=float)
    except json.JSONDecodeError as error:
        raise SpecError([_problem(path, error.lineno, error.colno, "",
                                  f"invalid JSON: {error.msg}")]) from None
    except RecursionError:
        raise SpecError([_problem(path, 1, 1, "", "invalid JSON: lists or objects nested "
                                  "too deeply (a score file's lists hold numbers)")]) from None
    if isinstance(data, dict) and MEMBERS_KEY in data and NON_MEMBERS_KEY in data:
        members = _json_scores(path, text, data, MEMBERS_KEY)
        return members, _json_scores(path, text, data, NON_MEMBERS_KEY)
    if isinstance(data, dict) and columns.score in data and columns.label in data:
        scores = _json_scores(path, text, data, columns.score)
        labels = data[columns.label]
        bad = ([] if not isinstance(labels, list) else
               [i for i, label in enumerate(labels)
                if isinstance(label, bool) or label not in (0, 1)])
        if not isinstance(labels, list) or bad or len(labels) != scores.size:
            what = ("membership is 1 (in) or 0 (out)" if bad else
                    f"{columns.label!r} is a list as long as {columns.score!r}")
            spots = bad[:MAX_LISTED] or [0]
            raise _refuse([_json_problem(path, text, columns.label, i, what) for i in spots],
                          len(bad) - len(spots) if bad else 0)
        member = np.array(labels, dtype=np.int64) == 1
        return scores[member], scores[~member]
    raise SpecError([_problem(path, 1, 1, "", f"a JSON score file is an object with lists "
                              f"{MEMBERS_KEY!r} and {NON_MEMBERS_KEY!r}, or {columns.score!r} "
                              f"and {columns.label!r}")])


def _json_scores(path: str, text: str, data: dict[str, Any], key: str) -> FloatArray:
    values = data[key]
    if not isinstance(values, list):
        raise SpecError([_json_problem(path, text, key, None, "a list of numbers")])
    bad = [i for i, value in enumerate(values) if isinstance(value, bool)
           or not isinstance(value, (int, float)) or not math.isfinite(value)]
    if bad:
        spots = bad[:MAX_LISTED]
        raise _refuse([_json_problem(path, text, key, i, "a score is a finite number (no "
                                     "NaN, infinity, string or boolean)") for i in spots],
                      len(bad) - len(spots))
    return np.asarray(values, dtype=np.float64)


def _json_problem(path: str, text: str, key: str, index: int | None, message: str
                  ) -> Diagnostic:
    """A problem at ``key``'s list (item ``index``), located in ``text``."""
    where = key if index is None else f"{key}[{index}]"
    offset = _json_item_offset(text, key, index)
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return _problem(path, line, column, where, message)


def _json_item_offset(text: str, key: str, index: int | None) -> int:
    """Where item ``index`` of the top-level list ``key`` starts in ``text`` (where the
    key's value starts when ``index`` is None; 0 when it cannot be found)."""
    decoder = json.JSONDecoder(parse_int=float)
    quoted = json.dumps(key)
    start = text.find(quoted)
    while start >= 0:
        after = text[start + len(quoted):].lstrip()
        if after.startswith(":"):
            break
        start = text.find(quoted, start + 1)
    if start < 0:
        return 0
    position = text.index(":", start + len(quoted)) + 1
    while position < len(text) and text[position].isspace():
        position += 1
    if index is None or position >= len(text) or text[position] != "[":
        return position
    position += 1
    for _ in range(index + 1):
        while position < len(text) and text[position] in " \t\r\n,":
            position += 1
        item_start = position
        try:
            _, position = decoder.raw_decode(text, position)
        except (json.JSONDecodeError, RecursionError):
            return item_start
    return item_start


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
                _refuse_unpacked_size(path, name, archive.zip.getinfo(f"{name}.npy"))
            arrays = {name: archive[name] for name in wanted}
    except (ValueError, OSError, zipfile.BadZipFile, EOFError, KeyError) as error:
        raise SpecError([_problem(path, 1, 1, "", f"not an NPZ file of plain numeric arrays "
                                  f"({error})")]) from None
    if MEMBERS_KEY in arrays and NON_MEMBERS_KEY in arrays:
        return (_npz_scores(path, arrays, MEMBERS_KEY), _npz_scores(path, arrays,
                                                                    NON_MEMBERS_KEY))
    if columns.score in arrays and columns.label in arrays:
        scores = _npz_scores(path, arrays, columns.score)
        labels = np.asarray(arrays[columns.label]).ravel()
        if labels.dtype.kind not in "biuf" or labels.size != scores.size:
            raise SpecError([_problem(path, 1, 1, columns.label, "membership: a numeric "
                                      f"array of 0s and 1s as long as {columns.score!r}")])
        bad = np.flatnonzero((labels != 0) & (labels != 1))
        if bad.size:
            raise _refuse([_problem(path, 1, 1, f"{columns.label}[{i}]", "membership is 1 "
                                    "(in) or 0 (out)") for i in bad[:MAX_LISTED].tolist()],
                          bad.size - min(bad.size, MAX_LISTED))
        return scores[labels == 1], scores[labels == 0]
    raise SpecError([_problem(path, 1, 1, "", f"an NPZ score file holds arrays "
                              f"{MEMBERS_KEY!r} and {NON_MEMBERS_KEY!r}, or {columns.score!r} "
                              f"and {columns.label!r}; it has {names}")])


def _refuse_unpacked_size(path: str, name: str, info: zipfile.ZipInfo) -> None:
    """An array that unpacks to more than ``MAX_SCORES`` doubles (a small file may unpack
    to gigabytes) is refused before it is unpacked."""
    if info.file_size > MAX_SCORES * 8 + NPY_HEADER_BYTES:
        raise SpecError([Diagnostic(path, 1, 1, name, f"unpacks to {info.file_size:,} bytes, "
                                    f"more than {MAX_SCORES:,} scores", Code.IO_TOO_LARGE)])


def _npz_scores(path: str, arrays: dict[str, np.ndarray], key: str) -> FloatArray:
    values = np.asarray(arrays[key])
    if values.dtype.kind not in "iuf":
        raise SpecError([_problem(path, 1, 1, key, f"an array of numbers, not {values.dtype}")])
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
    digest the spec names for them (None for a file given on the command line)."""

    scores: str
    columns: Columns
    confidence: float
    holdout: bool
    one_run: bool = False
    sha256: str | None = None
    named: str | None = None  # the file's name as the spec's audit: block writes it


def settings_for(spec: Spec, spec_path: str, *, scores: str | None = None,
                 score_column: str | None = None, label_column: str | None = None,
                 confidence: float | None = None, holdout: bool | None = None,
                 one_run: bool | None = None) -> AuditSettings | None:
    """The options given, else the spec's ``audit:`` block's, else the defaults; None
    when neither names a score file. The block's file is relative to the spec's folder."""
    block = spec.audit
    if scores is None:
        if block is None:
            return None
        scores = os.path.join(os.path.dirname(spec_path), block.scores)
    named = Columns() if block is None else Columns(block.score_column, block.label_column)
    return AuditSettings(
        scores=scores,
        columns=Columns(score_column or named.score, label_column or named.label),
        confidence=confidence if confidence is not None else (
            DEFAULT_CONFIDENCE if block is None else block.confidence),
        holdout=holdout if holdout is not None else (block is not None and block.holdout),
        one_run=one_run if one_run is not None else (block is not None and block.one_run),
        **({"sha256": block.sha256, "named": block.scores}
           if block is not None and _names(spec_path, block, scores) else {}))


def _names(spec_path: str, block: AuditBlock, scores: str) -> bool:
    """Whether ``scores`` is the file ``block`` names (whose SHA-256 it states)."""
    named = os.path.join(os.path.dirname(spec_path), block.scores)
    return os.path.abspath(named) == os.path.abspath(scores)


def scores_for(settings: AuditSettings, spec_path: str) -> Scores:
    """The scores ``settings`` name. A file the spec names (from strangers) is refused
    at the spec's ``audit:`` block when it leads out of the spec's folder or its
    SHA-256 is not the one the spec names, before anything in it is read."""
    if settings.sha256 is None or settings.named is None:
        return read_scores(settings.scores, settings.columns)
    try:
        located(settings.named, spec_path, NOUN)
    except NamedFileError as error:
        raise _block_problem(spec_path, "scores", str(error)) from None
    data = _read_bytes(settings.scores)
    try:
        digest = check_digest(data, settings.sha256, settings.named, NOUN)
    except NamedFileError as error:
        raise _block_problem(spec_path, "sha256", str(error)) from None
    return parsed_scores(settings.scores, data, digest, settings.columns)


def _block_problem(spec_path: str, key: str, message: str) -> SpecError:
    """A problem of the spec's ``audit:`` block, at ``key``'s line and column."""
    from privspec.spec.loader import position_of

    line, column = position_of(spec_path, ("audit", key)) or (1, 1)
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
