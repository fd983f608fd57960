"""The values of a spec's strategy files, read with numpy when the spec is evaluated.

Validation checks a strategy file's digest and shape only (``privspec.spec.matrix_file``,
pure Python); here every value is read and checked as that module would (in range,
lower-triangular, no 0 on the diagonal: the same words), within the memory budget, and
what the sensitivity needs of the matrix (``privspec.spec.strategies.Columns``: each
column's squared norm and the rows it touches, Gram entries on demand, each rounded
outward from its exact value as ``privspec.spec.upward`` rounds, so the same as pure
Python's) is kept for the rest of the run.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from privspec.errors import EvaluationError
from privspec.numerics import cost
from privspec.spec import upward
from privspec.spec.kinds.matrix_factorization import CYCLIC_NEEDS_ORTHOGONAL
from privspec.spec.matrix_file import (
    NOT_LOWER,
    OUT_OF_RANGE,
    ZERO_ON_DIAGONAL,
    MatrixFileError,
    StrategyFile,
    csv_values,
    is_loaded,
    keep_columns,
    strategy_file,
)
from privspec.spec.models import Spec, walk
from privspec.spec.strategies import MAX_ENTRY, Columns, scale_of

#: Bytes a reading takes per entry: the float64 matrix, and a boolean one for a check.
BYTES_PER_ENTRY = 9


def read_strategy_files(spec: Spec) -> None:
    """Read the values of every strategy file ``spec`` names: a bad value, a matrix
    beyond the memory budget, or cyclic Poisson sampling that its columns do not allow
    refuses the evaluation, located where the spec names the file (or the sampling)."""
    for path, kind, block in walk(spec.mechanism):
        matrix = block.strategy.matrix if kind == "matrix_factorization" else None
        if matrix is None:
            continue
        where = ("mechanism", *path, kind)
        if not is_loaded(matrix.sha256):
            try:
                keep_columns(matrix.sha256, _columns(
                    strategy_file(matrix.file, matrix.sha256, None), spec))
            except MatrixFileError as error:
                raise EvaluationError(f"the strategy file: {error}",
                                      (*where, "strategy", "matrix", "file")) from None
        cyclic = block.participation.cyclic_poisson
        if cyclic is not None and not block.orthogonal_apart(cyclic.block):
            raise EvaluationError(CYCLIC_NEEDS_ORTHOGONAL, (*where, "participation"))


def _columns(file: StrategyFile, spec: Spec) -> Columns:
    """``Columns`` of the strategy in ``file``, its values checked."""
    size = file.size
    what = f"reading the {size:,} × {size:,} strategy file"
    estimate = BYTES_PER_ENTRY * size * size + len(file.data)  # (the file's bytes held too)
    try:
        cost.require(estimate, what)
    except cost.CostError:
        raise MatrixFileError(
            f"{what} takes about {estimate / 2**20:,.0f} MiB, more than the "
            f"{cost.memory_budget() / 2**20:,.0f} MiB one computation may take within "
            f"accounting.memory_budget = {spec.accounting.memory_budget:g} GiB: a larger "
            "budget, or a strategy of fewer steps") from None
    matrix = _values(file)
    largest = float(np.maximum(matrix.max(), -matrix.min()))  # (NaN if any is)
    if not largest <= MAX_ENTRY:
        raise MatrixFileError(OUT_OF_RANGE)
    if any(matrix[:j, j].any() for j in range(1, size)):
        raise MatrixFileError(NOT_LOWER)
    if not np.diagonal(matrix).all():
        raise MatrixFileError(ZERO_ON_DIAGONAL)
    cost.reside(8.0 * size * size)  # kept for the Gram entries
    touched = matrix != 0
    first = np.where(touched.any(axis=0), touched.argmax(axis=0), size)
    last = np.where(touched.any(axis=0), size - 1 - touched[::-1].argmax(axis=0), -1)
    del touched
    scale = scale_of(largest)
    tiny = upward.TINY * scale  # (``lossy``)
    lossy = any(((column != 0) & (np.abs(column) < tiny)).any() for column in matrix.T)
    matrix /= scale  # (exact but below double range: a power of 2, as ``columns_of`` divides)

    def gram(i: int, j: int) -> float:
        return upward.sum_away(_products(matrix[j:, i], matrix[j:, j]))

    def square(j: int) -> Fraction:
        touching = matrix[:, j][matrix[:, j] != 0]
        numbers, shift = upward.as_integers(_products(touching, touching))
        return Fraction(sum(numbers), 1 << shift)

    squares = tuple(upward.sum_up(_products(matrix[:, j], matrix[:, j])) for j in range(size))
    return Columns(squares, tuple(first.tolist()), tuple(last.tolist()), gram, scale, lossy,
                   square)


def _products(first: np.ndarray, second: np.ndarray) -> list[float]:
    """The products of ``first`` and ``second`` element by element, exactly: each as its
    rounded value and its rounding error (``upward.two_product``)."""
    rounded, errors = upward.two_product(first, second)
    return [*rounded.tolist(), *errors.tolist()]


def _values(file: StrategyFile) -> np.ndarray:
    """The n × n float64 matrix of ``file``, column by column in memory (Fortran
    order); for CSV, ``MatrixFileError`` at the first field that is not a number."""
    size = file.size
    if file.npy_type:
        values = np.frombuffer(file.data, dtype=np.dtype(file.npy_type), count=size * size,
                               offset=file.start)
        shaped = values.reshape((size, size), order="F" if file.fortran else "C")
        return np.array(shaped, dtype=np.float64, order="F")  # (a copy: ``_columns`` scales it)
    matrix = np.empty((size, size), dtype=np.float64, order="F")
    for i, row in enumerate(csv_values(file)):
        matrix[i] = row
    return matrix
