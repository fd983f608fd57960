"""The header of a NumPy ``.npy`` file (format versions 1 to 3), read from a stranger's
bytes without numpy and without unpickling anything: its length is capped before it is
parsed, as NumPy's own reader caps it (``numpy.lib.format``'s ``max_header_size``), and
its fields are held to their types.  A message never quotes the header.

Pure Python: ``privspec validate`` imports this layer, without numpy.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

#: The most bytes a header may have (NumPy's own limit for parsing one safely; the
#: headers it writes are far shorter).
MAX_HEADER_BYTES = 10_000
#: The bytes of a file that say whether it is a ``.npy`` file and its header's length.
START_BYTES = 12
_MAGIC = b"\x93NUMPY"


class NpyHeaderError(ValueError):
    """Why a ``.npy`` header cannot be read (one sentence, never quoting the file)."""


@dataclass(frozen=True)
class NpyHeader:
    """A ``.npy`` header: the array's type (``descr``, e.g. '<f8'), whether it is in
    Fortran order, its shape, and where its data start in the file."""

    descr: str
    fortran: bool
    shape: tuple[int, ...]
    start: int


def is_npy(data: bytes) -> bool:
    """Whether ``data`` starts as a ``.npy`` file does."""
    return data.startswith(_MAGIC)


def header_length(data: bytes) -> tuple[int, int]:
    """Where the header of the ``.npy`` file that starts with ``data`` (its first
    ``START_BYTES`` suffice) starts, and its length, at most ``MAX_HEADER_BYTES``: a
    file may be refused from its start, before it is read whole."""
    major = data[6] if len(data) > 6 else 0
    width = 2 if major == 1 else 4
    if not is_npy(data) or major not in (1, 2, 3) or len(data) < 8 + width:
        raise NpyHeaderError("not a .npy file of format version 1, 2 or 3")
    length = int.from_bytes(data[8:8 + width], "little")
    if length > MAX_HEADER_BYTES:
        raise NpyHeaderError(f"its .npy header has {length:,} bytes, more than the "
                             f"{MAX_HEADER_BYTES:,} NumPy reads (np.save writes a short one)")
    return 8 + width, length


def npy_header(data: bytes) -> NpyHeader:
    """The header of the ``.npy`` file ``data``; its length is checked before it is
    parsed (``header_length``), and its ``descr`` must be a string, its
    ``fortran_order`` a boolean and its ``shape`` a tuple of non-negative integers."""
    start, length = header_length(data)
    major = data[6]
    if len(data) < start + length:
        raise NpyHeaderError("the .npy file ends inside its header")
    try:  # version 3 headers are UTF-8, earlier ones Latin-1
        text = data[start:start + length].decode("utf-8" if major == 3 else "latin-1")
        header = ast.literal_eval(text)
        descr, fortran, shape = header["descr"], header["fortran_order"], header["shape"]
    except (ValueError, SyntaxError, KeyError, TypeError, MemoryError, RecursionError,
            IndexError):
        raise NpyHeaderError("the .npy header is not readable") from None
    if (not isinstance(descr, str) or not isinstance(fortran, bool)
            or not isinstance(shape, tuple)
            or not all(type(n) is int and n >= 0 for n in shape)):
        raise NpyHeaderError("the .npy header is not readable: 'descr' must be a type "
                             "string, 'fortran_order' a boolean, 'shape' a tuple of sizes")
    return NpyHeader(descr, fortran, shape, start + length)
