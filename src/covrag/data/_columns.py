"""Whitespace-separated text files as column arrays (private): the fast path of the TREC readers.

A file's bytes are split into tokens with numpy, without a Python object per line or per token,
and a column's tokens are numbered (factorised) by sorting fixed-width integer keys. Only plain
files take this path: ASCII, spaces and tabs between columns, ``\\n`` (or ``\\r\\n``) ending
lines, and every non-blank line with the same number of columns. Anything else gives None, and
the caller reads the file with its line-by-line parser, which names the bad line, field and
file (or accepts what this path leaves to it, such as non-ASCII ids).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from covrag.types import FloatArray, IntArray

ByteArray = npt.NDArray[np.uint8]
WordArray = npt.NDArray[np.uint64]
PositionArray = npt.NDArray[np.signedinteger[Any]]
"""Byte offsets: 32-bit integers for files under 2 GiB (half the memory), else 64-bit."""

_NUMBER_BYTES = np.zeros(256, dtype=bool)
_NUMBER_BYTES[list(b"0123456789.eE+-")] = True
_MIX = np.uint64(0x9E3779B97F4A7C15)
# _KEEP[k]: the mask of the first k bytes of a big-endian 8-byte word.
_KEEP = np.array([0] + [((1 << (8 * k)) - 1) << (64 - 8 * k) for k in range(1, 9)], np.uint64)


@dataclass(frozen=True)
class Columns:
    """The tokens of a file with a fixed number of columns.

    Attributes:
        raw: The file's bytes, after one space and before 8 zero bytes.
        windows: ``windows[i]``: the 8 bytes from offset ``i`` as a big-endian integer (a
            strided view over the bytes; zeros past the end).
        starts: (lines, columns) offset in ``raw`` of each token's first byte.
        ends: (lines, columns) offset one past each token's last byte; None when a single
            byte separates tokens throughout (each ends one byte before the next starts).
        last_end: One past the last token's last byte.
    """

    raw: bytes | bytearray
    windows: WordArray
    starts: PositionArray
    ends: PositionArray | None
    last_end: int
    _lengths: dict[int, PositionArray] = field(default_factory=dict, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.starts)

    def lengths(self, column: int) -> PositionArray:
        """(lines,) bytes of each token of a column."""
        cached = self._lengths.get(column)
        if cached is not None:
            return cached
        if self.ends is not None:
            ends = self.ends[:, column]
        elif column + 1 < self.starts.shape[1]:
            ends = self.starts[:, column + 1] - 1
        else:
            ends = np.append(self.starts[1:, 0] - 1, self.last_end)
        result: PositionArray = ends - self.starts[:, column]
        self._lengths[column] = result
        return result

    def texts(self, lines: Sequence[int] | IntArray, column: int) -> list[str]:
        """Tokens of one column as strings (converted as one array, not one by one)."""
        tokens = _words_at(self.windows, self.starts[lines, column], self.lengths(column)[lines])
        size = 8 * tokens.shape[1]
        strings = tokens.astype(">u8").view(f"S{size}").ravel().astype(f"U{size}")
        result: list[str] = strings.tolist()
        return result


def read_columns(path: str | os.PathLike[str], width: int) -> Columns | None:
    """The tokens of a file if it is a plain file of ``width`` columns, else None."""
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        # One space before the file (every token starts after a non-token byte) and zeros
        # after it (every token ends before one, and 8-byte windows stay inside).
        padded = bytearray(size + 9)
        padded[0] = ord(" ")
        if handle.readinto(memoryview(padded)[1 : size + 1]) != size or handle.read(1):
            return None  # the file changed while read: the careful reader reads it again
    return _split(padded, size, width)


def _split(padded: bytearray, size: int, width: int) -> Columns | None:
    if size == 0 or not padded.isascii():
        return None
    buf = np.frombuffer(padded, dtype=np.uint8, count=size + 2)
    starts, token_bytes, control = _scan(buf, size)
    tabs, newlines, returns = (int(control[c]) for c in (9, 10, 13))
    if tabs + newlines + returns != int(control.sum()):
        return None  # other control bytes: some are line breaks to Python, some not
    if returns and (buf[np.flatnonzero(buf == 13) + 1] != 10).any():
        return None  # a carriage return not before a newline: a line break to Python
    n = len(starts)
    if n == 0 or n % width:
        return None
    last = int(starts[-1])
    last_end = last + int(np.argmin(buf[last:] > 32))
    outside = size - token_bytes - (int(starts[0]) - 1) - (size + 1 - last_end)
    ends: PositionArray | None = None
    if outside == n - 1:
        # A single byte between tokens (the common case): each token ends one byte before
        # the next starts, and that byte says whether a line ends there.
        breaks = np.empty(n, dtype=bool)
        breaks[0] = False
        starts -= 1  # in place: the separators (no array of that size made)
        np.equal(buf[starts[1:]], 10, out=breaks[1:])
        starts += 1
    else:
        ends = _scan(buf, size, falling=True)[0]
        breaks = np.zeros(n + 1, dtype=bool)
        breaks[np.searchsorted(starts, np.flatnonzero(buf == 10))] = True
        breaks = breaks[:n]
    grid = breaks.reshape(-1, width)
    if not grid[1:, 0].all() or grid[:, 1:].any():
        return None
    windows: WordArray = np.ndarray((size + 1,), dtype=">u8", buffer=padded, strides=(1,))
    return Columns(
        padded,
        windows,
        starts.reshape(-1, width),
        None if ends is None else ends.reshape(-1, width),
        last_end,
    )


_BLOCK = 1 << 21  # bytes per block: buffers under numpy's huge-page threshold, reused


def _scan(buf: ByteArray, size: int, falling: bool = False) -> tuple[PositionArray, int, IntArray]:
    """Offsets where tokens start (or, ``falling``, end), the number of token bytes, and the
    count of each control byte (0 to 31) of the text ``buf[1 : size + 1]``, block by block.

    ``buf[0]`` is a space and ``buf[size + 1]`` a zero. Offsets are 32-bit integers where they
    suffice: half the memory, and no temporary array as large as the file.
    """
    dtype: type[np.signedinteger[Any]] = np.int32 if size + 2 < 2**31 else np.int64
    pieces: list[PositionArray] = []
    token_bytes = 0
    control = np.zeros(32, dtype=np.int64)
    for start in range(1, size + 2, _BLOCK):
        window = buf[start - 1 : start + _BLOCK]
        token = window > 32
        edge = token[1:] < token[:-1] if falling else token[1:] > token[:-1]
        found = np.flatnonzero(edge).astype(dtype)
        found += start
        pieces.append(found)
        token_bytes += int(np.count_nonzero(token[1:]))
        text = window[1:]
        control += np.bincount(text[text < 32], minlength=32)
    control[0] -= 1  # the zero after the text
    return np.concatenate(pieces), token_bytes, control


def words(columns: Columns, column: int) -> WordArray:
    """(lines, words) each token as zero-padded 8-byte words: integer order is byte order."""
    return _words_at(columns.windows, columns.starts[:, column], columns.lengths(column))


def _words_at(windows: WordArray, starts: PositionArray, lengths: PositionArray) -> WordArray:
    n_words = max(1, -(-int(lengths.max(initial=0)) // 8))
    if n_words == 1:
        word: WordArray = windows[starts] & _KEEP[lengths]
        return word[:, None]
    result = np.empty((len(starts), n_words), dtype=np.uint64)
    for j in range(n_words):
        keep = _KEEP[np.clip(lengths - 8 * j, 0, 8)]
        at = np.minimum(starts + 8 * j, len(windows) - 1)
        result[:, j] = windows[at] & keep
    return result


def _group(keys: WordArray) -> tuple[IntArray, IntArray]:
    """Codes of equal keys (in ascending key order) and each code's first index."""
    order = np.argsort(keys)
    ordered = keys[order]
    new = np.empty(len(keys), dtype=bool)
    new[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
    codes = np.empty(len(keys), dtype=np.int64)
    codes[order] = np.cumsum(new) - 1
    first: IntArray = np.minimum.reduceat(order, np.flatnonzero(new)).astype(np.int64)
    return codes, first


def _group_runs(keys: WordArray) -> tuple[IntArray, IntArray] | None:
    """``_group`` for keys in long runs (a column of a file grouped by topic): group the runs'
    keys only; None when runs are short."""
    heads = np.flatnonzero(np.concatenate([[True], keys[1:] != keys[:-1]]))
    if 4 * len(heads) > len(keys):
        return None
    codes, first = _group(keys[heads])
    return np.repeat(codes, np.diff(np.append(heads, len(keys)))), heads[first]


def factorize(columns: Columns, column: int) -> tuple[IntArray, IntArray] | None:
    """Number a column's distinct tokens in byte order (string order, for ASCII).

    Returns:
        codes (lines,) and, per code, the first line that holds it; None in the (astronomically
        unlikely) case of a hash collision between long tokens, left to the careful parser.
    """
    tokens = words(columns, column)
    if tokens.shape[1] == 1:
        keys = tokens[:, 0]
        return _group_runs(keys) or _group(keys)
    keys = tokens[:, 0].copy()
    with np.errstate(over="ignore"):
        for j in range(1, tokens.shape[1]):
            keys = (keys ^ (keys >> np.uint64(29))) * _MIX + tokens[:, j]
    codes, first = _group_runs(keys) or _group(keys)
    if not (tokens[first[codes]] == tokens).all():
        return None
    ranks = np.empty(len(first), dtype=np.int64)
    ranks[np.lexsort(tokens[first].T[::-1])] = np.arange(len(first))
    by_rank = np.empty_like(first)
    by_rank[ranks] = first
    return ranks[codes], by_rank


def _small_bytes(columns: Columns, column: int, width: int) -> ByteArray:
    """(lines, width) bytes of a column's tokens of at most ``width`` <= 8 bytes, zero-padded."""
    word = words(columns, column)[:, 0].astype(">u8")
    matrix: ByteArray = word.view(np.uint8).reshape(-1, 8)[:, :width]
    return matrix


def parse_ints(columns: Columns, column: int) -> IntArray | None:
    """A column as integers (an optional ``-`` and digits, 8 characters at most), else None."""
    lengths = columns.lengths(column)
    width = int(lengths.max())
    if width == 1:  # one digit each (relevance grades)
        digits = np.frombuffer(columns.raw, dtype=np.uint8)[columns.starts[:, column]]
        grades: IntArray = digits.astype(np.int64) - ord("0")
        return grades if ((grades >= 0) & (grades <= 9)).all() else None
    if width > 8:
        return None
    matrix = _small_bytes(columns, column, width).astype(np.int64) - ord("0")
    negative = matrix[:, 0] == ord("-") - ord("0")
    if (negative & (lengths == 1)).any():
        return None
    offsets = np.arange(width)
    digit = (offsets < lengths[:, None]) & (offsets >= negative[:, None])
    if ((matrix < 0) | (matrix > 9))[digit].any():
        return None
    matrix[~digit] = 0
    # Left-aligned digits: scale each row by the powers of ten of its own length.
    powers = 10 ** np.arange(width + 1, dtype=np.int64)
    place = np.clip(lengths[:, None] - 1 - offsets, 0, width)
    values: IntArray = (matrix * powers[place]).sum(axis=1)
    return np.where(negative, -values, values)


def parse_floats(columns: Columns, column: int) -> FloatArray | None:
    """A column as floats (digits, ``.``, ``e``, signs; no ``nan`` or ``inf``), else None.

    numpy's conversion of byte strings rounds as Python's ``float`` does.
    """
    tokens = words(columns, column).astype(">u8")
    text = tokens.view(f"S{8 * tokens.shape[1]}").ravel()
    matrix = tokens.view(np.uint8)
    if not _NUMBER_BYTES[matrix[matrix != 0]].all():
        return None
    try:
        values: FloatArray = text.astype(np.float64)
    except ValueError:
        return None
    return values
