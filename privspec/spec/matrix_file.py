"""A strategy matrix read from a file named by a spec: NumPy's ``.npy`` (float64 or
float32, read without unpickling anything) or CSV, checked against the SHA-256 the spec
states, and kept by that digest for the rest of the run.  Validation checks the digest
and the shape (``matrix_size``); the values are read and checked when first used: by
the evaluation, with numpy (``privspec.numerics.strategy_file``), which keeps what the
sensitivity needs (``keep_columns``), else here (``load_matrix``).

The file comes from the same stranger as the spec: ``spec/named_file.py`` finds it in
the spec's folder (never outside it), caps its size and checks its digest; an error
never quotes it.
Pure Python: ``privspec validate`` imports this layer, without numpy.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterator
from dataclasses import dataclass

from privspec.spec.named_file import Beside, NamedFileError, check_inside, read_named
from privspec.spec.npy_header import (
    START_BYTES,
    NpyHeaderError,
    header_length,
    is_npy,
    npy_header,
)
from privspec.spec.strategies import MAX_ENTRY, Columns, columns_of

#: Largest strategy a file may give: n × n with n at most this (the evaluation reads
#: it with numpy, within the memory budget: ``privspec.numerics.strategy_file``).
MAX_MATRIX_STEPS = 4_000
#: Largest file read (a 4,000 × 4,000 float64 .npy is 128 MB; CSV takes more).
MAX_MATRIX_BYTES = 150_000_000

#: What to change for a longer run (the limit is a strategy file's only).
_BEYOND = (": a longer run's strategy is given by its banded_toeplitz coefficients, or "
           "the binary tree")

Matrix = tuple[tuple[float, ...], ...]

#: What the file is, in messages.
NOUN = "strategy file"

#: Files checked (digest, header, shape) and not yet read value by value, by digest.
_CHECKED: dict[str, StrategyFile] = {}
#: Matrices read value by value, by digest.
_LOADED: dict[str, Columns] = {}
_NPY_TYPES = {"<f8": "d", "<f4": "f"}

#: Why a strategy file's shape cannot be used.
NOT_SQUARE = "the strategy must be a square matrix, n rows of n values"
#: Why a strategy's values cannot be used, checked in this order.
OUT_OF_RANGE = (f"every entry must be a number from {-MAX_ENTRY:g} to {MAX_ENTRY:g} (no NaN "
                "or infinity): a larger strategy is scaled down, its noise multiplier with it")
NOT_LOWER = ("the strategy must be lower-triangular (step i's noise mixes only steps up "
             "to i), as a streaming mechanism's is")
ZERO_ON_DIAGONAL = "the diagonal must have no 0: the strategy must be invertible"


class MatrixFileError(NamedFileError):
    """Why a strategy file cannot be used (one sentence, never quoting the file)."""


@dataclass(frozen=True)
class StrategyFile:
    """A strategy file whose digest and shape are checked: its bytes, its size n (it
    is n × n), and for a .npy file where its values start, their type and order."""

    data: bytes
    size: int
    start: int = 0
    npy_type: str = ""
    fortran: bool = False


def matrix_size(name: str, sha256: str, spec_file: Beside) -> int:
    """n, for the n × n matrix in ``name`` (relative to the spec file's directory, or
    the working directory for a spec without a file, or in the git revision's folder the
    spec was read from), whose SHA-256 must be ``sha256``:
    what validation checks (where the file is, its size, digest, header and shape),
    without reading its values (``load_matrix`` does, at evaluation).  A file already
    read with that digest is not read again; its name is still held to the spec's
    folder (and, in a git revision, to a file there)."""
    if sha256 in _LOADED or sha256 in _CHECKED:
        check_inside(name, spec_file, NOUN)
    return checked_size(name, sha256, spec_file)


def checked_size(name: str, sha256: str, spec_file: Beside = None) -> int:
    """``matrix_size`` of a file validation checked (kept by its digest), without
    holding its name to a folder again."""
    if sha256 in _LOADED:
        return len(_LOADED[sha256].squares)
    return strategy_file(name, sha256, spec_file).size


def strategy_file(name: str, sha256: str, spec_file: Beside) -> StrategyFile:
    """The file ``name``, its digest and shape checked (``matrix_size``), kept by its
    digest until its values are read."""
    if sha256 not in _CHECKED:
        data = read_named(name, sha256, spec_file, MAX_MATRIX_BYTES, NOUN,
                          (START_BYTES, _npy_start))
        _CHECKED[sha256] = _npy_file(data) if is_npy(data) else _csv_file(data)
    return _CHECKED[sha256]


def load_matrix(name: str, sha256: str, spec_file: Beside) -> Columns:
    """The ``Columns`` of the matrix in ``name`` (``matrix_size``'s checks first), each
    value read and checked (in range, lower-triangular, with no 0 on the diagonal): those
    the evaluation kept (``keep_columns``), else read here in pure Python."""
    if sha256 not in _LOADED:
        file = strategy_file(name, sha256, spec_file)
        rows = _npy_rows(file) if file.npy_type else [*csv_values(file)]
        keep_columns(sha256, columns_of(_checked(rows)))
    return _LOADED[sha256]


def is_loaded(sha256: str) -> bool:
    """Whether the values of the file of digest ``sha256`` have been read."""
    return sha256 in _LOADED


def keep_columns(sha256: str, columns: Columns) -> None:
    """Keep what the values of the file of digest ``sha256`` give, for the rest of the
    run (its bytes are let go)."""
    _LOADED[sha256] = columns
    _CHECKED.pop(sha256, None)


def _npy_start(data: bytes) -> None:
    """Refuse a ``.npy`` file whose header is too long from its first bytes."""
    if is_npy(data):
        try:
            header_length(data)
        except NpyHeaderError as error:
            raise MatrixFileError(str(error)) from None


def _npy_file(data: bytes) -> StrategyFile:
    """A 2-D float64 or float32 ``.npy`` array (format versions 1 to 3), its header
    (``npy_header``: its length capped before it is parsed) and size checked."""
    try:
        header = npy_header(data)
    except NpyHeaderError as error:
        raise MatrixFileError(str(error)) from None
    kind, shape = header.descr, header.shape
    if kind not in _NPY_TYPES or len(shape) != 2:
        raise MatrixFileError("a .npy strategy is a 2-D array of little-endian float64 or "
                              "float32 ('<f8', '<f4'): np.save(path, c.astype('<f8'))")
    rows, columns = shape
    if not all(0 < n <= MAX_MATRIX_STEPS for n in shape):
        raise MatrixFileError(f"the array must be n × n with 1 ≤ n ≤ {MAX_MATRIX_STEPS:,}"
                              f"{_BEYOND}")
    itemsize = array(_NPY_TYPES[kind]).itemsize
    if len(data) - header.start != rows * columns * itemsize:
        raise MatrixFileError("the .npy data do not have the size its header states")
    if rows != columns:
        raise MatrixFileError(NOT_SQUARE)
    return StrategyFile(data, rows, header.start, kind, header.fortran)


def _npy_rows(file: StrategyFile) -> list[list[float]]:
    """The rows of a ``.npy`` file ``_npy_file`` checked."""
    values = array(_NPY_TYPES[file.npy_type])
    values.frombytes(file.data[file.start:])
    if sys.byteorder == "big":
        values.byteswap()
    n = file.size
    if file.fortran:
        return [[float(values[j * n + i]) for j in range(n)] for i in range(n)]
    return [[float(v) for v in values[i * n:(i + 1) * n]] for i in range(n)]


def _csv_file(data: bytes) -> StrategyFile:
    """A CSV file of n lines of n comma-separated fields (blank lines skipped), UTF-8
    (a byte-order mark, as spreadsheets write, is skipped); its fields are read as
    numbers by ``csv_values``."""
    data = data.removeprefix(b"\xef\xbb\xbf")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        raise MatrixFileError("neither a .npy file nor UTF-8 CSV text") from None
    lines = [line for line in data.splitlines() if line.strip()]
    if lines:  # a header line, the likeliest mistake, is found here (the rest later)
        _numbers(lines[0].decode("utf-8"))
    if len(lines) > MAX_MATRIX_STEPS:
        raise MatrixFileError(f"the matrix must be n × n with n ≤ {MAX_MATRIX_STEPS:,}{_BEYOND}")
    if not lines or any(line.count(b",") != len(lines) - 1 for line in lines):
        raise MatrixFileError(NOT_SQUARE)
    return StrategyFile(data, len(lines))


def csv_values(file: StrategyFile) -> Iterator[list[float]]:
    """The rows of a CSV file ``_csv_file`` checked, one by one: numbers, separated by
    commas (``MatrixFileError`` at the first that is not)."""
    for line in file.data.splitlines():  # (the lines ``_csv_file`` counted)
        if line.strip():
            yield _numbers(line.decode("utf-8"))


def _numbers(line: str) -> list[float]:
    """The numbers of one CSV line (as CSV writes them, in ASCII: Python's '1_000', or
    its digits of other scripts, '١', are not)."""
    try:
        if "_" in line or not line.isascii():
            raise ValueError
        return [float(value) for value in line.split(",")]
    except ValueError:
        raise MatrixFileError("a CSV strategy holds numbers only, separated by commas, "
                              "with no header line") from None


def _checked(rows: list[list[float]]) -> Matrix:
    """The rows (of a file whose shape is checked), once in range (``MAX_ENTRY``),
    lower-triangular and with a non-zero diagonal."""
    size = len(rows)
    if not all(abs(value) <= MAX_ENTRY for row in rows for value in row):  # (NaN too)
        raise MatrixFileError(OUT_OF_RANGE)
    if any(row[j] != 0 for i, row in enumerate(rows) for j in range(i + 1, size)):
        raise MatrixFileError(NOT_LOWER)
    if any(rows[i][i] == 0 for i in range(size)):
        raise MatrixFileError(ZERO_ON_DIAGONAL)
    return tuple(tuple(row) for row in rows)
