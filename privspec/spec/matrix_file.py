"""A strategy matrix read from a file named by a spec: NumPy's ``.npy`` (float64 or
float32, read without unpickling anything) or CSV, checked against the SHA-256 the spec
states, and kept by that digest for the rest of the run.

The file comes from the same stranger as the spec: ``spec/named_file.py`` finds it in
the spec's folder (never outside it), caps its size and checks its digest; an error
never quotes it.
Pure Python: ``privspec validate`` imports this layer, without numpy.
"""

from __future__ import annotations

import ast
import math
import sys
from array import array

from privspec.spec.named_file import NamedFileError, located, read_named

#: Largest strategy a file may give: n × n with n at most this.
MAX_MATRIX_STEPS = 2_000
#: Largest file read (a 2,000 × 2,000 float64 .npy is 32 MB; CSV takes more).
MAX_MATRIX_BYTES = 100_000_000

Matrix = tuple[tuple[float, ...], ...]

#: What the file is, in messages.
NOUN = "strategy file"

_LOADED: dict[str, Matrix] = {}
_NPY_TYPES = {"<f8": "d", "<f4": "f"}


class MatrixFileError(NamedFileError):
    """Why a strategy file cannot be used (one sentence, never quoting the file)."""


def load_matrix(name: str, sha256: str, spec_file: str | None) -> Matrix:
    """The rows of the matrix in ``name`` (relative to the spec file's directory, or
    the working directory for a spec without a file, and inside it), whose SHA-256 must
    be ``sha256``; a matrix already read with that digest is not read again (its name
    is still held to the spec's folder)."""
    if sha256 in _LOADED:
        if spec_file is not None:
            located(name, spec_file, NOUN)
        return _LOADED[sha256]
    data = read_named(name, sha256, spec_file, MAX_MATRIX_BYTES, NOUN)
    rows = _npy_rows(data) if data.startswith(b"\x93NUMPY") else _csv_rows(data)
    _LOADED[sha256] = _checked(rows)
    return _LOADED[sha256]


def _npy_rows(data: bytes) -> list[list[float]]:
    """A 2-D float64 or float32 ``.npy`` array's rows (format versions 1 to 3)."""
    major = data[6] if len(data) > 6 else 0
    width = 2 if major == 1 else 4
    if major not in (1, 2, 3) or len(data) < 8 + width:
        raise MatrixFileError("not a .npy file of format version 1, 2 or 3")
    start = 8 + width
    length = int.from_bytes(data[8:start], "little")
    try:
        header = ast.literal_eval(data[start:start + length].decode("latin-1"))
        kind, fortran, shape = header["descr"], header["fortran_order"], header["shape"]
    except (ValueError, SyntaxError, KeyError, TypeError, MemoryError, RecursionError):
        raise MatrixFileError("the .npy header is not readable") from None
    if kind not in _NPY_TYPES or not isinstance(shape, tuple) or len(shape) != 2:
        raise MatrixFileError("a .npy strategy is a 2-D array of little-endian float64 or "
                              "float32 ('<f8', '<f4'): np.save(path, c.astype('<f8'))")
    rows, columns = shape
    if not all(isinstance(n, int) and 0 < n <= MAX_MATRIX_STEPS for n in shape):
        raise MatrixFileError(f"the array must be n × n with 1 ≤ n ≤ {MAX_MATRIX_STEPS:,}")
    values = array(_NPY_TYPES[kind])
    body = data[start + length:]
    if len(body) != rows * columns * values.itemsize:
        raise MatrixFileError("the .npy data do not have the size its header states")
    values.frombytes(body)
    if sys.byteorder == "big":
        values.byteswap()
    if fortran:
        return [[float(values[j * rows + i]) for j in range(columns)] for i in range(rows)]
    return [[float(v) for v in values[i * columns:(i + 1) * columns]] for i in range(rows)]


def _csv_rows(data: bytes) -> list[list[float]]:
    """The rows of a CSV file of numbers (commas between values, one row a line)."""
    try:
        lines = [line for line in data.decode("utf-8").splitlines() if line.strip()]
    except UnicodeDecodeError:
        raise MatrixFileError("neither a .npy file nor UTF-8 CSV text") from None
    if len(lines) > MAX_MATRIX_STEPS:
        raise MatrixFileError(f"the matrix must be n × n with n ≤ {MAX_MATRIX_STEPS:,}")
    try:
        return [[float(value) for value in line.split(",")] for line in lines]
    except ValueError:
        raise MatrixFileError("a CSV strategy holds numbers only, separated by commas, "
                              "with no header line") from None


def _checked(rows: list[list[float]]) -> Matrix:
    """The rows, once square, finite, lower-triangular and with a non-zero diagonal."""
    size = len(rows)
    if size == 0 or any(len(row) != size for row in rows):
        raise MatrixFileError("the strategy must be a square matrix, n rows of n values")
    if not all(math.isfinite(value) for row in rows for value in row):
        raise MatrixFileError("every entry must be a finite number (no NaN or infinity)")
    if any(row[j] != 0 for i, row in enumerate(rows) for j in range(i + 1, size)):
        raise MatrixFileError("the strategy must be lower-triangular (step i's noise "
                              "mixes only steps up to i), as a streaming mechanism's is")
    if any(rows[i][i] == 0 for i in range(size)):
        raise MatrixFileError("the diagonal must have no 0: the strategy must be invertible")
    return tuple(tuple(row) for row in rows)
